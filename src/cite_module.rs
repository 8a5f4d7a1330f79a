//! The citation check (`docent_core::cite`), as its own lazily loaded wasm module.
//!
//! The check runs once a generated answer is complete, so it need not be in the first
//! download: it is built from this crate with `--features cite-module` (`docent-cite.js` +
//! `docent-cite_bg.wasm`, see scripts/build-widget), and the loader's
//! `window.docent.loadCite()` imports it the first time an answer needs checking. That keeps
//! the widget within its 250 KB gz budget (docs/widget.md, "Size"). Without the module (a
//! Trunk dev build, a failed download) answers simply go unchecked.
//!
//! Between the two modules the sources travel as their numbers and their texts joined by NUL,
//! and the marks come back as `at:n,n;at:n`.

use docent_core::cite::{self, ChunkSource, Mark, Source};
use wasm_bindgen::prelude::*;

/// Encode marks as `at:n,n;at:n` (what the cite module returns).
pub fn encode_marks(marks: &[Mark]) -> String {
    marks
        .iter()
        .map(|m| {
            let ns: Vec<String> = m.sources.iter().map(|n| n.to_string()).collect();
            format!("{}:{}", m.at, ns.join(","))
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// Decode [`encode_marks`]' output; anything malformed is skipped.
pub fn decode_marks(s: &str) -> Vec<Mark> {
    s.split(';')
        .filter_map(|m| {
            let (at, ns) = m.split_once(':')?;
            let sources = ns.split(',').filter_map(|n| n.parse().ok()).collect();
            Some(Mark { at: at.parse().ok()?, sources })
        })
        .collect()
}

/// Each source's number and text (`cite::source_text`, as the check reads it): what the widget
/// hands the cite module. Only the joining runs in the widget, not the check's reading.
pub fn source_texts(sources: &[Source], index: &dyn ChunkSource) -> Vec<(usize, String)> {
    sources.iter().map(|s| (s.n, cite::source_text(s, index))).collect()
}

/// The check itself, over [`source_texts`].
pub fn check_texts(answer: &str, sources: &[(usize, String)]) -> Vec<Mark> {
    let evidence: Vec<cite::Evidence> =
        sources.iter().map(|(n, text)| cite::Evidence::new(*n, text.clone())).collect();
    cite::marks(&cite::check_answer(answer, &evidence, &cite::LexicalChecker::default()))
}

/// The cite module's export: `texts` holds the sources' texts in the order of `numbers`,
/// joined by NUL.
#[cfg(feature = "cite-module")]
#[wasm_bindgen]
pub fn check(answer: &str, numbers: Vec<u32>, texts: &str) -> String {
    let sources: Vec<(usize, String)> =
        numbers.iter().zip(texts.split('\0')).map(|(&n, t)| (n as usize, t.to_string())).collect();
    encode_marks(&check_texts(answer, &sources))
}

/// Check an answer through the lazily loaded module; None when it cannot be loaded.
pub async fn check_lazily(answer: &str, sources: &[(usize, String)]) -> Option<Vec<Mark>> {
    use js_sys::{Function, Reflect};
    let window = web_sys::window()?;
    let api = Reflect::get(&window, &JsValue::from_str("docent")).ok()?;
    let load: Function =
        Reflect::get(&api, &JsValue::from_str("loadCite")).ok()?.dyn_into().ok()?;
    let promise: js_sys::Promise = load.call0(&api).ok()?.dyn_into().ok()?;
    let module = wasm_bindgen_futures::JsFuture::from(promise).await.ok()?;
    let check: Function =
        Reflect::get(&module, &JsValue::from_str("check")).ok()?.dyn_into().ok()?;
    let numbers = js_sys::Uint32Array::from(
        sources.iter().map(|(n, _)| *n as u32).collect::<Vec<_>>().as_slice(),
    );
    let texts: Vec<&str> = sources.iter().map(|(_, t)| t.as_str()).collect();
    let out = check
        .call3(&module, &JsValue::from_str(answer), &numbers, &JsValue::from_str(&texts.join("\0")))
        .ok()?;
    Some(decode_marks(&out.as_string()?))
}

//! Exact cl100k token counting, loaded only when a conversation gets long.
//!
//! tiktoken-rs brings a full regex engine with Unicode tables (hundreds of KB of wasm), and the
//! ranks file is 776 KB gzipped: neither belongs in the first download. So the tokenizer is a
//! separate wasm module, built from this crate with `--features tokenizer-module`
//! (`docent-tokenizer.js` + `docent-tokenizer_bg.wasm`, see scripts/build-widget). The loader
//! (`docent.js`) exposes `window.docent.loadTokenizer()`, which imports that module, fetches
//! `cl100k_base.tiktoken` and returns an object with `count(text)`; [`load`] wraps it as a
//! [`TokenCounter`] for `docent_core::budget`.

use docent_core::tokens::TokenCounter;
use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

/// The tokenizer module's export (only in the `--features tokenizer-module` build).
#[cfg(feature = "tokenizer-module")]
#[wasm_bindgen]
pub struct Tokenizer {
    bpe: docent_core::tokens::Bpe,
}

#[cfg(feature = "tokenizer-module")]
#[wasm_bindgen]
impl Tokenizer {
    /// Build the tokenizer from the bytes of `cl100k_base.tiktoken`.
    #[wasm_bindgen(constructor)]
    pub fn new(ranks: &[u8]) -> Result<Tokenizer, JsValue> {
        docent_core::tokens::Bpe::from_tiktoken_file(ranks)
            .map(|bpe| Tokenizer { bpe })
            .map_err(|e| JsValue::from(js_sys::Error::new(&format!("cl100k_base.tiktoken: {e}"))))
    }

    /// Exact cl100k token count of `text`.
    pub fn count(&self, text: &str) -> usize {
        self.bpe.encode(text).len()
    }
}

/// A tokenizer living in the separately loaded module, called through JS.
pub struct JsCounter {
    this: JsValue,
    count: Function,
}

impl TokenCounter for JsCounter {
    fn count(&self, text: &str) -> usize {
        match self.count.call1(&self.this, &JsValue::from_str(text)) {
            Ok(v) => v.as_f64().map(|n| n as usize).unwrap_or(text.len()),
            // Fall back to the upper bound: never undercount.
            Err(_) => text.len(),
        }
    }
}

/// Load the exact tokenizer through the loader's `window.docent.loadTokenizer()`.
/// Errors say why (no loader on the page, module or ranks not found).
pub async fn load() -> Result<JsCounter, String> {
    let window = web_sys::window().ok_or("no window")?;
    let api = Reflect::get(&window, &JsValue::from_str("docent"))
        .map_err(|_| "no docent loader on the page".to_string())?;
    let f: Function = Reflect::get(&api, &JsValue::from_str("loadTokenizer"))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or("the docent loader on the page has no loadTokenizer (update docent.js)")?;
    let promise: js_sys::Promise = f
        .call0(&api)
        .map_err(|e| format!("loadTokenizer failed: {}", crate::net::js_message(&e)))?
        .dyn_into()
        .map_err(|_| "loadTokenizer did not return a promise".to_string())?;
    let this = JsFuture::from(promise).await.map_err(|e| crate::net::js_message(&e))?;
    let count: Function = Reflect::get(&this, &JsValue::from_str("count"))
        .ok()
        .and_then(|f| f.dyn_into().ok())
        .ok_or("the tokenizer has no count()")?;
    Ok(JsCounter { this, count })
}

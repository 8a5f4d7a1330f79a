//! Fetching a split index's shards by need ([`docent_core::split`]): the postings of a
//! question's terms before the search, the texts of its hits after it.
//!
//! Shards sit next to the entry file and are named by their content, so the browser's HTTP
//! cache (and a CDN's) can keep them as long as it likes: a name never gets other bytes. The
//! shards one step needs are requested at once and read in order. Each is checked by
//! `Index::attach` against the entry (checksum, kind, contents); one from another build (a
//! deploy in progress, an old cache) is refused with a message to reload, never answered from.
//! Nothing happens for a one-file index.

use docent_core::split::ShardRef;
use docent_core::Index;
use js_sys::{Promise, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Response, Url};

/// Said when a shard cannot be downloaded.
const UNREACHABLE: &str =
    "Part of the docs index could not be downloaded. Check your connection and try again.";
/// Said when a shard is not the one the entry names.
const CHANGED: &str =
    "The docs index changed while it was loading (the site was just updated). Reload the page and ask again.";

async fn bytes(pending: Promise) -> Result<Vec<u8>, JsValue> {
    let resp: Response = JsFuture::from(pending).await?.dyn_into()?;
    if !resp.ok() {
        return Err(JsValue::NULL);
    }
    Ok(Uint8Array::new(&JsFuture::from(resp.array_buffer()?).await?).to_vec())
}

/// Fetch and attach `refs` (from `Index::shards_for_query` / `shards_for_chunks`); the error
/// is the reader-facing message.
pub async fn ensure(index: &Index, index_url: &str, refs: Vec<ShardRef>) -> Result<(), String> {
    if refs.is_empty() {
        return Ok(());
    }
    let Some(window) = web_sys::window() else { return Err(UNREACHABLE.into()) };
    // The entry's absolute URL: shard names resolve against it.
    let page = window.location().href().unwrap_or_default();
    let entry = Url::new_with_base(index_url, &page).map(|u| u.href()).unwrap_or_default();
    // Every request starts now; they are read one after the other.
    let pending: Vec<Promise> = refs
        .iter()
        .map(|r| {
            let url = Url::new_with_base(&r.name, &entry).map(|u| u.href()).unwrap_or_default();
            window.fetch_with_str(&url)
        })
        .collect();
    for (r, p) in refs.iter().zip(pending) {
        let b = bytes(p).await.map_err(|_| UNREACHABLE.to_string())?;
        if let Err(e) = index.attach(r, &b) {
            web_sys::console::warn_1(&format!("docent: {e}").into());
            return Err(CHANGED.into());
        }
    }
    Ok(())
}

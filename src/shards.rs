//! Fetching a split index's shards by need ([`docent_core::split`]): the postings of a
//! question's terms before the search, the texts of its hits after it.
//!
//! Shards sit next to the entry file and are named by their content, so a cached copy never
//! goes stale: they are kept in Cache Storage without revalidation. The shards one step needs
//! are fetched in parallel. Each is checked by `Index::attach` against the entry (checksum,
//! kind, contents); one from another build (a deploy in progress, an old cache) is refused with
//! a message to reload, and removed from the cache. Nothing happens for a one-file index.

use docent_core::split::ShardRef;
use docent_core::Index;
use js_sys::{Array, Promise, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::{future_to_promise, JsFuture};
use web_sys::{Cache, Response};

const CACHE_NAME: &str = "docent-shards-v1";

fn window() -> web_sys::Window {
    web_sys::window().expect("docent runs in a browser window")
}

/// A shard's URL: its name resolved against the entry file's URL.
fn shard_url(index_url: &str, name: &str) -> String {
    let base = window().location().href().unwrap_or_default();
    let entry = web_sys::Url::new_with_base(index_url, &base)
        .map(|u| u.href())
        .unwrap_or_else(|_| index_url.to_string());
    web_sys::Url::new_with_base(name, &entry).map(|u| u.href()).unwrap_or_else(|_| name.to_string())
}

async fn open_cache() -> Option<Cache> {
    let caches = window().caches().ok()?;
    JsFuture::from(caches.open(CACHE_NAME)).await.ok()?.dyn_into::<Cache>().ok()
}

async fn body(resp: Response) -> Result<Vec<u8>, JsValue> {
    let buf = JsFuture::from(resp.array_buffer()?).await?;
    Ok(Uint8Array::new(&buf).to_vec())
}

/// One shard's bytes: from Cache Storage, else the network (then cached).
async fn get(url: String) -> Result<JsValue, JsValue> {
    let cache = open_cache().await;
    if let Some(c) = &cache {
        if let Ok(hit) = JsFuture::from(c.match_with_str(&url)).await {
            if let Ok(resp) = hit.dyn_into::<Response>() {
                if let Ok(b) = body(resp).await {
                    return Ok(Uint8Array::from(b.as_slice()).into());
                }
            }
        }
    }
    let resp: Response = JsFuture::from(window().fetch_with_str(&url)).await?.dyn_into()?;
    if !resp.ok() {
        return Err(JsValue::from_str(&format!("{url}: HTTP {}", resp.status())));
    }
    if let (Some(c), Ok(copy)) = (&cache, resp.clone()) {
        let _ = JsFuture::from(c.put_with_str(&url, &copy)).await;
    }
    Ok(Uint8Array::from(body(resp).await?.as_slice()).into())
}

async fn forget(url: &str) {
    if let Some(c) = open_cache().await {
        let _ = JsFuture::from(c.delete_with_str(url)).await;
    }
}

/// Fetch and attach `refs` (from `Index::shards_for_query` / `shards_for_chunks`) in parallel.
/// The error is the reader-facing message.
pub async fn ensure(index: &Index, index_url: &str, refs: Vec<ShardRef>) -> Result<(), String> {
    if refs.is_empty() {
        return Ok(());
    }
    let urls: Vec<String> = refs.iter().map(|r| shard_url(index_url, &r.name)).collect();
    let promises: Array = urls.iter().map(|u| JsValue::from(future_to_promise(get(u.clone())))).collect();
    let all = JsFuture::from(Promise::all(&promises)).await.map_err(|e| {
        let why = e.as_string().unwrap_or_else(|| "network error".into());
        format!("Part of the docs index could not be downloaded ({why}). Check your connection and try again.")
    })?;
    let all: Array = all.unchecked_into();
    for (i, r) in refs.iter().enumerate() {
        let bytes = Uint8Array::new(&all.get(i as u32)).to_vec();
        if let Err(e) = index.attach(r, &bytes) {
            forget(&urls[i]).await;
            web_sys::console::warn_1(&format!("docent: {e}").into());
            return Err(
                "The docs index changed while it was loading (the site was just updated). Reload the page and ask again."
                    .into(),
            );
        }
    }
    Ok(())
}

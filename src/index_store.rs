//! Loading the index: fetched on the first question (with progress), validated by
//! `docent_core::format::Index::from_bytes` (magic, version, checksum), and kept in Cache Storage
//! with its checksum so repeat visits do not download it again.
//!
//! A cached copy is revalidated once per browser session with a conditional request (ETag /
//! Last-Modified); without validators it is trusted for a day. Every cache failure (private mode,
//! insecure origin, quota) silently falls back to the network: the cache is an optimisation only.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use docent_core::Index;
use js_sys::{Date, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Cache, Headers, RequestInit, Response, ResponseInit};

use crate::net::{self, NetError};

const CACHE_NAME: &str = "docent-index-v1";
const TRUST_WITHOUT_VALIDATORS_MS: f64 = 24.0 * 3600.0 * 1000.0;

thread_local! {
    static LOADED: RefCell<HashMap<String, Rc<Index>>> = RefCell::new(HashMap::new());
}

/// Where the index came from (shown in "what I looked at" and used by tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Already in memory on this page.
    Memory,
    /// Cache Storage (no download).
    Cache,
    /// Downloaded.
    Network,
}

/// An index load failure, with a message that says what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadError(pub String);

fn window() -> web_sys::Window {
    web_sys::window().expect("docent runs in a browser window")
}

/// Load (or reuse) the index at `url`, reporting download progress.
pub async fn load(
    url: &str,
    progress: impl FnMut(u64, Option<u64>),
) -> Result<(Rc<Index>, Origin), LoadError> {
    if let Some(ix) = LOADED.with(|m| m.borrow().get(url).cloned()) {
        return Ok((ix, Origin::Memory));
    }
    let (ix, origin) = load_uncached(url, progress).await?;
    let ix = Rc::new(ix);
    LOADED.with(|m| m.borrow_mut().insert(url.to_string(), ix.clone()));
    Ok((ix, origin))
}

/// Forget the in-memory copy (tests; a changed index URL).
pub fn forget(url: &str) {
    LOADED.with(|m| m.borrow_mut().remove(url));
}

async fn open_cache() -> Option<Cache> {
    let caches = window().caches().ok()?;
    let c = JsFuture::from(caches.open(CACHE_NAME)).await.ok()?;
    c.dyn_into::<Cache>().ok()
}

struct Cached {
    bytes: Vec<u8>,
    etag: Option<String>,
    last_modified: Option<String>,
    stored_at: f64,
}

async fn read_cached(cache: &Cache, url: &str) -> Option<Cached> {
    let hit = JsFuture::from(cache.match_with_str(url)).await.ok()?;
    let resp: Response = hit.dyn_into().ok()?;
    let h = resp.headers();
    let get = |k: &str| h.get(k).ok().flatten();
    let etag = get("etag");
    let last_modified = get("last-modified");
    let stored_at = get("x-docent-stored-at")
        .and_then(|s| s.parse::<u64>().ok())
        .map(|ms| ms as f64)
        .unwrap_or(0.0);
    let buf = JsFuture::from(resp.array_buffer().ok()?).await.ok()?;
    Some(Cached { bytes: Uint8Array::new(&buf).to_vec(), etag, last_modified, stored_at })
}

async fn store(cache: &Cache, url: &str, bytes: &[u8], checksum: u64, validators: &Headers) {
    let Ok(headers) = Headers::new() else { return };
    let _ = headers.set("content-type", "application/octet-stream");
    let _ = headers.set("x-docent-checksum", &format!("{checksum:016x}"));
    // Whole milliseconds, read back as an integer (a float parse would link core's dec2flt).
    let _ = headers.set("x-docent-stored-at", &(Date::now() as u64).to_string());
    for k in ["etag", "last-modified"] {
        if let Ok(Some(v)) = validators.get(k) {
            let _ = headers.set(k, &v);
        }
    }
    let init = ResponseInit::new();
    init.set_headers(&headers);
    let mut copy = bytes.to_vec();
    let Ok(resp) = Response::new_with_opt_u8_array_and_init(Some(&mut copy), &init) else { return };
    let _ = JsFuture::from(cache.put_with_str(url, &resp)).await;
}

fn session_flag(url: &str) -> String {
    format!("docent:index-checked:{url}")
}

fn checked_this_session(url: &str) -> bool {
    window()
        .session_storage()
        .ok()
        .flatten()
        .and_then(|s| s.get_item(&session_flag(url)).ok().flatten())
        .is_some()
}

fn mark_checked(url: &str) {
    if let Some(s) = window().session_storage().ok().flatten() {
        let _ = s.set_item(&session_flag(url), "1");
    }
}

fn parse(bytes: Vec<u8>, url: &str) -> Result<Index, LoadError> {
    let index = Index::from_bytes(bytes)
        .map_err(|e| LoadError(format!("The docs index at {url} could not be read: {e}")))?;
    // The BM25 index is derived from the text (format v2 stores no postings): build it now, while
    // the reader is still typing, so the first question does not pay for it.
    index.lexical();
    Ok(index)
}

/// Outcome of a conditional request.
enum Revalidated {
    NotModified,
    Fresh(Vec<u8>, Headers),
}

async fn conditional_get(url: &str, cached: &Cached) -> Result<Revalidated, NetError> {
    let init = RequestInit::new();
    init.set_method("GET");
    let headers = Headers::new().map_err(net::from_js)?;
    if let Some(e) = &cached.etag {
        headers.set("if-none-match", e).map_err(net::from_js)?;
    }
    if let Some(m) = &cached.last_modified {
        headers.set("if-modified-since", m).map_err(net::from_js)?;
    }
    init.set_headers(&headers);
    init.set_cache(web_sys::RequestCache::NoStore);
    let resp =
        JsFuture::from(window().fetch_with_str_and_init(url, &init)).await.map_err(net::from_js)?;
    let resp: Response =
        resp.dyn_into().map_err(|_: JsValue| NetError::BadResponse("no Response".into()))?;
    if resp.status() == 304 {
        return Ok(Revalidated::NotModified);
    }
    if !resp.ok() {
        return Err(NetError::BadResponse(format!("HTTP {}", resp.status())));
    }
    let buf =
        JsFuture::from(resp.array_buffer().map_err(net::from_js)?).await.map_err(net::from_js)?;
    Ok(Revalidated::Fresh(Uint8Array::new(&buf).to_vec(), resp.headers()))
}

async fn load_uncached(
    url: &str,
    progress: impl FnMut(u64, Option<u64>),
) -> Result<(Index, Origin), LoadError> {
    let cache = open_cache().await;
    if let Some(cache) = &cache {
        if let Some(cached) = read_cached(cache, url).await {
            let has_validators = cached.etag.is_some() || cached.last_modified.is_some();
            let young = Date::now() - cached.stored_at < TRUST_WITHOUT_VALIDATORS_MS;
            let trust = checked_this_session(url) || (!has_validators && young);
            if trust {
                if let Ok(ix) = parse(cached.bytes.clone(), url) {
                    return Ok((ix, Origin::Cache));
                }
            } else if has_validators {
                match conditional_get(url, &cached).await {
                    Ok(Revalidated::NotModified) | Err(_) => {
                        if let Ok(ix) = parse(cached.bytes.clone(), url) {
                            mark_checked(url);
                            return Ok((ix, Origin::Cache));
                        }
                    }
                    Ok(Revalidated::Fresh(bytes, headers)) => {
                        let ix = parse(bytes.clone(), url)?;
                        store(cache, url, &bytes, ix.checksum(), &headers).await;
                        mark_checked(url);
                        return Ok((ix, Origin::Network));
                    }
                }
            }
        }
    }
    let (bytes, headers) = net::get_bytes(url, None, progress).await.map_err(|e| {
        LoadError(match e {
            NetError::Http { message, .. } => format!("The docs index could not be downloaded ({message}). Check data-index."),
            NetError::Unreachable(m) => format!("The docs index could not be downloaded ({m}). Check your connection and try again."),
            other => format!("The docs index could not be downloaded ({other})."),
        })
    })?;
    let ix = parse(bytes.clone(), url)?;
    if let Some(cache) = &cache {
        store(cache, url, &bytes, ix.checksum(), &headers).await;
    }
    mark_checked(url);
    Ok((ix, Origin::Network))
}

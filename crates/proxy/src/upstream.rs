//! Calling a named provider: URL and auth per kind, timeouts, and retries before the first byte.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::body::Bytes;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue};

use crate::config::{ProviderConfig, ProviderKind};
use crate::error::{ApiError, Waited};
use crate::metrics::Metrics;
use crate::redact::Redactor;

/// The longest `Retry-After` passed on from an upstream, in seconds: a provider's "come back
/// tomorrow" is not a promise docent can make to a reader.
pub const MAX_RETRY_AFTER_SECS: u64 = 60;

/// The operations a provider can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `/chat/completions`.
    Chat,
    /// `/embeddings`.
    Embeddings,
    /// `/moderations`.
    Moderation,
}

impl Op {
    /// Label for metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Chat => "chat",
            Op::Embeddings => "embeddings",
            Op::Moderation => "moderation",
        }
    }
    fn path(self) -> &'static str {
        match self {
            Op::Chat => "chat/completions",
            Op::Embeddings => "embeddings",
            Op::Moderation => "moderations",
        }
    }
}

/// A ready-to-use provider: its config, a client with its connect timeout, and its key.
#[derive(Debug, Clone)]
pub struct Provider {
    /// Name in docent.toml.
    pub name: String,
    /// The `[providers.<name>]` table.
    pub cfg: ProviderConfig,
    client: reqwest::Client,
    headers: HeaderMap,
    redactor: Arc<Redactor>,
    /// The longest a non-streamed answer may take to arrive whole ([`Self::answer_within`]).
    max_answer: Duration,
}

/// [`Provider::answer_within`] until set: `[serve] max_stream_secs`' default.
const DEFAULT_MAX_ANSWER: Duration = Duration::from_secs(600);

/// A successful upstream answer: status 2xx, headers received, body not read yet.
pub struct Answer {
    /// The response (body unread).
    pub response: reqwest::Response,
    /// When the request (first attempt) started.
    pub started: Instant,
}

impl Provider {
    /// Build the client; reads the key from the env var named in the config. Text from this
    /// upstream is logged through `redactor` (which should know every configured key).
    pub fn new(
        name: &str,
        cfg: &ProviderConfig,
        redactor: Arc<Redactor>,
    ) -> anyhow::Result<Provider> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(cfg.connect_timeout_ms))
            // A redirect would re-send the key (Azure's api-key header), the system prompt and
            // the whole conversation to another host: it is reported as an upstream error.
            .redirect(reqwest::redirect::Policy::none())
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(1024)
            .tcp_nodelay(true)
            .build()?;
        let mut headers = HeaderMap::new();
        if let Some(env) = &cfg.api_key_env {
            let key = std::env::var(env).map_err(|_| {
                anyhow::anyhow!(
                    "environment variable {env} (api_key_env of [providers.{name}]) is not set"
                )
            })?;
            let (hname, value) = match cfg.kind {
                ProviderKind::AzureOpenai => ("api-key", key.trim().to_string()),
                _ => ("authorization", format!("Bearer {}", key.trim())),
            };
            let mut v = HeaderValue::from_str(&value).map_err(|_| {
                anyhow::anyhow!(
                    "the key in {env} contains characters not allowed in an HTTP header"
                )
            })?;
            v.set_sensitive(true);
            headers.insert(hname, v);
        }
        if let Some(org) = &cfg.organization {
            if let Ok(v) = HeaderValue::from_str(org) {
                headers.insert("openai-organization", v);
            }
        }
        Ok(Provider {
            name: name.to_string(),
            cfg: cfg.clone(),
            client,
            headers,
            redactor,
            max_answer: DEFAULT_MAX_ANSWER,
        })
    }

    /// A non-streamed answer ([`Self::call_json`]) must arrive whole within `d` of the first
    /// attempt, like a stream within `[serve] max_stream_secs`: the idle timeout alone lets
    /// an upstream that sends a byte now and then hold the request for ever.
    pub fn answer_within(mut self, d: Duration) -> Provider {
        self.max_answer = d;
        self
    }

    /// An answer from this upstream with every configured key replaced, or None when it holds
    /// none. A provider (or a gateway before it) that echoes the request's `Authorization`
    /// header into the answer would hand the key to every reader.
    pub fn scrub_answer(&self, text: &str) -> Option<String> {
        self.redactor.scrub(text)
    }

    /// The warning for an answer [`Provider::scrub_answer`] changed (once per answer).
    pub fn warn_key_in_answer(&self, rid: &str) {
        tracing::warn!(request_id = %rid, provider = %self.name, "the upstream's answer held an API key; replaced before it reached the client");
    }

    /// Whether this upstream's `(prompt, completion)` usage counts are believable
    /// ([`crate::tokens::plausible_usage`]); a warning when they are not (the answer is then
    /// charged as one without usage).
    pub fn believes_usage(&self, rid: &str, (pin, pout): (u64, u64)) -> bool {
        let ok = crate::tokens::plausible_usage((pin, pout));
        if !ok {
            tracing::warn!(request_id = %rid, provider = %self.name, prompt_tokens = pin, completion_tokens = pout, "upstream usage counts are not believable; charged an estimate instead");
        }
        ok
    }

    /// Text from this upstream, safe to log: no configured key, nothing shaped like one.
    pub fn redact(&self, text: &str) -> String {
        self.redactor.redact(text)
    }

    /// What a warning says of an upstream's answer: its shape (an error's `type` and `code`,
    /// its size), never its words, which may quote the reader's messages ("invalid input:
    /// …"): the logs hold no message content at the default level. The words themselves,
    /// keys removed, go to a debug line of their own (`RUST_LOG=docent_proxy=debug`).
    pub fn described(&self, text: &str) -> String {
        tracing::debug!(provider = %self.name, text = %self.redact(text), "upstream text");
        shape_of(text)
    }

    /// The URL for `op` with `model` (Azure puts the deployment in the path).
    pub fn url(&self, op: Op, model: &str) -> String {
        match self.cfg.kind {
            ProviderKind::AzureOpenai => {
                let endpoint = self.cfg.endpoint.as_deref().unwrap_or("").trim_end_matches('/');
                let deployment =
                    self.cfg.deployments.get(model).map(String::as_str).unwrap_or(model);
                let version = self.cfg.api_version.as_deref().unwrap_or("2024-10-21");
                if op == Op::Moderation {
                    // Azure has no moderation endpoint of the OpenAI shape; content filters run inline.
                    return format!("{endpoint}/openai/{}?api-version={version}", op.path());
                }
                format!(
                    "{endpoint}/openai/deployments/{deployment}/{}?api-version={version}",
                    op.path()
                )
            }
            _ => {
                let base = self
                    .cfg
                    .base_url
                    .as_deref()
                    .unwrap_or("https://api.openai.com/v1")
                    .trim_end_matches('/');
                format!("{base}/{}", op.path())
            }
        }
    }

    /// POST `body` for `op`, retrying (connect errors, 429, 5xx, timeouts) with backoff while
    /// nothing has been sent to the client. Returns once 2xx headers arrived. The first-byte
    /// budget is one deadline for all attempts together, backoffs included.
    pub async fn send(
        &self,
        op: Op,
        model: &str,
        body: Bytes,
        metrics: &Metrics,
    ) -> Result<Answer, ApiError> {
        let url = self.url(op, model);
        let started = Instant::now();
        let first_byte = Duration::from_millis(self.cfg.first_byte_timeout_ms);
        let deadline = tokio::time::Instant::now() + first_byte;
        let mut attempt: u32 = 0;
        loop {
            let t0 = Instant::now();
            let req = self
                .client
                .post(&url)
                .headers(self.headers.clone())
                .header("content-type", "application/json")
                .body(body.clone())
                .send();
            let outcome = tokio::time::timeout_at(deadline, req).await;
            let (retryable, err, retry_after) = match outcome {
                Ok(Ok(resp)) if resp.status().is_success() => {
                    metrics.upstream_latency(op.as_str(), t0.elapsed());
                    return Ok(Answer { response: resp, started });
                }
                Ok(Ok(resp)) => {
                    let status = resp.status();
                    metrics.upstream_latency(op.as_str(), t0.elapsed());
                    metrics.upstream_error(op.as_str(), "status");
                    let retry_after = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| retry_after_secs(v, SystemTime::now()));
                    // The error body is for the log only: not read past the first-byte budget.
                    let text = tokio::time::timeout_at(deadline, read_capped(resp, 4096))
                        .await
                        .unwrap_or_default();
                    tracing::warn!(provider = %self.name, op = op.as_str(), status = status.as_u16(), body = %self.described(&text), "upstream refused");
                    let err = match status.as_u16() {
                        429 => ApiError::RateLimited { retry_after: retry_after.unwrap_or(10).max(1), what: "requests for the model provider" },
                        300..=399 => ApiError::Upstream("the model provider answered with a redirect, which docent does not follow; the operator must fix the provider's base_url or endpoint".into()),
                        401 | 403 => ApiError::Upstream("the model provider refused the server's credentials; the operator must check the API key".into()),
                        s if status.is_server_error() => ApiError::UpstreamStatus { status: s, retry_after },
                        s => ApiError::Upstream(format!("the model provider answered HTTP {s}")),
                    };
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    (retryable, err, retry_after)
                }
                Ok(Err(e)) => {
                    let kind = if e.is_connect() { "connect" } else { "request" };
                    metrics.upstream_error(op.as_str(), kind);
                    tracing::warn!(provider = %self.name, op = op.as_str(), error = %self.redact(&e.to_string()), "upstream request failed");
                    let err = if e.is_timeout() {
                        ApiError::UpstreamTimeout(Waited::Connect)
                    } else {
                        ApiError::Upstream("the model provider could not be reached".into())
                    };
                    (true, err, None)
                }
                Err(_) => {
                    metrics.upstream_error(op.as_str(), "timeout");
                    tracing::warn!(provider = %self.name, op = op.as_str(), "upstream first-byte timeout");
                    (true, ApiError::UpstreamTimeout(Waited::FirstByte), None)
                }
            };
            if !retryable || attempt >= self.cfg.max_retries {
                return Err(err);
            }
            let backoff = self.backoff(attempt, retry_after);
            // Don't retry when the wait alone would use up the first-byte budget.
            if backoff >= deadline.saturating_duration_since(tokio::time::Instant::now()) {
                return Err(err);
            }
            attempt += 1;
            metrics.upstream_retry(op.as_str());
            tracing::info!(provider = %self.name, op = op.as_str(), attempt, backoff_ms = backoff.as_millis() as u64, "retrying upstream");
            tokio::time::sleep(backoff).await;
        }
    }

    fn backoff(&self, attempt: u32, retry_after: Option<u64>) -> Duration {
        let base = self.cfg.retry_backoff_ms.saturating_mul(1 << attempt.min(10));
        // Jitter: up to +25 %, from the clock's sub-microsecond noise (no rand dependency).
        let noise = Instant::now().elapsed().subsec_nanos() as u64 ^ u64::from(std::process::id());
        let jitter = if base > 0 { noise % (base / 4 + 1) } else { 0 };
        // Saturating: base may already be u64::MAX for a huge retry_backoff_ms.
        let d = Duration::from_millis(base.saturating_add(jitter));
        match retry_after {
            Some(s) => d.max(Duration::from_secs(s)),
            None => d,
        }
    }

    /// Non-streaming call: send, then read the whole body (bounded by the idle timeout between
    /// chunks, by [`Self::answer_within`] for the whole answer, and by `max_bytes`).
    pub async fn call_json(
        &self,
        op: Op,
        model: &str,
        body: Bytes,
        max_bytes: usize,
        metrics: &Metrics,
    ) -> Result<Bytes, ApiError> {
        let answer = self.send(op, model, body, metrics).await?;
        let idle = Duration::from_millis(self.cfg.idle_timeout_ms);
        let deadline = tokio::time::Instant::from_std(answer.started) + self.max_answer;
        let mut stream = answer.response.bytes_stream();
        let mut buf = Vec::new();
        loop {
            match tokio::time::timeout_at(deadline, tokio::time::timeout(idle, stream.next())).await
            {
                Err(_) => {
                    metrics.upstream_error(op.as_str(), "timeout");
                    tracing::warn!(provider = %self.name, op = op.as_str(), "upstream answer still incomplete at the time limit");
                    return Err(ApiError::UpstreamTimeout(Waited::WholeAnswer));
                }
                Ok(Err(_)) => {
                    metrics.upstream_error(op.as_str(), "timeout");
                    return Err(ApiError::UpstreamTimeout(Waited::Reading));
                }
                Ok(Ok(None)) => break,
                Ok(Ok(Some(Err(e)))) => {
                    metrics.upstream_error(op.as_str(), "stream");
                    tracing::warn!(provider = %self.name, error = %self.redact(&e.to_string()), "upstream body failed");
                    return Err(ApiError::Upstream("the model provider's answer broke off".into()));
                }
                Ok(Ok(Some(Ok(b)))) => {
                    if buf.len() + b.len() > max_bytes {
                        return Err(ApiError::Upstream(
                            "the model provider's answer is too large".into(),
                        ));
                    }
                    buf.extend_from_slice(&b);
                }
            }
        }
        Ok(Bytes::from(buf))
    }
}

/// Seconds to wait from an upstream's `Retry-After` (RFC 9110: delay-seconds or an HTTP-date,
/// which is counted from `now` and rounded up), capped at [`MAX_RETRY_AFTER_SECS`]. A date in
/// the past is 0; anything unreadable is `None`.
fn retry_after_secs(value: &str, now: SystemTime) -> Option<u64> {
    let v = value.trim();
    let secs = match v.parse::<u64>() {
        Ok(s) => s,
        Err(_) => {
            let at = httpdate::parse_http_date(v).ok()?;
            let d = at.duration_since(now).unwrap_or_default();
            d.as_secs() + u64::from(d.subsec_nanos() > 0)
        }
    };
    Some(secs.min(MAX_RETRY_AFTER_SECS))
}

async fn read_capped(resp: reqwest::Response, max: usize) -> String {
    let mut stream = resp.bytes_stream();
    let mut buf = Vec::new();
    let deadline = tokio::time::sleep(Duration::from_secs(2));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            _ = &mut deadline => break,
            next = stream.next() => match next {
                Some(Ok(b)) => {
                    buf.extend_from_slice(&b);
                    if buf.len() >= max { break; }
                }
                _ => break,
            }
        }
    }
    buf.truncate(max);
    String::from_utf8_lossy(&buf).into_owned()
}

/// An upstream answer's shape for the log: JSON error `type`/`code` when they are identifiers
/// (`invalid_request_error`, `model_not_found`), its kind and size; no free text.
fn shape_of(text: &str) -> String {
    let n = text.len();
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(o)) => {
            let err = o.get("error");
            let ident = |k: &str| {
                err.and_then(|e| e.get(k))
                    .and_then(serde_json::Value::as_str)
                    .filter(|s| !s.is_empty() && s.len() <= 64)
                    .filter(|s| s.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b)))
            };
            let kind = if err.is_some() { "error" } else { "object" };
            let mut d = format!("a JSON {kind} of {n} bytes");
            for k in ["type", "code"] {
                if let Some(v) = ident(k) {
                    d.push_str(&format!(", {k} {v}"));
                }
            }
            d
        }
        Ok(_) => format!("JSON of {n} bytes"),
        Err(_) if text.trim_start().starts_with('<') => format!("HTML or XML of {n} bytes"),
        Err(_) if text.is_empty() => "nothing".to_string(),
        Err(_) => format!("{n} bytes of text"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn azure_urls_put_the_deployment_in_the_path() {
        let mut c = ProviderConfig::new(ProviderKind::AzureOpenai, None);
        c.endpoint = Some("https://res.openai.azure.com/".into());
        c.api_version = Some("2024-10-21".into());
        c.deployments.insert("gpt-4o-mini".into(), "prod-mini".into());
        let p = Provider::new("az", &c, Arc::default()).unwrap();
        assert_eq!(
            p.url(Op::Chat, "gpt-4o-mini"),
            "https://res.openai.azure.com/openai/deployments/prod-mini/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            p.url(Op::Embeddings, "emb"),
            "https://res.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-10-21"
        );
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_as_an_http_date() {
        let now = httpdate::parse_http_date("Wed, 21 Oct 2026 07:28:00 GMT").unwrap();
        assert_eq!(retry_after_secs(" 7 ", now), Some(7));
        assert_eq!(retry_after_secs("86400", now), Some(MAX_RETRY_AFTER_SECS));
        assert_eq!(retry_after_secs("Wed, 21 Oct 2026 07:28:30 GMT", now), Some(30));
        assert_eq!(retry_after_secs("Wed, 21 Oct 2026 07:00:00 GMT", now), Some(0));
        assert_eq!(retry_after_secs("Thu, 22 Oct 2026 07:28:00 GMT", now), Some(60));
        assert_eq!(retry_after_secs("soon", now), None);
        let later = now + Duration::from_millis(200);
        assert_eq!(retry_after_secs("Wed, 21 Oct 2026 07:28:30 GMT", later), Some(30));
    }

    #[test]
    fn a_huge_retry_backoff_saturates_instead_of_overflowing() {
        // base + jitter overflowed u64 (a panic in debug builds, a wrap to a tiny backoff in
        // release) once retry_backoff_ms x 2^attempt neared u64::MAX.
        let mut c = ProviderConfig::new(ProviderKind::OpenaiCompatible, Some("http://x/v1".into()));
        for ms in [u64::MAX, u64::MAX / 2, (u64::MAX >> 10) + 1] {
            c.retry_backoff_ms = ms;
            let p = Provider::new("p", &c, Arc::default()).unwrap();
            for attempt in 0..=10 {
                assert!(p.backoff(attempt, None) >= Duration::from_millis(ms), "{ms} {attempt}");
                assert!(p.backoff(attempt, Some(60)) >= Duration::from_millis(ms));
            }
        }
    }

    #[test]
    fn openai_urls_default_to_api_openai_com() {
        let p =
            Provider::new("o", &ProviderConfig::new(ProviderKind::Openai, None), Arc::default())
                .unwrap();
        assert_eq!(p.url(Op::Chat, "m"), "https://api.openai.com/v1/chat/completions");
    }
}

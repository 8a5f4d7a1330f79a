//! The widget↔proxy wire contract, in one place: the `x-docent-*` response headers, the proxy's
//! error codes, the `docent` field of chat requests, and the decoding of a streamed answer's
//! `data:` payloads (OpenAI `chat.completion.chunk`s, `[DONE]`, error events).
//!
//! The proxy (`crates/proxy`) writes what this module names and the widget (`src/engine/`) reads
//! it; both use these constants and this decoder, so a rename is one edit and a test.
//! docs/proxy.md describes the contract for other clients.
//!
//! Everything here runs in the widget's wasm too: the decoder reads JSON with core's small
//! reader ([`crate::json`]), not `serde_json` (whose `Value` would cost the wasm tens of KB).

use crate::json::{self, Value};

// ---------------------------------------------------------------- headers

/// Response header of chat answers: what the proxy's system prompt costs, in tokens; the widget
/// counts it in its next plans instead of core's default prompt.
pub const SYSTEM_TOKENS_HEADER: &str = "x-docent-system-tokens";
/// Response header of chat answers: the context window the proxy fits requests to.
pub const CONTEXT_WINDOW_HEADER: &str = "x-docent-context-window";
/// Response header of chat answers: how many of the oldest messages the proxy left out to fit.
pub const DROPPED_MESSAGES_HEADER: &str = "x-docent-dropped-messages";
/// Response header of cacheable chat answers: [`CACHE_HIT`] or [`CACHE_MISS`].
pub const CACHE_HEADER: &str = "x-docent-cache";
/// Response header of cacheable chat answers: the answer's key in the proxy's answer cache (64
/// lowercase hex digits, [`is_cache_key`]), sent back with "not helpful" feedback to evict it.
pub const CACHE_KEY_HEADER: &str = "x-docent-cache-key";
/// [`CACHE_HEADER`]'s value for an answer replayed from the cache.
pub const CACHE_HIT: &str = "hit";
/// [`CACHE_HEADER`]'s value for an answer the model wrote.
pub const CACHE_MISS: &str = "miss";
/// The response headers a browser may read across origins (`access-control-expose-headers`):
/// `retry-after`, `x-request-id` and every `x-docent-*` header above.
pub const EXPOSED_HEADERS: &str = "retry-after, x-request-id, x-docent-system-tokens, \
     x-docent-context-window, x-docent-dropped-messages, x-docent-cache, x-docent-cache-key";

/// A well-formed answer-cache key: 64 lowercase hex digits (the proxy's SHA-256), so feedback
/// cannot name arbitrary store keys and the widget keeps no junk.
pub fn is_cache_key(key: &str) -> bool {
    key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

// ---------------------------------------------------------------- error codes

/// The proxy's stable `error.code`s (HTTP error bodies and stream error events), which clients
/// switch on. `docs/proxy.md`, "Errors", lists their statuses and meanings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 503: no chat upstream is configured (clients answer with excerpts).
    NoChatModel,
    /// 503: no embeddings provider is configured.
    NoEmbeddingModel,
    /// 503: no moderation provider is configured.
    NoModerationModel,
    /// 503: the shared rate-limit store is unreachable and nothing is admitted.
    LimitsUnavailable,
    /// 400: moderation flagged the conversation (`error.categories` says why).
    ContentFlagged,
    /// 429: too many requests or tokens (`Retry-After` says when to retry).
    RateLimited,
    /// 503: the server's own work queue is full (the in-process embedding model); `Retry-After`
    /// says when to retry. Not the asker's limit: the widget searches by words meanwhile.
    ServerBusy,
    /// 413: the request body is over the limit.
    BodyTooLarge,
    /// 400: too many messages.
    TooManyMessages,
    /// 400: too many input tokens.
    InputTooLong,
    /// 400: the request does not fit the model's context window.
    ContextLengthExceeded,
    /// 400: a message role other than `user` and `assistant`.
    InvalidRole,
    /// 400: malformed JSON or a bad field.
    InvalidRequest,
    /// 403: the page's origin is not in the allow list.
    OriginNotAllowed,
    /// 408: the request body did not arrive in time.
    RequestTimeout,
    /// 502 (or a stream error event): the model provider failed.
    UpstreamError,
    /// 504 (or a stream error event): the model provider did not answer in time.
    UpstreamTimeout,
    /// 502: moderation gave no usable verdict.
    ModerationFailed,
    /// 400: the index's embedding model or query prompt is not the proxy's.
    EmbeddingModelMismatch,
    /// Stream error event: the server restarted and ended the answer.
    ServerShuttingDown,
    /// 404.
    NotFound,
    /// 405.
    MethodNotAllowed,
    /// 500.
    InternalError,
}

impl ErrorCode {
    /// Every code.
    pub const ALL: [ErrorCode; 23] = [
        ErrorCode::NoChatModel,
        ErrorCode::NoEmbeddingModel,
        ErrorCode::NoModerationModel,
        ErrorCode::LimitsUnavailable,
        ErrorCode::ContentFlagged,
        ErrorCode::RateLimited,
        ErrorCode::ServerBusy,
        ErrorCode::BodyTooLarge,
        ErrorCode::TooManyMessages,
        ErrorCode::InputTooLong,
        ErrorCode::ContextLengthExceeded,
        ErrorCode::InvalidRole,
        ErrorCode::InvalidRequest,
        ErrorCode::OriginNotAllowed,
        ErrorCode::RequestTimeout,
        ErrorCode::UpstreamError,
        ErrorCode::UpstreamTimeout,
        ErrorCode::ModerationFailed,
        ErrorCode::EmbeddingModelMismatch,
        ErrorCode::ServerShuttingDown,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::InternalError,
    ];

    /// The code as it is sent, e.g. `"rate_limited"`.
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            NoChatModel => "no_chat_model",
            NoEmbeddingModel => "no_embedding_model",
            NoModerationModel => "no_moderation_model",
            LimitsUnavailable => "limits_unavailable",
            ContentFlagged => "content_flagged",
            RateLimited => "rate_limited",
            ServerBusy => "server_busy",
            BodyTooLarge => "body_too_large",
            TooManyMessages => "too_many_messages",
            InputTooLong => "input_too_long",
            ContextLengthExceeded => "context_length_exceeded",
            InvalidRole => "invalid_role",
            InvalidRequest => "invalid_request",
            OriginNotAllowed => "origin_not_allowed",
            RequestTimeout => "request_timeout",
            UpstreamError => "upstream_error",
            UpstreamTimeout => "upstream_timeout",
            ModerationFailed => "moderation_failed",
            EmbeddingModelMismatch => "embedding_model_mismatch",
            ServerShuttingDown => "server_shutting_down",
            NotFound => "not_found",
            MethodNotAllowed => "method_not_allowed",
            InternalError => "internal_error",
        }
    }

    /// The code a received string names; `None` for codes this version does not know (another
    /// server's, or a newer proxy's).
    pub fn parse(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

// ---------------------------------------------------------------- the `docent` request field

/// The chat request's extension field: `"docent": {...}`, next to OpenAI's `messages`.
pub const DOCENT_FIELD: &str = "docent";

/// What the widget tells the proxy about a chat request (`"docent": {...}`): what the request
/// is for, the answer's language, the page, and the index and namespace the sources come from
/// (the answer cache keys on them). Every field is optional; unknown fields are ignored.
/// The widget builds the object with the key constants (`DocentField::TASK`, ...); the proxy
/// deserialises it with serde.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DocentField {
    /// [`Task::Answer`] (the default) or [`Task::Rewrite`], as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Answer language hint, e.g. "de".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// The page the question was asked on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// The index's checksum (16 hex digits): part of the answer cache's key; questions without
    /// it are not cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    /// The namespace (docs version) the sources were searched in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl DocentField {
    /// Key of [`DocentField::task`].
    pub const TASK: &'static str = "task";
    /// Key of [`DocentField::language`].
    pub const LANGUAGE: &'static str = "language";
    /// Key of [`DocentField::page`].
    pub const PAGE: &'static str = "page";
    /// Key of [`DocentField::index`].
    pub const INDEX: &'static str = "index";
    /// Key of [`DocentField::namespace`].
    pub const NAMESPACE: &'static str = "namespace";
}

/// What a chat request is for (`docent.task`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Task {
    /// Answer the question from the sources in the last message (streamed).
    Answer,
    /// Rewrite a follow-up into a standalone search query (not streamed).
    Rewrite,
}

impl Task {
    /// The task as it is sent.
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Answer => "answer",
            Task::Rewrite => "rewrite",
        }
    }

    /// The task a received string names.
    pub fn parse(task: &str) -> Option<Task> {
        [Task::Answer, Task::Rewrite].into_iter().find(|t| t.as_str() == task)
    }
}

// ---------------------------------------------------------------- streamed answers

/// Token usage reported by the API (the final chunk with `stream_options.include_usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Total tokens.
    pub total_tokens: u64,
}

/// An error event (`{"error": {"message", "type", "code"}}`, or `{"type": "error", ...}`) sent
/// by the API or the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorEvent {
    /// Human-readable message ("unknown error" when it has none).
    pub message: String,
    /// Machine code (`rate_limited`, `server_shutting_down`, ...: [`ErrorCode`]); numbers are
    /// turned into text.
    pub code: Option<String>,
    /// The error's `type`.
    pub kind: Option<String>,
}

/// What one `data:` payload of a streamed chat completion says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChatDelta {
    /// New answer text, if any.
    pub content: Option<String>,
    /// `stop`, `length`, `content_filter`, ... when the choice finished.
    pub finish_reason: Option<String>,
    /// Usage, on the usage chunk.
    pub usage: Option<Usage>,
    /// How many `choices` the chunk has; `None` when it has no `choices` array (a usage-only
    /// payload without one, an error event, `[DONE]`).
    pub choices: Option<usize>,
    /// True for the `[DONE]` sentinel.
    pub done: bool,
    /// An error event.
    pub error: Option<ErrorEvent>,
}

/// A `data:` payload that is not a chat chunk.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ChunkError {
    /// Not JSON.
    #[error("the chat stream sent invalid JSON ({reason}): {snippet}")]
    InvalidJson {
        /// The parser's complaint.
        reason: String,
        /// The first characters of the payload.
        snippet: String,
    },
    /// JSON, but not an object with `choices`, `usage` or `error`.
    #[error("the chat stream sent an unexpected payload (not a chat.completion.chunk): {0}")]
    Unexpected(String),
}

/// The first 120 bytes of a payload (cut at a character boundary), for error messages.
fn snippet(s: &str) -> String {
    s[..crate::text::floor_char_boundary(s, 120)].to_string()
}

/// Decode one `data:` payload of an OpenAI chat completion stream: `[DONE]`, a
/// `chat.completion.chunk` (content delta, finish reason, usage), or an error event
/// (`{"error": {...}}` with a non-null `error`, or `{"type": "error", "message": ...}`).
/// A non-streamed `chat.completion` body also works (its `message.content` becomes `content`).
/// The one decoder of streamed answers: the widget reads answers with it and the proxy checks
/// (and captures, for its answer cache) the upstream's events with it.
pub fn parse_chat_chunk(data: &str) -> Result<ChatDelta, ChunkError> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(ChatDelta { done: true, ..ChatDelta::default() });
    }
    let v = json::parse(data.as_bytes())
        .map_err(|reason| ChunkError::InvalidJson { reason, snippet: snippet(data) })?;
    if !matches!(v, Value::Object(_)) {
        return Err(ChunkError::Unexpected(snippet(data)));
    }
    let mut delta = ChatDelta::default();
    let err = v.get("error").filter(|e| !matches!(e, Value::Null));
    if err.is_some() || v.get("type").and_then(Value::as_str) == Some("error") {
        // `{"error": {...}}`, `{"error": "text"}`, or the error object's fields at the top.
        let e = match err {
            Some(e @ Value::Object(_)) => e,
            Some(other) => {
                delta.error = Some(ErrorEvent {
                    message: other.text().unwrap_or_else(|| "unknown error".into()),
                    ..ErrorEvent::default()
                });
                return Ok(delta);
            }
            None => &v,
        };
        delta.error = Some(ErrorEvent {
            message: e
                .get("message")
                .and_then(Value::text)
                .unwrap_or_else(|| "unknown error".into()),
            code: e.get("code").and_then(Value::text),
            kind: e.get("type").and_then(Value::text),
        });
        return Ok(delta);
    }
    let choices = v.get("choices");
    let usage = v.get("usage").filter(|u| !matches!(u, Value::Null));
    if choices.is_none() && usage.is_none() {
        return Err(ChunkError::Unexpected(snippet(data)));
    }
    if let Some(u) = usage {
        // A count that is missing or not a whole number reads as 0.
        let n = |k: &str| match u.get(k) {
            Some(Value::Number(n)) => n.parse().unwrap_or(0),
            _ => 0,
        };
        delta.usage = Some(Usage {
            prompt_tokens: n("prompt_tokens"),
            completion_tokens: n("completion_tokens"),
            total_tokens: n("total_tokens"),
        });
    }
    if let Some(Value::Array(items)) = choices {
        delta.choices = Some(items.len());
        if let Some(first) = items.first() {
            let content = first
                .get("delta")
                .and_then(|d| d.get("content"))
                .or_else(|| first.get("message").and_then(|m| m.get("content")));
            delta.content = content.and_then(Value::as_str).map(str::to_string);
            delta.finish_reason =
                first.get("finish_reason").and_then(Value::as_str).map(str::to_string);
        }
    }
    Ok(delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_read_back_and_unknown_ones_are_none() {
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
        }
        let mut names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len(), "codes are distinct");
        assert_eq!(ErrorCode::parse("http_404"), None);
        assert_eq!(ErrorCode::parse(""), None);
    }

    #[test]
    fn tasks_read_back() {
        for t in [Task::Answer, Task::Rewrite] {
            assert_eq!(Task::parse(t.as_str()), Some(t));
        }
        assert_eq!(Task::parse("summarise"), None);
    }

    #[test]
    fn the_docent_fields_keys_are_the_constants() {
        let full = DocentField {
            task: Some("answer".into()),
            language: Some("de".into()),
            page: Some("https://docs.example/p".into()),
            index: Some("00ff00ff00ff00ff".into()),
            namespace: Some("v2".into()),
        };
        let v = serde_json::to_value(&full).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        let mut want = [
            DocentField::TASK,
            DocentField::LANGUAGE,
            DocentField::PAGE,
            DocentField::INDEX,
            DocentField::NAMESPACE,
        ];
        want.sort();
        assert_eq!(keys, want);
        let back: DocentField = serde_json::from_value(v).unwrap();
        assert_eq!(back, full);
        let empty: DocentField = serde_json::from_str(r#"{"future":1}"#).unwrap();
        assert_eq!(empty, DocentField::default());
    }

    #[test]
    fn every_docent_header_is_exposed_to_browsers() {
        let exposed: Vec<&str> = EXPOSED_HEADERS.split(", ").collect();
        for h in [
            SYSTEM_TOKENS_HEADER,
            CONTEXT_WINDOW_HEADER,
            DROPPED_MESSAGES_HEADER,
            CACHE_HEADER,
            CACHE_KEY_HEADER,
            "retry-after",
        ] {
            assert!(exposed.contains(&h), "{h}");
        }
        assert!(exposed.iter().all(|h| !h.contains(' ') && *h == h.to_ascii_lowercase()));
        assert!(is_cache_key(&"ab".repeat(32)) && !is_cache_key("not-a-key"));
        assert!(!is_cache_key(&"AB".repeat(32)) && !is_cache_key(&"xy".repeat(32)));
    }

    #[test]
    fn content_deltas_and_finish_reasons_are_decoded() {
        let d = parse_chat_chunk(r#"{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi [1]"},"finish_reason":null}]}"#).unwrap();
        assert_eq!(d.content.as_deref(), Some("Hi [1]"));
        assert_eq!((d.finish_reason, d.choices, d.done), (None, Some(1), false));
        let d = parse_chat_chunk(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#)
            .unwrap();
        assert_eq!(d.content, None);
        assert_eq!(d.finish_reason.as_deref(), Some("stop"));
        let d = parse_chat_chunk(r#"{"choices":[{"delta":{"content":"caf\u00e9 \ud83d\ude00"}}]}"#)
            .unwrap();
        assert_eq!(d.content.as_deref(), Some("café 😀"));
    }

    #[test]
    fn the_usage_chunk_is_decoded() {
        let d = parse_chat_chunk(r#"{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}"#).unwrap();
        assert_eq!(
            d.usage,
            Some(Usage { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 })
        );
        assert_eq!((d.content, d.choices), (None, Some(0)));
        let d =
            parse_chat_chunk(r#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#).unwrap();
        assert_eq!(d.usage, None);
        let d =
            parse_chat_chunk(r#"{"usage":{"prompt_tokens":5,"completion_tokens":"x"}}"#).unwrap();
        assert_eq!(d.usage, Some(Usage { prompt_tokens: 5, ..Usage::default() }));
        assert_eq!(d.choices, None, "no choices array");
        let odd = r#"{"choices":[],"usage":{"prompt_tokens":18446744073709551615,
            "completion_tokens":-1,"total_tokens":18446744073709551616}}"#;
        let d = parse_chat_chunk(odd).unwrap();
        assert_eq!(d.usage, Some(Usage { prompt_tokens: u64::MAX, ..Usage::default() }));
        let d = parse_chat_chunk(r#"{"choices":[],"usage":{"prompt_tokens":1.5}}"#).unwrap();
        assert_eq!(d.usage, Some(Usage::default()));
    }

    #[test]
    fn done_sentinel_is_recognised() {
        assert!(parse_chat_chunk("[DONE]").unwrap().done);
        assert!(parse_chat_chunk(" [DONE]\n").unwrap().done);
    }

    #[test]
    fn error_events_carry_message_code_and_type() {
        let d = parse_chat_chunk(
            r#"{"error":{"message":"upstream broke","type":"server_error","code":"upstream_error"}}"#,
        )
        .unwrap();
        let e = d.error.unwrap();
        assert_eq!(e.message, "upstream broke");
        assert_eq!(e.code.as_deref(), Some("upstream_error"));
        assert_eq!(ErrorCode::parse(e.code.as_deref().unwrap()), Some(ErrorCode::UpstreamError));
        assert_eq!(e.kind.as_deref(), Some("server_error"));
        let d = parse_chat_chunk(r#"{"error":{"message":"slow down","code":429}}"#).unwrap();
        assert_eq!(d.error.unwrap().code.as_deref(), Some("429"));
        let d = parse_chat_chunk(r#"{"type":"error","message":"overloaded"}"#).unwrap();
        assert_eq!(d.error.unwrap().message, "overloaded");
    }

    #[test]
    fn error_events_with_odd_shapes_still_give_a_message() {
        let message = |data: &str| parse_chat_chunk(data).unwrap().error.unwrap().message;
        assert_eq!(message(r#"{"error":"plain text"}"#), "plain text");
        assert_eq!(message(r#"{"error":{"message":503}}"#), "503");
        assert_eq!(message(r#"{"error":{"code":"x"}}"#), "unknown error");
        assert_eq!(message(r#"{"error":[1]}"#), "unknown error");
        assert_eq!(
            parse_chat_chunk(r#"{"error":"overloaded"}"#).unwrap().error.unwrap().code,
            None
        );
        // `"error": null` is no error (some servers send it on every chunk).
        let d =
            parse_chat_chunk(r#"{"error":null,"choices":[{"delta":{"content":"a"}}]}"#).unwrap();
        assert_eq!((d.error, d.content.as_deref()), (None, Some("a")));
    }

    #[test]
    fn a_non_streamed_completion_body_also_decodes() {
        let d = parse_chat_chunk(r#"{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}"#).unwrap();
        assert_eq!(d.content.as_deref(), Some("whole"));
        assert_eq!(d.finish_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn garbage_payloads_give_clear_errors_not_panics() {
        let e = parse_chat_chunk("{not json").unwrap_err();
        assert!(e.to_string().contains("invalid JSON"), "{e}");
        let e = parse_chat_chunk("[1,2]").unwrap_err();
        assert!(e.to_string().contains("unexpected payload"), "{e}");
        let e = parse_chat_chunk(r#"{"hello":1}"#).unwrap_err();
        assert!(e.to_string().contains("unexpected payload"), "{e}");
        assert!(parse_chat_chunk("").is_err());
        let long = format!("{{\"x\": \"{}", "é".repeat(500));
        let e = parse_chat_chunk(&long).unwrap_err();
        assert!(e.to_string().len() < 250, "the snippet is short: {e}");
    }
}

//! Server-sent events: an incremental parser (bytes may arrive split anywhere, even inside a
//! UTF-8 sequence or between `\r` and `\n`) and a decoder for OpenAI `chat.completion.chunk` data.

use serde::{Deserialize, Serialize};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, when given.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Incremental SSE parser (WHATWG event-stream rules): lines end with CRLF, LF or CR; lines
/// starting with `:` are comments; `data:` lines accumulate; a blank line dispatches; one space
/// after the colon is dropped; `id`/`retry`/unknown fields are ignored. A leading BOM is skipped.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    event: Option<String>,
    after_cr: bool,
    started: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Feed bytes; returns the events completed by them, in order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' => self.end_line(&mut out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(&mut out);
                }
                _ => self.line.push(b),
            }
        }
        out
    }

    /// End of stream: an unterminated last line is processed and a pending event is returned
    /// (lenient: servers that omit the final blank line still deliver their last event).
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            self.end_line(&mut out);
        }
        self.end_line(&mut out);
        self.after_cr = false;
        out.pop()
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let raw = std::mem::take(&mut self.line);
        let mut line = String::from_utf8_lossy(&raw).into_owned();
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_string();
            }
        }
        if line.is_empty() {
            if self.has_data {
                let mut data = std::mem::take(&mut self.data);
                if data.ends_with('\n') {
                    data.pop();
                }
                out.push(SseEvent { event: self.event.take(), data });
            }
            self.has_data = false;
            self.data.clear();
            self.event = None;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
    }
}

/// Token usage reported by the API (the final chunk with `stream_options.include_usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Total tokens.
    #[serde(default)]
    pub total_tokens: u64,
}

/// An error object (`{"error": {"message", "type", "code"}}`) sent by the API or the proxy.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ApiError {
    /// Human-readable message.
    pub message: String,
    /// Machine code (`rate_limited`, `content_flagged`, ...); numbers are turned into text.
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
    /// True for the `[DONE]` sentinel.
    pub done: bool,
    /// An error event.
    pub error: Option<ApiError>,
}

/// A `data:` payload that is not a chat chunk.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SseError {
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

fn snippet(s: &str) -> String {
    let mut end = s.len().min(120);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

fn text_of(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Decode one `data:` payload of an OpenAI chat completion stream: `[DONE]`, a
/// `chat.completion.chunk` (content delta, finish reason, usage), or `{"error": {...}}`.
/// A non-streamed `chat.completion` body also works (its `message.content` becomes `content`).
pub fn parse_chat_chunk(data: &str) -> Result<ChatDelta, SseError> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(ChatDelta { done: true, ..ChatDelta::default() });
    }
    let v: serde_json::Value = serde_json::from_str(data)
        .map_err(|e| SseError::InvalidJson { reason: e.to_string(), snippet: snippet(data) })?;
    let obj = v.as_object().ok_or_else(|| SseError::Unexpected(snippet(data)))?;
    let mut delta = ChatDelta::default();
    if let Some(err) = obj.get("error") {
        let e = match err {
            serde_json::Value::Object(e) => ApiError {
                message: e
                    .get("message")
                    .and_then(text_of)
                    .unwrap_or_else(|| "unknown error".into()),
                code: e.get("code").and_then(text_of),
                kind: e.get("type").and_then(text_of),
            },
            other => ApiError {
                message: text_of(other).unwrap_or_else(|| other.to_string()),
                code: None,
                kind: None,
            },
        };
        delta.error = Some(e);
        return Ok(delta);
    }
    let choices = obj.get("choices");
    let usage = obj.get("usage").filter(|u| !u.is_null());
    if choices.is_none() && usage.is_none() {
        return Err(SseError::Unexpected(snippet(data)));
    }
    if let Some(u) = usage {
        delta.usage = Some(serde_json::from_value(u.clone()).map_err(|e| {
            SseError::InvalidJson { reason: e.to_string(), snippet: snippet(data) }
        })?);
    }
    if let Some(first) = choices.and_then(|c| c.as_array()).and_then(|a| a.first()) {
        let content = first
            .get("delta")
            .and_then(|d| d.get("content"))
            .or_else(|| first.get("message").and_then(|m| m.get("content")));
        delta.content = content.and_then(|c| c.as_str()).map(str::to_string);
        delta.finish_reason =
            first.get("finish_reason").and_then(|f| f.as_str()).map(str::to_string);
    }
    Ok(delta)
}

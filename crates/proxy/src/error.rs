//! Every error the proxy answers with, as OpenAI-shaped JSON:
//! `{"error": {"message", "type", "code", "param": null}}` (+ `"categories"` for flagged content).
//!
//! Messages are written for the caller and never contain upstream internals or keys.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use docent_core::wire::ErrorCode as WireCode;
use serde_json::json;

/// What an upstream call was waiting for when it timed out ([`ApiError::UpstreamTimeout`]).
/// Only a [`Waited::Connect`] timeout means the provider never got the prompt (so nothing is
/// billed for it, see chat.rs's `Refund`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The connection (the request never reached the provider).
    Connect,
    /// The response's first byte.
    FirstByte,
    /// The streamed answer's first token.
    FirstToken,
    /// The next part of a response being read.
    Reading,
    /// The end of a whole (not streamed) answer.
    WholeAnswer,
}

impl Waited {
    /// How the error message names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Waited::Connect => "connect",
            Waited::FirstByte => "first byte",
            Waited::FirstToken => "first token",
            Waited::Reading => "reading the answer",
            Waited::WholeAnswer => "the whole answer",
        }
    }
}

/// An error answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ApiError {
    /// 503 `no_chat_model`: no chat upstream is configured (the widget answers extractively).
    NoChatModel,
    /// 503 `no_embedding_model`: no embeddings provider is configured.
    NoEmbeddingModel,
    /// 503 `no_moderation_model`: no moderation provider is configured.
    NoModerationModel,
    /// 400 `content_flagged`: moderation flagged the conversation.
    ContentFlagged {
        /// The flagged categories (union over all messages).
        categories: Vec<String>,
    },
    /// 429 `rate_limited`, with `Retry-After` seconds.
    RateLimited {
        /// Seconds until a retry may succeed.
        retry_after: u64,
        /// What ran out (for the message).
        what: &'static str,
    },
    /// 503 `server_busy`, with `Retry-After` seconds: this server's own queue is full.
    Busy {
        /// Seconds until a retry may succeed.
        retry_after: u64,
        /// What is queued (for the message).
        what: &'static str,
    },
    /// 413 `body_too_large`.
    BodyTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// 400 `too_many_messages`.
    TooManyMessages {
        /// Messages sent.
        got: usize,
        /// The limit.
        limit: usize,
    },
    /// 400 `input_too_long`.
    InputTooLong {
        /// Tokens counted.
        got: usize,
        /// The limit.
        limit: usize,
    },
    /// 400 `context_length_exceeded`: the system prompt, the question and the answer's room
    /// do not fit the model's context window even with every older turn left out.
    ContextTooLong {
        /// Tokens the request needs (prompt + answer room).
        needed: usize,
        /// The model's context window.
        window: usize,
        /// Tokens of the server's system prompt (part of `needed`).
        system: usize,
    },
    /// 400 `invalid_role`: only `user` and `assistant` are accepted from clients.
    InvalidRole {
        /// The role sent.
        role: String,
    },
    /// 400 `invalid_request`: malformed JSON or a bad field.
    InvalidRequest(String),
    /// 403 `origin_not_allowed`.
    OriginNotAllowed,
    /// 408 `request_timeout`: the body did not arrive within `body_timeout_ms`.
    RequestTimeout,
    /// 502 `upstream_error`.
    Upstream(String),
    /// 502 `upstream_error`: the provider answered 5xx (after the retries). Its `Retry-After`,
    /// if it sent one, is passed on so clients (OpenAI's SDKs, the widget) wait as asked.
    UpstreamStatus {
        /// The provider's status.
        status: u16,
        /// Its `Retry-After`, in seconds (at most [`crate::upstream::MAX_RETRY_AFTER_SECS`]).
        retry_after: Option<u64>,
    },
    /// 504 `upstream_timeout`: what the server was waiting for.
    UpstreamTimeout(Waited),
    /// 502 `moderation_failed`: moderation gave no usable verdict, so the request is refused.
    ModerationFailed(&'static str),
    /// 400 `embedding_model_mismatch`.
    EmbeddingModelMismatch {
        /// The model the proxy embeds with.
        server: String,
        /// The model the client asked for.
        client: String,
    },
    /// 400 `embedding_model_mismatch`: the client's index expects another query prompt than
    /// the one this server puts before questions.
    EmbeddingPromptMismatch {
        /// The prompt the proxy uses.
        server: String,
        /// The prompt the client's index expects.
        client: String,
    },
    /// 503 `limits_unavailable`: the shared limit store (`[limits] store`) cannot be reached and
    /// `store_unavailable = "closed"`, so nothing is admitted; comes with `Retry-After`.
    LimitsUnavailable,
    /// 404 `not_found`.
    NotFound,
    /// 405 `method_not_allowed`.
    MethodNotAllowed,
    /// 500 `internal_error` (details only in the server log).
    Internal,
}

impl ApiError {
    /// HTTP status.
    pub fn status(&self) -> StatusCode {
        use ApiError::*;
        match self {
            NoChatModel | NoEmbeddingModel | NoModerationModel | LimitsUnavailable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ContentFlagged { .. }
            | TooManyMessages { .. }
            | InputTooLong { .. }
            | ContextTooLong { .. }
            | InvalidRole { .. }
            | InvalidRequest(_)
            | EmbeddingModelMismatch { .. }
            | EmbeddingPromptMismatch { .. } => StatusCode::BAD_REQUEST,
            RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
            BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            OriginNotAllowed => StatusCode::FORBIDDEN,
            RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Upstream(_) | UpstreamStatus { .. } | ModerationFailed(_) => StatusCode::BAD_GATEWAY,
            UpstreamTimeout(_) => StatusCode::GATEWAY_TIMEOUT,
            NotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Internal => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable `error.code` clients switch on ([`docent_core::wire::ErrorCode`]).
    pub fn wire_code(&self) -> WireCode {
        use ApiError::*;
        match self {
            NoChatModel => WireCode::NoChatModel,
            LimitsUnavailable => WireCode::LimitsUnavailable,
            NoEmbeddingModel => WireCode::NoEmbeddingModel,
            NoModerationModel => WireCode::NoModerationModel,
            ContentFlagged { .. } => WireCode::ContentFlagged,
            RateLimited { .. } => WireCode::RateLimited,
            Busy { .. } => WireCode::ServerBusy,
            BodyTooLarge { .. } => WireCode::BodyTooLarge,
            TooManyMessages { .. } => WireCode::TooManyMessages,
            InputTooLong { .. } => WireCode::InputTooLong,
            ContextTooLong { .. } => WireCode::ContextLengthExceeded,
            InvalidRole { .. } => WireCode::InvalidRole,
            InvalidRequest(_) => WireCode::InvalidRequest,
            OriginNotAllowed => WireCode::OriginNotAllowed,
            RequestTimeout => WireCode::RequestTimeout,
            Upstream(_) | UpstreamStatus { .. } => WireCode::UpstreamError,
            UpstreamTimeout(_) => WireCode::UpstreamTimeout,
            ModerationFailed(_) => WireCode::ModerationFailed,
            EmbeddingModelMismatch { .. } | EmbeddingPromptMismatch { .. } => {
                WireCode::EmbeddingModelMismatch
            }
            NotFound => WireCode::NotFound,
            MethodNotAllowed => WireCode::MethodNotAllowed,
            Internal => WireCode::InternalError,
        }
    }

    /// [`Self::wire_code`] as it is sent, e.g. `"rate_limited"`.
    pub fn code(&self) -> &'static str {
        self.wire_code().as_str()
    }

    /// OpenAI's `error.type`.
    pub fn kind(&self) -> &'static str {
        use ApiError::*;
        match self {
            NoChatModel | NoEmbeddingModel | NoModerationModel | LimitsUnavailable => {
                "service_unavailable"
            }
            RateLimited { .. } => "rate_limit_error",
            OriginNotAllowed => "permission_error",
            Upstream(_)
            | UpstreamStatus { .. }
            | UpstreamTimeout(_)
            | ModerationFailed(_)
            | Busy { .. }
            | Internal => "server_error",
            NotFound => "not_found_error",
            _ => "invalid_request_error",
        }
    }

    /// Human message.
    pub fn message(&self) -> String {
        use ApiError::*;
        match self {
            LimitsUnavailable => "the rate-limit store is unreachable, so no request is admitted (store_unavailable = \"closed\"); retry shortly".into(),
            NoChatModel => "no chat model is configured on this server; configure [serve.chat] in docent.toml (clients fall back to extractive answers)".into(),
            NoEmbeddingModel => "no embeddings provider is configured on this server; configure [serve.embeddings] in docent.toml".into(),
            NoModerationModel => "no moderation provider is configured on this server; set [moderation] provider in docent.toml".into(),
            ContentFlagged { categories } => format!("the conversation was flagged by moderation ({}); rephrase the question", categories.join(", ")),
            RateLimited { retry_after, what } => format!("too many {what}; retry after {retry_after} s"),
            Busy { retry_after, what } => format!("the server is busy: too many {what}; retry after {retry_after} s"),
            BodyTooLarge { limit } => format!("request body is larger than {limit} bytes; send fewer or shorter messages"),
            TooManyMessages { got, limit } => format!("{got} messages sent, at most {limit} allowed; drop older turns"),
            InputTooLong { got, limit } => format!("input is {got} tokens, at most {limit} allowed; send fewer sources or older turns"),
            ContextTooLong { needed, window, system } => format!("the request needs {needed} tokens (the server's {system}-token system prompt, the conversation and room for the answer) but the model's context window is {window}; shorten the question or send fewer sources (server operators: set [limits] context_window if the model's window is larger, or shorten [prompt] system)"),
            InvalidRole { role } => format!("role \"{role}\" is not accepted; clients may only send \"user\" and \"assistant\" messages (the server sets the system prompt)"),
            InvalidRequest(m) => m.clone(),
            OriginNotAllowed => "this origin is not allowed to use this server; add it to [serve] allow_origins".into(),
            RequestTimeout => "the request body did not arrive in time; send it again".into(),
            Upstream(m) => m.clone(),
            UpstreamStatus { status, retry_after: None } => {
                format!("the model provider answered HTTP {status}")
            }
            UpstreamStatus { status, retry_after: Some(s) } => {
                format!("the model provider answered HTTP {status}; it asks to retry after {s} s")
            }
            UpstreamTimeout(what) => format!("the model provider did not answer in time ({}); try again", what.as_str()),
            ModerationFailed(why) => format!("{why}, so the conversation could not be checked and was not answered; try again later"),
            EmbeddingModelMismatch { server, client } => format!(
                "this server embeds with \"{server}\" but the request asked for \"{client}\"; rebuild the index with the server's model or change [serve.embeddings] model"
            ),
            EmbeddingPromptMismatch { server, client } => format!(
                "this server puts the prompt {server:?} before questions but the index expects {client:?}; set [serve.embeddings] query_prompt to the index's (or remove it and set [serve] index) or rebuild the index"
            ),
            NotFound => "no such endpoint; see /v1/chat/completions, /v1/embeddings, /v1/moderations, /v1/feedback, /healthz, /metrics".into(),
            MethodNotAllowed => "method not allowed on this endpoint".into(),
            Internal => "internal error; see the server log".into(),
        }
    }

    /// Seconds for the `Retry-After` header, for the errors that say when to come back.
    fn retry_after(&self) -> Option<u64> {
        match self {
            ApiError::RateLimited { retry_after, .. } | ApiError::Busy { retry_after, .. } => {
                Some(*retry_after)
            }
            ApiError::UpstreamStatus { retry_after, .. } => *retry_after,
            ApiError::LimitsUnavailable => Some(1),
            _ => None,
        }
    }

    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        let mut err = json!({"message": self.message(), "type": self.kind(), "code": self.code(), "param": null});
        if let ApiError::ContentFlagged { categories } = self {
            err["categories"] = json!(categories);
        }
        json!({ "error": err })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message(), self.code())
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut r = (self.status(), Json(self.body())).into_response();
        if let Some(s) = self.retry_after() {
            r.headers_mut().insert("retry-after", HeaderValue::from(s));
        }
        r.extensions_mut().insert(ErrorCode(self.code()));
        r
    }
}

/// Marker put on error responses so logs/metrics/audit can see the code.
#[derive(Debug, Clone, Copy)]
pub struct ErrorCode(pub &'static str);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flagged_content_lists_categories_in_the_body() {
        let e = ApiError::ContentFlagged { categories: vec!["violence".into()] };
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        assert_eq!(e.body()["error"]["categories"][0], "violence");
        assert_eq!(e.body()["error"]["code"], "content_flagged");
    }

    #[test]
    fn a_busy_server_says_503_server_busy_and_when_to_retry() {
        let r = ApiError::Busy { retry_after: 1, what: "questions" }.into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()["retry-after"], "1");
        assert_eq!(ApiError::Busy { retry_after: 1, what: "x" }.code(), "server_busy");
    }

    #[test]
    fn rate_limited_sets_retry_after() {
        let r = ApiError::RateLimited { retry_after: 7, what: "requests" }.into_response();
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()["retry-after"], "7");
    }
}

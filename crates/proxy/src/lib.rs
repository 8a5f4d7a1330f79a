//! docent-proxy: `docent serve`, the thin OpenAI-compatible proxy that holds the API key and
//! defends itself.
//!
//! - [`app`]: `POST /v1/chat/completions` (streamed and not), `POST /v1/embeddings`,
//!   `POST /v1/moderations`, `POST /v1/feedback`, `GET /healthz`, `GET /metrics`, and `/mcp`
//!   (the docs tools for AI agents over MCP, [`mcp`]) when `[mcp] index` is set.
//! - Guards: origin allowlist (checked before anything else), per-IP and global token buckets
//!   (requests and tokens per minute), body size, message count, input tokens (tiktoken),
//!   `max_tokens` cap, server-chosen model, user/assistant roles only, opt-in moderation of the
//!   whole conversation, and the model's context window ([`budget`]: the oldest turns are left
//!   out when the server's system prompt + conversation + answer would overflow it).
//! - Upstream: named providers (`openai`, `azure-openai`, `openai-compatible`, `local`
//!   embeddings), connect / first-byte / idle timeouts, retries only before the first byte,
//!   chunks forwarded as they arrive, upstream cancelled when the client disconnects.
//! - Opt-in answer cache ([`cache`]) for single-turn questions, in-process or in Redis.
//! - Limits in-process or shared by replicas in Redis ([`store`]).
//! - Observability: Prometheus metrics, structured logs with request ids, optional audit log,
//!   optional OpenTelemetry traces (cargo feature `otel`, OTLP/HTTP JSON).
//!
//! User documentation: docs/proxy.md.

pub mod analytics;
pub mod app;
pub mod budget;
pub mod cache;
pub mod chat;
pub mod config;
pub mod endpoints;
pub mod error;
pub mod jsonl;
pub mod limits;
pub mod local;
pub mod mcp;
pub mod metrics;
#[cfg(feature = "otel")]
pub mod otel;
pub mod pages;
pub mod prompt;
pub mod redact;
pub mod relay;
pub mod serve;
pub mod sse;
pub mod state;
pub mod store;
pub mod tokens;
pub mod upstream;

use std::sync::Arc;

use axum::Router;

pub use config::{Config, ConfigError};
pub use error::ApiError;
pub use serve::{check_index, load_config, run, serve, shutdown_signal, ServeArgs};

/// The whole HTTP app for a (validated) config. If the config cannot be turned into a server
/// (e.g. an API key env var vanished since validation), every request answers 500 and the
/// reason is logged; [`serve`] reports such errors at start instead.
pub fn app(cfg: Arc<Config>) -> Router {
    match app::AppState::new(cfg) {
        Ok(state) => app::router(Arc::new(state)),
        Err(e) => app::broken_router(e.to_string()),
    }
}

//! The state every handler shares ([`AppState`]: config, providers, limits, metrics, logs, the
//! shutdown signal) and the small types the guard puts on requests and responses.

use std::net::IpAddr;
use std::sync::Arc;

use crate::cache::AnswerCache;
use crate::config::{ChatConfig, Cidr, Config, EmbeddingsConfig, ProviderKind};
use crate::jsonl::JsonlWriter;
use crate::local::LocalEmbeddings;
use crate::metrics::Metrics;
use crate::redact::Redactor;
use crate::store::Limits;
use crate::upstream::Provider;

/// How embeddings are computed.
pub enum EmbedBackend {
    /// An HTTP provider.
    Remote(Box<Provider>),
    /// The in-process model, loaded on first use (or at start by [`crate::serve`]).
    Local(LocalEmbeddings),
}

/// Everything the handlers share.
pub struct AppState {
    /// The validated config.
    pub cfg: Arc<Config>,
    /// Metrics registry (shared with the log writers' threads).
    pub metrics: Arc<Metrics>,
    /// Rate limits and stream slots (`max_concurrent_streams`, reserved before the upstream
    /// call), in this process or in the shared store.
    pub limits: Arc<Limits>,
    /// The answer cache, when `[cache] enabled` (in Redis when the limits are).
    pub cache: Option<AnswerCache>,
    /// Chat model and provider, when configured.
    pub chat: Option<(ChatConfig, Provider)>,
    /// Embeddings model config and backend, when configured.
    pub embed: Option<(EmbeddingsConfig, EmbedBackend)>,
    /// Moderation provider, when configured.
    pub moderation: Option<Provider>,
    /// Parsed `trusted_proxies`.
    pub trusted: Vec<Cidr>,
    /// Audit log, when configured.
    pub audit: Option<JsonlWriter>,
    /// Feedback log, when configured.
    pub feedback: Option<JsonlWriter>,
    /// Where `[analytics]` records go, when enabled.
    pub analytics: Option<crate::analytics::AnalyticsSink>,
    /// Set when the shutdown grace period is over: open streams end with an error event.
    pub shutdown: tokio::sync::watch::Sender<bool>,
}

/// The client's IP (after the trusted-proxy rules), put in request extensions by the middleware.
#[derive(Debug, Clone, Copy)]
pub struct ClientIp(pub IpAddr);

/// The request id (client's `x-request-id` when sane, else generated).
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// Put on streaming responses: the stream records its own duration when it ends.
#[derive(Debug, Clone, Copy)]
pub struct StreamingResponse;

/// Details a handler wants in the audit log.
#[derive(Debug, Clone, Default)]
pub struct AuditInfo(pub serde_json::Map<String, serde_json::Value>);

impl AppState {
    /// Wait (at most `within` per file) until the JSON-lines logs hold every line queued so
    /// far; a log whose disk does not keep up is named in a warning.
    pub fn flush_logs(&self, within: std::time::Duration) {
        let analytics = match &self.analytics {
            Some(crate::analytics::AnalyticsSink::File { writer }) => Some(writer),
            _ => None,
        };
        for w in [self.audit.as_ref(), self.feedback.as_ref(), analytics].into_iter().flatten() {
            if !w.flush(within) {
                tracing::warn!(path = %w.path().display(), "log lines still queued at shutdown were lost");
            }
        }
    }

    /// Build the state from a validated config (reads API keys from the environment).
    pub fn new(cfg: Arc<Config>) -> anyhow::Result<AppState> {
        let redactor = Arc::new(Redactor::from_config(&cfg));
        // A non-streamed answer gets no longer than a streamed one (`max_stream_secs`).
        let max_answer = std::time::Duration::from_secs(cfg.serve.max_stream_secs);
        let provider = |name: &str, p| {
            Provider::new(name, p, redactor.clone()).map(|p| p.answer_within(max_answer))
        };
        let chat = match cfg.chat_provider() {
            Some((c, p)) => Some((c.clone(), provider(&c.provider, p)?)),
            None => None,
        };
        let embed = match cfg.embeddings_provider() {
            Some((e, p)) if p.kind == ProviderKind::Local => Some((
                e.clone(),
                EmbedBackend::Local(LocalEmbeddings::new(&e.model, p.path.clone())),
            )),
            Some((e, p)) => {
                Some((e.clone(), EmbedBackend::Remote(Box::new(provider(&e.provider, p)?))))
            }
            None => None,
        };
        let moderation = match cfg.moderation_provider() {
            Some((name, p)) => Some(provider(name, p)?),
            None => None,
        };
        let metrics = Arc::new(Metrics::default());
        let cap = crate::jsonl::Cap::Bytes(cfg.serve.log_max_mb.saturating_mul(1 << 20));
        let open = |p: &Option<std::path::PathBuf>,
                    what: &'static str|
         -> anyhow::Result<Option<JsonlWriter>> {
            let log = what.trim_end_matches("_log");
            match p {
                Some(p) => Ok(Some(JsonlWriter::open(p, log, cap, metrics.clone()).map_err(|e| {
                    anyhow::anyhow!("cannot open the {what} file {}: {e}; fix [serve] {what} or the folder's permissions", p.display())
                })?)),
                None => Ok(None),
            }
        };
        let limits = Arc::new(Limits::new(&cfg.limits)?);
        let cache = cfg.cache.enabled.then(|| match limits.redis() {
            Some(r) => AnswerCache::redis(&cfg.cache, r.connection(), r.prefix(), limits.timeout()),
            None => AnswerCache::local(&cfg.cache),
        });
        let analytics = match (&cfg.analytics, limits.redis()) {
            (a, _) if !a.enabled => None,
            (a, Some(r)) if a.redis => Some(crate::analytics::AnalyticsSink::Redis {
                conn: r.connection(),
                key: crate::analytics::redis_key(r.prefix()),
                max: a.max_records,
            }),
            (a, _) => match &a.path {
                Some(p) => Some(crate::analytics::AnalyticsSink::file(p, a.max_records, metrics.clone()).map_err(|e| {
                    anyhow::anyhow!("cannot open the analytics file {}: {e}; fix [analytics] path or the folder's permissions", p.display())
                })?),
                None => anyhow::bail!("[analytics] is enabled with nowhere to write; set path = \"analytics.jsonl\" or redis = true"),
            },
        };
        let audit = open(&cfg.serve.audit_log, "audit_log")?;
        let feedback = open(&cfg.serve.feedback_log, "feedback_log")?;
        Ok(AppState {
            analytics,
            metrics,
            limits,
            cache,
            trusted: cfg.trusted_proxies(),
            audit,
            feedback,
            shutdown: tokio::sync::watch::Sender::new(false),
            chat,
            embed,
            moderation,
            cfg,
        })
    }
}

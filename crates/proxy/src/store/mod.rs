//! Where the rate limits (and the answer cache) live: in this process (the
//! default, [`local::LocalStore`]) or in Redis ([`redis::RedisStore`], `[limits] store =
//! "redis://..."`), shared by every replica so N replicas enforce the configured limits once.
//!
//! [`Limits`] is what the handlers call. It asks the configured [`LimitStore`]; when a shared
//! store fails or does not answer within `store_timeout_ms`, `[limits] store_unavailable`
//! decides: fall back to this replica's in-process buckets (`local`, with a warning and
//! `docent_limit_store_failures_total`) or refuse (`closed`, 503 `limits_unavailable`). After a
//! failure the shared store is skipped for [`BREAKER`], so an outage costs no request more than
//! one timeout.

pub mod local;
pub mod redis;

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

use crate::config::{LimitsConfig, StoreUnavailable};
use crate::error::ApiError;
use crate::limits::Refusal;
use crate::metrics::Metrics;

/// How long a failed shared store is skipped before it is tried again.
pub const BREAKER: Duration = Duration::from_secs(1);

/// A shared store did not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store answered with an error or the connection failed.
    #[error("limit store error: {0}")]
    Backend(String),
    /// No answer within `store_timeout_ms`.
    #[error("limit store timed out")]
    Timeout,
}

/// A stream slot, whatever store it was taken from; dropping it gives the slot back.
pub struct StreamSlot(#[allow(dead_code)] Box<dyn Send + Sync>);

impl std::fmt::Debug for StreamSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamSlot")
    }
}

impl StreamSlot {
    /// Wrap a store's own slot guard.
    pub fn new(guard: impl Send + Sync + 'static) -> StreamSlot {
        StreamSlot(Box::new(guard))
    }
}

/// Token buckets (per client and global, requests and tokens per minute) and stream slots.
/// Implemented in-process ([`local::LocalStore`]) and in Redis ([`redis::RedisStore`]).
pub trait LimitStore: Send + Sync + 'static {
    /// Take one request (when `tokens` is 0) or `tokens` tokens for `ip`, all-or-nothing;
    /// `Ok(Err(refusal))` when a bucket is short.
    fn take(
        &self,
        ip: IpAddr,
        tokens: u64,
    ) -> BoxFuture<'_, Result<Result<(), Refusal>, StoreError>>;
    /// Give back tokens charged but not used.
    fn refund(&self, ip: IpAddr, tokens: u64) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Take tokens used beyond the charge; never refused, the buckets may go into debt (at
    /// most one minute's worth).
    fn debit(&self, ip: IpAddr, tokens: u64) -> BoxFuture<'_, Result<(), StoreError>>;
    /// Take a stream slot (`Ok(None)` when all `max_concurrent_streams` are taken).
    fn take_stream(self: Arc<Self>) -> BoxFuture<'static, Result<Option<StreamSlot>, StoreError>>;
}

/// The limits the handlers use: the configured store, with the in-process one as fallback.
pub struct Limits {
    local: Arc<local::LocalStore>,
    shared: Option<Arc<dyn LimitStore>>,
    redis: Option<Arc<redis::RedisStore>>,
    on_failure: StoreUnavailable,
    timeout: Duration,
    /// Unix milliseconds until which the shared store is skipped (after a failure).
    skip_until: AtomicU64,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

impl Limits {
    /// Limits as configured: in-process, or shared in `[limits] store` (the connection is made
    /// on first use, so a store that is down at start does not stop the server).
    pub fn new(cfg: &LimitsConfig) -> anyhow::Result<Limits> {
        let local = Arc::new(local::LocalStore::new(cfg));
        let redis = match &cfg.store {
            Some(url) => Some(Arc::new(redis::RedisStore::new(url, cfg)?)),
            None => None,
        };
        let shared = redis.clone().map(|r| r as Arc<dyn LimitStore>);
        Ok(Limits {
            local,
            shared,
            redis,
            on_failure: cfg.store_unavailable,
            timeout: Duration::from_millis(cfg.store_timeout_ms),
            skip_until: AtomicU64::new(0),
        })
    }

    /// Whether the limits live in a shared store.
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// The shared store, unless it failed within the last [`BREAKER`].
    fn usable(&self) -> Option<&Arc<dyn LimitStore>> {
        let s = self.shared.as_ref()?;
        (now_ms() >= self.skip_until.load(Ordering::Relaxed)).then_some(s)
    }

    /// Run one shared-store operation within the timeout; a failure opens the breaker and is
    /// counted and logged (once per outage, not per request).
    async fn call<T>(
        &self,
        op: &'static str,
        m: &Metrics,
        f: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Option<T> {
        let r = match tokio::time::timeout(self.timeout, f).await {
            Ok(r) => r,
            Err(_) => Err(StoreError::Timeout),
        };
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                let until = now_ms() + BREAKER.as_millis() as u64;
                let before = self.skip_until.swap(until, Ordering::Relaxed);
                if before < now_ms() {
                    let then = match self.on_failure {
                        StoreUnavailable::Local => "using this replica's in-process limits",
                        StoreUnavailable::Closed => "refusing limited requests",
                    };
                    tracing::warn!(error = %e, op, "the shared limit store is unreachable; {then} (store_unavailable)");
                }
                self.failed(op, m);
                None
            }
        }
    }

    fn failed(&self, op: &'static str, m: &Metrics) {
        let outcome = match self.on_failure {
            StoreUnavailable::Local => "local",
            StoreUnavailable::Closed => "refused",
        };
        m.limit_store_failure(op, outcome);
    }

    /// Take one request (`tokens == 0`) or `tokens` tokens for `ip`. A refusal is counted in
    /// `docent_rate_limited_total` and answered 429; an unreachable store as configured.
    pub async fn take(&self, ip: IpAddr, tokens: u64, m: &Metrics) -> Result<(), ApiError> {
        let verdict = match self.shared.as_ref() {
            None => self.local.limiter().take(ip, tokens),
            Some(_) => match self.usable() {
                Some(s) => match self.call("take", m, s.take(ip, tokens)).await {
                    Some(v) => v,
                    None => self.when_down(ip, tokens)?,
                },
                None => {
                    self.failed("take", m);
                    self.when_down(ip, tokens)?
                }
            },
        };
        verdict.map_err(|r| {
            m.rate_limited(r.scope, r.what);
            tracing::warn!(
                scope = r.scope,
                what = r.what,
                retry_after = r.retry_after,
                "rate limited"
            );
            ApiError::RateLimited { retry_after: r.retry_after, what: r.what }
        })
    }

    fn when_down(&self, ip: IpAddr, tokens: u64) -> Result<Result<(), Refusal>, ApiError> {
        match self.on_failure {
            StoreUnavailable::Local => Ok(self.local.limiter().take(ip, tokens)),
            StoreUnavailable::Closed => Err(ApiError::LimitsUnavailable),
        }
    }

    /// Give back tokens charged up front but not used. Never waits: a shared store is refunded
    /// by a background task (a refund lost to an outage only makes the limit stricter).
    pub fn refund(self: &Arc<Self>, ip: IpAddr, tokens: u64) {
        self.adjust(ip, tokens, Adjust::Refund);
    }

    /// Take what an answer used beyond its up-front charge (the upstream counted more than the
    /// proxy reserved). Never waits and never refuses: the buckets go into debt, so the client's
    /// next request waits until it is paid off.
    pub fn debit(self: &Arc<Self>, ip: IpAddr, tokens: u64) {
        self.adjust(ip, tokens, Adjust::Debit);
    }

    /// A refund or a debit: in process, or through the shared store by a background task.
    fn adjust(self: &Arc<Self>, ip: IpAddr, tokens: u64, how: Adjust) {
        if tokens == 0 {
            return;
        }
        let Some(shared) = self.usable().cloned() else {
            let local = self.local.limiter();
            match how {
                Adjust::Refund => local.refund(ip, tokens),
                Adjust::Debit => local.debit(ip, tokens),
            }
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else { return };
        let timeout = self.timeout;
        rt.spawn(async move {
            let op = match how {
                Adjust::Refund => shared.refund(ip, tokens),
                Adjust::Debit => shared.debit(ip, tokens),
            };
            if let Ok(Err(e)) = tokio::time::timeout(timeout, op).await {
                let what = if matches!(how, Adjust::Refund) { "refund" } else { "debit" };
                tracing::debug!(error = %e, "token {what} to the shared store lost");
            }
        });
    }

    /// Settle a request charged `charged` tokens up front that used `used`: refund the
    /// difference, or debit it when the answer cost more than was reserved.
    pub fn settle(self: &Arc<Self>, ip: IpAddr, charged: u64, used: u64) {
        if used > charged {
            self.debit(ip, used - charged);
        } else {
            self.refund(ip, charged - used);
        }
    }

    /// Take a stream slot before the upstream is called; 429 when all are taken.
    pub async fn take_stream(&self, m: &Metrics) -> Result<StreamSlot, ApiError> {
        let slot = match self.shared.as_ref() {
            None => self.local.clone().take_local_stream(),
            Some(_) => {
                let got = match self.usable() {
                    Some(s) => self.call("stream", m, s.clone().take_stream()).await,
                    None => {
                        self.failed("stream", m);
                        None
                    }
                };
                match got {
                    Some(slot) => slot,
                    None if self.on_failure == StoreUnavailable::Local => {
                        self.local.clone().take_local_stream()
                    }
                    None => return Err(ApiError::LimitsUnavailable),
                }
            }
        };
        slot.ok_or_else(|| {
            m.rate_limited("streams", "streams");
            ApiError::RateLimited { retry_after: 5, what: "open streams on this server" }
        })
    }

    /// The in-process store (the fallback, and the answer cache's home without Redis).
    pub fn local(&self) -> &local::LocalStore {
        &self.local
    }

    /// The Redis store, when configured (the answer cache shares its connection).
    pub fn redis(&self) -> Option<&Arc<redis::RedisStore>> {
        self.redis.as_ref()
    }

    /// The store's operation timeout (`store_timeout_ms`).
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

/// Which way [`Limits::adjust`] moves the token buckets.
#[derive(Clone, Copy)]
enum Adjust {
    Refund,
    Debit,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(store: Option<&str>, on_failure: StoreUnavailable) -> LimitsConfig {
        LimitsConfig {
            requests_per_minute_per_ip: 2,
            store: store.map(str::to_string),
            store_unavailable: on_failure,
            max_concurrent_streams: 1,
            ..LimitsConfig::default()
        }
    }

    #[tokio::test]
    async fn the_in_process_store_answers_through_the_trait() {
        let s: Arc<dyn LimitStore> =
            Arc::new(local::LocalStore::new(&cfg(None, StoreUnavailable::Local)));
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert!(s.take(ip, 0).await.unwrap().is_ok());
        assert!(s.take(ip, 0).await.unwrap().is_ok());
        assert_eq!(s.take(ip, 0).await.unwrap().unwrap_err().scope, "ip");
        let slot = s.clone().take_stream().await.unwrap();
        assert!(slot.is_some());
        assert!(s.clone().take_stream().await.unwrap().is_none(), "one slot only");
        drop(slot);
        assert!(s.take_stream().await.unwrap().is_some(), "the slot came back");
    }

    #[tokio::test]
    async fn an_unreachable_store_falls_back_or_refuses_as_configured_and_quickly() {
        // Nothing listens on port 1: every store call fails at once.
        let m = Metrics::default();
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        let local =
            Limits::new(&cfg(Some("redis://127.0.0.1:1"), StoreUnavailable::Local)).unwrap();
        let started = std::time::Instant::now();
        local.take(ip, 0, &m).await.unwrap();
        local.take(ip, 0, &m).await.unwrap();
        let r = local.take(ip, 0, &m).await.unwrap_err();
        assert!(matches!(r, ApiError::RateLimited { .. }), "local buckets still limit: {r:?}");
        let _slot = local.take_stream(&m).await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(1), "{:?}", started.elapsed());
        assert!(
            m.counter("docent_limit_store_failures_total", &[("op", "take"), ("outcome", "local")])
                >= 3
        );
        let closed =
            Limits::new(&cfg(Some("redis://127.0.0.1:1"), StoreUnavailable::Closed)).unwrap();
        assert_eq!(closed.take(ip, 0, &m).await.unwrap_err(), ApiError::LimitsUnavailable);
        assert_eq!(closed.take_stream(&m).await.unwrap_err(), ApiError::LimitsUnavailable);
        assert!(
            m.counter(
                "docent_limit_store_failures_total",
                &[("op", "take"), ("outcome", "refused")]
            ) >= 1
        );
    }
}

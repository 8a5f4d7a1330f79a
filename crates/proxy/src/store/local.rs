//! The in-process store: this replica's token buckets ([`RateLimiter`]) and stream slots
//! ([`StreamSlots`]). The default, and the fallback while a shared store is unreachable.

use std::net::IpAddr;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{LimitStore, StoreError, StreamSlot};
use crate::config::LimitsConfig;
use crate::limits::{RateLimiter, Refusal, StreamSlots};

/// Limits held in this process.
#[derive(Debug)]
pub struct LocalStore {
    limiter: RateLimiter,
    streams: Arc<StreamSlots>,
}

impl LocalStore {
    /// Full buckets and free slots as configured.
    pub fn new(cfg: &LimitsConfig) -> LocalStore {
        LocalStore {
            limiter: RateLimiter::new(cfg),
            streams: StreamSlots::new(cfg.max_concurrent_streams),
        }
    }

    /// The token buckets.
    pub fn limiter(&self) -> &RateLimiter {
        &self.limiter
    }

    /// Take a stream slot now (`None` when all are taken).
    pub fn take_local_stream(self: Arc<Self>) -> Option<StreamSlot> {
        self.streams.try_take().map(StreamSlot::new)
    }

    /// Stream slots taken now.
    pub fn streams_used(&self) -> usize {
        self.streams.used()
    }
}

impl LimitStore for LocalStore {
    fn take(
        &self,
        ip: IpAddr,
        tokens: u64,
    ) -> BoxFuture<'_, Result<Result<(), Refusal>, StoreError>> {
        let r = self.limiter.take(ip, tokens);
        Box::pin(async move { Ok(r) })
    }

    fn refund(&self, ip: IpAddr, tokens: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        self.limiter.refund(ip, tokens);
        Box::pin(async { Ok(()) })
    }

    fn debit(&self, ip: IpAddr, tokens: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        self.limiter.debit(ip, tokens);
        Box::pin(async { Ok(()) })
    }

    fn take_stream(self: Arc<Self>) -> BoxFuture<'static, Result<Option<StreamSlot>, StoreError>> {
        let slot = self.take_local_stream();
        Box::pin(async move { Ok(slot) })
    }
}

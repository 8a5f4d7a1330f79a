//! Token-bucket rate limits: per client IP and global, on requests and on tokens per minute.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::config::LimitsConfig;

/// One token bucket: `capacity` tokens, refilled at `capacity` per minute.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn full(capacity: f64, now: Instant) -> Self {
        Bucket { tokens: capacity, last: now }
    }

    fn refill(&mut self, capacity: f64, now: Instant) {
        let rate = capacity / 60.0;
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + dt * rate).min(capacity);
        self.last = now;
    }

    /// Seconds until `n` tokens are available (0 when they are). A charge larger than the
    /// whole bucket is admitted from a full bucket, which it leaves in debt.
    fn wait_for(&self, n: f64, capacity: f64) -> u64 {
        if self.tokens >= n.min(capacity) {
            return 0;
        }
        let rate = capacity / 60.0;
        let need = n.min(capacity) - self.tokens;
        ((need / rate).ceil() as u64).max(1)
    }
}

/// The deepest a token bucket goes into debt: one minute's worth (so one bogus usage report
/// cannot lock a client, or the whole server, out for longer than two minutes).
fn floor(capacity: f64) -> f64 {
    -capacity
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// Seconds to wait.
    pub retry_after: u64,
    /// "ip" or "global".
    pub scope: &'static str,
    /// "requests" or "tokens".
    pub what: &'static str,
}

#[derive(Debug)]
struct Buckets {
    per_ip: HashMap<IpAddr, (Bucket, Bucket)>,
    global_req: Bucket,
    global_tok: Bucket,
}

/// All rate limits of the server.
#[derive(Debug)]
pub struct RateLimiter {
    cfg: LimitsConfig,
    inner: Mutex<Buckets>,
}

const MAX_TRACKED_IPS: usize = 100_000;

impl RateLimiter {
    /// New limiter with full buckets.
    pub fn new(cfg: &LimitsConfig) -> Self {
        let now = Instant::now();
        RateLimiter {
            cfg: cfg.clone(),
            inner: Mutex::new(Buckets {
                per_ip: HashMap::new(),
                global_req: Bucket::full(f64::from(cfg.requests_per_minute), now),
                global_tok: Bucket::full(f64::from(cfg.tokens_per_minute), now),
            }),
        }
    }

    fn caps(&self) -> (f64, f64, f64, f64) {
        (
            f64::from(self.cfg.requests_per_minute_per_ip),
            f64::from(self.cfg.tokens_per_minute_per_ip),
            f64::from(self.cfg.requests_per_minute),
            f64::from(self.cfg.tokens_per_minute),
        )
    }

    /// The bucket an address counts against: IPv4 (and IPv4-mapped) per address, IPv6 by its
    /// `ipv6_prefix` network, since one subscriber holds a whole /64.
    pub fn key(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let prefix = u32::from(self.cfg.ipv6_prefix.clamp(1, 128));
                    let mask = u128::MAX << (128 - prefix);
                    IpAddr::V6((u128::from(v6) & mask).into())
                }
            },
            v4 => v4,
        }
    }

    /// Take one request (and `tokens` tokens, may be 0) for `ip`. All-or-nothing.
    pub fn take(&self, ip: IpAddr, tokens: u64) -> Result<(), Refusal> {
        let ip = self.key(ip);
        let (ip_req_cap, ip_tok_cap, g_req_cap, g_tok_cap) = self.caps();
        let now = Instant::now();
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if b.per_ip.len() >= MAX_TRACKED_IPS {
            // Forget buckets that have refilled completely: they carry no information.
            b.per_ip.retain(|_, (r, t)| {
                r.refill(ip_req_cap, now);
                t.refill(ip_tok_cap, now);
                r.tokens < ip_req_cap || t.tokens < ip_tok_cap
            });
        }
        let reqs = if tokens == 0 { 1.0 } else { 0.0 };
        let toks = tokens as f64;
        b.global_req.refill(g_req_cap, now);
        b.global_tok.refill(g_tok_cap, now);
        let (ip_req, ip_tok) = b
            .per_ip
            .entry(ip)
            .or_insert_with(|| (Bucket::full(ip_req_cap, now), Bucket::full(ip_tok_cap, now)));
        ip_req.refill(ip_req_cap, now);
        ip_tok.refill(ip_tok_cap, now);
        let checks = [
            (ip_req.wait_for(reqs, ip_req_cap), "ip", "requests"),
            (ip_tok.wait_for(toks, ip_tok_cap), "ip", "tokens"),
        ];
        for (wait, scope, what) in checks {
            if wait > 0 {
                return Err(Refusal { retry_after: wait, scope, what });
            }
        }
        let (ip_req, ip_tok) = (*ip_req, *ip_tok);
        let gchecks = [
            (b.global_req.wait_for(reqs, g_req_cap), "global", "requests"),
            (b.global_tok.wait_for(toks, g_tok_cap), "global", "tokens"),
        ];
        for (wait, scope, what) in gchecks {
            if wait > 0 {
                return Err(Refusal { retry_after: wait, scope, what });
            }
        }
        let _ = (ip_req, ip_tok);
        if let Some((r, t)) = b.per_ip.get_mut(&ip) {
            r.tokens -= reqs;
            t.tokens -= toks;
        }
        b.global_req.tokens -= reqs;
        b.global_tok.tokens -= toks;
        Ok(())
    }

    /// Give back tokens charged up front but not used (e.g. unused `max_tokens`).
    pub fn refund(&self, ip: IpAddr, tokens: u64) {
        if tokens == 0 {
            return;
        }
        let (_, ip_tok_cap, _, g_tok_cap) = self.caps();
        let ip = self.key(ip);
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let t = tokens as f64;
        if let Some((_, tb)) = b.per_ip.get_mut(&ip) {
            tb.tokens = (tb.tokens + t).min(ip_tok_cap);
        }
        b.global_tok.tokens = (b.global_tok.tokens + t).min(g_tok_cap);
    }
}

impl RateLimiter {
    /// Take `tokens` more from `ip`'s and the global token buckets: what an answer used beyond
    /// its up-front charge. Never refused; the buckets may go into debt (down to [`floor`]), so
    /// the client's next request waits until it is paid off.
    pub fn debit(&self, ip: IpAddr, tokens: u64) {
        if tokens == 0 {
            return;
        }
        let (ip_req_cap, ip_tok_cap, _, g_tok_cap) = self.caps();
        let ip = self.key(ip);
        let now = Instant::now();
        let t = tokens as f64;
        let mut b = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (_, tb) = b
            .per_ip
            .entry(ip)
            .or_insert_with(|| (Bucket::full(ip_req_cap, now), Bucket::full(ip_tok_cap, now)));
        tb.refill(ip_tok_cap, now);
        tb.tokens = (tb.tokens - t).max(floor(ip_tok_cap));
        b.global_tok.refill(g_tok_cap, now);
        b.global_tok.tokens = (b.global_tok.tokens - t).max(floor(g_tok_cap));
    }
}

/// The server's stream slots (`max_concurrent_streams`), taken before the upstream is called.
#[derive(Debug)]
pub struct StreamSlots {
    max: usize,
    used: AtomicUsize,
}

/// One taken slot; given back on drop.
#[derive(Debug)]
pub struct StreamSlot(Arc<StreamSlots>);

impl StreamSlots {
    /// `max` slots, all free.
    pub fn new(max: usize) -> Arc<StreamSlots> {
        Arc::new(StreamSlots { max, used: AtomicUsize::new(0) })
    }

    /// Take a slot, atomically; `None` when all are taken.
    pub fn try_take(self: &Arc<Self>) -> Option<StreamSlot> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.max).then_some(n + 1))
            .ok()
            .map(|_| StreamSlot(self.clone()))
    }

    /// Slots taken now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rpm_ip: u32, tpm_ip: u32) -> LimitsConfig {
        LimitsConfig {
            requests_per_minute_per_ip: rpm_ip,
            tokens_per_minute_per_ip: tpm_ip,
            ..LimitsConfig::default()
        }
    }

    #[test]
    fn a_flood_from_one_ip_is_refused_with_a_retry_delay_while_others_pass() {
        let l = RateLimiter::new(&cfg(3, 1_000));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            l.take(a, 0).unwrap();
        }
        let r = l.take(a, 0).unwrap_err();
        assert_eq!((r.scope, r.what), ("ip", "requests"));
        assert!(r.retry_after >= 1 && r.retry_after <= 20, "{r:?}");
        l.take(b, 0).unwrap();
    }

    #[test]
    fn token_budget_is_charged_and_refunded() {
        let l = RateLimiter::new(&cfg(100, 1_000));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        l.take(a, 900).unwrap();
        assert_eq!(l.take(a, 200).unwrap_err().what, "tokens");
        l.refund(a, 500);
        l.take(a, 200).unwrap();
    }

    #[test]
    fn usage_past_the_charge_is_debited_into_debt_and_a_charge_over_the_bucket_waits_for_it_full() {
        let l = RateLimiter::new(&cfg(100, 1_000));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        l.take(a, 100).unwrap();
        // The answer used 1,500 tokens: 500 are owed now.
        l.debit(a, 1_400);
        let r = l.take(a, 1).unwrap_err();
        assert_eq!(r.what, "tokens");
        assert!(r.retry_after >= 30, "501 short at 1,000 a minute: {r:?}");
        // A bogus report costs at most one minute's debt (the global bucket's too).
        let l = RateLimiter::new(&cfg(100, 1_000));
        l.debit(a, u64::MAX / 2);
        assert!(l.take(a, 1).unwrap_err().retry_after <= 121);
        // A charge larger than the bucket is admitted from a full one, and leaves it in debt.
        let l = RateLimiter::new(&cfg(100, 1_000));
        l.take(a, 1_200).unwrap();
        assert_eq!(l.take(a, 1).unwrap_err().what, "tokens");
    }

    #[test]
    fn ipv6_addresses_in_one_64_share_a_bucket() {
        let l = RateLimiter::new(&cfg(1, 1_000));
        l.take("2001:db8:1:2::1".parse().unwrap(), 0).unwrap();
        let r = l.take("2001:db8:1:2:ffff::9".parse().unwrap(), 0).unwrap_err();
        assert_eq!((r.scope, r.what), ("ip", "requests"));
        l.take("2001:db8:1:3::1".parse().unwrap(), 0).unwrap();
        let per_address = RateLimiter::new(&LimitsConfig { ipv6_prefix: 128, ..cfg(1, 1_000) });
        per_address.take("2001:db8::1".parse().unwrap(), 0).unwrap();
        per_address.take("2001:db8::2".parse().unwrap(), 0).unwrap();
    }

    #[test]
    fn the_global_limit_applies_across_ips() {
        let c = LimitsConfig { requests_per_minute: 2, ..cfg(100, 1_000) };
        let l = RateLimiter::new(&c);
        l.take("10.0.0.1".parse().unwrap(), 0).unwrap();
        l.take("10.0.0.2".parse().unwrap(), 0).unwrap();
        assert_eq!(l.take("10.0.0.3".parse().unwrap(), 0).unwrap_err().scope, "global");
    }
}

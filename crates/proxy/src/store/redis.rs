//! The Redis store: token buckets and stream-slot leases shared by every replica.
//!
//! - Buckets: one hash per bucket (`v` = tokens left, `ts` = when, in Redis' own clock), refilled
//!   and charged by one Lua script per request ([`TAKE`]): all four buckets (per-IP and global,
//!   requests and tokens) are checked and charged atomically in a single round trip; [`ADJUST`]
//!   refunds unused tokens or debits usage past the charge. A bucket expires once it would be
//!   full again (61 s, longer while in debt), so idle clients cost no memory.
//! - Stream slots: a sorted set of leases scored by their expiry ([`ACQUIRE`]); the holder renews
//!   its lease every third of `stream_lease_secs`, and a replica that dies stops renewing, so
//!   its slots come back when the lease runs out instead of leaking.
//!
//! Connection: `redis`'s `ConnectionManager` (one multiplexed connection, reconnected in the
//! background), with connect and response timeouts of `store_timeout_ms`.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Script;

use super::{LimitStore, StoreError, StreamSlot};
use crate::config::LimitsConfig;
use crate::limits::{RateLimiter, Refusal};

/// A Lua script that starts with `now`: Redis' clock in milliseconds (one clock for every replica).
macro_rules! with_now {
    ($body:literal) => {
        concat!(
            "local t = redis.call('TIME')\n",
            "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)",
            $body
        )
    };
}

/// Refill and charge four buckets atomically. KEYS: ip requests, ip tokens, global requests,
/// global tokens. ARGV: requests needed, tokens needed, the four capacities (per minute).
/// Returns {1} when admitted, else {0, index of the short bucket (1-4), seconds to wait}.
/// A charge larger than a bucket is admitted from a full one (and leaves it in debt); a bucket
/// expires once it would be full again.
const TAKE: &str = with_now!(
    r#"
local need_r = tonumber(ARGV[1])
local need_t = tonumber(ARGV[2])
local need = {need_r, need_t, need_r, need_t}
local level = {}
for i = 1, 4 do
  local cap = tonumber(ARGV[2 + i])
  local v = redis.call('HMGET', KEYS[i], 'v', 'ts')
  local tokens = cap
  if v[1] then
    local dt = math.max(0, now - tonumber(v[2]))
    tokens = math.min(cap, tonumber(v[1]) + dt * cap / 60000)
  end
  level[i] = tokens
  if need[i] > 0 and tokens < math.min(need[i], cap) then
    local short = math.min(need[i], cap) - tokens
    return {0, i, math.max(1, math.ceil(short * 60 / cap))}
  end
end
for i = 1, 4 do
  if need[i] > 0 then
    local left = level[i] - need[i]
    local cap = tonumber(ARGV[2 + i])
    redis.call('HSET', KEYS[i], 'v', tostring(left), 'ts', now)
    redis.call('PEXPIRE', KEYS[i], math.ceil((cap - left) * 60000 / cap) + 1000)
  end
end
return {1}
"#
);

/// Give tokens back (ARGV[1] > 0: charged but not used) or take more (< 0: used beyond the
/// charge, never refused). KEYS: ip tokens, global tokens. ARGV: tokens, the two capacities.
/// A bucket that expired is full: a refund leaves it alone, a debit starts from full. A bucket
/// goes at most one minute's worth into debt, and expires once it would be full again.
const ADJUST: &str = with_now!(
    r#"
local n = tonumber(ARGV[1])
for i = 1, 2 do
  local cap = tonumber(ARGV[1 + i])
  local v = redis.call('HMGET', KEYS[i], 'v', 'ts')
  local tokens = nil
  if v[1] then
    local dt = math.max(0, now - tonumber(v[2]))
    tokens = math.min(cap, tonumber(v[1]) + dt * cap / 60000)
  elseif n < 0 then
    tokens = cap
  end
  if tokens then
    tokens = math.max(-cap, math.min(cap, tokens + n))
    redis.call('HSET', KEYS[i], 'v', tostring(tokens), 'ts', now)
    redis.call('PEXPIRE', KEYS[i], math.ceil((cap - tokens) * 60000 / cap) + 1000)
  end
end
return 1
"#
);

/// Take a lease. KEYS: the lease set. ARGV: lease id, max leases, lease milliseconds.
const ACQUIRE: &str = with_now!(
    r#"
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
  redis.call('PEXPIRE', KEYS[1], lease * 2)
  return 1
end
return 0
"#
);

/// Renew a lease that is still held. KEYS: the lease set. ARGV: lease id, lease milliseconds.
const RENEW: &str = with_now!(
    r#"
local lease = tonumber(ARGV[2])
local n = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + lease, ARGV[1])
redis.call('PEXPIRE', KEYS[1], lease * 2)
return n
"#
);

struct Scripts {
    take: Script,
    adjust: Script,
    acquire: Script,
    renew: Script,
}

/// Limits kept in Redis.
pub struct RedisStore {
    conn: ConnectionManager,
    scripts: Arc<Scripts>,
    /// Only for [`RateLimiter::key`] (the IPv6 prefix grouping), never for buckets.
    keyer: RateLimiter,
    prefix: String,
    caps: [u64; 4],
    max_streams: usize,
    lease: Duration,
    /// This process' lease ids: a random instance part and a counter.
    instance: u64,
    next: AtomicU64,
}

fn redis_err(e: redis::RedisError) -> StoreError {
    StoreError::Backend(e.to_string())
}

impl RedisStore {
    /// A store on `url`, connected on first use.
    pub fn new(url: &str, cfg: &LimitsConfig) -> anyhow::Result<RedisStore> {
        let client = redis::Client::open(url).map_err(|e| {
            anyhow::anyhow!("[limits] store = \"{url}\" is not a usable Redis URL: {e}")
        })?;
        let timeout = Duration::from_millis(cfg.store_timeout_ms);
        let mc = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(timeout))
            .set_response_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_millis(500));
        let conn = client.get_connection_manager_lazy(mc).map_err(|e| {
            anyhow::anyhow!("cannot set up the Redis connection for [limits] store: {e}")
        })?;
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        Ok(RedisStore {
            conn,
            scripts: Arc::new(Scripts {
                take: Script::new(TAKE),
                adjust: Script::new(ADJUST),
                acquire: Script::new(ACQUIRE),
                renew: Script::new(RENEW),
            }),
            keyer: RateLimiter::new(cfg),
            prefix: cfg.store_prefix.clone(),
            caps: [
                u64::from(cfg.requests_per_minute_per_ip),
                u64::from(cfg.tokens_per_minute_per_ip),
                u64::from(cfg.requests_per_minute),
                u64::from(cfg.tokens_per_minute),
            ],
            max_streams: cfg.max_concurrent_streams,
            lease: Duration::from_secs(cfg.stream_lease_secs),
            instance: h.finish(),
            next: AtomicU64::new(0),
        })
    }

    /// A clone of the connection (cheap; multiplexed), for the answer cache.
    pub fn connection(&self) -> ConnectionManager {
        self.conn.clone()
    }

    /// The key prefix (`[limits] store_prefix`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Connect and load the scripts (so the first requests do not pay for either); at most
    /// one second.
    pub async fn warm(&self) -> Result<(), StoreError> {
        let mut c = self.conn.clone();
        let s = &self.scripts;
        let work = async {
            for script in [&s.take, &s.adjust, &s.acquire, &s.renew] {
                script.load_async(&mut c).await?;
            }
            Ok::<(), redis::RedisError>(())
        };
        match tokio::time::timeout(Duration::from_secs(1), work).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(redis_err(e)),
            Err(_) => Err(StoreError::Timeout),
        }
    }

    fn ip_keys(&self, ip: IpAddr) -> (String, String) {
        let k = self.keyer.key(ip);
        (format!("{}:ip:{k}:r", self.prefix), format!("{}:ip:{k}:t", self.prefix))
    }

    /// Add `delta` tokens (negative: take them) to `ip`'s and the global token buckets.
    fn adjust(&self, ip: IpAddr, delta: i64) -> BoxFuture<'_, Result<(), StoreError>> {
        let (_, ip_t) = self.ip_keys(ip);
        let mut conn = self.conn.clone();
        Box::pin(async move {
            let mut inv = self.scripts.adjust.prepare_invoke();
            inv.key(ip_t)
                .key(format!("{}:g:t", self.prefix))
                .arg(delta)
                .arg(self.caps[1])
                .arg(self.caps[3]);
            let _: i64 = inv.invoke_async(&mut conn).await.map_err(redis_err)?;
            Ok(())
        })
    }

    fn streams_key(&self) -> String {
        format!("{}:streams", self.prefix)
    }
}

/// A held lease: renewed in the background, removed on drop.
struct Lease {
    renew: tokio::task::JoinHandle<()>,
    release: Option<(ConnectionManager, String, String)>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renew.abort();
        release(self.release.take());
    }
}

/// Remove lease `id` from the lease set `key`, in the background (it expires on its own if
/// this fails).
fn release(lease: Option<(ConnectionManager, String, String)>) {
    if let (Some((mut conn, key, id)), Ok(rt)) = (lease, tokio::runtime::Handle::try_current()) {
        rt.spawn(async move {
            let r: redis::RedisResult<i64> =
                redis::cmd("ZREM").arg(&key).arg(&id).query_async(&mut conn).await;
            if let Err(e) = r {
                tracing::debug!(error = %e, "stream lease not removed; it expires on its own");
            }
        });
    }
}

/// A lease asked for but not answered yet: Redis may take it after the caller gave up (the
/// store timed out, the request ended), and then nobody would renew or remove it; dropped
/// before [`Pending::answered`], it is removed (a no-op when Redis never took it).
struct Pending(Option<(ConnectionManager, String, String)>);

impl Pending {
    fn answered(mut self) {
        self.0 = None;
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        release(self.0.take());
    }
}

impl LimitStore for RedisStore {
    fn take(
        &self,
        ip: IpAddr,
        tokens: u64,
    ) -> BoxFuture<'_, Result<Result<(), Refusal>, StoreError>> {
        let (ip_r, ip_t) = self.ip_keys(ip);
        let mut conn = self.conn.clone();
        let reqs = u64::from(tokens == 0);
        Box::pin(async move {
            let mut inv = self.scripts.take.prepare_invoke();
            inv.key(ip_r)
                .key(ip_t)
                .key(format!("{}:g:r", self.prefix))
                .key(format!("{}:g:t", self.prefix))
                .arg(reqs)
                .arg(tokens)
                .arg(&self.caps[..]);
            let r: Vec<i64> = inv.invoke_async(&mut conn).await.map_err(redis_err)?;
            match r.as_slice() {
                [1] => Ok(Ok(())),
                [0, which, wait] => {
                    let (scope, what) = match which {
                        1 => ("ip", "requests"),
                        2 => ("ip", "tokens"),
                        3 => ("global", "requests"),
                        _ => ("global", "tokens"),
                    };
                    Ok(Err(Refusal { retry_after: (*wait).max(1) as u64, scope, what }))
                }
                other => Err(StoreError::Backend(format!("unexpected take answer {other:?}"))),
            }
        })
    }

    fn refund(&self, ip: IpAddr, tokens: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        self.adjust(ip, i64::try_from(tokens).unwrap_or(i64::MAX))
    }

    fn debit(&self, ip: IpAddr, tokens: u64) -> BoxFuture<'_, Result<(), StoreError>> {
        self.adjust(ip, -i64::try_from(tokens).unwrap_or(i64::MAX))
    }

    fn take_stream(self: Arc<Self>) -> BoxFuture<'static, Result<Option<StreamSlot>, StoreError>> {
        Box::pin(async move {
            let id =
                format!("{:016x}-{}", self.instance, self.next.fetch_add(1, Ordering::Relaxed));
            let key = self.streams_key();
            let lease_ms = self.lease.as_millis() as u64;
            let mut conn = self.conn.clone();
            let pending = Pending(Some((conn.clone(), key.clone(), id.clone())));
            let got: i64 = self
                .scripts
                .acquire
                .key(&key)
                .arg(&id)
                .arg(self.max_streams)
                .arg(lease_ms)
                .invoke_async(&mut conn)
                .await
                .map_err(redis_err)?;
            pending.answered();
            if got != 1 {
                return Ok(None);
            }
            let scripts = self.scripts.clone();
            let (rkey, rid, mut rconn) = (key.clone(), id.clone(), conn.clone());
            let every = (self.lease / 3).max(Duration::from_millis(100));
            let renew = tokio::spawn(async move {
                let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    tick.tick().await;
                    let r: redis::RedisResult<i64> = scripts
                        .renew
                        .key(&rkey)
                        .arg(&rid)
                        .arg(lease_ms)
                        .invoke_async(&mut rconn)
                        .await;
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "stream lease renewal failed; retrying");
                    }
                }
            });
            Ok(Some(StreamSlot::new(Lease { renew, release: Some((conn, key, id)) })))
        })
    }
}

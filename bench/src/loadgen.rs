//! The proxy load generator: added latency at N concurrent streams, and many open streams with
//! the RSS of the proxy process. Loopback only, bounded counts and durations.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

/// Latencies of one run, in microseconds (total/first byte) and nanoseconds (stamped
/// overheads), each sorted.
///
/// The stamped figures need the upstream double's `--stamp` (wall-clock stamps in every chunk)
/// and are empty when the target strips unknown chunk fields:
/// - `request_path_ns`: double received the request − client started sending it;
/// - `first_chunk_ns`: client received the first chunk − client started sending, minus the
///   double's own time between receiving the request and sending that chunk, i.e. the
///   time-to-first-byte overhead of everything between client and upstream;
/// - `chunk_delivery_ns`: client received a chunk − double sent it, for every chunk.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    /// Time to the first body bytes.
    pub first_byte_us: Vec<u64>,
    /// Time to `[DONE]`.
    pub total_us: Vec<u64>,
    /// Request path (client → upstream), from stamps.
    pub request_path_ns: Vec<i64>,
    /// Time-to-first-chunk minus the upstream's own service time, from stamps.
    pub first_chunk_ns: Vec<i64>,
    /// Upstream → client delivery time of every chunk, from stamps.
    pub chunk_delivery_ns: Vec<i64>,
    /// Requests that failed.
    pub errors: usize,
    /// Wall time of the run(s).
    pub wall: Duration,
}

impl Latencies {
    /// Add another run's samples (rounds are pooled, then sorted by [`Latencies::sort`]).
    pub fn extend(&mut self, o: Latencies) {
        self.first_byte_us.extend(o.first_byte_us);
        self.total_us.extend(o.total_us);
        self.request_path_ns.extend(o.request_path_ns);
        self.first_chunk_ns.extend(o.first_chunk_ns);
        self.chunk_delivery_ns.extend(o.chunk_delivery_ns);
        self.errors += o.errors;
        self.wall += o.wall;
    }

    /// Sort every sample list (quantiles need sorted input).
    pub fn sort(&mut self) {
        self.first_byte_us.sort_unstable();
        self.total_us.sort_unstable();
        self.request_path_ns.sort_unstable();
        self.first_chunk_ns.sort_unstable();
        self.chunk_delivery_ns.sort_unstable();
    }
}

/// One streamed request's measurements.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Time to the first body bytes (µs).
    pub first_byte_us: u64,
    /// Time to `[DONE]` (µs).
    pub total_us: u64,
    /// See [`Latencies::request_path_ns`].
    pub request_path_ns: Option<i64>,
    /// See [`Latencies::first_chunk_ns`].
    pub first_chunk_ns: Option<i64>,
    /// See [`Latencies::chunk_delivery_ns`].
    pub chunk_delivery_ns: Vec<i64>,
}

/// The `q`-quantile (0..=1) of sorted values (nearest rank).
pub fn quantile<T: Copy + Default>(sorted: &[T], q: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Wall clock in ns since the Unix epoch (the double stamps with the same clock).
pub fn now_ns() -> i64 {
    crate::double::now_ns() as i64
}

/// The integer after `"key":` in a JSON frame (a cheap scan: the load generator must not be the
/// bottleneck).
pub fn stamp_field(frame: &[u8], key: &[u8]) -> Option<i64> {
    let pos = frame.windows(key.len()).position(|w| w == key)?;
    let rest = &frame[pos + key.len()..];
    let digits: &[u8] = {
        let end = rest.iter().position(|b| !b.is_ascii_digit()).unwrap_or(rest.len());
        &rest[..end]
    };
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Refuse anything that is not a loopback URL: load tests never leave the machine.
pub fn ensure_loopback(url: &str) -> anyhow::Result<()> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        anyhow::anyhow!("{url}: only http://127.0.0.1 / localhost URLs are allowed")
    })?;
    let host = rest.split(['/', ':']).next().unwrap_or("");
    if host == "127.0.0.1" || host == "localhost" {
        Ok(())
    } else {
        anyhow::bail!("{url}: load tests stay on loopback; use http://127.0.0.1:PORT")
    }
}

/// A realistic widget request: ~2 KB of numbered sources + a question, streamed with usage.
pub fn chat_body(model: &str, question: &str) -> String {
    let mut sources = String::new();
    for n in 1..=4 {
        sources.push_str(&format!(
            "[{n}] Configuration › Build › target-dir (https://docs.example.com/config#target-dir)\n\
             The target directory holds all build artifacts. It defaults to `target` in the workspace root \
             and can be changed with the CARGO_TARGET_DIR environment variable or the build.target-dir key. \
             Relative paths are resolved against the directory holding the config file. {n}\n\n"
        ));
    }
    json!({
        "model": model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": format!("Sources:\n{sources}\nQuestion: {question}")}],
    })
    .to_string()
}

/// A client with enough pooled connections for `n` concurrent streams.
pub fn client(n: usize) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .pool_max_idle_per_host(n)
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .build()?)
}

/// One streamed request (and its stamps, when the upstream adds them); an error when no
/// `[DONE]` came.
pub async fn one_stream(
    client: &reqwest::Client,
    url: &str,
    body: String,
    bearer: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<Sample> {
    let t0 = Instant::now();
    let fut = async {
        let mut req = client
            .post(url)
            .header("content-type", "application/json")
            .header("origin", "http://127.0.0.1");
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        let req = req.body(body);
        let sent_ns = now_ns();
        let resp = req.send().await?;
        if !resp.status().is_success() {
            anyhow::bail!("HTTP {}", resp.status());
        }
        let mut sample = Sample::default();
        let mut first = None;
        let mut stream = resp.bytes_stream();
        let mut pending: Vec<u8> = Vec::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            let recv_ns = now_ns();
            if first.is_none() {
                first = Some(t0.elapsed());
            }
            pending.extend_from_slice(&chunk);
            // Complete SSE frames end with a blank line; stamps are read per frame.
            let mut done = false;
            while let Some(end) = pending.windows(2).position(|w| w == b"\n\n") {
                let frame = &pending[..end];
                if frame.starts_with(b"data: [DONE]") {
                    done = true;
                }
                if let Some(sent) = stamp_field(frame, b"\"bench_sent_ns\":") {
                    sample.chunk_delivery_ns.push(recv_ns - sent);
                    if sample.first_chunk_ns.is_none() {
                        if let Some(recv) = stamp_field(frame, b"\"bench_recv_ns\":") {
                            sample.request_path_ns = Some(recv - sent_ns);
                            // (recv_ns - sent_ns) minus the double's own (sent - recv).
                            sample.first_chunk_ns = Some((recv_ns - sent_ns) - (sent - recv));
                        }
                    }
                }
                pending.drain(..end + 2);
            }
            if done {
                let total = t0.elapsed();
                sample.first_byte_us = first.unwrap_or(total).as_micros() as u64;
                sample.total_us = total.as_micros() as u64;
                return Ok(sample);
            }
        }
        anyhow::bail!("stream ended without [DONE]")
    };
    tokio::time::timeout(timeout, fut).await.map_err(|_| anyhow::anyhow!("timed out"))?
}

/// `requests` streamed requests with `concurrency` in flight (`bearer`: an API key to send).
pub async fn run_latency(
    url: &str,
    model: &str,
    bearer: Option<&str>,
    concurrency: usize,
    requests: usize,
) -> anyhow::Result<Latencies> {
    ensure_loopback(url)?;
    let client = client(concurrency)?;
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (client, next, url, model) =
            (client.clone(), next.clone(), url.to_string(), model.to_string());
        let bearer = bearer.map(str::to_string);
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            let mut errors = 0;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= requests {
                    break;
                }
                match one_stream(
                    &client,
                    &url,
                    chat_body(&model, &format!("How do I change the target directory? #{i}")),
                    bearer.as_deref(),
                    Duration::from_secs(60),
                )
                .await
                {
                    Ok(x) => out.push(x),
                    Err(_) => errors += 1,
                }
            }
            (out, errors)
        }));
    }
    let mut lat = Latencies::default();
    for t in tasks {
        let (out, errors) = t.await?;
        lat.errors += errors;
        for s in out {
            lat.first_byte_us.push(s.first_byte_us);
            lat.total_us.push(s.total_us);
            lat.request_path_ns.extend(s.request_path_ns);
            lat.first_chunk_ns.extend(s.first_chunk_ns);
            lat.chunk_delivery_ns.extend(s.chunk_delivery_ns);
        }
    }
    lat.wall = started.elapsed();
    lat.sort();
    Ok(lat)
}

/// Resident set size and its peak (kB) of a process, from /proc.
pub fn rss_kb(pid: u32) -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    Ok((field("VmRSS:"), field("VmHWM:")))
}

/// Result of the open-streams test.
#[derive(Debug, Clone)]
pub struct StreamsReport {
    /// Streams that received their first chunk and were held open together.
    pub open: usize,
    /// Streams that failed to open.
    pub failed: usize,
    /// Proxy RSS (kB) before the test.
    pub rss_before_kb: u64,
    /// Proxy RSS (kB) with all streams open.
    pub rss_open_kb: u64,
    /// Peak RSS (VmHWM, kB).
    pub rss_peak_kb: u64,
    /// Time to open all streams.
    pub ramp: Duration,
}

/// Open `count` streams (the double's `HOLD` keyword keeps each alive ~30 s, a chunk a second),
/// hold them all, sample the proxy's RSS, then drop them.
pub async fn run_open_streams(
    url: &str,
    model: &str,
    count: usize,
    pid: u32,
    hold: Duration,
) -> anyhow::Result<StreamsReport> {
    ensure_loopback(url)?;
    let client = client(count)?;
    let (rss_before_kb, _) = rss_kb(pid)?;
    let opened = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let release = Arc::new(tokio::sync::Notify::new());
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(count);
    for i in 0..count {
        // Ramp up in waves so the listen backlog never overflows.
        if i % 250 == 0 && i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (client, url, opened, failed, release) =
            (client.clone(), url.to_string(), opened.clone(), failed.clone(), release.clone());
        let body = chat_body(model, &format!("HOLD stream {i}"));
        tasks.push(tokio::spawn(async move {
            let fut = async {
                let resp = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("origin", "http://127.0.0.1")
                    .body(body)
                    .send()
                    .await?;
                if !resp.status().is_success() {
                    anyhow::bail!("HTTP {}", resp.status());
                }
                let mut stream = resp.bytes_stream();
                match stream.next().await {
                    Some(Ok(_)) => Ok(stream),
                    _ => anyhow::bail!("no first chunk"),
                }
            };
            match tokio::time::timeout(Duration::from_secs(60), fut).await {
                Ok(Ok(mut stream)) => {
                    opened.fetch_add(1, Ordering::Relaxed);
                    // Keep reading (a real client does) until released.
                    loop {
                        tokio::select! {
                            _ = release.notified() => break,
                            c = stream.next() => if c.is_none() { break },
                        }
                    }
                }
                _ => {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    // Wait until every stream opened or failed (bounded).
    let deadline = Instant::now() + Duration::from_secs(120);
    while opened.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed) < count
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ramp = started.elapsed();
    tokio::time::sleep(hold).await;
    let (rss_open_kb, rss_peak_kb) = rss_kb(pid)?;
    let open = opened.load(Ordering::Relaxed);
    release.notify_waiters();
    for t in tasks {
        t.abort();
    }
    Ok(StreamsReport {
        open,
        failed: failed.load(Ordering::Relaxed),
        rss_before_kb,
        rss_open_kb,
        rss_peak_kb,
        ramp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(quantile(&v, 0.5), 50);
        assert_eq!(quantile(&v, 0.99), 99);
        assert_eq!(quantile(&v, 1.0), 100);
        assert_eq!(quantile::<u64>(&[], 0.5), 0);
        assert_eq!(quantile(&[-3i64, 5], 0.5), -3);
    }

    #[test]
    fn stamps_are_read_from_a_chunk_frame() {
        let f = br#"data: {"id":"x","choices":[],"bench_recv_ns":1700000000000000001,"bench_sent_ns":1700000000000000999}"#;
        assert_eq!(stamp_field(f, br#""bench_recv_ns":"#), Some(1_700_000_000_000_000_001));
        assert_eq!(stamp_field(f, br#""bench_sent_ns":"#), Some(1_700_000_000_000_000_999));
        assert_eq!(stamp_field(b"data: [DONE]", br#""bench_sent_ns":"#), None);
    }

    #[test]
    fn only_loopback_targets_are_accepted() {
        assert!(ensure_loopback("http://127.0.0.1:8787/v1/chat/completions").is_ok());
        assert!(ensure_loopback("http://localhost:1/x").is_ok());
        assert!(ensure_loopback("https://api.openai.com/v1").is_err());
        assert!(ensure_loopback("http://10.0.0.1:80/").is_err());
    }
}

//! `docent-loadgen`: measures what `docent serve` adds on top of its upstream.
//!
//! - `latency --direct URL --proxy URL [--litellm URL]`: the same streamed chat requests at
//!   `--concurrency` (default 64) against the upstream directly, through docent serve, and
//!   (optionally) through LiteLLM proxy; prints p50/p99 of time-to-first-byte and total time,
//!   the added latency, and the LiteLLM/docent overhead ratio.
//! - `streams --proxy URL --pid PID`: opens `--count` (default 5000) concurrent streams through
//!   the proxy, holds them, and reports the proxy process's RSS.
//!
//! Only loopback URLs are accepted; counts and durations are bounded.

use std::time::Duration;

use clap::{Parser, Subcommand};
use docent_bench::loadgen::{quantile, run_latency, run_open_streams, Latencies};

#[derive(Parser, Debug)]
#[command(name = "docent-loadgen", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Added latency of the proxy (and LiteLLM) vs the upstream directly.
    Latency {
        /// Upstream chat URL, e.g. http://127.0.0.1:9100/v1/chat/completions
        #[arg(long)]
        direct: String,
        /// docent serve chat URL.
        #[arg(long)]
        proxy: String,
        /// LiteLLM proxy chat URL (optional).
        #[arg(long)]
        litellm: Option<String>,
        /// LiteLLM's master key (sent as a bearer token to LiteLLM only).
        #[arg(long)]
        litellm_key: Option<String>,
        /// Model name to send to the upstream and to LiteLLM.
        #[arg(long, default_value = "bench-model")]
        model: String,
        /// Concurrent streams.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Requests per target (at most 20000).
        #[arg(long, default_value_t = 2000)]
        requests: usize,
        /// Requests for LiteLLM (it is much slower; at most 5000).
        #[arg(long, default_value_t = 640)]
        litellm_requests: usize,
        /// Warm-up requests per target (not measured).
        #[arg(long, default_value_t = 200)]
        warmup: usize,
        /// Rounds: direct and proxy alternate this many times (the best round per target is kept).
        #[arg(long, default_value_t = 2)]
        rounds: usize,
    },
    /// Many concurrent open streams through the proxy, with its RSS.
    Streams {
        /// docent serve chat URL.
        #[arg(long)]
        proxy: String,
        /// PID of the docent serve process (RSS is read from /proc/PID/status).
        #[arg(long)]
        pid: u32,
        /// Streams to open (at most 10000).
        #[arg(long, default_value_t = 5000)]
        count: usize,
        /// Seconds to hold them all open before sampling RSS.
        #[arg(long, default_value_t = 3)]
        hold_secs: u64,
        /// Model name.
        #[arg(long, default_value = "bench-model")]
        model: String,
    },
}

fn ms(us: u64) -> String {
    format!("{:.2}", us as f64 / 1000.0)
}

fn signed_ms(us: i64) -> String {
    format!("{:+.3}", us as f64 / 1000.0)
}

fn summary(name: &str, l: &Latencies) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} | {:.0} |",
        l.total_us.len(),
        ms(quantile(&l.first_byte_us, 0.5)),
        ms(quantile(&l.first_byte_us, 0.99)),
        ms(quantile(&l.total_us, 0.5)),
        ms(quantile(&l.total_us, 0.99)),
        l.total_us.len() as f64 / l.wall.as_secs_f64().max(1e-9),
    )
}

/// Keep the round with the lower p50 total (less disturbed by other load on the machine).
fn better(a: Option<Latencies>, b: Latencies) -> Latencies {
    match a {
        Some(a) if quantile(&a.total_us, 0.5) <= quantile(&b.total_us, 0.5) => a,
        _ => b,
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Latency { direct, proxy, litellm, litellm_key, model, concurrency, requests, litellm_requests, warmup, rounds } => {
            anyhow::ensure!(requests <= 20_000 && litellm_requests <= 5_000 && concurrency <= 1_000 && rounds <= 5, "counts are bounded: requests <= 20000, litellm_requests <= 5000, concurrency <= 1000, rounds <= 5");
            run_latency(&direct, &model, None, concurrency, warmup).await?;
            run_latency(&proxy, &model, None, concurrency, warmup).await?;
            let (mut d, mut p) = (None, None);
            for _ in 0..rounds.max(1) {
                d = Some(better(d, run_latency(&direct, &model, None, concurrency, requests).await?));
                p = Some(better(p, run_latency(&proxy, &model, None, concurrency, requests).await?));
            }
            let (d, p) = (d.unwrap_or_default(), p.unwrap_or_default());
            let l = match &litellm {
                Some(url) => {
                    run_latency(url, &model, litellm_key.as_deref(), concurrency, warmup.min(100)).await?;
                    Some(run_latency(url, &model, litellm_key.as_deref(), concurrency, litellm_requests).await?)
                }
                None => None,
            };
            println!("| target | streams | first byte p50 (ms) | first byte p99 (ms) | total p50 (ms) | total p99 (ms) | streams/s |");
            println!("|---|---|---|---|---|---|---|");
            println!("{}", summary("upstream directly", &d));
            println!("{}", summary("docent serve", &p));
            if let Some(l) = &l {
                println!("{}", summary("LiteLLM proxy", l));
            }
            let add = |x: &Latencies, q: f64| quantile(&x.total_us, q) as i64 - quantile(&d.total_us, q) as i64;
            let add_fb = |x: &Latencies, q: f64| quantile(&x.first_byte_us, q) as i64 - quantile(&d.first_byte_us, q) as i64;
            println!();
            println!("| added latency at {concurrency} concurrent streams | p50 (ms) | p99 (ms) | first byte p50 (ms) | first byte p99 (ms) |");
            println!("|---|---|---|---|---|");
            println!("| docent serve | {} | {} | {} | {} |", signed_ms(add(&p, 0.5)), signed_ms(add(&p, 0.99)), signed_ms(add_fb(&p, 0.5)), signed_ms(add_fb(&p, 0.99)));
            if let Some(l) = &l {
                println!("| LiteLLM proxy | {} | {} | {} | {} |", signed_ms(add(l, 0.5)), signed_ms(add(l, 0.99)), signed_ms(add_fb(l, 0.5)), signed_ms(add_fb(l, 0.99)));
                let ratio = |q: f64| add(l, q) as f64 / (add(&p, q).max(1)) as f64;
                println!();
                println!("LiteLLM overhead / docent overhead: p50 {:.0}x, p99 {:.0}x (docent overhead floored at 1 µs)", ratio(0.5), ratio(0.99));
            }
            let errors = d.errors + p.errors + l.as_ref().map(|l| l.errors).unwrap_or(0);
            if errors > 0 {
                println!("\nerrors: direct {}, docent {}, litellm {}", d.errors, p.errors, l.as_ref().map(|l| l.errors).unwrap_or(0));
            }
        }
        Cmd::Streams { proxy, pid, count, hold_secs, model } => {
            anyhow::ensure!(count <= 10_000 && hold_secs <= 25, "bounded: count <= 10000, hold_secs <= 25");
            let r = run_open_streams(&proxy, &model, count, pid, Duration::from_secs(hold_secs)).await?;
            println!("| concurrent open streams | failed | proxy RSS before (MB) | proxy RSS with streams open (MB) | peak RSS (MB) | ramp-up (s) |");
            println!("|---|---|---|---|---|---|");
            println!(
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                r.open,
                r.failed,
                r.rss_before_kb as f64 / 1024.0,
                r.rss_open_kb as f64 / 1024.0,
                r.rss_peak_kb as f64 / 1024.0,
                r.ramp.as_secs_f64()
            );
        }
    }
    Ok(())
}

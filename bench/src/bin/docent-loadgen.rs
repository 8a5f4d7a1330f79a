//! `docent-loadgen`: measures what `docent serve` adds on top of its upstream.
//!
//! - `latency --direct URL --proxy URL [--litellm URL]`: the same streamed chat requests at
//!   `--concurrency` (default 64) against the upstream directly, through docent serve, and
//!   (optionally) through LiteLLM proxy; prints p50/p99 of time-to-first-byte and total time,
//!   the added latency, and the LiteLLM/docent overhead ratio.
//! - `streams --proxy URL --pid PID`: opens `--count` (default 5000) concurrent streams through
//!   the proxy, holds them, and reports the proxy process's RSS.
//! - `compare --a URL --b URL`: two docent serve setups (e.g. in-process vs Redis limits) in
//!   alternating rounds of the same run; the stamped time to first chunk of each, and b − a.
//! - `throughput --url URL [--url URL ...]`: requests/s with the load spread evenly over one or
//!   more replicas.
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
        /// Rounds: direct and proxy alternate this many times (all rounds' samples are pooled).
        #[arg(long, default_value_t = 2)]
        rounds: usize,
    },
    /// Two docent serve setups in alternating rounds: the time b adds over a.
    Compare {
        /// Chat URL of setup a.
        #[arg(long)]
        a: String,
        /// Chat URL of setup b.
        #[arg(long)]
        b: String,
        /// Names of a and b in the output.
        #[arg(long, default_value = "a")]
        a_label: String,
        /// Name of b.
        #[arg(long, default_value = "b")]
        b_label: String,
        /// Model name.
        #[arg(long, default_value = "bench-model")]
        model: String,
        /// Concurrent streams.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Requests per setup and round (at most 20000).
        #[arg(long, default_value_t = 2000)]
        requests: usize,
        /// Warm-up requests per setup.
        #[arg(long, default_value_t = 200)]
        warmup: usize,
        /// Rounds (a and b alternate; samples pooled).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// Requests per second, spread evenly over the given replicas.
    Throughput {
        /// Chat URL of a replica (repeat for several).
        #[arg(long = "url", required = true)]
        urls: Vec<String>,
        /// Model name.
        #[arg(long, default_value = "bench-model")]
        model: String,
        /// Concurrent streams in total.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
        /// Requests in total (at most 50000).
        #[arg(long, default_value_t = 4000)]
        requests: usize,
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

fn ms_ns(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn signed_ms(us: i64) -> String {
    format!("{:+.3}", us as f64 / 1000.0)
}

fn signed_ms_ns(ns: i64) -> String {
    format!("{:+.3}", ns as f64 / 1e6)
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

fn stamped(name: &str, l: &Latencies) -> String {
    if l.first_chunk_ns.is_empty() {
        return format!("| {name} | 0 | n/a (no stamps came through) | | | | | |");
    }
    format!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} |",
        l.first_chunk_ns.len(),
        ms_ns(quantile(&l.request_path_ns, 0.5)),
        ms_ns(quantile(&l.request_path_ns, 0.99)),
        ms_ns(quantile(&l.first_chunk_ns, 0.5)),
        ms_ns(quantile(&l.first_chunk_ns, 0.99)),
        ms_ns(quantile(&l.chunk_delivery_ns, 0.5)),
        ms_ns(quantile(&l.chunk_delivery_ns, 0.99)),
    )
}

/// Latencies of `a` and `b`: `warmup` unmeasured requests each (connections, allocator, caches),
/// then `rounds` (at least 1) rounds that alternate an `a` run and a `b` run of `requests` each,
/// so slow drifts in machine load hit both; each side's samples pooled and sorted.
async fn alternating_rounds(
    a: &str,
    b: &str,
    model: &str,
    concurrency: usize,
    warmup: usize,
    requests: usize,
    rounds: usize,
) -> anyhow::Result<(Latencies, Latencies)> {
    run_latency(a, model, None, concurrency, warmup).await?;
    run_latency(b, model, None, concurrency, warmup).await?;
    let (mut la, mut lb) = (Latencies::default(), Latencies::default());
    for _ in 0..rounds.max(1) {
        la.extend(run_latency(a, model, None, concurrency, requests).await?);
        lb.extend(run_latency(b, model, None, concurrency, requests).await?);
    }
    la.sort();
    lb.sort();
    Ok((la, lb))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Compare { a, b, a_label, b_label, model, concurrency, requests, warmup, rounds } => {
            anyhow::ensure!(
                (100..=20_000).contains(&requests) && concurrency <= 1_000 && rounds <= 5,
                "counts are bounded: 100 <= requests <= 20000, concurrency <= 1000, rounds <= 5"
            );
            let (la, lb) =
                alternating_rounds(&a, &b, &model, concurrency, warmup, requests, rounds).await?;
            anyhow::ensure!(
                !la.first_chunk_ns.is_empty() && !lb.first_chunk_ns.is_empty(),
                "no stamps came through: start docent-upstream-double with --stamp"
            );
            println!("{concurrency} concurrent streams, {} rounds alternating a and b, pooled, after {warmup} warm-up requests each; stamped time to first chunk (client send → first chunk, minus the upstream's own time).", rounds.max(1));
            println!();
            println!("| setup | requests | errors | time to first chunk p50 (ms) | p99 (ms) | streams/s |");
            println!("|---|---|---|---|---|---|");
            for (name, l) in [(&a_label, &la), (&b_label, &lb)] {
                println!(
                    "| {name} | {} | {} | {} | {} | {:.0} |",
                    l.first_chunk_ns.len(),
                    l.errors,
                    ms_ns(quantile(&l.first_chunk_ns, 0.5)),
                    ms_ns(quantile(&l.first_chunk_ns, 0.99)),
                    l.total_us.len() as f64 / l.wall.as_secs_f64().max(1e-9),
                );
            }
            let d = |q| quantile(&lb.first_chunk_ns, q) - quantile(&la.first_chunk_ns, q);
            println!();
            println!(
                "ADDED LATENCY {b_label} − {a_label} (time to first chunk): p50 {} ms, p99 {} ms",
                signed_ms_ns(d(0.5)),
                signed_ms_ns(d(0.99))
            );
        }
        Cmd::Throughput { urls, model, concurrency, requests } => {
            anyhow::ensure!(
                (100..=50_000).contains(&requests) && (1..=1_000).contains(&concurrency),
                "counts are bounded: 100 <= requests <= 50000, 1 <= concurrency <= 1000"
            );
            let n = urls.len();
            let per = |i: usize, total: usize| total / n + usize::from(i < total % n);
            // Warm-up, then every replica gets its share of the streams and requests at once.
            for u in &urls {
                run_latency(u, &model, None, concurrency.div_ceil(n), 100).await?;
            }
            let started = std::time::Instant::now();
            let runs = urls.iter().enumerate().map(|(i, u)| {
                run_latency(u, &model, None, per(i, concurrency).max(1), per(i, requests))
            });
            let mut all = Latencies::default();
            for l in futures::future::try_join_all(runs).await? {
                all.extend(l);
            }
            let wall = started.elapsed();
            all.sort();
            println!(
                "| {n} | {} | {} | {:.0} | {} | {} |",
                all.total_us.len(),
                all.errors,
                all.total_us.len() as f64 / wall.as_secs_f64().max(1e-9),
                ms(quantile(&all.total_us, 0.5)),
                ms(quantile(&all.total_us, 0.99)),
            );
        }
        Cmd::Latency {
            direct,
            proxy,
            litellm,
            litellm_key,
            model,
            concurrency,
            requests,
            litellm_requests,
            warmup,
            rounds,
        } => {
            anyhow::ensure!(requests <= 20_000 && litellm_requests <= 5_000 && concurrency <= 1_000 && rounds <= 5, "counts are bounded: requests <= 20000, litellm_requests <= 5000, concurrency <= 1000, rounds <= 5");
            anyhow::ensure!(
                requests >= 100,
                "--requests must be at least 100 for a p99 (1000+ recommended)"
            );
            let (d, p) =
                alternating_rounds(&direct, &proxy, &model, concurrency, warmup, requests, rounds)
                    .await?;
            let l = match &litellm {
                Some(url) => {
                    run_latency(url, &model, litellm_key.as_deref(), concurrency, warmup.min(100))
                        .await?;
                    Some(
                        run_latency(
                            url,
                            &model,
                            litellm_key.as_deref(),
                            concurrency,
                            litellm_requests,
                        )
                        .await?,
                    )
                }
                None => None,
            };
            println!("Per target, {concurrency} concurrent streams, {} measured rounds pooled after {warmup} warm-up requests per target.", rounds.max(1));
            println!();
            println!("| target | streams | first byte p50 (ms) | first byte p99 (ms) | total p50 (ms) | total p99 (ms) | streams/s |");
            println!("|---|---|---|---|---|---|---|");
            println!("{}", summary("upstream directly", &d));
            println!("{}", summary("docent serve", &p));
            if let Some(l) = &l {
                println!("{}", summary("LiteLLM proxy", l));
            }
            println!();
            println!("Transport overhead per request from the double's wall-clock stamps (the double's own pauses and timer jitter excluded): request path = client send → upstream received; time to first chunk = client send → first chunk received, minus the upstream's own time; chunk delivery = upstream sent → client received, every chunk.");
            println!();
            println!("| target | requests | request path p50 (ms) | request path p99 (ms) | time to first chunk p50 (ms) | time to first chunk p99 (ms) | chunk delivery p50 (ms) | chunk delivery p99 (ms) |");
            println!("|---|---|---|---|---|---|---|---|");
            println!("{}", stamped("upstream directly", &d));
            println!("{}", stamped("docent serve", &p));
            if let Some(l) = &l {
                println!("{}", stamped("LiteLLM proxy", l));
            }
            let add_ns = |x: &[i64], y: &[i64], q: f64| quantile(x, q) - quantile(y, q);
            println!();
            if !p.first_chunk_ns.is_empty() && !d.first_chunk_ns.is_empty() {
                println!(
                    "ADDED LATENCY docent serve (time to first chunk, stamped, docent − direct): p50 {} ms, p99 {} ms (target: p99 <= 0.5 ms at 64 concurrent streams)",
                    signed_ms_ns(add_ns(&p.first_chunk_ns, &d.first_chunk_ns, 0.5)),
                    signed_ms_ns(add_ns(&p.first_chunk_ns, &d.first_chunk_ns, 0.99))
                );
                println!(
                    "ADDED LATENCY docent serve (per chunk delivery, stamped, docent − direct): p50 {} ms, p99 {} ms",
                    signed_ms_ns(add_ns(&p.chunk_delivery_ns, &d.chunk_delivery_ns, 0.5)),
                    signed_ms_ns(add_ns(&p.chunk_delivery_ns, &d.chunk_delivery_ns, 0.99))
                );
            } else {
                println!("no stamps came through: start docent-upstream-double with --stamp for the stamped overheads");
            }
            let add = |x: &Latencies, q: f64| {
                quantile(&x.total_us, q) as i64 - quantile(&d.total_us, q) as i64
            };
            let add_fb = |x: &Latencies, q: f64| {
                quantile(&x.first_byte_us, q) as i64 - quantile(&d.first_byte_us, q) as i64
            };
            println!();
            println!("Unstamped, from the first table (includes the double's timer jitter, so noisier): target − direct.");
            println!();
            println!("| added latency at {concurrency} concurrent streams | first byte p50 (ms) | first byte p99 (ms) | total p50 (ms) | total p99 (ms) |");
            println!("|---|---|---|---|---|");
            println!(
                "| docent serve | {} | {} | {} | {} |",
                signed_ms(add_fb(&p, 0.5)),
                signed_ms(add_fb(&p, 0.99)),
                signed_ms(add(&p, 0.5)),
                signed_ms(add(&p, 0.99))
            );
            if let Some(l) = &l {
                println!(
                    "| LiteLLM proxy | {} | {} | {} | {} |",
                    signed_ms(add_fb(l, 0.5)),
                    signed_ms(add_fb(l, 0.99)),
                    signed_ms(add(l, 0.5)),
                    signed_ms(add(l, 0.99))
                );
                // The ratio uses the same measure for both proxies: stamped time to first chunk
                // when LiteLLM passes the stamps through, else the unstamped first byte.
                let (how, docent_ns, litellm_ns) = if !l.first_chunk_ns.is_empty()
                    && !p.first_chunk_ns.is_empty()
                {
                    let f = |q| {
                        (
                            add_ns(&p.first_chunk_ns, &d.first_chunk_ns, q),
                            add_ns(&l.first_chunk_ns, &d.first_chunk_ns, q),
                        )
                    };
                    ("stamped time to first chunk", [f(0.5).0, f(0.99).0], [f(0.5).1, f(0.99).1])
                } else {
                    (
                        "first byte, unstamped",
                        [add_fb(&p, 0.5) * 1000, add_fb(&p, 0.99) * 1000],
                        [add_fb(l, 0.5) * 1000, add_fb(l, 0.99) * 1000],
                    )
                };
                // docent's overhead is floored at 1 µs so a tiny or negative (noise) value does
                // not divide by zero; the floor is printed when used.
                let ratio = |i: usize| litellm_ns[i] as f64 / docent_ns[i].max(1_000) as f64;
                println!();
                println!(
                    "LITELLM RATIO (LiteLLM added / docent added, {how}): p50 {:.0}x, p99 {:.0}x (docent added p50 {} ms, p99 {} ms; LiteLLM added p50 {} ms, p99 {} ms{})",
                    ratio(0),
                    ratio(1),
                    signed_ms_ns(docent_ns[0]),
                    signed_ms_ns(docent_ns[1]),
                    signed_ms_ns(litellm_ns[0]),
                    signed_ms_ns(litellm_ns[1]),
                    if docent_ns.iter().any(|&x| x < 1_000) { "; docent's value floored at 0.001 ms for the ratio" } else { "" }
                );
            }
            let errors = d.errors + p.errors + l.as_ref().map(|l| l.errors).unwrap_or(0);
            if errors > 0 {
                println!("\nERRORS: direct {}, docent {}, litellm {} (results with errors are not valid)", d.errors, p.errors, l.as_ref().map(|l| l.errors).unwrap_or(0));
            }
        }
        Cmd::Streams { proxy, pid, count, hold_secs, model } => {
            anyhow::ensure!(
                count <= 10_000 && hold_secs <= 25,
                "bounded: count <= 10000, hold_secs <= 25"
            );
            let r = run_open_streams(&proxy, &model, count, pid, Duration::from_secs(hold_secs))
                .await?;
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

//! Several `docent serve` replicas (real `docent-proxy` processes on loopback) sharing one real
//! redis-server through `[limits] store`, with the upstream test double behind them: the per-IP
//! and global limits hold once across the replicas, a killed replica's stream slots come back
//! after the lease, a Redis outage gives the configured behaviour without hanging, and the
//! answer cache in Redis serves one replica's answer from another.
//!
//! Outside CI these tests skip when redis-server is missing; in CI (`CI` set) they fail.

#[path = "common/cache.rs"]
mod cache_common;
#[path = "common/redis.rs"]
mod redis_common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use cache_common::{ask, chat_calls, feedback, question};
use docent_bench::double::{self, DoubleOptions};
use redis_common::{redis_server, Replica};
use serde_json::{json, Value};

async fn start_double(delay_ms: u64) -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(double::serve(l, DoubleOptions { delay_ms, ..Default::default() }, true));
    addr
}

/// A replica config: the double for chat and embeddings, `limits` appended to `[limits]`.
fn config(up: SocketAddr, store: &str, limits: &str) -> String {
    format!(
        r#"
[serve]
trusted_proxies = ["127.0.0.1"]
keepalive_secs = 1
shutdown_grace_secs = 1

[serve.chat]
provider = "double"
model = "test-model"

[serve.embeddings]
provider = "double"
model = "test-embed"

[providers.double]
kind = "openai-compatible"
base_url = "http://{up}/v1"
max_retries = 0

[limits]
store = "{store}"
max_output_tokens = 64
max_input_tokens = 1000
max_embedding_inputs = 2
max_embedding_tokens = 512
{limits}
"#
    )
}

fn chat(stream: bool) -> Value {
    json!({"messages": [{"role": "user", "content": "Where does the setting live?"}], "stream": stream})
}

async fn status_of(c: &reqwest::Client, r: &Replica, path: &str, body: &Value, ip: &str) -> u16 {
    c.post(r.url(path))
        .header("x-forwarded-for", ip)
        .json(body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_spread_over_three_replicas_gets_the_per_ip_limit_once() {
    let Some(redis) = redis_server() else { return };
    let up = start_double(0).await;
    // A generous store timeout: this test is about sharing, not about a slow store falling back.
    let cfg = config(up, &redis.url(), "requests_per_minute_per_ip = 12\nstore_timeout_ms = 2000");
    let replicas =
        [Replica::start(&cfg).await, Replica::start(&cfg).await, Replica::start(&cfg).await];
    let c = reqwest::Client::new();
    let started = Instant::now();
    // 36 requests (three times the limit), round-robin, 6 in flight, from one client address.
    let mut statuses = Vec::new();
    let body = chat(false);
    for batch in 0..6 {
        let futs = (0..6).map(|i| {
            let r = &replicas[(batch * 6 + i) % 3];
            status_of(&c, r, "/v1/chat/completions", &body, "198.51.100.7")
        });
        statuses.extend(futures::future::join_all(futs).await);
    }
    let secs = started.elapsed().as_secs_f64();
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(ok + limited, 36, "only 200s and 429s: {statuses:?}");
    // Tolerance: the bucket refills 12/min = 0.2 per second while the load runs, plus one.
    let allowed = 12 + (secs * 0.2).ceil() as usize + 1;
    assert!(
        (12..=allowed).contains(&ok),
        "{ok} of 36 admitted over 3 replicas in {secs:.1} s; the per-IP limit is 12/min (at most {allowed} with refill)"
    );
    let fallbacks: usize = futures::future::join_all(replicas.iter().map(Replica::metrics))
        .await
        .iter()
        .filter(|m| m.contains("docent_limit_store_failures_total{"))
        .count();
    assert_eq!(fallbacks, 0, "no replica fell back to its own buckets");
    // Another client is not affected.
    let other = status_of(&c, &replicas[0], "/v1/chat/completions", &body, "198.51.100.8");
    assert_eq!(other.await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_global_token_limit_holds_across_replicas() {
    let Some(redis) = redis_server() else { return };
    let up = start_double(0).await;
    let cfg = config(up, &redis.url(), "tokens_per_minute = 9000\nstore_timeout_ms = 2000");
    let replicas = [Replica::start(&cfg).await, Replica::start(&cfg).await];
    // Two inputs of a known token count per request; many client addresses, so only the global
    // bucket binds.
    let input = "the configuration file sets the option per project ".repeat(25);
    // What the proxy charges per input (its rate-limit estimate, docent_proxy::tokens).
    let per_request = 2 * docent_proxy::tokens::check_limit(&[&input], 512).unwrap() as u64;
    assert!(per_request > 400 && per_request < 1024, "{per_request}");
    let body = json!({"model": "test-embed", "input": [input, input]});
    let c = reqwest::Client::new();
    let started = Instant::now();
    let mut ok = 0u64;
    for i in 0..40u32 {
        let ip = format!("203.0.113.{}", i + 1);
        match status_of(&c, &replicas[i as usize % 2], "/v1/embeddings", &body, &ip).await {
            200 => ok += 1,
            429 => {}
            s => panic!("unexpected status {s}"),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let admitted = ok * per_request;
    // 9000 tokens/min, refilled at 150 tokens/s while the load runs; one request of slack.
    let ceiling = 9000 + (secs * 150.0) as u64 + per_request;
    assert!(
        admitted <= ceiling && admitted >= 9000 - per_request,
        "{ok} requests of {per_request} tokens = {admitted} tokens admitted in {secs:.1} s; the global limit is 9000/min (ceiling {ceiling})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_stream_gives_its_stream_slots_back_after_the_lease() {
    let Some(redis) = redis_server() else { return };
    // ~37 chunks 300 ms apart: every stream stays open for about 11 s.
    let up = start_double(300).await;
    let limits = "max_concurrent_streams = 2\nstream_lease_secs = 2\nstore_timeout_ms = 2000";
    let cfg = config(up, &redis.url(), limits);
    let mut a = Replica::start(&cfg).await;
    let b = Replica::start(&cfg).await;
    let c = reqwest::Client::new();
    let mut open = Vec::new();
    for i in 0..2 {
        let mut r = c
            .post(a.url("/v1/chat/completions"))
            .header("x-forwarded-for", format!("192.0.2.{i}"))
            .json(&chat(true))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.chunk().await.unwrap().is_some(), "the stream started");
        open.push(r);
    }
    let refused = c.post(b.url("/v1/chat/completions")).json(&chat(true)).send().await.unwrap();
    assert_eq!(refused.status(), 429, "replica b sees replica a's two slots taken");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited");

    a.kill();
    let killed = Instant::now();
    loop {
        let r = c
            .post(b.url("/v1/chat/completions"))
            .header("x-forwarded-for", "192.0.2.9")
            .json(&chat(true))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 429);
        assert!(
            killed.elapsed() < Duration::from_secs(5),
            "the dead replica's slots are still taken {:?} after the kill (lease 2 s, renewed every 0.67 s)",
            killed.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_stopped_mid_run_falls_back_or_fails_closed_as_configured_without_hanging() {
    let Some(mut redis) = redis_server() else { return };
    let up = start_double(0).await;
    let local = Replica::start(&config(
        up,
        &redis.url(),
        "store_unavailable = \"local\"\nstore_prefix = \"fallback\"\nrequests_per_minute_per_ip = 5",
    ))
    .await;
    let closed = Replica::start(&config(
        up,
        &redis.url(),
        "store_unavailable = \"closed\"\nstore_prefix = \"strict\"",
    ))
    .await;
    let c = reqwest::Client::builder().timeout(Duration::from_secs(5)).build().unwrap();
    let emb = json!({"model": "test-embed", "input": ["where is the setting"]});
    assert_eq!(status_of(&c, &local, "/v1/embeddings", &emb, "198.51.100.1").await, 200);
    assert_eq!(status_of(&c, &closed, "/v1/embeddings", &emb, "198.51.100.1").await, 200);

    redis.stop();
    // Fallback: answered promptly (store_timeout_ms is 100; 2 s leaves room for a busy CI
    // machine and still tells an answer from a hang), and the per-IP limit still holds on this replica's own
    // buckets (5/min: the 5 requests below use them up, the 6th is refused).
    for i in 0..6 {
        let t = Instant::now();
        let s = status_of(&c, &local, "/v1/embeddings", &emb, "198.51.100.2").await;
        assert!(t.elapsed() < Duration::from_secs(2), "request {i} took {:?}", t.elapsed());
        assert_eq!(s, if i < 5 { 200 } else { 429 }, "request {i}");
    }
    let m = local.metrics().await;
    assert!(m.contains("docent_limit_store_failures_total{op=\"take\",outcome=\"local\"}"), "{m}");
    // Fail closed: refused with 503 limits_unavailable, promptly.
    let t = Instant::now();
    let r = c
        .post(closed.url("/v1/embeddings"))
        .header("x-forwarded-for", "198.51.100.1")
        .json(&emb)
        .send()
        .await
        .unwrap();
    assert!(t.elapsed() < Duration::from_secs(2), "took {:?}", t.elapsed());
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "limits_unavailable");

    // Redis back: the strict replica admits again once its breaker closes.
    redis.start();
    let back = Instant::now();
    while status_of(&c, &closed, "/v1/embeddings", &emb, "198.51.100.1").await != 200 {
        assert!(back.elapsed() < Duration::from_secs(10), "still refusing after Redis came back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cached_by_one_replica_is_served_by_the_other_until_not_helpful() {
    let Some(redis) = redis_server() else { return };
    let up = start_double(0).await;
    let cfg = config(up, &redis.url(), "") + "\n[cache]\nenabled = true\nttl_secs = 60\n";
    let (a, b) = (Replica::start(&cfg).await, Replica::start(&cfg).await);
    let (base_a, base_b) = (a.url(""), b.url(""));
    let h: Value = reqwest::get(b.url("/healthz")).await.unwrap().json().await.unwrap();
    assert_eq!(
        (h["limits_store"].as_str(), h["answer_cache"].as_bool()),
        (Some("redis"), Some(true))
    );
    let q = question("Where does the setting live?", "c0ffee00");
    let (first, key, answer, _) = ask(&base_a, &q).await;
    assert_eq!(first.as_deref(), Some("miss"));
    let (second, key_b, replayed, done) = ask(&base_b, &q).await;
    assert_eq!((second.as_deref(), done), (Some("hit"), true));
    assert_eq!((key_b, replayed), (key.clone(), answer));
    assert_eq!(chat_calls(up).await, 1, "the second replica made no upstream call");
    // Another index version: a miss.
    assert_eq!(
        ask(&base_b, &question("Where does the setting live?", "c0ffee01")).await.0.as_deref(),
        Some("miss")
    );
    // "Not helpful" on replica b removes it for replica a too.
    let r = feedback(&base_b, "down", key.as_deref()).await;
    assert_eq!(r["evicted"], true);
    assert_eq!(ask(&base_a, &q).await.0.as_deref(), Some("miss"));
    assert_eq!(chat_calls(up).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_cached_without_moderation_is_not_served_where_moderation_is_on() {
    let Some(redis) = redis_server() else { return };
    let up = start_double(0).await;
    let cfg = config(up, &redis.url(), "") + "\n[cache]\nenabled = true\nttl_secs = 60\n";
    let moderated = cfg.clone() + "\n[moderation]\nenabled = true\nprovider = \"double\"\n";
    let (open, strict) = (Replica::start(&cfg).await, Replica::start(&moderated).await);
    let q = question("Where is the moderation setting?", "c0ffee02");
    assert_eq!(ask(&open.url(""), &q).await.0.as_deref(), Some("miss"));
    assert_eq!(ask(&open.url(""), &q).await.0.as_deref(), Some("hit"));
    // A hit is served before moderation: one cached with moderation off must not be.
    assert_eq!(ask(&strict.url(""), &q).await.0.as_deref(), Some("miss"));
    assert_eq!(ask(&strict.url(""), &q).await.0.as_deref(), Some("hit"));
    assert_eq!(chat_calls(up).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_write_analytics_to_one_capped_redis_list() {
    let Some(redis) = redis_server() else { return };
    let up = start_double(0).await;
    let cfg = format!(
        "{}\nstore_timeout_ms = 2000\nstore_prefix = \"an{}\"\n\n[analytics]\nenabled = true\nredis = true\nmax_records = 3\n",
        config(up, &redis.url(), ""),
        std::process::id()
    );
    let replicas = [Replica::start(&cfg).await, Replica::start(&cfg).await];
    let c = reqwest::Client::new();
    for i in 0..4 {
        let event = json!({"type": "question", "question": format!("q{i}"), "outcome": "declined"});
        let r = c.post(replicas[i % 2].url("/v1/events")).json(&event).send().await.unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.json::<Value>().await.unwrap()["stored"], true);
    }
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let key = format!("an{}:analytics", std::process::id());
    let lines: Vec<String> =
        redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query_async(&mut conn).await.unwrap();
    let qs: Vec<String> = lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["question"].as_str().unwrap().into())
        .collect();
    assert_eq!(
        qs,
        ["q1", "q2", "q3"],
        "both replicas' records, the oldest dropped past max_records"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_redis_never_holds_an_analytics_event_or_feedback() {
    let Some(redis) = redis_server() else { return };
    let up = start_double(0).await;
    let cfg = format!(
        "{}\nstore_unavailable = \"local\"\nstore_prefix = \"stall{}\"\n\n[analytics]\nenabled = true\nredis = true\n",
        config(up, &redis.url(), ""),
        std::process::id()
    );
    let replica = Replica::start(&cfg).await;
    let c = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap();
    let event =
        json!({"type": "question", "question": "where is the setting", "outcome": "answered"});
    assert_eq!(status_of(&c, &replica, "/v1/events", &event, "198.51.100.7").await, 200);
    redis.pause();
    // store_timeout_ms is 100: 2 s tells a prompt answer from a hang on a busy CI machine.
    let feedback =
        json!({"rating": "up", "question": "where is the setting", "answer": "In the config."});
    for (path, body) in [("/v1/events", &event), ("/v1/feedback", &feedback)] {
        let t = Instant::now();
        let s = status_of(&c, &replica, path, body, "198.51.100.7").await;
        let took = t.elapsed();
        assert!(took < Duration::from_secs(2), "{path} took {took:?} with Redis stalled");
        assert_eq!(s, 200, "{path}: the reader's request does not fail for analytics");
    }
    redis.resume();
}

//! The answer cache (`[cache] enabled = true`, in-process store) over real sockets, with the
//! upstream test double counting the calls it gets.

#[path = "common/cache.rs"]
mod cache_common;
mod common;

use std::net::SocketAddr;

use cache_common::{ask, chat_calls, feedback, question};
use common::start_proxy;
use docent_bench::double::{self, DoubleOptions, DEFAULT_ANSWER};
use docent_proxy::Config;
use serde_json::{json, Value};

async fn start_double() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(double::serve(l, DoubleOptions::default(), true));
    addr
}

fn config(up: SocketAddr) -> Config {
    let c = Config::from_toml_str(&format!(
        r#"
[serve.chat]
provider = "double"
model = "test-model"

[providers.double]
kind = "openai-compatible"
base_url = "http://{up}/v1"

[cache]
enabled = true
ttl_secs = 600
"#
    ))
    .unwrap();
    c.validate().unwrap();
    c
}

#[tokio::test]
async fn the_same_question_twice_is_answered_once_by_the_upstream() {
    let up = start_double().await;
    let p = start_proxy(config(up)).await;
    let base = format!("http://{}", p.addr);
    let (c1, k1, a1, done1) =
        ask(&base, &question("Where does the setting live?", "00ab12cd")).await;
    assert_eq!((c1.as_deref(), done1), (Some("miss"), true));
    assert_eq!(a1, DEFAULT_ANSWER);
    assert_eq!(chat_calls(up).await, 1);
    // Same question, other case and spacing: served from the cache, same SSE shape.
    let (c2, k2, a2, done2) =
        ask(&base, &question("where does the  SETTING live", "00ab12cd")).await;
    assert_eq!((c2.as_deref(), done2), (Some("hit"), true));
    assert_eq!(k1, k2);
    assert_eq!(a2, a1, "the replay has the whole answer with its citations");
    assert_eq!(chat_calls(up).await, 1, "a hit makes no upstream call");
    let m = reqwest::get(format!("{base}/metrics")).await.unwrap().text().await.unwrap();
    assert!(m.contains("docent_cache_requests_total{result=\"hit\"} 1"), "{m}");
    assert!(m.contains("docent_cache_requests_total{result=\"miss\"} 1"), "{m}");
    let saved = m
        .lines()
        .find_map(|l| l.strip_prefix("docent_cache_tokens_saved_total "))
        .and_then(|v| v.parse::<u64>().ok());
    assert!(saved.is_some_and(|s| s > 0), "{m}");
    let h: Value = reqwest::get(format!("{base}/healthz")).await.unwrap().json().await.unwrap();
    assert_eq!(
        (h["answer_cache"].as_bool(), h["limits_store"].as_str()),
        (Some(true), Some("in-process"))
    );
    let mut p = p;
    let _ = p.stop.take().unwrap().send(());
    p.task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_changed_index_hash_misses_the_cache() {
    let up = start_double().await;
    let p = start_proxy(config(up)).await;
    let base = format!("http://{}", p.addr);
    let q = "Where does the setting live?";
    assert_eq!(ask(&base, &question(q, "00ab12cd")).await.0.as_deref(), Some("miss"));
    assert_eq!(ask(&base, &question(q, "00ab12ce")).await.0.as_deref(), Some("miss"));
    assert_eq!(chat_calls(up).await, 2);
    assert_eq!(ask(&base, &question(q, "00ab12ce")).await.0.as_deref(), Some("hit"));
}

#[tokio::test]
async fn not_helpful_feedback_evicts_the_cached_answer() {
    let up = start_double().await;
    let p = start_proxy(config(up)).await;
    let base = format!("http://{}", p.addr);
    let q = question("Where does the setting live?", "00ab12cd");
    ask(&base, &q).await;
    let (hit, key, ..) = ask(&base, &q).await;
    assert_eq!(hit.as_deref(), Some("hit"));
    let up_vote = feedback(&base, "up", key.as_deref()).await;
    assert_eq!(up_vote["evicted"], false, "helpful keeps it");
    let down = feedback(&base, "down", key.as_deref()).await;
    assert_eq!(down["evicted"], true);
    assert_eq!(ask(&base, &q).await.0.as_deref(), Some("miss"));
    assert_eq!(chat_calls(up).await, 2);
}

#[tokio::test]
async fn follow_ups_and_questions_without_an_index_are_not_cached() {
    let up = start_double().await;
    let p = start_proxy(config(up)).await;
    let base = format!("http://{}", p.addr);
    let mut no_index = question("Where does the setting live?", "00ab12cd");
    no_index["docent"]["index"] = Value::Null;
    let mut follow_up = question("And per project?", "00ab12cd");
    follow_up["messages"] = json!([
        {"role": "user", "content": "Where does the setting live?"},
        {"role": "assistant", "content": "In docent.toml [1]."},
        {"role": "user", "content": "Sources:\n[1] x\n\nQuestion: And per project?"},
    ]);
    for body in [&no_index, &no_index, &follow_up, &follow_up] {
        let (cache, key, answer, _) = ask(&base, body).await;
        assert_eq!((cache, key), (None, None));
        assert!(!answer.is_empty());
    }
    assert_eq!(chat_calls(up).await, 4);
}

//! Asking cacheable questions and counting the upstream double's chat calls (tests/cache.rs,
//! tests/replicas.rs).

use std::net::SocketAddr;

use serde_json::{json, Value};

/// A widget-shaped single-turn question on index `index`.
pub fn question(q: &str, index: &str) -> Value {
    json!({
        "messages": [{"role": "user", "content": format!("Sources:\n[1] Configuration — the setting lives in docent.toml.\n\nQuestion: {q}")}],
        "stream": true,
        "stream_options": {"include_usage": true},
        "docent": {"task": "answer", "index": index, "namespace": "v2"},
    })
}

/// Upstream chat calls the double has seen.
pub async fn chat_calls(up: SocketAddr) -> usize {
    let all: Vec<Value> =
        reqwest::get(format!("http://{up}/_requests")).await.unwrap().json().await.unwrap();
    all.iter().filter(|r| r["path"].as_str().unwrap_or("").ends_with("chat/completions")).count()
}

/// POST a question; (x-docent-cache, x-docent-cache-key, the answer text, whether it ended with [DONE]).
pub async fn ask(base: &str, body: &Value) -> (Option<String>, Option<String>, String, bool) {
    let r = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let h = |n: &str| r.headers().get(n).map(|v| v.to_str().unwrap().to_string());
    let (cache, key) = (h("x-docent-cache"), h("x-docent-cache-key"));
    let text = r.text().await.unwrap();
    let mut answer = String::new();
    let mut done = false;
    for line in text.lines() {
        let Some(data) = line.strip_prefix("data: ") else { continue };
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let v: Value = serde_json::from_str(data).unwrap();
        if let Some(t) = v.pointer("/choices/0/delta/content").and_then(Value::as_str) {
            answer.push_str(t);
        }
    }
    (cache, key, answer, done)
}

/// POST feedback `rating` naming the answer's cache `key`; the server's JSON answer.
pub async fn feedback(base: &str, rating: &str, key: Option<&str>) -> Value {
    reqwest::Client::new()
        .post(format!("{base}/v1/feedback"))
        .json(&json!({"rating": rating, "cache_key": key}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

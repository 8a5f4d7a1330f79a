//! The opt-in answer cache (`[cache] enabled = true`): complete streamed answers to single-turn
//! questions, replayed as the same SSE stream with zero upstream calls.
//!
//! - **Key** ([`key`]): SHA-256 over the index's content hash and namespace (the widget's
//!   `docent.index` / `docent.namespace`), the model, the rendered system prompt (prompt
//!   template and version, site, language, page), the sources block of the question message as
//!   sent, the normalised question (case and white space folded), and the answer parameters
//!   (`max_tokens`, `temperature`, `top_p`). Everything the upstream sees is in it, so no request
//!   can put an answer under another question's key.
//! - **Value** ([`Cached`]): the answer's text (with its `[n]` citations) and the upstream's usage.
//! - Only single-turn `answer` requests that name the index are cached; a stream that ended with
//!   an error, or that the model did not finish (`finish_reason` `length`, `content_filter`), is
//!   never stored (a replay always ends with `stop`).
//! - **Stores**: in-process (bounded by `max_entries`) or, with `[limits] store = "redis://..."`,
//!   the same Redis (keys `{store_prefix}:cache:{key}`, expiring after `ttl_secs`).
//! - **Eviction**: "not helpful" feedback naming the answer's `cache_key` removes it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::aio::ConnectionManager;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::CacheConfig;

// Response headers on cacheable answers: `hit` (replayed) or `miss` (fresh; stored when it
// completes), and the answer's cache key (sent back with "not helpful" feedback).
pub use docent_core::wire::{CACHE_HEADER, CACHE_HIT, CACHE_KEY_HEADER, CACHE_MISS};
/// Bumped when the key's ingredients or the stored value change.
const VERSION: &str = "docent-answer-cache-v1";

/// A cached answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cached {
    /// The answer's text, citations included.
    pub content: String,
    /// The upstream's prompt tokens when it was answered.
    pub prompt_tokens: u64,
    /// The upstream's completion tokens when it was answered.
    pub completion_tokens: u64,
    /// The model that answered.
    pub model: String,
}

/// What a cache key is made of.
#[derive(Debug, Clone, Copy)]
pub struct KeyParts<'a> {
    /// The index's content hash (`docent.index`).
    pub index: &'a str,
    /// The searched namespace (`docent.namespace`, "" for none).
    pub namespace: &'a str,
    /// The model asked.
    pub model: &'a str,
    /// The rendered system prompt.
    pub system: &'a str,
    /// The single user message as sent (sources block + question).
    pub message: &'a str,
    /// `max_tokens`, `temperature`, `top_p` as they go upstream.
    pub params: &'a str,
}

/// Fold case and white space, and drop trailing `?`, `!`, `.`: "How do I  install it?" and
/// "how do i install it" are one question.
pub fn normalise_question(q: &str) -> String {
    let words: Vec<String> = q.split_whitespace().map(str::to_lowercase).collect();
    words.join(" ").trim_end_matches(['?', '!', '.', ' ']).to_string()
}

/// The cache key (64 hex digits). The message is split into its sources block and question
/// (docent-core's `Sources:\n…\n\nQuestion: …` layout); only the question is normalised.
pub fn key(p: KeyParts<'_>) -> String {
    let (sources, question) = match p.message.rsplit_once("\n\nQuestion: ") {
        Some((s, q)) => (s, q),
        None => ("", p.message),
    };
    let mut h = Sha256::new();
    for part in [
        VERSION,
        p.index,
        p.namespace,
        p.model,
        p.system,
        sources,
        &normalise_question(question),
        p.params,
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `s` looks like a key this cache made (so feedback cannot name arbitrary Redis keys).
pub fn is_key(s: &str) -> bool {
    docent_core::wire::is_cache_key(s)
}

enum Backend {
    Local(Mutex<HashMap<String, (Instant, Cached)>>),
    Redis { conn: ConnectionManager, prefix: String, timeout: Duration },
}

/// The answer cache.
pub struct AnswerCache {
    backend: Backend,
    ttl: Duration,
    max_entries: usize,
}

impl AnswerCache {
    /// An in-process cache.
    pub fn local(cfg: &CacheConfig) -> AnswerCache {
        AnswerCache {
            backend: Backend::Local(Mutex::new(HashMap::new())),
            ttl: Duration::from_secs(cfg.ttl_secs),
            max_entries: cfg.max_entries,
        }
    }

    /// A cache in Redis, on the limit store's connection.
    pub fn redis(
        cfg: &CacheConfig,
        conn: ConnectionManager,
        prefix: &str,
        timeout: Duration,
    ) -> AnswerCache {
        AnswerCache {
            backend: Backend::Redis { conn, prefix: format!("{prefix}:cache:"), timeout },
            ttl: Duration::from_secs(cfg.ttl_secs),
            max_entries: cfg.max_entries,
        }
    }

    /// The answer under `key`, if any. A store that fails or is slow is a miss.
    pub async fn get(&self, key: &str) -> Option<Cached> {
        match &self.backend {
            Backend::Local(m) => {
                let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
                match m.get(key) {
                    Some((until, c)) if *until > Instant::now() => Some(c.clone()),
                    Some(_) => {
                        m.remove(key);
                        None
                    }
                    None => None,
                }
            }
            Backend::Redis { conn, prefix, timeout } => {
                let mut c = conn.clone();
                let mut cmd = redis::cmd("GET");
                cmd.arg(format!("{prefix}{key}"));
                let get = cmd.query_async(&mut c);
                match tokio::time::timeout(*timeout, get).await {
                    Ok(Ok(Some::<String>(v))) => serde_json::from_str(&v).ok(),
                    Ok(Ok(None)) => None,
                    Ok(Err(e)) => {
                        tracing::debug!(error = %e, "answer cache read failed; treated as a miss");
                        None
                    }
                    Err(_) => None,
                }
            }
        }
    }

    /// Keep `value` under `key` for `ttl_secs`.
    pub async fn put(&self, key: &str, value: &Cached) {
        match &self.backend {
            Backend::Local(m) => {
                let now = Instant::now();
                let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
                if m.len() >= self.max_entries {
                    m.retain(|_, (until, _)| *until > now);
                }
                if m.len() >= self.max_entries {
                    // Still full of live answers: make room by dropping any one of them.
                    if let Some(k) = m.keys().next().cloned() {
                        m.remove(&k);
                    }
                }
                m.insert(key.to_string(), (now + self.ttl, value.clone()));
            }
            Backend::Redis { conn, prefix, timeout } => {
                let Ok(v) = serde_json::to_string(value) else { return };
                let mut c = conn.clone();
                let mut cmd = redis::cmd("SET");
                cmd.arg(format!("{prefix}{key}")).arg(v).arg("EX").arg(self.ttl.as_secs());
                let set = cmd.query_async::<()>(&mut c);
                if let Ok(Err(e)) = tokio::time::timeout(*timeout, set).await {
                    tracing::debug!(error = %e, "answer not cached: the store failed");
                }
            }
        }
    }

    /// Remove the answer under `key`; whether there was one.
    pub async fn evict(&self, key: &str) -> bool {
        match &self.backend {
            Backend::Local(m) => m.lock().unwrap_or_else(|e| e.into_inner()).remove(key).is_some(),
            Backend::Redis { conn, prefix, timeout } => {
                let mut c = conn.clone();
                let mut cmd = redis::cmd("DEL");
                cmd.arg(format!("{prefix}{key}"));
                let del = cmd.query_async::<i64>(&mut c);
                matches!(tokio::time::timeout(*timeout, del).await, Ok(Ok(n)) if n > 0)
            }
        }
    }
}

/// The SSE stream of a cached answer, framed like an upstream's: content chunks, a final chunk
/// with `finish_reason`, the usage chunk when the client asked for it, then `[DONE]`.
pub fn replay(c: &Cached, id: &str, created: u64, include_usage: bool) -> String {
    let chunk = |delta: serde_json::Value, finish: Option<&str>| {
        serde_json::json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": c.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut out = String::with_capacity(c.content.len() * 2 + 512);
    let mut push = |v: serde_json::Value| {
        out.push_str("data: ");
        out.push_str(&v.to_string());
        out.push_str("\n\n");
    };
    push(chunk(serde_json::json!({"role": "assistant", "content": ""}), None));
    // Pieces of about 64 bytes, cut at character boundaries, like a model's stream.
    let mut rest = c.content.as_str();
    while !rest.is_empty() {
        let cut = docent_core::text::ceil_char_boundary(rest, 64);
        let (piece, tail) = rest.split_at(cut);
        push(chunk(serde_json::json!({"content": piece}), None));
        rest = tail;
    }
    push(chunk(serde_json::json!({}), Some("stop")));
    if include_usage {
        push(serde_json::json!({
            "id": id, "object": "chat.completion.chunk", "created": created, "model": c.model,
            "choices": [],
            "usage": {"prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
                      "total_tokens": c.prompt_tokens.saturating_add(c.completion_tokens)},
        }));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(index: &'a str, message: &'a str) -> KeyParts<'a> {
        KeyParts { index, namespace: "", model: "m", system: "sys", message, params: "256" }
    }

    #[test]
    fn the_key_folds_the_question_but_not_the_sources_or_the_index() {
        let a = key(parts("ab12", "Sources:\n[1] Install\n\nQuestion: How do I  install it?"));
        let b = key(parts("ab12", "Sources:\n[1] Install\n\nQuestion: how do i install it"));
        assert_eq!(a, b);
        assert!(is_key(&a));
        let other_sources =
            key(parts("ab12", "Sources:\n[1] INSTALL\n\nQuestion: how do i install it"));
        assert_ne!(a, other_sources);
        let other_index =
            key(parts("ab13", "Sources:\n[1] Install\n\nQuestion: how do i install it"));
        assert_ne!(a, other_index);
    }

    #[test]
    fn a_replayed_answer_is_an_openai_stream_with_the_whole_text() {
        let c = Cached {
            content: "é".repeat(100) + " [1]",
            prompt_tokens: 10,
            completion_tokens: 5,
            model: "m".into(),
        };
        let s = replay(&c, "chatcmpl-x", 1, true);
        let mut text = String::new();
        let mut splitter = crate::sse::Splitter::default();
        let events = splitter.push(s.as_bytes());
        assert_eq!(events.last().unwrap().data, "[DONE]");
        for ev in &events[..events.len() - 1] {
            let d = docent_core::wire::parse_chat_chunk(&ev.data).unwrap();
            text.push_str(d.content.as_deref().unwrap_or_default());
        }
        assert_eq!(text, c.content);
        assert!(s.contains("\"total_tokens\":15"));
    }

    #[test]
    fn a_replay_of_usage_counts_too_large_to_add_up_does_not_panic() {
        // The cached usage is the upstream's: bogus counts summed into `total_tokens`
        // overflowed (a panic in debug builds) on every hit of that answer.
        let c = Cached {
            content: "ok".into(),
            prompt_tokens: u64::MAX,
            completion_tokens: 7,
            model: "m".into(),
        };
        let s = replay(&c, "chatcmpl-x", 1, true);
        assert!(s.contains(&format!("\"total_tokens\":{}", u64::MAX)), "{s}");
        assert!(s.ends_with("data: [DONE]\n\n"));
    }

    #[tokio::test]
    async fn the_local_store_keeps_evicts_and_stays_bounded() {
        let cfg = CacheConfig { enabled: true, ttl_secs: 60, max_entries: 2 };
        let cache = AnswerCache::local(&cfg);
        let c = Cached {
            content: "a".into(),
            prompt_tokens: 1,
            completion_tokens: 1,
            model: "m".into(),
        };
        for k in ["k1", "k2", "k3"] {
            cache.put(k, &c).await;
        }
        let kept = ["k1", "k2", "k3"]
            .iter()
            .filter(|k| futures::executor::block_on(cache.get(k)).is_some())
            .count();
        assert_eq!(kept, 2);
        assert_eq!(cache.get("k3").await, Some(c));
        assert!(cache.evict("k3").await);
        assert_eq!(cache.get("k3").await, None);
    }
}

//! Opt-in analytics (`[analytics]`): what readers asked, and whether the docs answered it.
//!
//! The widget does retrieval in the browser, so only it knows a question's outcome (answered,
//! uncertain, declined) and the sections it landed on. After each turn it posts one event to
//! `POST /v1/events`; "not helpful" and "helpful" feedback is recorded here too. `docent report`
//! turns the records into one static HTML page.
//!
//! Privacy by construction: a record holds the question, the outcome, the top sections, the
//! index checksum and a timestamp. **No IP, no cookie, no reader or session id, and not the
//! request id** (the access log pairs request ids with IPs, so storing it would let the two be
//! joined). The time and order of records can still be matched with the access log's
//! `/v1/events` lines on a quiet site: docs/privacy.md says so. Records go to a JSON-lines
//! file or to a capped Redis list shared by replicas.

use std::path::{Path, PathBuf};

use redis::aio::ConnectionManager;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::ApiError;
use crate::jsonl::{Cap, JsonlWriter};

/// Version of the record layout, written as `"v"` in every record.
pub const RECORD_VERSION: u32 = 1;
/// Most characters of a question kept.
pub const MAX_QUESTION: usize = 1_000;
/// Most characters of an answer kept (feedback records).
pub const MAX_ANSWER: usize = 4_000;
/// Most sections kept per question.
pub const MAX_SECTIONS: usize = 10;

/// `[analytics]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AnalyticsConfig {
    /// Record questions' outcomes and feedback (default false).
    pub enabled: bool,
    /// Append records to this JSON-lines file.
    pub path: Option<PathBuf>,
    /// Or push them to a Redis list in the `[limits] store` (key `<store_prefix>:analytics`),
    /// so every replica writes to one place.
    pub redis: bool,
    /// Most records kept: the Redis list drops its oldest, the file stops growing (new records
    /// are dropped, with one warning, until it is rotated). Anyone who can reach `/v1/events`
    /// adds records, so neither may grow without end.
    pub max_records: u64,
}

impl Default for AnalyticsConfig {
    fn default() -> Self {
        AnalyticsConfig { enabled: false, path: None, redis: false, max_records: 1_000_000 }
    }
}

impl AnalyticsConfig {
    /// Check the section against the rest of the config; `redis_store` is `[limits] store`.
    pub fn validate(&self, redis_store: Option<&str>) -> Result<(), String> {
        if !self.enabled {
            return Ok(());
        }
        match (&self.path, self.redis) {
            (None, false) => Err("[analytics] enabled = true needs somewhere to write: path = \"analytics.jsonl\" (a JSON-lines file) or redis = true (the [limits] store)".into()),
            (Some(_), true) => Err("[analytics] has both path and redis = true; pick one".into()),
            (_, true) if redis_store.is_none() => Err("[analytics] redis = true writes to the [limits] store, which is not set; set [limits] store = \"redis://...\" or use path = \"analytics.jsonl\"".into()),
            _ if self.max_records == 0 => Err("[analytics] max_records = 0 would keep nothing; use a positive number (default 1000000)".into()),
            _ => Ok(()),
        }
    }
}

/// Where records go.
pub enum AnalyticsSink {
    /// A JSON-lines file capped at `max_records` lines ([`crate::jsonl::Cap::Lines`]).
    File {
        /// The writer.
        writer: JsonlWriter,
    },
    /// A capped Redis list.
    Redis { conn: ConnectionManager, key: String, max: u64 },
}

impl std::fmt::Debug for AnalyticsSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnalyticsSink::File { writer, .. } => {
                write!(f, "AnalyticsSink::File({})", writer.path().display())
            }
            AnalyticsSink::Redis { key, .. } => write!(f, "AnalyticsSink::Redis({key})"),
        }
    }
}

impl AnalyticsSink {
    /// A JSON-lines file at `path` that keeps at most `max` records (the lines already in it
    /// count); records past that are dropped and counted like any full log's.
    pub fn file(
        path: &Path,
        max: u64,
        metrics: std::sync::Arc<crate::metrics::Metrics>,
    ) -> std::io::Result<AnalyticsSink> {
        Ok(AnalyticsSink::File {
            writer: JsonlWriter::open(path, "analytics", Cap::Lines(max), metrics)?,
        })
    }

    /// Store one record. Failures are logged, never shown to the reader: analytics must not
    /// break answers.
    pub async fn record(&self, rec: &Value) {
        match self {
            AnalyticsSink::File { writer } => {
                // A dropped record is counted and logged by the writer.
                let _ = writer.append(rec);
            }
            AnalyticsSink::Redis { conn, key, max } => {
                let mut c = conn.clone();
                let line = rec.to_string();
                let r: Result<(), redis::RedisError> = redis::pipe()
                    .rpush(key, line)
                    .ignore()
                    .ltrim(key, -(*max as isize), -1)
                    .ignore()
                    .query_async(&mut c)
                    .await;
                if let Err(e) = r {
                    tracing::warn!(error = %e, "cannot store an analytics record in Redis");
                }
            }
        }
    }
}

/// The Redis key of the analytics list under a `[limits] store_prefix`.
pub fn redis_key(prefix: &str) -> String {
    format!("{prefix}:analytics")
}

/// Whole seconds since the Unix epoch.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn bad(m: String) -> ApiError {
    ApiError::InvalidRequest(m)
}

fn string(obj: &Map<String, Value>, k: &str, max: usize) -> Result<Option<String>, ApiError> {
    match obj.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.chars().take(max).collect())),
        Some(_) => Err(bad(format!("event \"{k}\" must be a string"))),
    }
}

/// A section a question landed on: its URL (`page#anchor`) and title.
fn sections(obj: &Map<String, Value>) -> Result<Vec<Value>, ApiError> {
    let list = match obj.get("sections") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(a)) => a,
        Some(_) => return Err(bad("event \"sections\" must be an array".into())),
    };
    let mut out = Vec::new();
    for s in list.iter().take(MAX_SECTIONS) {
        let Some(o) = s.as_object() else {
            return Err(bad("each of event \"sections\" must be {\"url\", \"title\"}".into()));
        };
        let url = string(o, "url", 500)?.unwrap_or_default();
        if url.is_empty() {
            return Err(bad("each of event \"sections\" needs a \"url\"".into()));
        }
        out.push(json!({"url": url, "title": string(o, "title", 300)?.unwrap_or_default()}));
    }
    Ok(out)
}

/// Validate a widget's `POST /v1/events` body and turn it into the record to store: only the
/// fields below survive, cut to size; anything else the browser sent is dropped.
///
/// `{"type": "question", "question", "outcome": "answered"|"uncertain"|"declined",
/// "sections"?: [{"url", "title"}], "confidence"?: number, "mode"?: "generated"|"extractive",
/// "index"?: checksum, "lang"?: tag}`
pub fn question_record(body: &Value) -> Result<Value, ApiError> {
    let Some(obj) = body.as_object() else {
        return Err(bad("an event must be a JSON object".into()));
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("question") => {}
        _ => return Err(bad("event needs \"type\": \"question\"".into())),
    }
    let question = string(obj, "question", MAX_QUESTION)?.unwrap_or_default();
    if question.trim().is_empty() {
        return Err(bad("event needs a non-empty \"question\"".into()));
    }
    let outcome = match obj.get("outcome").and_then(Value::as_str) {
        Some(o @ ("answered" | "uncertain" | "declined")) => o,
        _ => {
            return Err(bad(
                "event needs \"outcome\": \"answered\", \"uncertain\" or \"declined\"".into()
            ))
        }
    };
    let mode = match obj.get("mode") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m == "generated" || m == "extractive" => Some(m.clone()),
        Some(_) => {
            return Err(bad("event \"mode\" must be \"generated\" or \"extractive\"".into()))
        }
    };
    let confidence = match obj.get("confidence") {
        None | Some(Value::Null) => None,
        // 0..1 (a rounding error past either end is let through, clamped).
        Some(v) => match v.as_f64().filter(|c| (-1e-6..=1.0 + 1e-6).contains(c)) {
            Some(c) => Some((c.clamp(0.0, 1.0) * 1000.0).round() / 1000.0),
            None => return Err(bad("event \"confidence\" must be a number from 0 to 1".into())),
        },
    };
    Ok(json!({
        "v": RECORD_VERSION,
        "type": "question",
        "ts": now(),
        "question": question,
        "outcome": outcome,
        "confidence": confidence,
        "mode": mode,
        "sections": sections(obj)?,
        "index": string(obj, "index", 64)?,
        "lang": string(obj, "lang", 16)?,
    }))
}

/// The analytics record of a feedback vote (already validated by the feedback handler).
pub fn feedback_record(
    rating: &str,
    question: Option<&str>,
    answer: Option<&str>,
    sources: &[String],
) -> Value {
    let cut = |s: Option<&str>, max: usize| s.map(|s| s.chars().take(max).collect::<String>());
    json!({
        "v": RECORD_VERSION,
        "type": "feedback",
        "ts": now(),
        "rating": rating,
        "question": cut(question, MAX_QUESTION),
        "answer": cut(answer, MAX_ANSWER),
        "sources": sources.iter().take(MAX_SECTIONS).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_event_keeps_only_known_fields_cut_to_size() {
        let long = "x".repeat(5_000);
        let r = question_record(&json!({
            "type": "question", "question": long, "outcome": "uncertain",
            "sections": [{"url": "/a#b", "title": "A"}], "confidence": 0.41234,
            "mode": "extractive", "index": "abc", "ip": "1.2.3.4", "reader": "r1"
        }))
        .unwrap();
        assert_eq!(r["question"].as_str().unwrap().chars().count(), MAX_QUESTION);
        assert_eq!(r["outcome"], "uncertain");
        assert_eq!(r["confidence"], 0.412);
        assert_eq!(r["sections"][0]["url"], "/a#b");
        assert!(r.get("ip").is_none() && r.get("reader").is_none());
        assert!(r["ts"].as_u64().unwrap() > 1_700_000_000);
    }

    #[test]
    fn bad_events_say_what_is_wrong() {
        for (body, want) in [
            (json!([1]), "JSON object"),
            (json!({"type": "click"}), "\"type\": \"question\""),
            (json!({"type": "question", "question": " ", "outcome": "answered"}), "non-empty"),
            (json!({"type": "question", "question": "q", "outcome": "maybe"}), "outcome"),
            (
                json!({"type": "question", "question": "q", "outcome": "answered", "sections": "x"}),
                "array",
            ),
            (
                json!({"type": "question", "question": "q", "outcome": "answered", "sections": [{}]}),
                "url",
            ),
            (
                json!({"type": "question", "question": "q", "outcome": "answered", "mode": "x"}),
                "mode",
            ),
            (
                json!({"type": "question", "question": "q", "outcome": "answered", "confidence": "x"}),
                "number",
            ),
            (
                json!({"type": "question", "question": "q", "outcome": "answered", "confidence": -3}),
                "from 0 to 1",
            ),
            (
                json!({"type": "question", "question": "q", "outcome": "answered", "confidence": 1e9}),
                "from 0 to 1",
            ),
        ] {
            let e = question_record(&body).unwrap_err().to_string();
            assert!(e.contains(want), "{body}: {e}");
        }
    }

    #[tokio::test]
    async fn the_file_stops_growing_at_max_records() {
        let dir = std::env::temp_dir().join(format!("docent-analytics-cap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("a.jsonl");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&path, "{\"old\":1}\n").unwrap();
        let lines = || std::fs::read_to_string(&path).unwrap_or_default().lines().count();
        let metrics = std::sync::Arc::new(crate::metrics::Metrics::default());
        let sink = AnalyticsSink::file(&path, 3, metrics.clone()).unwrap();
        for i in 0..5 {
            sink.record(&json!({"n": i})).await;
        }
        for _ in 0..100 {
            if lines() >= 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert_eq!(lines(), 3, "the line already there counts too");
        let dropped = metrics
            .counter("docent_log_lines_dropped_total", &[("log", "analytics"), ("reason", "full")]);
        assert_eq!(dropped, 3, "the three records past max_records are counted");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_config_needs_one_place_to_write() {
        let on = |path: Option<&str>, redis| AnalyticsConfig {
            enabled: true,
            path: path.map(Into::into),
            redis,
            ..Default::default()
        };
        assert!(AnalyticsConfig::default().validate(None).is_ok());
        assert!(on(None, false).validate(None).unwrap_err().contains("path ="));
        assert!(on(Some("a"), true).validate(Some("redis://x")).unwrap_err().contains("pick one"));
        assert!(on(None, true).validate(None).unwrap_err().contains("[limits] store"));
        assert!(on(None, true).validate(Some("redis://x")).is_ok());
        assert!(on(Some("a.jsonl"), false).validate(None).is_ok());
        let none = AnalyticsConfig { max_records: 0, ..on(Some("a.jsonl"), false) };
        assert!(none.validate(None).unwrap_err().contains("max_records"));
    }
}

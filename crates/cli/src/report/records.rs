//! Reading `[analytics]` records: one JSON object per line (see `docent_proxy::analytics`).
//! Lines that are not records are counted and skipped, never fatal: a log written by a crashing
//! process may end in half a line. So are records whose time cannot be true (before
//! [`EARLIEST_TS`] or more than [`FUTURE_SLACK`] ahead of the clock): anyone who can post to
//! `/v1/events` chooses what a record says, and the page lays the time span out day by day.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;

/// The earliest time a record may carry: 2020-01-01 (Unix seconds), before docent existed.
pub const EARLIEST_TS: u64 = 1_577_836_800;
/// How far past the reading machine's clock a record's time may be (its clock may differ).
pub const FUTURE_SLACK: u64 = 86_400;

/// A question's outcome, as the widget judged it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// Answered with confidence.
    Answered,
    /// Answered with the "may not fully answer" label.
    Uncertain,
    /// "The docs don't cover this".
    Declined,
}

impl Outcome {
    /// All three, in display order.
    pub const ALL: [Outcome; 3] = [Outcome::Answered, Outcome::Uncertain, Outcome::Declined];

    /// The record's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::Uncertain => "uncertain",
            Outcome::Declined => "declined",
        }
    }

    fn parse(s: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.name() == s)
    }
}

/// One question record.
#[derive(Debug, Clone)]
pub struct Question {
    /// Unix seconds.
    pub ts: u64,
    /// What the reader asked.
    pub question: String,
    /// How it went.
    pub outcome: Outcome,
    /// The sections it landed on (URL, title), best first.
    pub sections: Vec<(String, String)>,
}

/// One feedback record.
#[derive(Debug, Clone)]
pub struct Feedback {
    /// Unix seconds.
    pub ts: u64,
    /// True for "helpful".
    pub up: bool,
    /// The question, when the widget sent it.
    pub question: String,
    /// The answer, when the widget sent it.
    pub answer: String,
    /// The answer's source URLs.
    pub sources: Vec<String>,
}

/// Everything read.
#[derive(Debug, Default)]
pub struct RecordSet {
    /// Question records, oldest first.
    pub questions: Vec<Question>,
    /// Feedback records, oldest first.
    pub feedback: Vec<Feedback>,
    /// Index checksums seen (a change means the docs were re-indexed).
    pub indexes: Vec<String>,
    /// Lines that were not records, or records with an implausible time.
    pub skipped: usize,
    /// The first of them (1-based).
    pub first_skipped: Option<usize>,
}

impl RecordSet {
    /// How many questions had this outcome.
    pub fn count(&self, o: Outcome) -> usize {
        self.questions.iter().filter(|q| q.outcome == o).count()
    }
}

/// Read an analytics file's lines.
pub fn read_file(path: &Path) -> anyhow::Result<Vec<String>> {
    let text = std::fs::read(path).with_context(|| {
        format!(
            "cannot read the analytics file {} (written by `docent serve` with [analytics] path set)",
            path.display()
        )
    })?;
    Ok(String::from_utf8_lossy(&text).lines().map(str::to_string).collect())
}

/// `url` as it may be shown (on the report page, in errors): without its user and password
/// (`redis://:secret@host:6379` → `redis://host:6379`).
pub fn shown_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://{host}{path}"),
        None => url.to_string(),
    }
}

/// Read every record of a Redis list.
pub fn read_redis(url: &str, key: &str) -> anyhow::Result<Vec<String>> {
    let client = redis::Client::open(url)
        .with_context(|| format!("--redis {} is not a usable Redis URL", shown_url(url)))?;
    let url = shown_url(url);
    let mut c = client
        .get_connection_with_timeout(std::time::Duration::from_secs(5))
        .with_context(|| format!("cannot connect to Redis at {url}"))?;
    let lines: Vec<String> = redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .with_context(|| format!("cannot read the list {key} from {url}"))?;
    if lines.is_empty() {
        eprintln!("docent report: the Redis list {key} is empty (is [analytics] redis = true, and is --key <store_prefix>:analytics?)");
    }
    Ok(lines)
}

fn str_of(v: &Value, k: &str) -> String {
    v.get(k).and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Parse lines into records, keeping those at or after `since` (Unix seconds); `now` is the
/// clock's Unix seconds, for the latest plausible time.
pub fn parse(lines: &[String], since: Option<u64>, now: u64) -> RecordSet {
    let plausible = EARLIEST_TS..=now.saturating_add(FUTURE_SLACK);
    let mut set = RecordSet::default();
    let mut seen_indexes = std::collections::HashSet::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Option<Value> = serde_json::from_str(line).ok();
        let kind = v.as_ref().and_then(|v| v.get("type")).and_then(Value::as_str);
        let ts = v
            .as_ref()
            .and_then(|v| v.get("ts"))
            .and_then(Value::as_u64)
            .filter(|ts| plausible.contains(ts));
        let (Some(v), Some(kind), Some(ts)) = (v.as_ref(), kind, ts) else {
            set.skipped += 1;
            set.first_skipped.get_or_insert(i + 1);
            continue;
        };
        if since.is_some_and(|s| ts < s) {
            continue;
        }
        match kind {
            "question" => {
                let Some(outcome) =
                    v.get("outcome").and_then(Value::as_str).and_then(Outcome::parse)
                else {
                    set.skipped += 1;
                    set.first_skipped.get_or_insert(i + 1);
                    continue;
                };
                let sections = v
                    .get("sections")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| {
                                let url = s.get("url")?.as_str()?.to_string();
                                Some((url, str_of(s, "title")))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(ix) = v.get("index").and_then(Value::as_str) {
                    // A set: any browser can post any checksum, so there may be millions.
                    if seen_indexes.insert(ix.to_string()) {
                        set.indexes.push(ix.to_string());
                    }
                }
                set.questions.push(Question {
                    ts,
                    question: str_of(v, "question"),
                    outcome,
                    sections,
                });
            }
            "feedback" => {
                let sources = v
                    .get("sources")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default();
                set.feedback.push(Feedback {
                    ts,
                    up: v.get("rating").and_then(Value::as_str) == Some("up"),
                    question: str_of(v, "question"),
                    answer: str_of(v, "answer"),
                    sources,
                });
            }
            _ => {
                set.skipped += 1;
                set.first_skipped.get_or_insert(i + 1);
            }
        }
    }
    set.questions.sort_by_key(|q| q.ts);
    set.feedback.sort_by_key(|f| f.ts);
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_url_is_shown_without_its_password() {
        assert_eq!(shown_url("redis://:s3cret@cache:6379/0"), "redis://cache:6379/0");
        assert_eq!(shown_url("rediss://user:p@ss@cache.example"), "rediss://cache.example");
        assert_eq!(shown_url("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(shown_url("redis+unix:///run/redis.sock"), "redis+unix:///run/redis.sock");
        assert_eq!(shown_url("not a url"), "not a url");
        for url in ["redis://:s3cret@", "redis://:s3cret@127.0.0.1:1"] {
            let e = read_redis(url, "k").unwrap_err();
            assert!(!format!("{e:#}").contains("s3cret"), "{e:#}");
        }
    }

    /// A clock for the tests: 2025-11-25.
    const NOW: u64 = 1_764_100_000;

    #[test]
    fn records_are_read_and_junk_is_counted() {
        let lines: Vec<String> = [
            r#"{"v":1,"type":"question","ts":1764000200,"question":"b","outcome":"declined","sections":[]}"#,
            r#"{"v":1,"type":"question","ts":1764000100,"question":"a","outcome":"answered","sections":[{"url":"/x#y","title":"X"}],"index":"c1"}"#,
            r#"{"v":1,"type":"feedback","ts":1764000150,"rating":"down","question":"a","answer":"no","sources":["/x"]}"#,
            r#"{"v":1,"type":"question","ts":1764000300,"question":"c","outcome":"maybe"}"#,
            "{\"v\":1,\"type\":\"quest",
            "",
        ]
        .map(String::from)
        .to_vec();
        let s = parse(&lines, None, NOW);
        assert_eq!(s.questions.len(), 2);
        assert_eq!(s.questions[0].question, "a", "oldest first");
        assert_eq!(s.questions[0].sections, vec![("/x#y".to_string(), "X".to_string())]);
        assert_eq!(s.feedback.len(), 1);
        assert!(!s.feedback[0].up);
        assert_eq!(s.indexes, vec!["c1"]);
        assert_eq!((s.skipped, s.first_skipped), (2, Some(4)));
        let recent = parse(&lines, Some(1_764_000_150), NOW);
        assert_eq!(recent.questions.len(), 1);
        assert_eq!(recent.count(Outcome::Declined), 1);
    }

    #[test]
    fn records_with_an_implausible_time_are_skipped_and_counted() {
        let q = |ts: &str| {
            format!(r#"{{"type":"question","ts":{ts},"question":"q","outcome":"answered"}}"#)
        };
        let lines = vec![
            q("1764000000"),
            q("18446744073709551615"),
            q("0"),
            q(&(EARLIEST_TS - 1).to_string()),
            q(&(NOW + FUTURE_SLACK + 1).to_string()),
            q(&(NOW + 3_600).to_string()),
            q("-5"),
        ];
        let s = parse(&lines, None, NOW);
        assert_eq!(s.questions.len(), 2, "today's and an hour ahead (another clock) are kept");
        assert_eq!((s.skipped, s.first_skipped), (5, Some(2)));
    }
}

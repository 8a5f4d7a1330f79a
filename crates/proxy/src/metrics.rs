//! Prometheus metrics, hand-rolled text exposition (format 0.0.4).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `docent_requests_total` | counter | route, status |
//! | `docent_request_duration_seconds` | histogram | route |
//! | `docent_upstream_latency_seconds` | histogram | op (chat, embeddings, moderation): time to response headers |
//! | `docent_time_to_first_token_seconds` | histogram | — (streamed chat: request start to first upstream chunk) |
//! | `docent_tokens_total` | counter | direction (in, out) |
//! | `docent_rate_limited_total` | counter | scope (ip, global, streams), what (requests, tokens, local_embeddings: more than [`crate::local::MAX_WAITING`] questions waiting for the local model) |
//! | `docent_moderation_flagged_total` | counter | — |
//! | `docent_upstream_retries_total` | counter | op |
//! | `docent_upstream_errors_total` | counter | op, kind (status, timeout, connect, request, stream, answer) |
//! | `docent_client_disconnects_total` | counter | — (streams cancelled because the client went away) |
//! | `docent_streams_cut_at_shutdown_total` | counter | — (still open when the shutdown grace period ran out) |
//! | `docent_streams_cut_at_limit_total` | counter | — (ran past `[serve] max_stream_secs`) |
//! | `docent_stalled_clients_total` | counter | — (connections closed: the client took no byte for `[serve] send_timeout_ms`) |
//! | `docent_feedback_total` | counter | rating (up, down) |
//! | `docent_log_lines_dropped_total` | counter | log (audit, feedback, analytics), reason (full: at `[serve] log_max_mb`; backlog: the disk is not keeping up) |
//! | `docent_open_streams` | gauge | — |
//! | `docent_limit_store_failures_total` | counter | op (take, stream), outcome (local: fell back to in-process limits, refused) |
//! | `docent_cache_requests_total` | counter | result (hit, miss) — cacheable questions only |
//! | `docent_cache_tokens_saved_total` | counter | — (upstream tokens the cache hits did not spend) |
//! | `docent_cache_evictions_total` | counter | reason (feedback) |

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Histogram bucket bounds in seconds.
const BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

#[derive(Debug, Default, Clone)]
struct Hist {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Hist {
    fn observe(&mut self, secs: f64) {
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += secs;
        self.count += 1;
    }
}

/// All metrics of one server.
#[derive(Debug, Default)]
pub struct Metrics {
    counters: Mutex<BTreeMap<(&'static str, String), u64>>,
    hists: Mutex<BTreeMap<(&'static str, String), Hist>>,
    open_streams: AtomicI64,
    tokens_in: AtomicU64,
    tokens_out: AtomicU64,
}

fn labels(pairs: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let v = v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
        let _ = write!(s, "{k}=\"{v}\"");
    }
    s
}

const HELP: [(&str, &str, &str); 20] = [
    ("docent_requests_total", "counter", "HTTP requests by route and status."),
    (
        "docent_request_duration_seconds",
        "histogram",
        "Time to the end of the response (streams: until the last chunk).",
    ),
    (
        "docent_upstream_latency_seconds",
        "histogram",
        "Upstream time to response headers, by operation.",
    ),
    (
        "docent_time_to_first_token_seconds",
        "histogram",
        "Streamed chat: request start to the first upstream chunk.",
    ),
    (
        "docent_tokens_total",
        "counter",
        "Tokens in (prompt) and out (completion) as reported by upstream usage.",
    ),
    ("docent_rate_limited_total", "counter", "Requests refused by rate limits."),
    (
        "docent_moderation_flagged_total",
        "counter",
        "Chat requests refused because moderation flagged the conversation.",
    ),
    ("docent_upstream_retries_total", "counter", "Upstream retries (only before the first byte)."),
    ("docent_upstream_errors_total", "counter", "Upstream failures by operation and kind."),
    (
        "docent_client_disconnects_total",
        "counter",
        "Streams cancelled because the client went away.",
    ),
    (
        "docent_streams_cut_at_shutdown_total",
        "counter",
        "Streams ended by the server because the shutdown grace period ran out.",
    ),
    (
        "docent_streams_cut_at_limit_total",
        "counter",
        "Streams ended by the server because they ran past [serve] max_stream_secs.",
    ),
    (
        "docent_stalled_clients_total",
        "counter",
        "Connections closed because the client took no byte for [serve] send_timeout_ms.",
    ),
    ("docent_feedback_total", "counter", "Feedback received, by rating."),
    (
        "docent_log_lines_dropped_total",
        "counter",
        "JSON-lines records not written: the file is at its cap, or the disk is not keeping up.",
    ),
    ("docent_open_streams", "gauge", "Streams currently open."),
    (
        "docent_limit_store_failures_total",
        "counter",
        "Shared limit store unreachable: requests that fell back to local limits or were refused.",
    ),
    ("docent_cache_requests_total", "counter", "Cacheable questions, by result (hit, miss)."),
    (
        "docent_cache_tokens_saved_total",
        "counter",
        "Upstream tokens (prompt + completion) not spent thanks to cache hits.",
    ),
    ("docent_cache_evictions_total", "counter", "Cached answers removed, by reason."),
];

impl Metrics {
    /// Add `n` to a counter (the typed methods below are the only callers, so every metric
    /// name and label set is written once).
    fn inc(&self, name: &'static str, pairs: &[(&str, &str)], n: u64) {
        let mut c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let v = c.entry((name, labels(pairs))).or_insert(0);
        *v = v.saturating_add(n);
    }

    /// Observe a duration in a histogram.
    fn observe(&self, name: &'static str, pairs: &[(&str, &str)], d: Duration) {
        let mut h = self.hists.lock().unwrap_or_else(|e| e.into_inner());
        h.entry((name, labels(pairs))).or_default().observe(d.as_secs_f64());
    }

    /// Count a finished request.
    pub fn request(&self, route: &str, status: u16, d: Duration) {
        self.request_done(route, status);
        self.request_duration(route, d);
    }

    /// `docent_requests_total{route, status}` + 1.
    pub fn request_done(&self, route: &str, status: u16) {
        self.inc("docent_requests_total", &[("route", route), ("status", &status.to_string())], 1);
    }

    /// `docent_request_duration_seconds{route}` (streams: when the stream ends).
    pub fn request_duration(&self, route: &str, d: Duration) {
        self.observe("docent_request_duration_seconds", &[("route", route)], d);
    }

    /// `docent_upstream_latency_seconds{op}`: time to the upstream's response headers.
    pub fn upstream_latency(&self, op: &str, d: Duration) {
        self.observe("docent_upstream_latency_seconds", &[("op", op)], d);
    }

    /// `docent_time_to_first_token_seconds`.
    pub fn time_to_first_token(&self, d: Duration) {
        self.observe("docent_time_to_first_token_seconds", &[], d);
    }

    /// `docent_rate_limited_total{scope, what}` + 1.
    pub fn rate_limited(&self, scope: &str, what: &str) {
        self.inc("docent_rate_limited_total", &[("scope", scope), ("what", what)], 1);
    }

    /// `docent_moderation_flagged_total` + 1.
    pub fn moderation_flagged(&self) {
        self.inc("docent_moderation_flagged_total", &[], 1);
    }

    /// `docent_upstream_retries_total{op}` + 1.
    pub fn upstream_retry(&self, op: &str) {
        self.inc("docent_upstream_retries_total", &[("op", op)], 1);
    }

    /// `docent_upstream_errors_total{op, kind}` + 1.
    pub fn upstream_error(&self, op: &str, kind: &str) {
        self.inc("docent_upstream_errors_total", &[("op", op), ("kind", kind)], 1);
    }

    /// `docent_client_disconnects_total` + 1.
    pub fn client_disconnect(&self) {
        self.inc("docent_client_disconnects_total", &[], 1);
    }

    /// `docent_streams_cut_at_shutdown_total` + 1.
    pub fn stream_cut_at_shutdown(&self) {
        self.inc("docent_streams_cut_at_shutdown_total", &[], 1);
    }

    /// `docent_streams_cut_at_limit_total` + 1.
    pub fn stream_cut_at_limit(&self) {
        self.inc("docent_streams_cut_at_limit_total", &[], 1);
    }

    /// `docent_stalled_clients_total` + 1.
    pub fn stalled_client(&self) {
        self.inc("docent_stalled_clients_total", &[], 1);
    }

    /// `docent_feedback_total{rating}` + 1.
    pub fn feedback(&self, rating: &str) {
        self.inc("docent_feedback_total", &[("rating", rating)], 1);
    }

    /// `docent_log_lines_dropped_total{log, reason}` + `n`.
    pub fn log_line_dropped(&self, log: &str, reason: &str, n: u64) {
        self.inc("docent_log_lines_dropped_total", &[("log", log), ("reason", reason)], n);
    }

    /// `docent_limit_store_failures_total{op, outcome}` + 1.
    pub fn limit_store_failure(&self, op: &str, outcome: &str) {
        self.inc("docent_limit_store_failures_total", &[("op", op), ("outcome", outcome)], 1);
    }

    /// `docent_cache_requests_total{result}` + 1 ("hit" or "miss").
    pub fn cache_result(&self, hit: bool) {
        self.inc("docent_cache_requests_total", &[("result", if hit { "hit" } else { "miss" })], 1);
    }

    /// `docent_cache_tokens_saved_total` + `tokens`.
    pub fn cache_tokens_saved(&self, tokens: u64) {
        self.inc("docent_cache_tokens_saved_total", &[], tokens);
    }

    /// `docent_cache_evictions_total{reason}` + 1.
    pub fn cache_eviction(&self, reason: &str) {
        self.inc("docent_cache_evictions_total", &[("reason", reason)], 1);
    }

    /// Add upstream-reported token usage.
    pub fn tokens(&self, prompt: u64, completion: u64) {
        self.tokens_in.fetch_add(prompt, Ordering::Relaxed);
        self.tokens_out.fetch_add(completion, Ordering::Relaxed);
    }

    /// A stream opened (+1) or closed (-1).
    pub fn streams(&self, delta: i64) {
        self.open_streams.fetch_add(delta, Ordering::Relaxed);
    }

    /// Streams open now.
    pub fn open_streams(&self) -> i64 {
        self.open_streams.load(Ordering::Relaxed)
    }

    /// Current value of a counter (tests, healthz).
    pub fn counter(&self, name: &'static str, pairs: &[(&str, &str)]) -> u64 {
        self.counters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(name, labels(pairs)))
            .copied()
            .unwrap_or(0)
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let counters = self.counters.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let hists = self.hists.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut out = String::with_capacity(4096);
        for (name, kind, help) in HELP {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            match name {
                "docent_open_streams" => {
                    let _ = writeln!(out, "{name} {}", self.open_streams());
                }
                "docent_tokens_total" => {
                    let _ = writeln!(
                        out,
                        "{name}{{direction=\"in\"}} {}",
                        self.tokens_in.load(Ordering::Relaxed)
                    );
                    let _ = writeln!(
                        out,
                        "{name}{{direction=\"out\"}} {}",
                        self.tokens_out.load(Ordering::Relaxed)
                    );
                }
                _ if kind == "counter" => {
                    for ((n, l), v) in counters.iter().filter(|((n, _), _)| *n == name) {
                        if l.is_empty() {
                            let _ = writeln!(out, "{n} {v}");
                        } else {
                            let _ = writeln!(out, "{n}{{{l}}} {v}");
                        }
                    }
                }
                _ => {
                    for ((n, l), h) in hists.iter().filter(|((n, _), _)| *n == name) {
                        let sep = if l.is_empty() { "" } else { "," };
                        for (i, b) in BUCKETS.iter().enumerate() {
                            let _ =
                                writeln!(out, "{n}_bucket{{{l}{sep}le=\"{b}\"}} {}", h.counts[i]);
                        }
                        let _ = writeln!(out, "{n}_bucket{{{l}{sep}le=\"+Inf\"}} {}", h.count);
                        let braces = if l.is_empty() { String::new() } else { format!("{{{l}}}") };
                        let _ = writeln!(out, "{n}_sum{braces} {}", h.sum);
                        let _ = writeln!(out, "{n}_count{braces} {}", h.count);
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_counters_histograms_and_the_gauge() {
        let m = Metrics::default();
        m.request("/v1/chat/completions", 200, Duration::from_millis(3));
        m.rate_limited("ip", "requests");
        m.rate_limited("ip", "requests");
        m.streams(1);
        let t = m.render();
        assert!(
            t.contains("docent_requests_total{route=\"/v1/chat/completions\",status=\"200\"} 1"),
            "{t}"
        );
        assert!(t.contains("docent_request_duration_seconds_bucket{route=\"/v1/chat/completions\",le=\"0.005\"} 1"), "{t}");
        assert!(t.contains("docent_request_duration_seconds_bucket{route=\"/v1/chat/completions\",le=\"0.001\"} 0"), "{t}");
        assert!(t.contains("docent_rate_limited_total{scope=\"ip\",what=\"requests\"} 2"), "{t}");
        assert!(t.contains("docent_open_streams 1"), "{t}");
    }
}

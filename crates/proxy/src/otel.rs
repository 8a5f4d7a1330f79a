//! Optional OpenTelemetry traces (cargo feature `otel`): one server span per request, exported
//! in batches over OTLP/HTTP with JSON encoding to `{[serve] otlp_endpoint}/v1/traces`.
//!
//! A W3C `traceparent` request header is honoured (the span joins the caller's trace). The
//! span ends when the response headers are sent (for streams: when the stream starts). No
//! message text, keys or headers are exported — only method, route, status, request id, client
//! IP and whether the answer streams.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::config::Config;

struct Exporter {
    url: String,
    client: reqwest::Client,
    buf: Mutex<Vec<Value>>,
}

static EXPORTER: OnceLock<Exporter> = OnceLock::new();

const MAX_BUFFER: usize = 4096;

fn random_hex(bytes: usize) -> String {
    let mut out = String::with_capacity(bytes * 2);
    while out.len() < bytes * 2 {
        let mut h = RandomState::new().build_hasher();
        h.write_u128(
            SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0),
        );
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out.truncate(bytes * 2);
    out
}

/// Trace id and parent span id from a W3C `traceparent` header ("00-<32 hex>-<16 hex>-<flags>").
pub fn parse_traceparent(v: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = v.trim().split('-').collect();
    if parts.len() != 4 || parts[0] != "00" || parts[1].len() != 32 || parts[2].len() != 16 {
        return None;
    }
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_hexdigit()) && s.bytes().any(|b| b != b'0');
    if !hex(parts[1]) || !hex(parts[2]) {
        return None;
    }
    Some((parts[1].to_ascii_lowercase(), parts[2].to_ascii_lowercase()))
}

/// Start the exporter when `[serve] otlp_endpoint` is set (needs a tokio runtime).
pub fn init(cfg: &Config) {
    let Some(endpoint) = &cfg.serve.otlp_endpoint else { return };
    let url = format!("{}/v1/traces", endpoint.trim_end_matches('/'));
    let client = match reqwest::Client::builder().timeout(Duration::from_secs(5)).build() {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "cannot build the OTLP client; traces are off");
            return;
        }
    };
    if EXPORTER.set(Exporter { url: url.clone(), client, buf: Mutex::new(Vec::new()) }).is_err() {
        return;
    }
    tracing::info!(url = %url, "exporting OpenTelemetry traces (OTLP/HTTP JSON)");
    tokio::spawn(async {
        loop {
            tokio::time::sleep(Duration::from_secs(2)).await;
            flush().await;
        }
    });
}

/// Finished request span data.
pub struct SpanData<'a> {
    /// `traceparent` header, if any.
    pub traceparent: Option<&'a str>,
    /// HTTP method.
    pub method: &'a str,
    /// Route label.
    pub route: &'a str,
    /// Response status.
    pub status: u16,
    /// Request id.
    pub request_id: &'a str,
    /// Client IP.
    pub client_ip: &'a str,
    /// Whether the response is a stream.
    pub streaming: bool,
    /// Start, as time since the epoch.
    pub start: Duration,
    /// End, as time since the epoch.
    pub end: Duration,
}

/// Queue a span (no-op when the exporter is off).
pub fn record(s: SpanData<'_>) {
    let Some(exp) = EXPORTER.get() else { return };
    let (trace_id, parent) = s
        .traceparent
        .and_then(parse_traceparent)
        .unwrap_or_else(|| (random_hex(16), String::new()));
    let attr = |k: &str, v: Value| json!({"key": k, "value": v});
    let span = json!({
        "traceId": trace_id,
        "spanId": random_hex(8),
        "parentSpanId": parent,
        "name": format!("{} {}", s.method, s.route),
        "kind": 2,
        "startTimeUnixNano": s.start.as_nanos().to_string(),
        "endTimeUnixNano": s.end.as_nanos().to_string(),
        "attributes": [
            attr("http.request.method", json!({"stringValue": s.method})),
            attr("http.route", json!({"stringValue": s.route})),
            attr("http.response.status_code", json!({"intValue": s.status.to_string()})),
            attr("client.address", json!({"stringValue": s.client_ip})),
            attr("docent.request_id", json!({"stringValue": s.request_id})),
            attr("docent.streaming", json!({"boolValue": s.streaming})),
        ],
        "status": {"code": if s.status >= 500 { 2 } else { 0 }},
    });
    let mut buf = exp.buf.lock().unwrap_or_else(|e| e.into_inner());
    if buf.len() < MAX_BUFFER {
        buf.push(span);
    }
}

/// The OTLP/JSON export body for `spans`.
pub fn export_body(spans: Vec<Value>) -> Value {
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "docent-serve"}},
                                    {"key": "service.version", "value": {"stringValue": env!("CARGO_PKG_VERSION")}}]},
        "scopeSpans": [{"scope": {"name": "docent-proxy", "version": env!("CARGO_PKG_VERSION")}, "spans": spans}],
    }]})
}

/// Send everything queued.
pub async fn flush() {
    let Some(exp) = EXPORTER.get() else { return };
    let spans = std::mem::take(&mut *exp.buf.lock().unwrap_or_else(|e| e.into_inner()));
    if spans.is_empty() {
        return;
    }
    let n = spans.len();
    match exp.client.post(&exp.url).json(&export_body(spans)).send().await {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => tracing::warn!(
            status = r.status().as_u16(),
            spans = n,
            "OTLP collector refused the traces"
        ),
        Err(e) => {
            tracing::warn!(error = %e, spans = n, "cannot reach the OTLP collector; traces dropped")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_headers_are_parsed_and_invalid_ones_ignored() {
        let (t, p) =
            parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(t, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(p, "00f067aa0ba902b7");
        assert!(
            parse_traceparent("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none()
        );
        assert!(parse_traceparent("garbage").is_none());
    }

    #[test]
    fn export_bodies_follow_otlp_json() {
        let b = export_body(vec![json!({"name": "x"})]);
        assert_eq!(b["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"], "x");
        assert_eq!(random_hex(16).len(), 32);
    }
}

//! The router and the guard middleware (request ids, origin allowlist + CORS, per-IP request
//! limits, logs, metrics, audit). The shared state lives in [`crate::state`].

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tracing::Instrument;

use crate::config::{Cidr, Config};
use crate::error::{ApiError, ErrorCode};

pub use crate::state::{AppState, AuditInfo, ClientIp, EmbedBackend, RequestId, StreamingResponse};

/// Build the router over an existing state.
pub fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/chat/completions", post(crate::chat::chat))
        .route("/v1/embeddings", post(crate::endpoints::embeddings))
        .route("/v1/moderations", post(crate::endpoints::moderations))
        .route("/v1/feedback", post(crate::endpoints::feedback))
        .route("/v1/events", post(crate::endpoints::events))
        .route("/healthz", get(crate::endpoints::healthz))
        .route("/metrics", get(crate::endpoints::metrics));
    crate::mcp::route(api, &state)
        .fallback(|| async { ApiError::NotFound })
        .method_not_allowed_fallback(|| async { ApiError::MethodNotAllowed })
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// A router whose every answer is a 500 (the config could not be turned into a server).
pub fn broken_router(reason: String) -> Router {
    tracing::error!(error = %reason, "docent serve is misconfigured; every request will fail");
    Router::new().fallback(|| async { ApiError::Internal })
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn new_request_id() -> String {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(n);
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    format!("req_{:016x}", h.finish())
}

fn sane_request_id(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 64
        && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

/// The client IP: the peer, or — when the peer is a trusted proxy — the last untrusted hop of
/// `X-Forwarded-For`.
pub fn client_ip(peer: Option<IpAddr>, forwarded: Option<&str>, trusted: &[Cidr]) -> IpAddr {
    let peer = peer.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    let Some(xff) = forwarded else { return peer };
    let hops: Vec<IpAddr> = xff.split(',').filter_map(|h| h.trim().parse().ok()).collect();
    for hop in hops.iter().rev() {
        if !is_trusted(*hop) {
            return *hop;
        }
    }
    hops.first().copied().unwrap_or(peer)
}

fn is_loopback_origin(origin: &str) -> bool {
    let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"));
    let Some(rest) = rest else { return false };
    let host = if let Some(r) = rest.strip_prefix('[') {
        r.split(']').next().unwrap_or("")
    } else {
        rest.split(':').next().unwrap_or("")
    };
    matches!(host, "localhost" | "127.0.0.1" | "::1")
}

/// Whether a browser on `origin` may call this server.
pub fn origin_allowed(cfg: &Config, origin: &str) -> bool {
    let o = origin.trim_end_matches('/');
    if cfg.serve.allow_origins.is_empty() {
        return is_loopback_origin(o);
    }
    cfg.serve
        .allow_origins
        .iter()
        .any(|a| a == "*" || a.trim_end_matches('/').eq_ignore_ascii_case(o))
}

fn route_label(path: &str) -> &'static str {
    match path {
        "/v1/chat/completions" => "/v1/chat/completions",
        "/v1/embeddings" => "/v1/embeddings",
        "/v1/moderations" => "/v1/moderations",
        "/v1/feedback" => "/v1/feedback",
        "/v1/events" => "/v1/events",
        "/healthz" => "/healthz",
        "/metrics" => "/metrics",
        // The MCP service is nested: it answers under /mcp/ too, behind the same guards.
        p if p == "/mcp" || p.starts_with("/mcp/") => "/mcp",
        _ => "other",
    }
}

fn now_secs() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// The guard middleware: runs before every handler.
async fn guard(State(st): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let started = Instant::now();
    let rid = req
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| sane_request_id(v))
        .map(str::to_string)
        .unwrap_or_else(new_request_id);
    let peer = req.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    let forwarded = req.headers().get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let ip = client_ip(peer, forwarded, &st.trusted);
    let origin =
        req.headers().get(header::ORIGIN).and_then(|v| v.to_str().ok()).map(str::to_string);
    // An Origin that is not visible ASCII is on no allowlist: refused, never read as absent.
    let unreadable_origin = origin.is_none() && req.headers().contains_key(header::ORIGIN);
    let path = req.uri().path().to_string();
    let route = route_label(&path);
    let method = req.method().clone();
    #[cfg(feature = "otel")]
    let otel_start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    #[cfg(feature = "otel")]
    let traceparent =
        req.headers().get("traceparent").and_then(|v| v.to_str().ok()).map(str::to_string);
    let span =
        tracing::info_span!("request", request_id = %rid, method = %method, route, client_ip = %ip);

    async move {
        let is_api = path.starts_with("/v1/") || route == "/mcp";
        // Pending until the response is ready: a client that hangs up first drops this future,
        // and the lines below would never run.
        let mut in_flight = InFlight {
            st: &st,
            rid: &rid,
            route,
            ip,
            origin: origin.as_deref(),
            started,
            audit: is_api,
            pending: true,
        };
        // 1. Origin allowlist: refused before anything else happens (no upstream call). MCP
        // clients are not browsers: /mcp needs no Origin even with require_origin.
        let origin_ok = match &origin {
            Some(o) => origin_allowed(&st.cfg, o),
            None if unreadable_origin => false,
            None => !st.cfg.serve.require_origin || route == "/mcp",
        };
        let mut resp = if is_api && !origin_ok {
            let shown = if unreadable_origin { "<unreadable>" } else { "<none>" };
            tracing::warn!(origin = origin.as_deref().unwrap_or(shown), "origin not allowed");
            ApiError::OriginNotAllowed.into_response()
        } else if method == Method::OPTIONS && origin.is_some() {
            // CORS preflight.
            let mut r = StatusCode::NO_CONTENT.into_response();
            let h = r.headers_mut();
            h.insert(
                "access-control-allow-methods",
                HeaderValue::from_static("GET, POST, OPTIONS"),
            );
            let allow_headers =
                req.headers().get("access-control-request-headers").cloned().unwrap_or_else(|| {
                    HeaderValue::from_static("content-type, authorization, x-request-id")
                });
            h.insert("access-control-allow-headers", allow_headers);
            h.insert("access-control-max-age", HeaderValue::from_static("600"));
            r
        } else if is_api && method == Method::POST && route != "/v1/feedback" && route != "other" {
            // 2. Per-IP and global request limits.
            match st.limits.take(ip, 0, &st.metrics).await {
                Err(e) => e.into_response(),
                Ok(()) => {
                    req.extensions_mut().insert(ClientIp(ip));
                    req.extensions_mut().insert(RequestId(rid.clone()));
                    next.run(req).await
                }
            }
        } else {
            req.extensions_mut().insert(ClientIp(ip));
            req.extensions_mut().insert(RequestId(rid.clone()));
            next.run(req).await
        };

        in_flight.pending = false;
        // CORS + request id headers.
        let h = resp.headers_mut();
        if let (Some(o), true) = (&origin, origin_ok) {
            if let Ok(v) = HeaderValue::from_str(o) {
                h.insert("access-control-allow-origin", v);
                h.insert(
                    "access-control-expose-headers",
                    HeaderValue::from_static(docent_core::wire::EXPOSED_HEADERS),
                );
            }
        }
        h.append(header::VARY, HeaderValue::from_static("Origin"));
        if let Ok(v) = HeaderValue::from_str(&rid) {
            h.insert("x-request-id", v);
        }

        let status = resp.status().as_u16();
        let streaming = resp.extensions().get::<StreamingResponse>().is_some();
        let code = resp.extensions().get::<ErrorCode>().map(|c| c.0);
        st.metrics.request_done(route, status);
        if !streaming {
            st.metrics.request_duration(route, started.elapsed());
        }
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        if status >= 500 {
            tracing::error!(status, code, duration_ms = ms, "request failed");
        } else if status >= 400 {
            tracing::warn!(status, code, duration_ms = ms, "request refused");
        } else {
            tracing::info!(status, duration_ms = ms, streaming, "request");
        }
        #[cfg(feature = "otel")]
        crate::otel::record(crate::otel::SpanData {
            traceparent: traceparent.as_deref(),
            method: method.as_str(),
            route,
            status,
            request_id: &rid,
            client_ip: &ip.to_string(),
            streaming,
            start: otel_start,
            end: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default(),
        });
        if let (Some(audit), true) = (&st.audit, is_api && !streaming) {
            let mut rec = in_flight.audit_record(status, ms, code);
            if let Some(extra) = resp.extensions().get::<AuditInfo>() {
                for (k, v) in &extra.0 {
                    rec[k] = v.clone();
                }
            }
            let _ = audit.append(&rec);
        }
        resp
    }
    .instrument(span)
    .await
}

/// A request being answered: what its audit line says of it. Dropped while still pending, its
/// client went away before the response was ready (nginx's status 499): hyper drops the
/// handler, so only the drop can log it, count it and write its audit line. A charge taken for
/// it is kept, as for a stream the client leaves (the upstream may have billed).
struct InFlight<'a> {
    st: &'a AppState,
    rid: &'a str,
    route: &'static str,
    ip: IpAddr,
    origin: Option<&'a str>,
    started: Instant,
    /// An API route: it gets an audit line.
    audit: bool,
    /// No response yet.
    pending: bool,
}

impl InFlight<'_> {
    /// The audit line's fields every request has.
    fn audit_record(&self, status: u16, ms: f64, code: Option<&str>) -> serde_json::Value {
        serde_json::json!({
            "ts": now_secs(), "request_id": self.rid, "route": self.route, "status": status,
            "client_ip": self.ip.to_string(), "origin": self.origin, "duration_ms": ms,
            "error_code": code,
        })
    }
}

/// The status logged for a request the client closed before its response (nginx's).
const CLIENT_CLOSED: u16 = 499;

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.pending {
            return;
        }
        let ms = self.started.elapsed().as_secs_f64() * 1000.0;
        self.st.metrics.client_disconnect();
        self.st.metrics.request_done(self.route, CLIENT_CLOSED);
        self.st.metrics.request_duration(self.route, self.started.elapsed());
        tracing::info!(request_id = %self.rid, route = self.route, client_ip = %self.ip, duration_ms = ms, "client went away before the response; upstream request cancelled");
        if let (Some(audit), true) = (&self.st.audit, self.audit) {
            let mut rec = self.audit_record(CLIENT_CLOSED, ms, Some("client_closed_request"));
            rec["completed"] = serde_json::json!(false);
            let _ = audit.append(&rec);
        }
    }
}

/// The request body, at most `max_body_bytes` (413 `body_too_large` beyond), all of it within
/// `body_timeout_ms` (a client trickling its body byte by byte gets 408 instead of holding the
/// connection). A body that breaks off (bad chunked encoding, a reset) is 400, not 413.
pub async fn read_body(st: &AppState, body: Body) -> Result<axum::body::Bytes, ApiError> {
    let limit = st.cfg.limits.max_body_bytes;
    // A declared length over the limit is refused before any of it is waited for.
    if axum::body::HttpBody::size_hint(&body).lower() > limit as u64 {
        return Err(ApiError::BodyTooLarge { limit });
    }
    let within = Duration::from_millis(st.cfg.serve.body_timeout_ms);
    match tokio::time::timeout(within, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => Err(if e.into_inner().is::<http_body_util::LengthLimitError>() {
            ApiError::BodyTooLarge { limit }
        } else {
            ApiError::InvalidRequest(
                "the request body could not be read (it broke off or its encoding is invalid)"
                    .into(),
            )
        }),
        Err(_) => Err(ApiError::RequestTimeout),
    }
}

/// Current time for log records.
pub fn timestamp() -> f64 {
    now_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forwarded_for_is_only_believed_from_trusted_proxies() {
        let trusted = vec![Cidr::parse("10.0.0.0/8").unwrap()];
        let peer: IpAddr = "10.0.0.5".parse().unwrap();
        let outsider: IpAddr = "203.0.113.9".parse().unwrap();
        assert_eq!(
            client_ip(Some(peer), Some("198.51.100.1, 203.0.113.7, 10.0.0.9"), &trusted),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_ip(Some(outsider), Some("1.2.3.4"), &trusted), outsider);
        assert_eq!(client_ip(Some(peer), None, &trusted), peer);
    }

    #[test]
    fn empty_allowlist_means_loopback_origins_only() {
        let cfg = Config::default();
        assert!(origin_allowed(&cfg, "http://localhost:5173"));
        assert!(origin_allowed(&cfg, "http://127.0.0.1:8080"));
        assert!(origin_allowed(&cfg, "http://[::1]:8080"));
        assert!(!origin_allowed(&cfg, "https://evil.example"));
        assert!(!origin_allowed(&cfg, "http://localhost.evil.example"));
    }

    #[test]
    fn every_path_the_mcp_service_answers_is_guarded_as_mcp() {
        for p in ["/mcp", "/mcp/", "/mcp/x", "/mcp//"] {
            assert_eq!(route_label(p), "/mcp", "{p}");
        }
        assert_eq!(route_label("/mcpx"), "other");
    }

    #[test]
    fn request_ids_are_generated_unless_the_client_sent_a_sane_one() {
        assert!(sane_request_id("abc-123"));
        assert!(!sane_request_id("a b"));
        assert!(!sane_request_id(&"x".repeat(65)));
        assert_ne!(new_request_id(), new_request_id());
    }
}

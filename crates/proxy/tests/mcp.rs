//! `/mcp` (docent-mcp over Streamable HTTP) inside `docent serve`: the tools answer, behind the
//! proxy's guards (origin allowlist for browsers, request limits, body limit), with query
//! embeddings from `[serve.embeddings]` (the upstream test double).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use docent_bench::double::{self, embed_text, DoubleOptions};
use docent_core::{Chunk, IndexHeader};
use docent_proxy::{app, Config};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

const DIMS: usize = 64;

/// A folder under the system temp dir, removed on drop.
struct Tmp(PathBuf);

impl Tmp {
    fn new(name: &str) -> Tmp {
        let d =
            std::env::temp_dir().join(format!("docent-proxy-mcp-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Tmp(d)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn chunk(url: &str, anchor: &str, ns: &str, text: &str) -> Chunk {
    let mut c = Chunk {
        url: url.into(),
        anchor: anchor.into(),
        title: "Guide".into(),
        breadcrumb: vec!["Guide".into(), anchor.into()],
        namespace: ns.into(),
        text: text.into(),
        ..Default::default()
    };
    c.tokens = text.split_whitespace().count() as u32;
    c.hash = c.compute_hash();
    c
}

/// Two pages in two namespaces; with `vectors`, chunk i's vector is the double's embedding of
/// `VECTOR_TEXTS[i]` (what a question must say to find it by meaning).
const VECTOR_TEXTS: [&str; 3] =
    ["how do I frobnicate the widget", "unrelated words here", "something else entirely"];

fn write_index(dir: &Path, vectors: bool) -> PathBuf {
    let chunks = vec![
        chunk("guide.html", "install", "v1", "Run the installer and restart the shell."),
        chunk("guide.html", "limits", "v1", "Requests per minute are capped per client address."),
        chunk("guide.html", "install", "v2", "Version two installs with one command."),
    ];
    let header = if vectors {
        IndexHeader {
            provider: "openai".into(),
            model: "e2e-embed".into(),
            dims: DIMS as u32,
            ..Default::default()
        }
    } else {
        IndexHeader { provider: "none".into(), ..Default::default() }
    };
    let vs: Vec<Vec<f32>> = VECTOR_TEXTS.iter().map(|t| embed_text(t, DIMS)).collect();
    let bytes =
        docent_core::format::write_index(&header, &chunks, vectors.then_some(&vs[..])).unwrap();
    let path = dir.join(if vectors { "vectors.idx" } else { "lexical.idx" });
    std::fs::write(&path, bytes).unwrap();
    path
}

fn config(index: Option<&Path>, extra: &str) -> Arc<Config> {
    let mcp = index
        .map(|p| format!("[mcp]\nindex = {:?}\nname = \"the Guide\"\n", p.display().to_string()))
        .unwrap_or_default();
    let text = format!("[serve]\nallow_origins = [\"https://docs.example.com\"]\n{extra}\n{mcp}");
    let cfg: Config = toml::from_str(&text).unwrap();
    cfg.validate().unwrap();
    Arc::new(cfg)
}

fn post(body: &Value, origin: Option<&str>) -> Request<Body> {
    let mut r = Request::post("/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("host", "127.0.0.1")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(o) = origin {
        r = r.header("origin", o);
    }
    r.body(Body::from(body.to_string())).unwrap()
}

fn call(tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": args}})
}

async fn send(cfg: &Arc<Config>, req: Request<Body>) -> (StatusCode, Value) {
    let resp = app(cfg.clone()).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn no_mcp_section_means_no_mcp_route() {
    let (status, _) =
        send(&config(None, ""), post(&call("search_docs", json!({"query": "x"})), None)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn mcp_tools_answer_over_http_with_namespaces() {
    let tmp = Tmp::new("t1");
    let cfg = config(Some(&write_index(tmp.path(), false)), "");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (status, v) = send(&cfg, post(&init, None)).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let instructions = v["result"]["instructions"].as_str().unwrap();
    assert!(
        instructions.contains("the Guide") && instructions.contains("v1, v2"),
        "{instructions}"
    );

    let (_, v) = send(
        &cfg,
        post(
            &call("search_docs", json!({"query": "installer restart shell", "namespace": "v1"})),
            None,
        ),
    )
    .await;
    let r = &v["result"]["structuredContent"]["results"];
    assert_eq!(r[0]["url"], json!("guide.html#install"), "{v}");
    assert_eq!(r[0]["namespace"], json!("v1"));

    let (_, v) =
        send(&cfg, post(&call("read_section", json!({"url": "guide.html#install"})), None)).await;
    assert_eq!(v["result"]["isError"], json!(true));
    assert!(v["result"]["content"][0]["text"].as_str().unwrap().contains("pass namespace"), "{v}");
    let (_, v) = send(
        &cfg,
        post(&call("read_section", json!({"url": "guide.html#install", "namespace": "v2"})), None),
    )
    .await;
    assert!(
        v["result"]["structuredContent"]["text"].as_str().unwrap().contains("Version two"),
        "{v}"
    );

    let (_, v) = send(&cfg, post(&call("list_namespaces", json!({})), None)).await;
    assert_eq!(v["result"]["structuredContent"]["namespaces"], json!(["v1", "v2"]));
}

#[tokio::test]
async fn mcp_is_behind_the_origin_allowlist_but_needs_no_origin() {
    let tmp = Tmp::new("t2");
    let cfg = config(Some(&write_index(tmp.path(), false)), "require_origin = true");
    let q = call("search_docs", json!({"query": "installer"}));
    let (status, v) = send(&cfg, post(&q, Some("https://evil.example"))).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{v}");
    assert_eq!(v["error"]["code"], json!("origin_not_allowed"));
    let (status, _) = send(&cfg, post(&q, Some("https://docs.example.com"))).await;
    assert_eq!(status, StatusCode::OK);
    // Agents send no Origin: allowed on /mcp even with require_origin (not on the API).
    let (status, _) = send(&cfg, post(&q, None)).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn mcp_requests_count_against_the_rate_limits_and_the_body_limit() {
    let tmp = Tmp::new("t3");
    let index = write_index(tmp.path(), false);
    let cfg =
        config(Some(&index), "[limits]\nrequests_per_minute_per_ip = 2\nmax_body_bytes = 2000");
    let app = app(cfg);
    let q = call("search_docs", json!({"query": "installer"}));
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(app.clone().oneshot(post(&q, None)).await.unwrap().status());
    }
    assert_eq!(statuses, [StatusCode::OK, StatusCode::OK, StatusCode::TOO_MANY_REQUESTS]);

    let cfg = config(Some(&index), "[limits]\nmax_body_bytes = 2000");
    let big = call("search_docs", json!({"query": "x".repeat(5000)}));
    let (status, _) = send(&cfg, post(&big, None)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
}

async fn start_double() -> SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(double::serve(l, DoubleOptions::default(), true));
    addr
}

/// Config sections that embed queries with the double at `up`, the index's model.
fn double_embeddings(up: SocketAddr) -> String {
    format!(
        "[serve.embeddings]\nprovider = \"double\"\nmodel = \"e2e-embed\"\ndimensions = {DIMS}\n\n[providers.double]\nkind = \"openai-compatible\"\nbase_url = \"http://{up}/v1\"\n"
    )
}

#[tokio::test]
async fn mcp_search_is_hybrid_with_the_configured_embeddings_provider() {
    let up = start_double().await;
    let tmp = Tmp::new("t4");
    let index = write_index(tmp.path(), true);
    let cfg = config(Some(&index), &double_embeddings(up));
    // No word in common with any chunk: only the vectors can find it.
    let (_, v) =
        send(&cfg, post(&call("search_docs", json!({"query": VECTOR_TEXTS[0], "top": 1})), None))
            .await;
    let sc = &v["result"]["structuredContent"];
    assert_eq!(sc["retrieval"], json!("hybrid"), "{v}");
    assert_eq!(sc["results"][0]["url"], json!("guide.html#install"), "{v}");
    assert_eq!(sc["results"][0]["namespace"], json!("v1"), "{v}");
}

#[tokio::test]
async fn paths_under_mcp_are_behind_the_same_guards() {
    let tmp = Tmp::new("t5");
    let index = write_index(tmp.path(), false);
    let cfg = config(Some(&index), "[limits]\nrequests_per_minute_per_ip = 2");
    let q = call("search_docs", json!({"query": "installer"}));
    for path in ["/mcp/", "/mcp/x", "/mcp//"] {
        let with = |origin: Option<&str>| {
            let mut r = post(&q, origin);
            *r.uri_mut() = path.parse().unwrap();
            r
        };
        let (status, v) = send(&cfg, with(Some("https://evil.example"))).await;
        assert_ne!(status, StatusCode::OK, "{path}: a foreign origin got {v}");
        let app = app(cfg.clone());
        let mut statuses = Vec::new();
        for _ in 0..3 {
            statuses.push(app.clone().oneshot(with(None)).await.unwrap().status());
        }
        assert!(!statuses.iter().all(|s| *s == StatusCode::OK), "{path}: {statuses:?}");
    }
}

#[tokio::test]
async fn remote_query_embeddings_are_charged_to_the_token_buckets() {
    let up = start_double().await;
    let tmp = Tmp::new("t6");
    let index = write_index(tmp.path(), true);
    let extra = format!(
        "[limits]\ntokens_per_minute_per_ip = 40\nmax_input_tokens = 20\nmax_output_tokens = 10\nmax_embedding_tokens = 30\nmax_embedding_inputs = 1\n\n{}",
        double_embeddings(up)
    );
    let cfg = config(Some(&index), &extra);
    let app = app(cfg);
    // About 25 cl100k tokens: the first fits the 40-token bucket, the second does not.
    let query = "how do I frobnicate the widget when the installer asks for a restart of the shell and nothing happens afterwards at all";
    let q = call("search_docs", json!({"query": query}));
    let first = app.clone().oneshot(post(&q, None)).await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let second = app.clone().oneshot(post(&q, None)).await.unwrap();
    assert_eq!(second.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(second.headers().contains_key("retry-after"));
    let body = second.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&body).contains("tokens"), "{body:?}");
    // Calls that embed nothing are not charged.
    let read = call("read_section", json!({"url": "guide.html#install", "namespace": "v1"}));
    assert_eq!(app.clone().oneshot(post(&read, None)).await.unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn lexical_and_local_mcp_searches_are_not_charged_tokens() {
    let tmp = Tmp::new("t8");
    let index = write_index(tmp.path(), false);
    let cfg = config(Some(&index), "[limits]\ntokens_per_minute_per_ip = 5\nmax_input_tokens = 3\nmax_output_tokens = 2\nmax_embedding_tokens = 5\nmax_embedding_inputs = 1");
    let app = app(cfg);
    let q = call(
        "search_docs",
        json!({"query": "how do I run the installer and restart the shell afterwards"}),
    );
    for _ in 0..3 {
        assert_eq!(app.clone().oneshot(post(&q, None)).await.unwrap().status(), StatusCode::OK);
    }
}

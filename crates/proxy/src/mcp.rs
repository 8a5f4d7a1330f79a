//! `/mcp`: docent-mcp's docs tools over MCP's Streamable HTTP transport, when `[mcp] index` is
//! set. The guard in [`crate::app`] treats `/mcp` like the API routes: per-IP and global
//! request limits on POST, and the origin allowlist for requests that carry an `Origin` (a
//! browser); requests without one (agents, IDEs) pass even with `require_origin`, since MCP
//! clients are not browsers. Queries are embedded with `[serve.embeddings]` when its model is
//! the one the index was built with; otherwise the search is lexical (logged at start). A
//! remote provider's query embeddings are charged to the token buckets ([`charge_queries`]).

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Bytes;
use axum::Router;
use docent_embed::{BoxFuture, EmbedError, EmbedInfo, Embedder};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::state::{AppState, ClientIp, EmbedBackend};
use crate::upstream::Op;

/// `[mcp]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpConfig {
    /// The index file to serve at `/mcp`.
    pub index: PathBuf,
    /// `Host` header values accepted on `/mcp` (DNS-rebinding protection), e.g.
    /// `["ask.example.com"]`. Empty (the default) = any host.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// What the docs are called in the instructions agents get; default `[serve] site`.
    #[serde(default)]
    pub name: Option<String>,
}

/// Add the `/mcp` route to `router` when `[mcp]` is configured. An index that cannot be read
/// makes `/mcp` answer 500 (and is logged); `serve` refuses to start with one anyway.
pub fn route(router: Router<Arc<AppState>>, st: &Arc<AppState>) -> Router<Arc<AppState>> {
    let Some(cfg) = &st.cfg.mcp else { return router };
    match load(cfg, st) {
        Ok(docs) => {
            let opts = docent_mcp::HttpOptions {
                allowed_hosts: cfg.allowed_hosts.clone(),
                max_body_bytes: st.cfg.limits.max_body_bytes,
            };
            // Queries embedded by a remote provider cost money: charge them to the token
            // buckets like /v1/embeddings. A local model or a lexical index costs none.
            let remote = docs.retrieval() == "hybrid"
                && matches!(st.embed, Some((_, EmbedBackend::Remote(_))));
            let service = docent_mcp::http_service(Arc::new(docs), opts);
            if remote {
                let charged = tower::ServiceBuilder::new()
                    .layer(axum::middleware::from_fn_with_state(st.clone(), charge_queries))
                    .service(service);
                router.nest_service("/mcp", charged)
            } else {
                router.nest_service("/mcp", service)
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "[mcp] index is not usable; /mcp will answer 500");
            router.route("/mcp", axum::routing::any(|| async { ApiError::Internal }))
        }
    }
}

/// Charge the `search_docs` queries of a POST to `/mcp` (one JSON-RPC message or a batch) to the
/// client's and the global token buckets before the MCP service embeds them: each query's
/// cl100k tokens, as `/v1/embeddings` charges its inputs (a batch: every query in it). Over a bucket: `429` with
/// `Retry-After`, and nothing is embedded. The body is read here within the body limit and the
/// body timeout, and handed on unchanged; a body that is not JSON is left to the MCP service to
/// refuse. Nothing is refunded when the search fails: an embedding is the cheapest call.
async fn charge_queries(
    axum::extract::State(st): axum::extract::State<Arc<AppState>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    if req.method() != axum::http::Method::POST {
        return next.run(req).await;
    }
    let ip = req.extensions().get::<ClientIp>().map(|c| c.0);
    let (parts, body) = req.into_parts();
    let bytes = match crate::app::read_body(&st, body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    // At most `max_embedding_tokens` a query, what one /v1/embeddings input may cost: the
    // buckets are checked at start to admit that, so no query is refused forever.
    let tokens = query_tokens(&bytes, st.cfg.limits.max_embedding_tokens);
    if let (Some(ip), true) = (ip, tokens > 0) {
        if let Err(e) = st.limits.take(ip, tokens as u64, &st.metrics).await {
            return e.into_response();
        }
    }
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes))).await
}

/// The cl100k tokens of every `search_docs` query in a JSON-RPC body (a message or a batch),
/// each counted up to `cap`.
fn query_tokens(body: &[u8], cap: usize) -> usize {
    let Ok(v) = serde_json::from_slice::<Value>(body) else { return 0 };
    let one = |m: &Value| {
        let p = &m["params"];
        if m["method"] != "tools/call" || p["name"] != "search_docs" {
            return 0;
        }
        p["arguments"]["query"].as_str().map_or(0, |q| crate::tokens::count(q).min(cap))
    };
    match &v {
        Value::Array(batch) => batch.iter().map(one).sum(),
        m => one(m),
    }
}

/// Read `[mcp] index` and pick the query embedder.
pub fn load(cfg: &McpConfig, st: &Arc<AppState>) -> anyhow::Result<docent_mcp::Docs> {
    // A split index is read whole, with its shards (MCP hands out section texts).
    let index = docent_core::split::read_path(&cfg.index).map_err(|e| {
        anyhow::anyhow!("[mcp] index: {e}; set [mcp] index to the file `docent index` wrote")
    })?;
    let h = index.header();
    let embedder: Option<Arc<dyn Embedder>> = match &st.embed {
        _ if h.provider == "none" || h.dims == 0 => None,
        Some((e, _)) if e.model == h.model && e.prompt() == h.embedding.query_prompt => {
            Some(Arc::new(StateEmbedder {
                st: st.clone(),
                info: EmbedInfo {
                    provider: h.provider.clone(),
                    model: h.model.clone(),
                    dims: h.dims as usize,
                    max_input_tokens: None,
                    prompt: h.embedding.query_prompt.clone(),
                },
            }))
        }
        _ => {
            tracing::warn!(index = %cfg.index.display(), model = %h.model, "[mcp] the index has vectors but [serve.embeddings] is not its model (or query prompt); /mcp searches lexically");
            None
        }
    };
    let name = cfg.name.clone().unwrap_or_else(|| st.cfg.serve.site.clone());
    Ok(docent_mcp::Docs::new(index, embedder, &name))
}

/// Embeds queries with the proxy's own embeddings backend (`[serve.embeddings]`).
struct StateEmbedder {
    st: Arc<AppState>,
    info: EmbedInfo,
}

impl Embedder for StateEmbedder {
    fn info(&self) -> EmbedInfo {
        self.info.clone()
    }

    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async move {
            let failed = |e: ApiError| EmbedError::Inference(e.to_string());
            match &self.st.embed {
                Some((e, EmbedBackend::Local(l))) => l
                    .embed(&e.prompted(texts), &self.st.metrics)
                    .await
                    .map(|(v, _)| v)
                    .map_err(failed),
                Some((e, EmbedBackend::Remote(p))) => {
                    let mut body = json!({"model": e.upstream_model(), "input": e.prompted(texts), "encoding_format": "float"});
                    if let Some(d) = e.dimensions {
                        body["dimensions"] = json!(d);
                    }
                    if let Some(t) = &e.query_input_type {
                        body["input_type"] = json!(t);
                    }
                    let bytes = p
                        .call_json(
                            Op::Embeddings,
                            &e.model,
                            Bytes::from(body.to_string()),
                            crate::endpoints::max_embeddings_answer(texts.len()),
                            &self.st.metrics,
                        )
                        .await
                        .map_err(failed)?;
                    vectors(&bytes, texts.len())
                }
                None => Err(EmbedError::Inference("no embeddings backend".into())),
            }
        })
    }
}

/// The vectors of an OpenAI embeddings answer, in input order.
fn vectors(bytes: &[u8], n: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let bad = || EmbedError::Inference("the embeddings provider sent an unreadable answer".into());
    let v: Value = serde_json::from_slice(bytes).map_err(|_| bad())?;
    let data = v.get("data").and_then(Value::as_array).ok_or_else(bad)?;
    let mut out = vec![Vec::new(); n];
    for (i, d) in data.iter().enumerate() {
        let at = d.get("index").and_then(Value::as_u64).map(|x| x as usize).unwrap_or(i);
        let e = d.get("embedding").and_then(Value::as_array).ok_or_else(bad)?;
        let slot = out.get_mut(at).ok_or_else(bad)?;
        *slot = e.iter().map(|x| x.as_f64().unwrap_or(0.0) as f32).collect();
    }
    if out.iter().any(Vec::is_empty) {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_search_query_of_a_body_is_counted() {
        let call = |q: &str| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": q}}});
        let one = call("how do I install the widget");
        let n = crate::tokens::count("how do I install the widget");
        assert!(n > 0);
        assert_eq!(query_tokens(one.to_string().as_bytes(), 1000), n);
        let batch = json!([one, call("and the proxy?"), {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}]);
        assert_eq!(
            query_tokens(batch.to_string().as_bytes(), 1000),
            n + crate::tokens::count("and the proxy?")
        );
        // each query at most the cap; other tools, other methods and bad bodies cost nothing
        assert_eq!(query_tokens(one.to_string().as_bytes(), 2), 2);
        let read = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read_section", "arguments": {"url": "a#b"}}});
        assert_eq!(query_tokens(read.to_string().as_bytes(), 1000), 0);
        assert_eq!(query_tokens(b"not json", 1000), 0);
    }
}

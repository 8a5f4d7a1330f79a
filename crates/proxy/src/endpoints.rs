//! `POST /v1/embeddings`, `POST /v1/moderations`, `POST /v1/feedback`, `GET /healthz`, `GET /metrics`.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Extension, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine;
use serde_json::{json, Value};

use crate::app::{read_body, AppState, AuditInfo, ClientIp, EmbedBackend, RequestId};
use crate::error::ApiError;
use crate::upstream::Op;

/// The largest embeddings answer read from an upstream for `inputs` inputs: each vector at
/// most 8192 numbers (the most `dimensions` a request may ask for) of at most 32 bytes of JSON,
/// plus room for the envelope. Anything bigger is no answer to the request, and reading it
/// whole (then parsing it into a JSON tree) would let the upstream take the server's memory.
pub fn max_embeddings_answer(inputs: usize) -> usize {
    inputs.saturating_mul(8192 * 32).saturating_add(64 << 10)
}

/// Inputs of an embeddings/moderation request: a string or an array of strings.
fn string_inputs(v: Option<&Value>, what: &str) -> Result<Vec<String>, ApiError> {
    match v {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) if !items.is_empty() => items
            .iter()
            .map(|i| i.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                ApiError::InvalidRequest(format!(
                    "{what} \"input\" must be a string or an array of strings"
                ))
            }),
        Some(Value::Array(_)) => {
            Err(ApiError::InvalidRequest(format!("{what} \"input\" is empty")))
        }
        _ => Err(ApiError::InvalidRequest(format!(
            "{what} request needs \"input\": a string or an array of strings"
        ))),
    }
}

/// The handler for `/v1/embeddings`.
pub async fn embeddings(
    State(st): State<Arc<AppState>>,
    Extension(ClientIp(ip)): Extension<ClientIp>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(&st, body).await?;
    let req: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::InvalidRequest(format!("invalid embeddings request: {e}")))?;
    let Some((ecfg, backend)) = &st.embed else {
        return Err(ApiError::NoEmbeddingModel);
    };
    if let Some(m) = req.get("model").and_then(Value::as_str) {
        if !m.is_empty() && m != ecfg.model {
            return Err(ApiError::EmbeddingModelMismatch {
                server: ecfg.model.clone(),
                client: m.chars().take(100).collect(),
            });
        }
    }
    // The widget sends the query prompt its index expects: a proxy that would embed questions
    // differently refuses instead of returning vectors that rank the wrong sections.
    if let Some(p) = req.get("query_prompt").and_then(Value::as_str) {
        if p != ecfg.prompt() {
            return Err(ApiError::EmbeddingPromptMismatch {
                server: ecfg.prompt().chars().take(200).collect(),
                client: p.chars().take(200).collect(),
            });
        }
    }
    match req.get("input_type").and_then(Value::as_str) {
        None | Some("query") => {}
        Some(other) => {
            return Err(ApiError::InvalidRequest(format!(
                "input_type \"{}\" is not supported: this endpoint embeds questions (input_type \"query\")",
                other.chars().take(20).collect::<String>()
            )))
        }
    }
    let inputs = string_inputs(req.get("input"), "embeddings")?;
    let limits = &st.cfg.limits;
    if inputs.len() > limits.max_embedding_inputs {
        return Err(ApiError::InvalidRequest(format!(
            "{} inputs sent, at most {} per request",
            inputs.len(),
            limits.max_embedding_inputs
        )));
    }
    let mut est = 0usize;
    for t in &inputs {
        let n = crate::tokens::check_limit(&[t.as_str()], limits.max_embedding_tokens)
            .map_err(|got| ApiError::InputTooLong { got, limit: limits.max_embedding_tokens })?;
        est += n;
    }
    let base64 = match req.get("encoding_format").and_then(Value::as_str) {
        None | Some("float") => false,
        Some("base64") => true,
        Some(other) => {
            return Err(ApiError::InvalidRequest(format!(
                "encoding_format \"{}\" is not supported; use \"float\" or \"base64\"",
                other.chars().take(20).collect::<String>()
            )))
        }
    };
    let dimensions = match req.get("dimensions") {
        None | Some(Value::Null) => ecfg.dimensions,
        Some(v) => match v.as_u64() {
            Some(d) if (1..=8192).contains(&d) => Some(d as usize),
            _ => {
                return Err(ApiError::InvalidRequest(
                    "dimensions must be a positive integer".into(),
                ))
            }
        },
    };
    st.limits.take(ip, est as u64, &st.metrics).await?;
    let mut audit = serde_json::Map::new();
    audit.insert("model".into(), json!(ecfg.model));
    audit.insert("inputs".into(), json!(inputs.len()));
    let inputs = ecfg.prompted(&inputs);
    // A failed call costs the client nothing: the charge goes back with the error.
    let refund = |e: ApiError| {
        st.limits.refund(ip, est as u64);
        e
    };
    match backend {
        EmbedBackend::Remote(p) => {
            let mut body = json!({"model": ecfg.upstream_model(), "input": inputs, "encoding_format": if base64 { "base64" } else { "float" }});
            if let Some(d) = dimensions.filter(|&d| native_dims(ecfg.upstream_model()) != Some(d)) {
                body["dimensions"] = json!(d);
            }
            if let Some(t) = &ecfg.query_input_type {
                body["input_type"] = json!(t);
            }
            let bytes = p
                .call_json(
                    Op::Embeddings,
                    &ecfg.model,
                    Bytes::from(body.to_string()),
                    max_embeddings_answer(inputs.len()),
                    &st.metrics,
                )
                .await
                .map_err(refund)?;
            // Only an embeddings answer (one vector per input, no error) is passed on: a 200
            // that is an error object or anything else goes to the (redacted) log, never to
            // the browser.
            let unusable = |why: &'static str| {
                st.metrics.upstream_error("embeddings", "answer");
                tracing::warn!(answer = %p.described(&String::from_utf8_lossy(&bytes)), why, "unusable embeddings answer");
                refund(ApiError::Upstream(format!("the embeddings provider {why}")))
            };
            let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
                return Err(unusable("sent an unreadable answer"));
            };
            if v.get("data").and_then(Value::as_array).map(Vec::len) != Some(inputs.len()) {
                return Err(unusable("answered with the wrong number of vectors"));
            }
            if !is_embeddings(&v) {
                return Err(unusable("sent an answer without vectors"));
            }
            // The widget compares these to the index header's model and query prompt.
            v["model"] = json!(ecfg.model);
            v["query_prompt"] = json!(ecfg.prompt());
            let tokens = v.pointer("/usage/prompt_tokens").and_then(Value::as_u64).unwrap_or(0);
            st.metrics.tokens(tokens, 0);
            let mut r = Json(v).into_response();
            r.extensions_mut().insert(AuditInfo(audit));
            Ok(r)
        }
        EmbedBackend::Local(local) => {
            let (vectors, tokens) = local.embed(&inputs, &st.metrics).await.map_err(refund)?;
            if let Some(d) = dimensions {
                if vectors.first().map(Vec::len) != Some(d) {
                    return Err(refund(ApiError::InvalidRequest(format!(
                        "this server's model \"{}\" has {} dimensions; it cannot produce {d}",
                        ecfg.model,
                        vectors.first().map(Vec::len).unwrap_or(0)
                    ))));
                }
            }
            st.metrics.tokens(tokens as u64, 0);
            let data: Vec<Value> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let emb = if base64 {
                        let raw: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                        json!(base64::engine::general_purpose::STANDARD.encode(raw))
                    } else {
                        json!(v)
                    };
                    json!({"object": "embedding", "index": i, "embedding": emb})
                })
                .collect();
            let mut r = Json(json!({"object": "list", "data": data, "model": ecfg.model, "query_prompt": ecfg.prompt(), "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})).into_response();
            r.extensions_mut().insert(AuditInfo(audit));
            Ok(r)
        }
    }
}

/// The handler for `/v1/moderations`: forwards to the moderation provider with the server's
/// model. The provider is paid with the server's key, so the inputs are held to the chat's
/// limits: at most `max_input_tokens` together, and charged against the token buckets (an
/// upper bound, as for chat: moderation answers carry no usage to settle it with).
pub async fn moderations(
    State(st): State<Arc<AppState>>,
    Extension(ClientIp(ip)): Extension<ClientIp>,
    body: Body,
) -> Result<Response, ApiError> {
    let bytes = read_body(&st, body).await?;
    let req: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::InvalidRequest(format!("invalid moderation request: {e}")))?;
    let Some(p) = &st.moderation else {
        return Err(ApiError::NoModerationModel);
    };
    let inputs = string_inputs(req.get("input"), "moderation")?;
    if inputs.len() > st.cfg.limits.max_messages.max(st.cfg.limits.max_embedding_inputs) {
        return Err(ApiError::InvalidRequest("too many moderation inputs in one request".into()));
    }
    let limit = st.cfg.limits.max_input_tokens;
    let contents: Vec<&str> = inputs.iter().map(String::as_str).collect();
    let tokens = crate::tokens::check_limit(&contents, limit)
        .map_err(|got| ApiError::InputTooLong { got, limit })?;
    st.limits.take(ip, tokens as u64, &st.metrics).await?;
    let model = st.cfg.moderation.model.clone();
    let n = inputs.len();
    let body = json!({"model": model, "input": inputs});
    let bytes = p
        .call_json(Op::Moderation, &model, Bytes::from(body.to_string()), 4 << 20, &st.metrics)
        .await
        .inspect_err(|_| st.limits.refund(ip, tokens as u64))?;
    // Only a moderation answer (one result per input) is passed on: a 200 that is an error
    // object or anything else goes to the (redacted) log, never to the browser.
    let results = |v: &Value| v.get("results").and_then(Value::as_array).map(Vec::len) == Some(n);
    let Some(v) = serde_json::from_slice::<Value>(&bytes).ok().filter(results) else {
        st.limits.refund(ip, tokens as u64);
        st.metrics.upstream_error("moderation", "answer");
        tracing::warn!(answer = %p.described(&String::from_utf8_lossy(&bytes)), "unusable moderation answer");
        return Err(ApiError::Upstream("the moderation provider sent an unreadable answer".into()));
    };
    Ok(Json(v).into_response())
}

/// The handler for `/v1/feedback`: `{"rating": "up"|"down", "comment"?, "question"?, "answer"?,
/// "page"?, "sources"?: [url], "request_id"?, "cache_key"?}`, appended as one JSON line when
/// `feedback_log` is set. "down" with the answer's `cache_key` (`x-docent-cache-key`) removes the
/// answer from the answer cache.
pub async fn feedback(
    State(st): State<Arc<AppState>>,
    Extension(ClientIp(ip)): Extension<ClientIp>,
    Extension(RequestId(rid)): Extension<RequestId>,
    body: Body,
) -> Result<Response, ApiError> {
    // Feedback is cheap but still a write: charged against the client's request budget before
    // anything is read or validated, so invalid bodies are rate-limited too.
    st.limits.take(ip, 0, &st.metrics).await?;
    let bytes = read_body(&st, body).await?;
    let req: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::InvalidRequest(format!("invalid feedback: {e}")))?;
    let Some(obj) = req.as_object() else {
        return Err(ApiError::InvalidRequest("feedback must be a JSON object".into()));
    };
    let rating = match obj.get("rating").and_then(Value::as_str) {
        Some(r @ ("up" | "down")) => r,
        _ => {
            return Err(ApiError::InvalidRequest(
                "feedback needs \"rating\": \"up\" or \"down\"".into(),
            ))
        }
    };
    let text = |k: &str, max: usize| -> Result<Option<String>, ApiError> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() <= max => Ok(Some(s.clone())),
            Some(Value::String(_)) => Err(ApiError::InvalidRequest(format!(
                "feedback \"{k}\" is longer than {max} characters"
            ))),
            Some(_) => Err(ApiError::InvalidRequest(format!("feedback \"{k}\" must be a string"))),
        }
    };
    let sources: Vec<String> = match obj.get("sources") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) if a.len() <= 50 => {
            a.iter().filter_map(Value::as_str).map(|s| s.chars().take(500).collect()).collect()
        }
        Some(_) => {
            return Err(ApiError::InvalidRequest(
                "feedback \"sources\" must be an array of at most 50 URLs".into(),
            ))
        }
    };
    let (question, answer) = (text("question", 4000)?, text("answer", 20000)?);
    let record = json!({
        "ts": crate::app::timestamp(),
        "request_id": rid,
        "rating": rating,
        "comment": text("comment", 2000)?,
        "question": question,
        "answer": answer,
        "page": text("page", 500)?,
        "answer_request_id": text("request_id", 64)?,
        "sources": sources,
    });
    // Not stored when the log is full or its disk is behind (counted and logged by the writer).
    let stored = st.feedback.as_ref().is_some_and(|w| w.append(&record).is_ok());
    if let Some(a) = &st.analytics {
        a.record(&crate::analytics::feedback_record(
            rating,
            question.as_deref(),
            answer.as_deref(),
            &sources,
        ))
        .await;
    }
    st.metrics.feedback(rating);
    let mut evicted = false;
    if let (Some(cache), "down", Some(key)) =
        (&st.cache, rating, obj.get("cache_key").and_then(Value::as_str))
    {
        if crate::cache::is_key(key) && cache.evict(key).await {
            evicted = true;
            st.metrics.cache_eviction("feedback");
            tracing::info!(request_id = %rid, "cached answer evicted after \"not helpful\" feedback");
        }
    }
    Ok((StatusCode::OK, Json(json!({"ok": true, "stored": stored, "evicted": evicted})))
        .into_response())
}

/// The handler for `/v1/events`: one question's outcome from the widget, stored when
/// `[analytics]` is enabled (see [`crate::analytics::question_record`] for the body). The
/// request limit was taken by the guard. Answers `{"ok": true, "stored": bool}`.
pub async fn events(State(st): State<Arc<AppState>>, body: Body) -> Result<Response, ApiError> {
    let bytes = read_body(&st, body).await?;
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| ApiError::InvalidRequest(format!("invalid event: {e}")))?;
    let rec = crate::analytics::question_record(&v)?;
    let stored = match &st.analytics {
        Some(a) => {
            a.record(&rec).await;
            true
        }
        None => false,
    };
    Ok((StatusCode::OK, Json(json!({"ok": true, "stored": stored}))).into_response())
}

/// `GET /healthz`: what is configured (never secrets).
pub async fn healthz(State(st): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "chat": st.chat.as_ref().map(|(c, p)| json!({"provider": c.provider, "kind": p.cfg.kind.as_str(), "model": c.model, "context_window": crate::budget::context_window(&st.cfg, &c.model)})),
        "embeddings": st.embed.as_ref().map(|(e, _)| json!({"provider": e.provider, "model": e.model})),
        "moderation": st.cfg.moderation.enabled,
        "limits_store": if st.limits.is_shared() { "redis" } else { "in-process" },
        "answer_cache": st.cache.is_some(),
        "analytics": st.analytics.is_some(),
        "open_streams": st.metrics.open_streams(),
    }))
}

/// `GET /metrics`: Prometheus text format.
pub async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], st.metrics.render())
        .into_response()
}

/// Whether an embeddings answer holds only vectors: no (non-null) `error`, and every `data`
/// item's `embedding` a non-empty array of numbers (`float`) or a non-empty string (`base64`).
fn is_embeddings(v: &Value) -> bool {
    let vector = |d: &Value| match d.get("embedding") {
        Some(Value::Array(xs)) => !xs.is_empty() && xs.iter().all(Value::is_number),
        Some(Value::String(s)) => !s.is_empty(),
        _ => false,
    };
    v.get("error").is_none_or(Value::is_null)
        && v.get("data").and_then(Value::as_array).is_some_and(|d| d.iter().all(vector))
}

/// The vector size OpenAI's embedding models give when no `dimensions` is sent. The widget
/// always asks for the index's size; asking a model for its own size is sending nothing, and
/// `text-embedding-ada-002` refuses the field outright, so it is left out then.
fn native_dims(model: &str) -> Option<usize> {
    let name = model.rsplit('/').next().unwrap_or(model);
    match name {
        "text-embedding-ada-002" | "text-embedding-3-small" => Some(1536),
        "text-embedding-3-large" => Some(3072),
        _ => None,
    }
}

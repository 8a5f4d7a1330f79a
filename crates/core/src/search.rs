//! Hybrid search over an [`Index`]: exact int8 cosine + BM25, fused with RRF (default) or weights.
//! (API fixed; implementation in progress.)

use crate::format::Index;

/// Which retrievers to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Vector + lexical, fused. Falls back to lexical when the index or query has no vectors.
    #[default]
    Hybrid,
    /// Cosine over the quantised vectors only.
    Vector,
    /// BM25 only.
    Lexical,
}

/// How the two ranked lists are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion: sum of weight / (k + rank).
    Rrf { k: f32 },
    /// Weighted sum of min-max normalised scores.
    Weighted,
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Rrf { k: 60.0 }
    }
}

/// Search parameters. `Default` gives the calibrated defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOptions {
    /// Hits to return (default 10).
    pub top_k: usize,
    pub mode: Mode,
    pub fusion: Fusion,
    /// Weight of the vector list in fusion (default 1.0).
    pub vector_weight: f32,
    /// Weight of the lexical list in fusion (default 1.0).
    pub lexical_weight: f32,
    /// Only chunks in this namespace.
    pub namespace: Option<String>,
    /// Only chunks whose url starts with this prefix.
    pub url_prefix: Option<String>,
    /// Relevance floor on [`SearchResult::confidence`]; below it the result is empty (abstain).
    /// `None` = use the index header's calibrated floor, or the built-in default.
    pub floor: Option<f32>,
    /// Weight of the conversation history (previous user turns) in retrieval, 0..1 (default 0.5).
    pub history_weight: f32,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            top_k: 10,
            mode: Mode::Hybrid,
            fusion: Fusion::default(),
            vector_weight: 1.0,
            lexical_weight: 1.0,
            namespace: None,
            url_prefix: None,
            floor: None,
            history_weight: 0.5,
        }
    }
}

/// What the caller asks.
#[derive(Debug, Clone, Default)]
pub struct Query<'a> {
    /// The current question.
    pub text: &'a str,
    /// Its embedding (same model as the index), if available. Need not be normalised.
    pub vector: Option<&'a [f32]>,
    /// Recent user turns, oldest first, so follow-ups ("and how do I turn it off?") resolve.
    pub history: &'a [String],
    /// Embedding of the most recent history turn(s), if available.
    pub history_vector: Option<&'a [f32]>,
}

/// Which retriever(s) found a hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retriever {
    pub vector: bool,
    pub lexical: bool,
}

impl Retriever {
    /// "vector", "lexical" or "vector+lexical".
    pub fn label(&self) -> &'static str {
        match (self.vector, self.lexical) {
            (true, true) => "vector+lexical",
            (true, false) => "vector",
            (false, true) => "lexical",
            (false, false) => "none",
        }
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Chunk number in the index.
    pub chunk: u32,
    /// Fused score (higher is better; only comparable within one result).
    pub score: f32,
    pub retrievers: Retriever,
    /// Cosine similarity, when the vector retriever ran.
    pub cosine: Option<f32>,
    /// BM25 score, when the lexical retriever ran.
    pub bm25: Option<f32>,
}

/// The hits plus how confident the search is that the docs cover the question.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    /// 0..1: best cosine (vector) and/or share of the query's informative terms matched (lexical).
    pub confidence: f32,
    /// True when confidence fell below the floor: `hits` is empty, say "the docs don't cover this".
    pub abstained: bool,
    /// The closest hits even when abstaining (to offer as "closest sections").
    pub closest: Vec<Hit>,
}

impl Index {
    /// Search the index. See [`SearchOptions`].
    pub fn search(&self, _query: &Query<'_>, _opts: &SearchOptions) -> SearchResult {
        SearchResult::default()
    }
}

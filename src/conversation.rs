//! The conversation's data: turns, answers, sources, errors; saved in sessionStorage so it survives
//! navigation between the pages of a multi-page docs site.

use serde::{Deserialize, Serialize};

/// What produced an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// Streamed from the chat model, with citations.
    #[default]
    Model,
    /// Offline: the most relevant sentences of the top sections.
    Excerpts,
    /// Below the relevance floor: no model call, closest sections offered.
    NotCovered,
}

/// Where a turn is in its life.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Status {
    /// Downloading the index: bytes received, total if known.
    LoadingIndex {
        /// Bytes received so far.
        received: u64,
        /// Total bytes, when the server says.
        total: Option<u64>,
    },
    /// Rewriting / embedding / searching.
    #[default]
    Searching,
    /// Waiting for the first streamed token.
    Thinking,
    /// Tokens are arriving.
    Streaming,
    /// Finished.
    Done,
    /// The reader pressed Stop.
    Stopped,
    /// Failed; the question is kept for retry.
    Failed {
        /// What to tell the reader.
        message: String,
        /// For 429: seconds until a retry may work.
        retry_after: Option<u32>,
    },
}

impl Status {
    /// True while a request for this turn is running.
    pub fn busy(&self) -> bool {
        matches!(self, Status::LoadingIndex { .. } | Status::Searching | Status::Thinking | Status::Streaming)
    }
}

/// A numbered source shown under an answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceView {
    /// The number used in [n] citations.
    pub n: usize,
    /// `url#anchor`.
    pub url: String,
    /// Page title.
    pub title: String,
    /// "Guide › Install › Linux".
    pub breadcrumb: String,
    /// Whether the answer cites it.
    pub cited: bool,
}

/// One retrieved section, for the "what I looked at" disclosure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LookedAt {
    /// `url#anchor`.
    pub url: String,
    /// Page title.
    pub title: String,
    /// Section path.
    pub breadcrumb: String,
    /// Fused score.
    pub score: f32,
    /// Cosine similarity, when the vector retriever ran.
    pub cosine: Option<f32>,
    /// BM25 score, when the lexical retriever ran.
    pub bm25: Option<f32>,
    /// "vector", "lexical" or "vector+lexical".
    pub retrievers: String,
}

/// A question and its answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TurnData {
    /// The reader's question, verbatim.
    pub question: String,
    /// Where the turn is.
    pub status: Status,
    /// What kind of answer this is.
    pub kind: AnswerKind,
    /// The answer as Markdown (model output, or the extractive Markdown).
    pub answer: String,
    /// The sources numbered for this answer.
    pub sources: Vec<SourceView>,
    /// The retrieved sections with scores.
    pub looked_at: Vec<LookedAt>,
    /// The standalone query the model rewrote the question into, if any.
    pub rewritten: Option<String>,
    /// Search confidence 0..1.
    pub confidence: f32,
    /// A note shown above the answer (e.g. "The answer service is unreachable: excerpts").
    pub notice: Option<String>,
    /// Thumbs: Some(true) = up.
    pub feedback: Option<bool>,
    /// Whether the rendered output was cut at the size cap.
    #[serde(default)]
    pub truncated: bool,
}

/// Everything persisted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Saved {
    /// Stable id for feedback correlation.
    pub id: String,
    /// The turns, oldest first.
    pub turns: Vec<TurnData>,
}

/// The sessionStorage key for a widget reading `index_url`.
pub fn storage_key(index_url: &str) -> String {
    format!("docent:conversation:{index_url}")
}

fn session() -> Option<web_sys::Storage> {
    web_sys::window()?.session_storage().ok().flatten()
}

/// Load the saved conversation; busy turns (the page went away mid-answer) come back as stopped.
pub fn load(index_url: &str) -> Option<Saved> {
    let raw = session()?.get_item(&storage_key(index_url)).ok().flatten()?;
    let mut saved: Saved = serde_json::from_str(&raw).ok()?;
    for t in &mut saved.turns {
        if t.status.busy() {
            t.status = if t.answer.is_empty() {
                Status::Failed { message: "The page changed before this answer arrived.".into(), retry_after: None }
            } else {
                Status::Stopped
            };
        }
    }
    Some(saved)
}

/// Save the conversation (quota errors are ignored: persistence is a convenience).
pub fn save(index_url: &str, saved: &Saved) {
    if let (Some(s), Ok(json)) = (session(), serde_json::to_string(saved)) {
        let _ = s.set_item(&storage_key(index_url), &json);
    }
}

/// Forget the conversation.
pub fn clear(index_url: &str) {
    if let Some(s) = session() {
        let _ = s.remove_item(&storage_key(index_url));
    }
}

/// A fresh id for a conversation.
pub fn new_id() -> String {
    let r = (js_sys::Math::random() * 1e12) as u64;
    format!("c{:x}{:x}", js_sys::Date::now() as u64, r)
}

//! The conversation's data: turns, answers, sources, errors; saved in sessionStorage so it survives
//! navigation between the pages of a multi-page docs site (as JSON written and read with the
//! browser's JSON object, [`crate::json`]).

use docent_core::cite::Mark;
use wasm_bindgen::JsValue;

use crate::json::{self, Obj};

/// What produced an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
#[derive(Debug, Clone, PartialEq, Default)]
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
        matches!(
            self,
            Status::LoadingIndex { .. } | Status::Searching | Status::Thinking | Status::Streaming
        )
    }
}

/// A numbered source shown under an answer.
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq)]
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
#[derive(Debug, Clone, PartialEq, Default)]
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
    /// The docs scope (namespace) that had nothing on the question, so the answer is from all
    /// docs (`scope.rs`).
    pub fallback: Option<String>,
    /// Thumbs: Some(true) = up.
    pub feedback: Option<bool>,
    /// Whether the rendered output was cut at the size cap.
    pub truncated: bool,
    /// The search was not sure the docs cover the question (between the decline and the hedge
    /// thresholds): the answer carries a note saying it may not fully answer it.
    pub uncertain: bool,
    /// The chat model's answer says the docs don't cover the question
    /// (`docent_core::prompt::says_not_covered`): counted as declined.
    pub declined: bool,
    /// Sentences of a finished model answer that the citation check did not find in the
    /// sources they cite (`docent_core::cite`): each gets a "not found in [n]" marker, and the
    /// turn the uncertain note.
    pub unsupported: Vec<Mark>,
    /// The answer came from the proxy's answer cache (`x-docent-cache: hit`).
    pub cached: bool,
    /// The answer's key in the proxy's answer cache (`x-docent-cache-key`), sent back with
    /// "not helpful" so the proxy evicts it.
    pub cache_key: Option<String>,
}

/// Everything persisted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Saved {
    /// Stable id for feedback correlation.
    pub id: String,
    /// The turns, oldest first.
    pub turns: Vec<TurnData>,
}

impl TurnData {
    /// How the question went, as `docent report` counts it: `declined` (not covered, by the
    /// search or in the model's own words), `uncertain` (answered with the note) or `answered`.
    pub fn outcome(&self) -> &'static str {
        if self.kind == AnswerKind::NotCovered || self.declined {
            "declined"
        } else if self.uncertain || !self.unsupported.is_empty() {
            "uncertain"
        } else {
            "answered"
        }
    }
}

impl AnswerKind {
    /// The name used in saved conversations and in `docent:feedback` events.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Model => "model",
            AnswerKind::Excerpts => "excerpts",
            AnswerKind::NotCovered => "not_covered",
        }
    }

    fn from_name(s: &str) -> AnswerKind {
        match s {
            "excerpts" => AnswerKind::Excerpts,
            "not_covered" => AnswerKind::NotCovered,
            _ => AnswerKind::Model,
        }
    }
}

impl Status {
    fn to_js(&self) -> JsValue {
        let state = |s: &str| Obj::new().str("state", s);
        match self {
            Status::LoadingIndex { received, total } => state("loading_index")
                .num("received", *received as f64)
                .opt_num("total", total.map(|t| t as f64)),
            Status::Searching => state("searching"),
            Status::Thinking => state("thinking"),
            Status::Streaming => state("streaming"),
            Status::Done => state("done"),
            Status::Stopped => state("stopped"),
            Status::Failed { message, retry_after } => state("failed")
                .str("message", message)
                .opt_num("retry_after", retry_after.map(f64::from)),
        }
        .build()
    }

    fn from_js(v: &JsValue) -> Status {
        match json::string(v, "state").as_deref() {
            Some("loading_index") => Status::LoadingIndex {
                received: json::number(v, "received").unwrap_or(0.0) as u64,
                total: json::number(v, "total").map(|t| t as u64),
            },
            Some("searching") => Status::Searching,
            Some("thinking") => Status::Thinking,
            Some("streaming") => Status::Streaming,
            Some("stopped") => Status::Stopped,
            Some("failed") => Status::Failed {
                message: json::string(v, "message").unwrap_or_default(),
                retry_after: json::number(v, "retry_after").map(|s| s as u32),
            },
            _ => Status::Done,
        }
    }
}

fn opt_f32(v: Option<f32>) -> Option<f64> {
    v.map(f64::from)
}

impl TurnData {
    fn to_js(&self) -> JsValue {
        let sources = self.sources.iter().map(|s| {
            Obj::new()
                .num("n", s.n as f64)
                .str("url", &s.url)
                .str("title", &s.title)
                .str("breadcrumb", &s.breadcrumb)
                .bool("cited", s.cited)
                .build()
        });
        let looked = self.looked_at.iter().map(|l| {
            Obj::new()
                .str("url", &l.url)
                .str("title", &l.title)
                .str("breadcrumb", &l.breadcrumb)
                .num("score", l.score as f64)
                .opt_num("cosine", opt_f32(l.cosine))
                .opt_num("bm25", opt_f32(l.bm25))
                .str("retrievers", &l.retrievers)
                .build()
        });
        let unsupported = self.unsupported.iter().map(|m| {
            let sources = m.sources.iter().map(|&n| JsValue::from_f64(n as f64));
            Obj::new().num("at", m.at as f64).val("sources", json::array(sources)).build()
        });
        Obj::new()
            .str("question", &self.question)
            .val("status", self.status.to_js())
            .str("kind", self.kind.as_str())
            .str("answer", &self.answer)
            .val("sources", json::array(sources))
            .val("looked_at", json::array(looked))
            .opt_str("rewritten", self.rewritten.as_deref())
            .num("confidence", self.confidence as f64)
            .opt_str("notice", self.notice.as_deref())
            .opt_str("fallback", self.fallback.as_deref())
            .val("feedback", self.feedback.map(JsValue::from_bool).unwrap_or(JsValue::NULL))
            .bool("truncated", self.truncated)
            .bool("uncertain", self.uncertain)
            .bool("declined", self.declined)
            .val("unsupported", json::array(unsupported))
            .bool("cached", self.cached)
            .opt_str("cache_key", self.cache_key.as_deref())
            .build()
    }

    fn from_js(v: &JsValue) -> TurnData {
        let s = |k: &str| json::string(v, k).unwrap_or_default();
        TurnData {
            question: s("question"),
            status: Status::from_js(&json::get(v, "status")),
            kind: AnswerKind::from_name(&s("kind")),
            answer: s("answer"),
            sources: json::items(&json::get(v, "sources"))
                .iter()
                .map(|x| SourceView {
                    n: json::number(x, "n").unwrap_or(0.0) as usize,
                    url: json::string(x, "url").unwrap_or_default(),
                    title: json::string(x, "title").unwrap_or_default(),
                    breadcrumb: json::string(x, "breadcrumb").unwrap_or_default(),
                    cited: json::boolean(x, "cited").unwrap_or(false),
                })
                .collect(),
            looked_at: json::items(&json::get(v, "looked_at"))
                .iter()
                .map(|x| LookedAt {
                    url: json::string(x, "url").unwrap_or_default(),
                    title: json::string(x, "title").unwrap_or_default(),
                    breadcrumb: json::string(x, "breadcrumb").unwrap_or_default(),
                    score: json::number(x, "score").unwrap_or(0.0) as f32,
                    cosine: json::number(x, "cosine").map(|c| c as f32),
                    bm25: json::number(x, "bm25").map(|b| b as f32),
                    retrievers: json::string(x, "retrievers").unwrap_or_default(),
                })
                .collect(),
            rewritten: json::string(v, "rewritten"),
            confidence: json::number(v, "confidence").unwrap_or(0.0) as f32,
            notice: json::string(v, "notice"),
            fallback: json::string(v, "fallback"),
            feedback: json::boolean(v, "feedback"),
            truncated: json::boolean(v, "truncated").unwrap_or(false),
            uncertain: json::boolean(v, "uncertain").unwrap_or(false),
            declined: json::boolean(v, "declined").unwrap_or(false),
            unsupported: json::items(&json::get(v, "unsupported"))
                .iter()
                .map(|x| Mark {
                    at: json::number(x, "at").unwrap_or(0.0) as usize,
                    sources: json::items(&json::get(x, "sources"))
                        .iter()
                        .filter_map(|n| n.as_f64())
                        .map(|n| n as usize)
                        .collect(),
                })
                .collect(),
            cached: json::boolean(v, "cached").unwrap_or(false),
            cache_key: json::string(v, "cache_key"),
        }
    }
}

impl Saved {
    /// The conversation as JSON text (what sessionStorage keeps).
    pub fn to_json(&self) -> String {
        let turns = json::array(self.turns.iter().map(TurnData::to_js));
        json::stringify(&Obj::new().str("id", &self.id).val("turns", turns).build())
    }

    /// Read [`Saved::to_json`]'s output; None if it is not a saved conversation.
    pub fn from_json(text: &str) -> Option<Saved> {
        let v = json::parse(text).ok()?;
        let id = json::string(&v, "id")?;
        let turns = json::get(&v, "turns");
        if !js_sys::Array::is_array(&turns) {
            return None;
        }
        Some(Saved { id, turns: json::items(&turns).iter().map(TurnData::from_js).collect() })
    }
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
    let mut saved = Saved::from_json(&raw)?;
    for t in &mut saved.turns {
        if t.status.busy() {
            t.status = if t.answer.is_empty() {
                Status::Failed {
                    message: "The page changed before this answer arrived.".into(),
                    retry_after: None,
                }
            } else {
                Status::Stopped
            };
        }
    }
    Some(saved)
}

/// Save the conversation (quota errors are ignored: persistence is a convenience).
pub fn save(index_url: &str, saved: &Saved) {
    if let Some(s) = session() {
        let _ = s.set_item(&storage_key(index_url), &saved.to_json());
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

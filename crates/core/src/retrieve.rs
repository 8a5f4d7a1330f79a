//! The one retrieval pipeline: the widget, `docent search` and `docent eval` all call it, so an
//! eval measures what readers get.
//!
//! ```text
//! question + history (+ a rewritten query, when a chat model made one)
//!   → Ask::embedding_inputs()   the texts to embed, in a fixed order
//!   → (the caller embeds them: a proxy call in the widget, the local model in the CLI)
//!   → retrieve()                hybrid search per query (search.rs), the two results fused,
//!                               the relevance floor applied once
//! ```
//!
//! Embedding is the caller's job because it is async and provider-specific; everything else
//! happens here, with no I/O.

use crate::format::Index;
use crate::prompt::Message;
use crate::search::{
    best_first, Hit, Query, SearchOptions, SearchResult, Signals, CHUNKS_PER_SECTION,
};

/// Earlier user turns that take part in retrieval: the most recent ones only; older turns rarely
/// help a follow-up and often mislead it.
pub const HISTORY_TURNS: usize = 2;

/// RRF constant for merging the original question's hits with the rewritten query's.
const MERGE_K: f32 = 60.0;

/// What the reader asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ask<'a> {
    /// The current question, as typed.
    pub question: &'a str,
    /// Earlier user turns, oldest first (all of them: [`HISTORY_TURNS`] are used).
    pub history: &'a [String],
    /// A standalone rewrite of the question (resolved follow-up, translated), when a chat model
    /// made one.
    pub rewritten: Option<&'a str>,
}

impl<'a> Ask<'a> {
    /// The history turns retrieval uses, oldest first.
    pub fn recent_history(&self) -> &'a [String] {
        &self.history[self.history.len().saturating_sub(HISTORY_TURNS)..]
    }

    /// The texts to embed, in this order: the question, the rewrite (if any), the most recent
    /// history turn (if any). Pass their vectors to [`retrieve`] in the same order.
    pub fn embedding_inputs(&self) -> Vec<String> {
        let mut v = vec![self.question.to_string()];
        if let Some(r) = self.rewritten {
            v.push(r.to_string());
        }
        if let Some(last) = self.history.last() {
            v.push(last.clone());
        }
        v
    }

    /// The vectors of [`Ask::embedding_inputs`] by what they embed: the question's, the
    /// rewrite's and the last history turn's. All None unless `vectors` holds one per input;
    /// an empty vector is None.
    pub fn vectors<'v>(&self, vectors: &'v [Vec<f32>]) -> AskVectors<'v> {
        let inputs = 1 + self.rewritten.is_some() as usize + !self.history.is_empty() as usize;
        let vectors = if vectors.len() == inputs { vectors } else { &[] };
        let vector = |i: usize| vectors.get(i).map(|v| v.as_slice()).filter(|v| !v.is_empty());
        AskVectors {
            question: vector(0),
            rewritten: self.rewritten.and_then(|_| vector(1)),
            history: if self.history.is_empty() { None } else { vector(inputs - 1) },
        }
    }
}

/// [`Ask::vectors`]: the embeddings of one question's inputs, by what they embed.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskVectors<'v> {
    pub question: Option<&'v [f32]>,
    pub rewritten: Option<&'v [f32]>,
    pub history: Option<&'v [f32]>,
}

/// Longest rewrite accepted: a reply longer than this is an answer, not a query.
pub const MAX_REWRITE_BYTES: usize = 500;

/// The conversation a chat model rewrites into one standalone query (the system prompt,
/// [`crate::prompt::DEFAULT_REWRITE`] or the proxy's own, goes first and is not included):
/// the last `earlier` messages of the conversation (user and assistant turns, oldest first) or,
/// when there are none, the recent user turns of `history`, then the question.
pub fn rewrite_messages(earlier: &[Message], history: &[String], question: &str) -> Vec<Message> {
    let mut messages: Vec<Message> = earlier[earlier.len().saturating_sub(4)..].to_vec();
    // Earlier questions that got no model answer still carry the topic.
    if messages.is_empty() {
        let recent = &history[history.len().saturating_sub(HISTORY_TURNS)..];
        messages.extend(recent.iter().map(|q| Message::user(q.clone())));
    }
    messages.push(Message::user(question.to_string()));
    messages
}

/// The standalone query in a chat model's rewrite reply, or None when the reply is no use
/// (empty, too long to be a query, or the question unchanged).
pub fn clean_rewrite(reply: &str, question: &str) -> Option<String> {
    let text = reply.trim().trim_matches('"').trim();
    if text.is_empty()
        || text.len() > MAX_REWRITE_BYTES
        || text.eq_ignore_ascii_case(question.trim())
    {
        None
    } else {
        Some(text.to_string())
    }
}

/// Retrieve the sections for `ask`. `vectors` are the embeddings of
/// [`Ask::embedding_inputs`] in order, or empty when there are none (lexical search only); any
/// other length is treated as empty.
pub fn retrieve(
    index: &Index,
    ask: &Ask<'_>,
    vectors: &[Vec<f32>],
    opts: &SearchOptions,
) -> SearchResult {
    let v = ask.vectors(vectors);
    // The question's language, judged once: its search and the fusion below both need it.
    let speaks = index.speaks(ask.question);
    let first = index.search_speaking(
        &Query {
            text: ask.question,
            vector: v.question,
            history: ask.recent_history(),
            history_vector: v.history,
        },
        opts,
        speaks,
    );
    match ask.rewritten {
        None => first,
        Some(r) => {
            // The rewrite is standalone: no history.
            let second = index.search(
                &Query { text: r, vector: v.rewritten, history: &[], history_vector: None },
                opts,
            );
            // A question in a language the docs are not written in shares few words with them:
            // its translation leads (ties in the fusion go to the first list), as it did when
            // such a question was turned away on its own words.
            if !speaks {
                merge(second, first, opts.top_k.max(1))
            } else {
                merge(first, second, opts.top_k.max(1))
            }
        }
    }
}

/// The vector shards [`retrieve`] with `opts.nprobe` scores for `ask` and these `vectors`
/// (as in [`retrieve`]) and that are not attached yet: fetch them first. Empty unless the
/// index is split with vectors by cluster and `opts.nprobe` is set.
pub fn vector_shards(
    index: &Index,
    ask: &Ask<'_>,
    vectors: &[Vec<f32>],
    opts: &SearchOptions,
) -> Vec<crate::split::ShardRef> {
    let Some(nprobe) = opts.nprobe else { return Vec::new() };
    let (v, hw) = (ask.vectors(vectors), opts.history_weight);
    let mut refs = match v.question {
        Some(q) => index.shards_for_vector(q, v.history, hw, nprobe),
        None => Vec::new(),
    };
    if let Some(rewritten) = v.rewritten {
        for r in index.shards_for_vector(rewritten, None, hw, nprobe) {
            // No sort: the widget's size counts every instantiation it ships.
            if !refs.iter().any(|x| x.id == r.id) {
                refs.push(r);
            }
        }
    }
    refs
}

/// Merge the results of two queries for one question (as typed, and rewritten): the hits of the
/// queries that passed the floor, fused by reciprocal rank; abstain only when both abstained,
/// uncertain when every one that passed was.
pub fn merge(a: SearchResult, b: SearchResult, top_k: usize) -> SearchResult {
    let abstained = a.abstained && b.abstained;
    let hits = if abstained {
        Vec::new()
    } else {
        let ha = if a.abstained { &[][..] } else { &a.hits[..] };
        let hb = if b.abstained { &[][..] } else { &b.hits[..] };
        fuse(ha, hb, top_k)
    };
    let signals = Signals {
        top_cosine: max_opt(a.signals.top_cosine, b.signals.top_cosine),
        known: max_opt(a.signals.known, b.signals.known),
        coverage: max_opt(a.signals.coverage, b.signals.coverage),
        together: a.signals.together.max(b.signals.together),
        follow_up: a.signals.follow_up || b.signals.follow_up,
    };
    // Uncertain when every query that passed was.
    let uncertain = !abstained && [&a, &b].iter().filter(|r| !r.abstained).all(|r| r.uncertain);
    SearchResult {
        hits,
        confidence: a.confidence.max(b.confidence),
        signals,
        abstained,
        uncertain,
        closest: fuse(&a.closest, &b.closest, top_k),
    }
}

/// Fuse two ranked lists of section hits with reciprocal rank fusion, keeping `top_k` sections.
/// A section both lists found keeps the first list's best chunk and gains the other's chunks
/// (at most [`CHUNKS_PER_SECTION`]).
pub fn fuse(a: &[Hit], b: &[Hit], top_k: usize) -> Vec<Hit> {
    let mut merged: Vec<(Hit, f32)> = Vec::new();
    for list in [a, b] {
        for (rank, h) in list.iter().enumerate() {
            let rrf = 1.0 / (MERGE_K + rank as f32 + 1.0);
            if let Some((m, s)) = merged.iter_mut().find(|(m, _)| m.section == h.section) {
                *s += rrf;
                m.retrievers.vector |= h.retrievers.vector;
                m.retrievers.lexical |= h.retrievers.lexical;
                m.cosine = max_opt(m.cosine, h.cosine);
                m.bm25 = max_opt(m.bm25, h.bm25);
                let mut chunks = m.section_chunks().to_vec();
                for &c in h.section_chunks() {
                    if chunks.len() < CHUNKS_PER_SECTION && !chunks.contains(&c) {
                        chunks.push(c);
                    }
                }
                m.chunks = chunks;
            } else {
                merged.push((h.clone(), rrf));
            }
        }
    }
    // Merged hits are unique per section; ties keep the order they were met in (first list
    // first).
    best_first(merged.iter().map(|(_, s)| (*s, 0)))
        .into_iter()
        .take(top_k)
        .map(|i| {
            let (mut h, s) = merged[i].clone();
            h.score = s;
            h
        })
        .collect()
}

fn max_opt(a: Option<f32>, b: Option<f32>) -> Option<f32> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

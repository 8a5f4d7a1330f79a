//! Answers without a chat model (offline mode): the most relevant sentences of the top sections,
//! quoted, cited `[n]` and clearly labelled as excerpts from the docs.
//!
//! Sentences are scored with BM25 over the candidate sentences (the lexical module's tokenizer,
//! so code identifiers and CJK match as in search), weighted by the rank of the section they
//! come from. The output is deterministic: ties go to the better-ranked section, then the earlier
//! sentence.

use crate::budget::{group_sources, ChunkSource, Source};
use crate::format::Index;
use crate::lexical::{bm25_term, idf, tokenize};
use crate::prompt::source_label;
use crate::search::{score_desc_key, Hit, SearchResult, SortKey};
use std::collections::HashMap;

/// Sections (hits) considered for excerpts.
pub const MAX_SECTIONS: usize = 5;
/// The label that opens every extractive answer.
pub const EXCERPTS_LABEL: &str = "**From the docs** (excerpts, no AI answer):";
/// What an extractive answer says when the docs don't cover the question.
pub const NOT_COVERED: &str = "The docs don't seem to cover this.";

/// An offline answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extractive {
    /// Markdown: a label, then quoted excerpts each ending with its `[n]`.
    pub markdown: String,
    /// The numbered sources the citations refer to.
    pub sources: Vec<Source>,
}

/// Build an extractive answer from a search result over `index`. At most `max_sentences`
/// sentences (at least 1) are quoted.
pub fn answer(
    index: &Index,
    result: &SearchResult,
    question: &str,
    max_sentences: usize,
) -> Extractive {
    answer_from(index, result, question, max_sentences)
}

struct Candidate {
    source: usize,
    rank: usize,
    chunk: u32,
    position: usize,
    text: String,
    terms: Vec<String>,
}

/// [`answer`] over any [`ChunkSource`].
pub fn answer_from(
    index: &dyn ChunkSource,
    result: &SearchResult,
    question: &str,
    max_sentences: usize,
) -> Extractive {
    let max_sentences = max_sentences.max(1);
    if result.hits.is_empty() {
        return not_covered(index, &result.closest);
    }
    let hits: Vec<Hit> = result.hits.iter().take(MAX_SECTIONS).cloned().collect();
    let sources = group_sources(index, &hits, MAX_SECTIONS);
    if sources.is_empty() {
        return not_covered(index, &result.closest);
    }
    let rank_of = |chunk: u32| hits.iter().position(|h| h.chunk == chunk).unwrap_or(hits.len());

    let mut candidates = Vec::new();
    for (si, source) in sources.iter().enumerate() {
        for &c in &source.chunks {
            let Some(chunk) = index.chunk_at(c) else { continue };
            for (position, text) in sentences(&chunk.text).into_iter().enumerate() {
                let terms = tokenize(&text);
                candidates.push(Candidate {
                    source: si,
                    rank: rank_of(c),
                    chunk: c,
                    position,
                    text,
                    terms,
                });
            }
        }
    }

    // The question's distinct terms, in order (a handful: scans beat sorting, and leave the wasm
    // without another sort instantiation).
    let mut query: Vec<String> = Vec::new();
    for t in tokenize(question) {
        if !query.contains(&t) {
            query.push(t);
        }
    }

    let n = candidates.len() as u32;
    let avg_len = if candidates.is_empty() {
        1.0
    } else {
        candidates.iter().map(|c| c.terms.len()).sum::<usize>() as f32 / candidates.len() as f32
    };
    let mut df: HashMap<&str, u32> = HashMap::new();
    for c in &candidates {
        for q in &query {
            if c.terms.contains(q) {
                *df.entry(q.as_str()).or_default() += 1;
            }
        }
    }
    let score = |c: &Candidate| -> f32 {
        let mut s = 0.0;
        for q in &query {
            let tf = c.terms.iter().filter(|t| *t == q).count() as f32;
            if tf > 0.0 {
                s += bm25_term(
                    idf(n, df.get(q.as_str()).copied().unwrap_or(0)),
                    tf,
                    c.terms.len() as f32,
                    avg_len,
                );
            }
        }
        s / (1.0 + 0.15 * c.rank as f32)
    };

    // Best score first, then the better-ranked section, the earlier sentence, the candidate: a
    // total order as plain integer keys ([`SortKey`]: one sort instantiation for all rankings).
    let mut scored: Vec<SortKey> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| (score(c), i))
        .filter(|(s, _)| *s > 0.0)
        .map(|(s, i)| (score_desc_key(s), candidates[i].rank, candidates[i].position, i))
        .collect();
    scored.sort_unstable();
    let mut chosen: Vec<usize> = Vec::new();
    let mut seen_text: Vec<String> = Vec::new();
    for (_, _, _, i) in &scored {
        if chosen.len() >= max_sentences {
            break;
        }
        let norm: String = candidates[*i].text.chars().flat_map(char::to_lowercase).collect();
        if seen_text.contains(&norm) {
            continue;
        }
        seen_text.push(norm);
        chosen.push(*i);
    }
    if chosen.is_empty() {
        // No sentence shares a term with the question (e.g. another language): quote the
        // opening of the best section instead.
        let best = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.rank == 0 || c.source == 0)
            .map(|(i, _)| i);
        chosen.extend(best.take(max_sentences.min(2)));
    }
    if chosen.is_empty() {
        return not_covered(index, &result.hits);
    }
    // Group per source (source order), sentences in document order within each source.
    let mut order: Vec<SortKey> = chosen
        .iter()
        .map(|&i| (candidates[i].source, candidates[i].chunk as usize, candidates[i].position, i))
        .collect();
    order.sort_unstable();
    let chosen: Vec<usize> = order.into_iter().map(|(_, _, _, i)| i).collect();

    let mut md = String::from(EXCERPTS_LABEL);
    let mut used_sources: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < chosen.len() {
        let src = candidates[chosen[i]].source;
        let mut quote = String::new();
        let mut prev: Option<(u32, usize)> = None;
        while i < chosen.len() && candidates[chosen[i]].source == src {
            let c = &candidates[chosen[i]];
            if let Some((pc, pp)) = prev {
                quote.push_str(if pc == c.chunk && pp + 1 == c.position { " " } else { " … " });
            }
            quote.push_str(&escape_markdown(&c.text));
            prev = Some((c.chunk, c.position));
            i += 1;
        }
        md.push_str("\n\n> ");
        md.push_str(&quote);
        md.push_str(&format!(" [{}]", sources[src].n));
        used_sources.push(src);
    }
    // Renumber so that the cited sources are exactly 1..=k, in order.
    let mut out_sources = Vec::new();
    let mut renumber = Vec::new();
    for (k, &si) in used_sources.iter().enumerate() {
        let mut s = sources[si].clone();
        renumber.push((s.n, k + 1));
        s.n = k + 1;
        out_sources.push(s);
    }
    let md = renumber_citations(&md, &renumber);
    Extractive { markdown: md, sources: out_sources }
}

fn not_covered(index: &dyn ChunkSource, closest: &[Hit]) -> Extractive {
    let sources = group_sources(index, closest, 3);
    let mut md = String::from(NOT_COVERED);
    if !sources.is_empty() {
        md.push_str(" The closest sections:\n");
        for s in &sources {
            md.push_str(&format!("\n- {} [{}]", escape_markdown(&source_label(s)), s.n));
        }
    }
    Extractive { markdown: md, sources }
}

/// Replace each `[old]` citation we wrote at the end of a quote with `[new]`.
fn renumber_citations(md: &str, map: &[(usize, usize)]) -> String {
    if map.iter().all(|(a, b)| a == b) {
        return md.to_string();
    }
    let mut out = Vec::new();
    for (k, block) in md.split("\n\n> ").enumerate() {
        if k == 0 {
            out.push(block.to_string());
            continue;
        }
        let (old, new) = map[k - 1];
        let suffix = format!(" [{old}]");
        let body = block.strip_suffix(&suffix).unwrap_or(block);
        out.push(format!("{body} [{new}]"));
    }
    out.join("\n\n> ")
}

/// Keep docs text from being read as Markdown structure or citations: `[`, `]`, `<`, `*`, `_`,
/// backticks stay literal. (The renderer treats an escaped `\[` as text, never as a citation.)
fn escape_markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if matches!(c, '[' | ']' | '<' | '>' | '*' | '_' | '\\' | '#' | '|') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Split a chunk's text into sentences: fenced code blocks and heading lines are skipped,
/// list markers stripped, whitespace collapsed. Very short fragments are dropped.
fn sentences(text: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut in_fence: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(fence) = &in_fence {
            if t.starts_with(fence.as_str()) {
                in_fence = None;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            in_fence = Some(t.chars().take_while(|&c| c == '`' || c == '~').collect());
            prose.push_str("\n\n");
            continue;
        }
        if t.starts_with('#') || t.is_empty() {
            prose.push_str("\n\n");
            continue;
        }
        let t = strip_list_marker(t);
        prose.push_str(t);
        prose.push('\n');
    }
    let mut out = Vec::new();
    for para in prose.split("\n\n") {
        let para = para.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut start = 0;
        let chars: Vec<(usize, char)> = para.char_indices().collect();
        for (k, &(i, c)) in chars.iter().enumerate() {
            let end_here = match c {
                '.' | '!' | '?' => {
                    chars.get(k + 1).is_none_or(|&(_, n)| n == ' ')
                        && !ends_with_abbreviation(&para[start..i])
                }
                '。' | '！' | '？' => true,
                _ => false,
            };
            if end_here {
                push_sentence(&mut out, &para[start..i + c.len_utf8()]);
                start = i + c.len_utf8();
            }
        }
        push_sentence(&mut out, &para[start..]);
    }
    out
}

fn ends_with_abbreviation(s: &str) -> bool {
    let last = s.rsplit(' ').next().unwrap_or("").to_ascii_lowercase();
    matches!(last.as_str(), "e.g" | "i.e" | "etc" | "vs" | "cf" | "fig" | "no")
        || last.chars().all(|c| c.is_ascii_digit())
}

fn push_sentence(out: &mut Vec<String>, s: &str) {
    let s = s.trim();
    if s.chars().filter(|c| c.is_alphanumeric()).count() >= 3 {
        out.push(s.to_string());
    }
}

fn strip_list_marker(t: &str) -> &str {
    for m in ["- ", "* ", "+ ", "> "] {
        if let Some(rest) = t.strip_prefix(m) {
            return rest;
        }
    }
    let digits = t.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits < 4 {
        if let Some(rest) =
            t[digits..].strip_prefix(". ").or_else(|| t[digits..].strip_prefix(") "))
        {
            return rest;
        }
    }
    t
}

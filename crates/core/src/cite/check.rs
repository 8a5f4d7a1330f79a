//! The check itself: a [`Checker`] judges one cited sentence against the text of the sources it
//! cites. [`LexicalChecker`] is the fast one without a model; an entailment (NLI) model can take
//! its place behind the same trait.

use super::claims::{
    claims, collapse, content_hashes, content_words, is_flag, is_negated, numbers, ClaimKind,
    WordSet,
};
use super::sentences::{split, Sentence};
use super::{ChunkSource, Source};
use std::ops::Range;

/// The text of one numbered source, read once per answer for every sentence that cites it.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The source's citation number.
    pub n: usize,
    /// Its text (the chunk texts the model was given, joined).
    pub text: String,
    /// The text lowercased, whitespace collapsed (for quotes and names compared without case),
    /// made when a sentence first needs it.
    folded: std::cell::OnceCell<String>,
    /// Its numbers, normalised like a sentence's (`5-2` also as `5` and `2`).
    numbers: Vec<String>,
    /// Its content words.
    words: WordSet,
    /// Its sentences: sorted content-word hashes, numbers, and whether each is negated.
    sentences: Vec<SourceSentence>,
}

/// One sentence (or line) of a source.
#[derive(Debug, Clone)]
struct SourceSentence {
    words: WordSet,
    numbers: Vec<String>,
    /// Its `--flags` and `-x` flags (with `=value` cut off).
    flags: Vec<String>,
    negated: bool,
}

impl Evidence {
    /// Read a source's text.
    pub fn new(n: usize, text: impl Into<String>) -> Evidence {
        let text = text.into();
        let folded = std::cell::OnceCell::new();
        let mut numbers_all: Vec<String> = Vec::new();
        let mut words = WordSet::default();
        let mut sentences = Vec::new();
        let mut read = |t: &str, negated: bool| {
            let mut w = WordSet::default();
            content_hashes(t, &mut w);
            words.extend(w.iter().copied());
            let nums = numbers(t);
            for x in &nums {
                for part in std::iter::once(x.as_str()).chain(x.split(['-', ':'])) {
                    if !numbers_all.iter().any(|n| n == part) {
                        numbers_all.push(part.to_string());
                    }
                }
            }
            let flags = flags(t);
            sentences.push(SourceSentence { words: w, numbers: nums, flags, negated });
        };
        // Cut like an answer, so a wrapped line or an `e.g.` does not end a sentence.
        for s in split(&text) {
            read(&s.text(), is_negated(&s.prose));
        }
        // Code blocks are left out of sentences: each counts as one, for its words and numbers.
        for block in fenced_code(&text) {
            read(block, false);
        }
        Evidence { n, text, folded, numbers: numbers_all, words, sentences }
    }
    fn folded(&self) -> &str {
        self.folded.get_or_init(|| collapse(&self.text))
    }

    /// The evidence for each of `sources`: its chunks' texts from `index`, joined by blank
    /// lines (what the prompt gave the model).
    pub fn for_sources(sources: &[Source], index: &dyn ChunkSource) -> Vec<Evidence> {
        sources.iter().map(|s| Evidence::new(s.n, source_text(s, index))).collect()
    }
}

/// A source's text as the check reads it: the chunks the model was given, trimmed, a blank
/// line between them.
pub fn source_text(source: &Source, index: &dyn ChunkSource) -> String {
    let text: Vec<String> = source
        .chunks
        .iter()
        .filter_map(|&c| index.chunk_at(c))
        .map(|c| c.text.trim().to_string())
        .collect();
    text.join("\n\n")
}

/// What was not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// The kind of claim.
    pub kind: ClaimKind,
    /// The claim as written (for [`ClaimKind::Words`], the words not found; for
    /// [`ClaimKind::Negation`], "not" or "no negation").
    pub text: String,
}

/// A checker's judgement of one sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Everything checked was found in the cited sources.
    Supported,
    /// Something was not.
    Unsupported(Vec<Missing>),
}

/// Judges a sentence against the sources it cites (at least one). Implementations must not
/// panic on any input.
pub trait Checker {
    /// The verdict for `sentence` given the evidence of its cited sources.
    fn check(&self, sentence: &Sentence, evidence: &[&Evidence]) -> Verdict;
}

/// The checker without a model: every identifier, number, flag and quoted string must occur in
/// the cited sources, enough of the content words too, and the source sentences closest to it
/// must agree on negation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LexicalChecker {
    /// The share of a sentence's content words that must be in the sources (0..=1).
    pub min_word_share: f32,
    /// Sentences with fewer content words than this skip the word check.
    pub min_words: usize,
    /// How much of the sentence's words the closest source sentence must hold before its
    /// negation is compared.
    pub negation_overlap: f32,
    /// A number or a flag must occur in a source sentence that shares a content word with the
    /// sentence (not just anywhere in the source).
    pub in_context: bool,
}

impl Default for LexicalChecker {
    fn default() -> Self {
        LexicalChecker {
            min_word_share: 0.6,
            min_words: 3,
            negation_overlap: 0.6,
            in_context: true,
        }
    }
}

impl Checker for LexicalChecker {
    fn check(&self, sentence: &Sentence, evidence: &[&Evidence]) -> Verdict {
        let mut missing = Vec::new();
        let words = content_words(&sentence.text());
        let sentences = || evidence.iter().flat_map(|e| e.sentences.iter());
        // How many of the sentence's words each source sentence shares, counted once: per claim
        // it would cost claims × source sentences × words (a hostile answer's one sentence of
        // thousands of `--flags` froze the page).
        let shared: Vec<usize> =
            sentences().map(|s| words.iter().filter(|w| s.words.contains(&w.1)).count()).collect();
        let with_shared = || sentences().zip(shared.iter().copied());
        for c in claims(sentence) {
            let found = match c.kind {
                ClaimKind::Number if self.in_context && words.len() >= 2 => {
                    with_shared().any(|(s, k)| k > 0 && s.numbers.contains(&c.text))
                }
                ClaimKind::Flag if self.in_context && words.len() >= 2 => {
                    with_shared().any(|(s, k)| k > 0 && s.flags.contains(&c.text))
                }
                ClaimKind::Number => evidence.iter().any(|e| e.numbers.contains(&c.text)),
                ClaimKind::Quote => evidence.iter().any(|e| e.folded().contains(&c.text)),
                _ if c.fold => evidence
                    .iter()
                    .any(|e| contains_token(e.folded(), &crate::case::lower_str(&c.text))),
                _ => evidence.iter().any(|e| contains_token(&e.text, &c.text)),
            };
            if !found {
                missing.push(Missing { kind: c.kind, text: c.text });
            }
        }
        let absent: Vec<&str> = words
            .iter()
            .filter(|w| !evidence.iter().any(|e| e.words.contains(&w.1)))
            .map(|w| w.0.as_str())
            .collect();
        if words.len() >= self.min_words
            && (words.len() - absent.len()) as f32 / (words.len() as f32) < self.min_word_share
        {
            missing.push(Missing { kind: ClaimKind::Words, text: absent.join(" ") });
        }
        // Negation: against the source sentences that share most of the sentence's words; a
        // flip only when none of them agrees.
        if !words.is_empty() {
            let negated = is_negated(&sentence.prose);
            let best = shared.iter().copied().max().unwrap_or(0);
            let share = best as f32 / words.len() as f32;
            if best > 0
                && share >= self.negation_overlap
                && with_shared().filter(|&(_, k)| k == best).all(|(s, _)| s.negated != negated)
            {
                let text = if negated { "not" } else { "no negation" };
                missing.push(Missing { kind: ClaimKind::Negation, text: text.into() });
            }
        }
        if missing.is_empty() {
            Verdict::Supported
        } else {
            Verdict::Unsupported(missing)
        }
    }
}

/// The flags in a source text: `--name` and `-x` words (inside code too), `=value` cut off.
fn flags(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '`' | '(' | '[' | '"' | ',' | ';'))
        .filter(|w| w.starts_with('-'))
        .map(|w| w.split('=').next().unwrap_or(w).trim_end_matches(['.', ')', ']', ':']))
        .filter(|w| is_flag(w))
        .map(str::to_string)
        .collect()
}

/// The insides of the fenced code blocks (```` ``` ```` or `~~~` lines) of a chunk text.
fn fenced_code(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        let open = line_starting(rest, &["```", "~~~"])?;
        let body = &rest[open..];
        let body = &body[body.find('\n').map_or(body.len(), |p| p + 1)..];
        let close = line_starting(body, &["```", "~~~"]).unwrap_or(body.len());
        let block = &body[..close];
        rest = &body[close..];
        rest = &rest[rest.find('\n').map_or(rest.len(), |p| p + 1)..];
        Some(block)
    })
}

/// The byte offset of the first line of `text` that starts (after spaces) with one of `marks`.
fn line_starting(text: &str, marks: &[&str]) -> Option<usize> {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if marks.iter().any(|m| line.trim_start().starts_with(m)) {
            return Some(at);
        }
        at += line.len();
    }
    None
}

/// True when `needle` occurs in `hay` not glued to more identifier characters on either side
/// (`port` is not found in `ports` or `port_range`; `-x` is not found in `--x-y`).
fn contains_token(hay: &str, needle: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(p) = hay.get(from..).and_then(|h| h.find(needle)) {
        let s = from + p;
        let e = s + needle.len();
        let before = hay[..s].chars().next_back();
        let after = hay[e..].chars().next();
        let first = needle.chars().next();
        let last = needle.chars().next_back();
        let glued_before = before.is_some_and(|b| {
            (ident(b) && first.is_some_and(ident)) || (b == '-' && first == Some('-'))
        });
        // `--broken` is not `--broken-code`.
        let dash_on = first == Some('-')
            && after == Some('-')
            && hay[e + 1..].starts_with(|c: char| c.is_alphanumeric());
        let glued_after = dash_on || after.is_some_and(|a| ident(a) && last.is_some_and(ident));
        if !glued_before && !glued_after {
            return true;
        }
        from = s + needle.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// One cited sentence of an answer and its verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The sentence's bytes in the answer Markdown.
    pub range: Range<usize>,
    /// The numbers it cites.
    pub cites: Vec<usize>,
    /// The verdict.
    pub verdict: Verdict,
}

impl Checked {
    /// True when the sentence was not found in its sources.
    pub fn unsupported(&self) -> bool {
        matches!(self.verdict, Verdict::Unsupported(_))
    }
}

/// Check every sentence of `answer` that cites a source against the evidence of the sources it
/// cites (a sentence citing several passes when its claims are found across them). Uncited
/// sentences are not judged and not returned. A sentence that cites only numbers no source has
/// is unsupported ([`ClaimKind::Source`]).
pub fn check_answer(answer: &str, evidence: &[Evidence], checker: &dyn Checker) -> Vec<Checked> {
    split(answer)
        .into_iter()
        .filter(|s| !s.cites.is_empty())
        .map(|s| {
            let cited: Vec<&Evidence> =
                evidence.iter().filter(|e| s.cites.contains(&e.n)).collect();
            let verdict = if cited.is_empty() {
                let text = s.cites.iter().map(|n| format!("[{n}]")).collect::<String>();
                Verdict::Unsupported(vec![Missing { kind: ClaimKind::Source, text }])
            } else {
                checker.check(&s, &cited)
            };
            Checked { range: s.range, cites: s.cites, verdict }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_found_only_whole() {
        assert!(contains_token("set `port` here", "port"));
        assert!(!contains_token("the ports", "port"));
        assert!(!contains_token("use --x-y", "-x"));
        assert!(contains_token("use -x now", "-x"));
        assert!(contains_token("a::b::c", "b::c"));
        assert!(!contains_token("pass --broken-code", "--broken"));
        assert!(contains_token("pass --broken-", "--broken"));
    }
}

//! The check itself: a [`Checker`] judges one cited sentence against the text of the sources it
//! cites. [`LexicalChecker`] is the fast one without a model; an entailment (NLI) model can take
//! its place behind the same trait.

use super::claims::{claims, collapse, content_words, is_negated, numbers, ClaimKind};
use super::sentences::{split, Sentence};
use super::{ChunkSource, Source};
use std::collections::HashSet;
use std::ops::Range;

/// The text of one numbered source, read once per answer for every sentence that cites it.
#[derive(Debug, Clone)]
pub struct Evidence {
    /// The source's citation number.
    pub n: usize,
    /// Its text (the chunk texts the model was given, joined).
    pub text: String,
    /// The text lowercased, whitespace collapsed (for quotes).
    folded: String,
    /// Its numbers, normalised like a sentence's.
    numbers: HashSet<String>,
    /// Its content words.
    words: HashSet<String>,
    /// Its sentences: content words and whether each is negated.
    sentences: Vec<(HashSet<String>, bool)>,
}

impl Evidence {
    /// Read a source's text.
    pub fn new(n: usize, text: impl Into<String>) -> Evidence {
        let text = text.into();
        let folded = collapse(&text);
        let numbers = numbers(&text).into_iter().collect();
        let words = content_words(&text);
        let sentences = text
            .split(['\n', '。'])
            .flat_map(|line| line.split_inclusive(". "))
            .filter(|s| !s.trim().is_empty())
            .map(|s| (content_words(s), is_negated(s)))
            .collect();
        Evidence { n, text, folded, numbers, words, sentences }
    }

    /// The evidence for each of `sources`: its chunks' texts from `index`, joined by blank
    /// lines (what the prompt gave the model).
    pub fn for_sources(sources: &[Source], index: &dyn ChunkSource) -> Vec<Evidence> {
        sources
            .iter()
            .map(|s| {
                let text: Vec<String> = s
                    .chunks
                    .iter()
                    .filter_map(|&c| index.chunk_at(c))
                    .map(|c| c.text.trim().to_string())
                    .collect();
                Evidence::new(s.n, text.join("\n\n"))
            })
            .collect()
    }
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
/// the cited sources, enough of the content words too, and the closest source sentence must
/// agree on negation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LexicalChecker {
    /// The share of a sentence's content words that must be in the sources (0..=1).
    pub min_word_share: f32,
    /// Sentences with fewer content words than this skip the word check.
    pub min_words: usize,
    /// How much of the sentence's words the closest source sentence must hold before its
    /// negation is compared.
    pub negation_overlap: f32,
}

impl Default for LexicalChecker {
    fn default() -> Self {
        LexicalChecker { min_word_share: 0.6, min_words: 3, negation_overlap: 0.6 }
    }
}

impl Checker for LexicalChecker {
    fn check(&self, sentence: &Sentence, evidence: &[&Evidence]) -> Verdict {
        let mut missing = Vec::new();
        for c in claims(sentence) {
            let found = evidence.iter().any(|e| match c.kind {
                ClaimKind::Number => e.numbers.contains(&c.text),
                ClaimKind::Quote => e.folded.contains(&c.text),
                _ if c.fold => e.folded.contains(&c.text.to_lowercase()),
                _ => contains_token(&e.text, &c.text),
            });
            if !found {
                missing.push(Missing { kind: c.kind, text: c.text });
            }
        }
        let words = content_words(&sentence.text());
        let absent: Vec<&String> =
            words.iter().filter(|w| !evidence.iter().any(|e| e.words.contains(*w))).collect();
        if words.len() >= self.min_words
            && (words.len() - absent.len()) as f32 / (words.len() as f32) < self.min_word_share
        {
            let mut a: Vec<&str> = absent.iter().map(|s| s.as_str()).collect();
            a.sort_unstable();
            missing.push(Missing { kind: ClaimKind::Words, text: a.join(" ") });
        }
        // Negation: against the source sentence that shares most of the sentence's words.
        if !words.is_empty() {
            let negated = is_negated(&sentence.prose);
            let best = evidence
                .iter()
                .flat_map(|e| e.sentences.iter())
                .map(|(w, neg)| (words.iter().filter(|x| w.contains(*x)).count(), *neg))
                .max_by_key(|x| x.0);
            if let Some((shared, neg)) = best {
                let share = shared as f32 / words.len() as f32;
                if share >= self.negation_overlap && neg != negated {
                    let text = if negated { "not" } else { "no negation" };
                    missing.push(Missing { kind: ClaimKind::Negation, text: text.into() });
                }
            }
        }
        if missing.is_empty() {
            Verdict::Supported
        } else {
            Verdict::Unsupported(missing)
        }
    }
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
        let glued_after = after.is_some_and(|a| ident(a) && last.is_some_and(ident));
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
    }
}

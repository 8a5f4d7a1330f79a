//! Citations: the numbered sources an answer cites ([`Source`], with their chunks from a
//! [`ChunkSource`]), and the check that each cited sentence is backed by its sources
//! ([`check_answer`]).
//!
//! When an answer is complete, [`sentences::split`] cuts its Markdown into sentences with their
//! `[n]` citations; every cited sentence goes to a [`Checker`] with the text of the sources it
//! cites ([`Evidence`]). [`LexicalChecker`], the default, needs no model: identifiers, numbers,
//! flags and quoted strings must occur in the sources, enough content words too, and the closest
//! source sentence must agree on "not". A sentence that fails becomes a [`Mark`], which
//! [`crate::render`] shows as "not found in [n]" after it. BENCHMARKS.md ("Citation check")
//! has its precision and recall; docs/widget.md its limits.

mod check;
pub mod claims;
pub mod sentences;

pub use check::{
    check_answer, source_text, Checked, Checker, Evidence, LexicalChecker, Missing, Verdict,
};
pub use claims::ClaimKind;
pub use sentences::Sentence;

use crate::format::Index;
use crate::model::Chunk;
use serde::{Deserialize, Serialize};

/// Anything that hands out chunks by number: an [`Index`], or a slice of chunks (tests, tools).
pub trait ChunkSource {
    /// Chunk `i`, or None when out of range.
    fn chunk_at(&self, i: u32) -> Option<Chunk>;
}

impl ChunkSource for Index {
    fn chunk_at(&self, i: u32) -> Option<Chunk> {
        ((i as usize) < self.len()).then(|| self.chunk(i as usize))
    }
}

impl ChunkSource for [Chunk] {
    fn chunk_at(&self, i: u32) -> Option<Chunk> {
        self.get(i as usize).cloned()
    }
}

impl ChunkSource for Vec<Chunk> {
    fn chunk_at(&self, i: u32) -> Option<Chunk> {
        self.get(i as usize).cloned()
    }
}

/// One numbered source: a page whose retrieved chunks go into the prompt together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// Its citation number, from 1.
    pub n: usize,
    /// Link to the page's best-ranked section (`url#anchor`).
    pub url: String,
    /// The page title.
    pub title: String,
    /// The best-ranked section's breadcrumb, joined with " › ".
    pub breadcrumb: String,
    /// Chunk numbers of this page in the prompt, in document order.
    pub chunks: Vec<u32>,
}

/// The display label of a source: "Title › Section" (no repetition when the breadcrumb already
/// starts with the title).
pub fn source_label(source: &Source) -> String {
    let crumb = source.breadcrumb.trim();
    let title = source.title.trim();
    if crumb.is_empty() || crumb == title {
        title.to_string()
    } else if title.is_empty() || crumb.starts_with(title) {
        crumb.to_string()
    } else {
        format!("{title} › {crumb}")
    }
}

/// Find the first citation group `[n]` or `[n, m]` (1–3 digit numbers) in `s`: its byte range
/// and numbers.
pub(crate) fn find_citation(s: &str) -> Option<(usize, usize, Vec<usize>)> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(rel) = s[from..].find('[') {
        let start = from + rel;
        let mut i = start + 1;
        let mut numbers = Vec::new();
        let ok = loop {
            let d0 = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            let len = i - d0;
            if len == 0 || len > 3 {
                break false;
            }
            numbers.push(s[d0..i].parse::<usize>().unwrap_or(0));
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            match b.get(i) {
                Some(b']') => break true,
                Some(b',') => {
                    i += 1;
                    while i < b.len() && b[i] == b' ' {
                        i += 1;
                    }
                }
                _ => break false,
            }
        };
        if ok && !numbers.contains(&0) {
            return Some((start, i + 1, numbers));
        }
        from = start + 1;
    }
    None
}

/// A sentence not found in its sources, for [`crate::render::RenderOptions::marks`]: the
/// renderer puts "not found in [n]" at `at`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Mark {
    /// Byte offset in the answer Markdown where the sentence ends.
    pub at: usize,
    /// The source numbers the sentence cites.
    pub sources: Vec<usize>,
}

impl Mark {
    /// What the marker says: "not found in [2]", "not found in [1], [2]".
    pub fn label(&self) -> String {
        let list: Vec<String> = self.sources.iter().map(|n| format!("[{n}]")).collect();
        format!("not found in {}", list.join(", "))
    }
}

/// The marks for the unsupported sentences of a check, in answer order.
pub fn marks(checked: &[Checked]) -> Vec<Mark> {
    checked
        .iter()
        .filter(|c| c.unsupported())
        .map(|c| Mark { at: c.range.end, sources: c.cites.clone() })
        .collect()
}

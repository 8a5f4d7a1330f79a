//! Citations: the numbered sources an answer cites ([`Source`], with their chunks from a
//! [`ChunkSource`]), and the check that each cited sentence is backed by its sources
//! ([`check_answer`]).

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

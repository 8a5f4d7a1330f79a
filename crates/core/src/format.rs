//! The index file format (v1): the ONE module that defines the byte layout, used by writer and reader.
//! (API fixed; implementation in progress.) Layout documented in docs/index-format.md.

use crate::model::{Chunk, IndexHeader};

/// Everything that can be wrong with an index file. Messages say what to do.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FormatError {
    #[error("not a docent index (bad magic bytes); rebuild it with `docent index`")]
    BadMagic,
    #[error("index format version {found} is newer than this docent supports ({supported}); upgrade docent or rebuild the index with this version")]
    NewerVersion { found: u32, supported: u32 },
    #[error("index file is truncated ({0}); re-download or rebuild it with `docent index`")]
    Truncated(&'static str),
    #[error("index file is corrupted: {0}; rebuild it with `docent index`")]
    Corrupt(String),
    #[error("checksum mismatch (file damaged in transit?); re-download or rebuild it with `docent index`")]
    Checksum,
    #[error("cannot write index: {0}")]
    Invalid(String),
}

/// A loaded, validated index. Cheap to search; holds the file bytes.
#[derive(Debug, Clone)]
pub struct Index {
    pub(crate) header: IndexHeader,
}

/// Write an index: `vectors` must be None (lexical only) or one vector of `header.dims` per chunk.
pub fn write_index(_header: &IndexHeader, _chunks: &[Chunk], _vectors: Option<&[Vec<f32>]>) -> Result<Vec<u8>, FormatError> {
    Err(FormatError::Invalid("not yet written".into()))
}

impl Index {
    /// Parse and validate (magic, version, checksum, bounds).
    pub fn from_bytes(_bytes: Vec<u8>) -> Result<Index, FormatError> {
        Err(FormatError::BadMagic)
    }
    pub fn header(&self) -> &IndexHeader {
        &self.header
    }
    /// Number of chunks.
    pub fn len(&self) -> usize {
        0
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Chunk `i` (owned copy).
    pub fn chunk(&self, _i: usize) -> Chunk {
        Chunk::default()
    }
    /// Dequantised vector of chunk `i` (for incremental re-indexing), None for lexical-only indexes.
    pub fn vector(&self, _i: usize) -> Option<Vec<f32>> {
        None
    }
    /// The file's xxh3-64 checksum (also a cache key).
    pub fn checksum(&self) -> u64 {
        0
    }
}

//! The index file format, versions 2 and 3: the ONE module that defines the byte layout. The writer
//! ([`write_index`]) and the reader ([`Index::from_bytes`]) both live here, so they cannot drift.
//! The layout is documented for humans in `docs/index-format.md`; keep the two in step.
//!
//! ```text
//! all integers little-endian; every section starts on an 8-byte boundary
//!
//! 0   8  magic            b"DOCENTIX"
//! 8   4  format version   u32 = 2, or 3 when the vectors are packed below 8 bits
//! 12  4  flags            u32 = 0 (reserved)
//! 16  8  file length      u64, including the trailing checksum
//! 24  4  header length    u32, bytes of the JSON header
//! 28  4  section count    u32
//! 32  24×count section table: { kind u32, reserved u32, offset u64, length u64 }
//! ..     header JSON      UTF-8 `IndexHeader`
//! ..     sections         see `SectionKind`
//! -8  8  checksum         xxh3-64 of every byte before it
//! ```
//!
//! Sections (a reader rejects a file missing a required one, and ignores kinds it does not
//! know, so later minor additions stay readable):
//! - `Pages`: 12 bytes per page: url, title, namespace (u32 string ids).
//! - `Strings`: count u32, (count+1) u32 offsets, then the UTF-8 blob. Deduplicated.
//! - `Text`: the chunk texts, UTF-8, back to back in chunk order.
//! - `Vectors`: one vector per chunk, back to back (present only when dims > 0). Version 2:
//!   `dims` int8 each (the header's `quantization` is `int8`). Version 3 adds `int4` and
//!   `binary`: `ceil(dims × bits / 8)` bytes each, component `j` in bits `j×bits..(j+1)×bits`
//!   (low bits first) as a two's-complement code (`binary`: 1 = +1, 0 = -1); see
//!   [`crate::vector::pack_levels`]. The reader unpacks them to int8 levels once, at load.
//! - `Scales`: `count` f32, the per-vector quantisation scale.
//! - `Chunks`: 12 bytes per chunk: place id, end of its text in `Text` (it starts where the
//!   previous chunk's ends), cl100k token count (u32 each).
//! - `Places`: 12 bytes per distinct (page, anchor, breadcrumb): page id, anchor string id,
//!   breadcrumb node id (`u32::MAX` = no breadcrumb).
//! - `Crumbs`: 8 bytes per breadcrumb node, a trie of heading paths: parent node id (`u32::MAX` =
//!   a root; always smaller than the node's own id), label string id.
//!
//! There is no stored lexical index: the BM25 postings are derived from the text on first use
//! ([`Index::lexical`]), and the content hashes for incremental re-indexing are recomputed from
//! the stored fields ([`Index::chunk`]).

use crate::lexical::LexicalIndex;
use crate::model::{Chunk, IndexHeader, Quantization};
use crate::source::safety::{capped_label, MAX_ANCHOR_BYTES};
use std::collections::HashMap;
use std::sync::OnceLock;

/// The 8 bytes every docent index starts with.
pub const MAGIC: &[u8; 8] = b"DOCENTIX";
/// The newest format version this code reads and writes: the entry file of a split index
/// ([`crate::split`]): the header, vectors and mean vector of version 4, plus `Shards` (where
/// the chunk texts, their titles, anchors and breadcrumbs, and the BM25 postings are),
/// `DocLens` and `Outline` (what ranking needs of every chunk and page), and no `Text`,
/// `Chunks`, `Places` or `Crumbs`; and the vectors by cluster: a `Clusters` section (the
/// coarse quantiser, [`crate::split::vectors`]) instead of `Vectors` and `Scales`, each
/// cluster's vectors in a vector shard. Only split entries with vector shards are version 9
/// (a reader of split entries without them would find no vectors), other split entries are
/// [`SPLIT_FORMAT_VERSION`], so readers that cannot fetch shards refuse them with "upgrade
/// docent" instead of misreading them.
pub const FORMAT_VERSION: u32 = 9;
/// Split entries whose vectors (if any) are in the entry.
pub const SPLIT_FORMAT_VERSION: u32 = 8;
/// The first split entries' version. Versions from it up to [`SPLIT_FORMAT_VERSION`] are
/// earlier split layouts (5: chunk records in the entry; 6 and 7: 64-bit shard checksums and
/// `u16` chunk lengths), refused with a message to rebuild the index.
pub const OLDEST_SPLIT_FORMAT_VERSION: u32 = 5;
/// The newest one-file version: version 3 plus a `Center` section (packed vectors stored
/// relative to the mean vector) and an embedding recipe in the header (query prompts, query
/// model) that older readers would ignore. A file is written as version 4 only when it has one
/// of them; otherwise as [`PACKED_FORMAT_VERSION`] (packed vectors) or
/// [`INT8_FORMAT_VERSION`], so older readers keep reading what they can read correctly.
pub const CENTERED_FORMAT_VERSION: u32 = 4;
/// The version of files with packed vectors and nothing newer.
pub const PACKED_FORMAT_VERSION: u32 = 3;
/// The oldest version this code reads, and the one it writes unless the vectors are packed.
pub const INT8_FORMAT_VERSION: u32 = 2;
/// Byte size of one chunk record.
pub const CHUNK_RECORD: usize = 12;
const PAGE_RECORD: usize = 12;
const PLACE_RECORD: usize = 12;
const CRUMB_RECORD: usize = 8;
const NO_NODE: u32 = u32::MAX;
const FIXED_HEADER: usize = 32;
const SECTION_ENTRY: usize = 24;

/// Everything that can be wrong with an index file. Messages say what to do.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FormatError {
    #[error("not a docent index (bad magic bytes); rebuild it with `docent index`")]
    BadMagic,
    #[error("index format version {found} is newer than this docent supports ({supported}); upgrade docent or rebuild the index with this version")]
    NewerVersion { found: u32, supported: u32 },
    #[error("index format version {found} is older than this docent reads ({supported}); rebuild the index with `docent index`")]
    OlderVersion { found: u32, supported: u32 },
    #[error("index file is truncated ({0}); re-download or rebuild it with `docent index`")]
    Truncated(&'static str),
    #[error("index file is corrupted: {0}; rebuild it with `docent index`")]
    Corrupt(String),
    #[error("checksum mismatch (file damaged in transit?); re-download or rebuild it with `docent index`")]
    Checksum,
    #[error("cannot write index: {0}")]
    Invalid(String),
}

/// Section kinds, as stored in the section table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum SectionKind {
    Pages = 1,
    Strings = 2,
    Text = 3,
    Vectors = 4,
    Scales = 5,
    Chunks = 6,
    Places = 7,
    Crumbs = 8,
    Center = 9,
    /// Split entries only: where the shards are ([`crate::split::Manifest`]).
    Shards = 10,
    /// Split entries only: every chunk's BM25 length (u16), for scoring from partial postings.
    DocLens = 11,
    /// Split entries only: every chunk's section and page, every page's url, namespace and
    /// kind ([`crate::split::outline::Outline`]).
    Outline = 12,
    /// Split entries of version 9 only: the coarse quantiser and the vector shards' name hashes
    /// ([`crate::split::vectors::Coarse`]).
    Clusters = 13,
}

impl SectionKind {
    const ALL: [SectionKind; 13] = [
        SectionKind::Pages,
        SectionKind::Strings,
        SectionKind::Text,
        SectionKind::Vectors,
        SectionKind::Scales,
        SectionKind::Chunks,
        SectionKind::Places,
        SectionKind::Crumbs,
        SectionKind::Center,
        SectionKind::Shards,
        SectionKind::DocLens,
        SectionKind::Outline,
        SectionKind::Clusters,
    ];

    fn from_u32(v: u32) -> Option<SectionKind> {
        Self::ALL.iter().copied().find(|k| *k as u32 == v)
    }

    /// Human name, for `docent inspect` and errors. The widget's errors say only that the index
    /// is damaged, so its build names no section: the names would cost it bytes.
    pub fn name(self) -> &'static str {
        if cfg!(target_arch = "wasm32") {
            return "index section";
        }
        match self {
            SectionKind::Pages => "pages (url, title, namespace)",
            SectionKind::Strings => "strings (urls, titles, anchors, headings)",
            SectionKind::Text => "chunk text",
            SectionKind::Vectors => "vectors",
            SectionKind::Scales => "vector scales",
            SectionKind::Chunks => "chunk records",
            SectionKind::Places => "sections (page, anchor, breadcrumb)",
            SectionKind::Crumbs => "breadcrumb trie",
            SectionKind::Center => "mean vector (packed vectors are stored relative to it)",
            SectionKind::Shards => "shard manifest (split index)",
            SectionKind::DocLens => "chunk lengths for BM25 (split index)",
            SectionKind::Outline => "outline: chunk sections, pages (split index)",
            SectionKind::Clusters => "vector clusters (split index)",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Writing

fn push_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn to_u32(v: usize, what: &str) -> Result<u32, FormatError> {
    u32::try_from(v).map_err(|_| {
        FormatError::Invalid(format!(
            "{what} exceeds 4 GiB / 2^32 entries; split the site into several indexes"
        ))
    })
}

/// A string table under construction: deduplicates.
#[derive(Default)]
struct StringTable {
    ids: HashMap<String, u32>,
    list: Vec<String>,
}

impl StringTable {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.ids.insert(s.to_string(), id);
        self.list.push(s.to_string());
        id
    }
}

/// Offsets table + blob, the shape shared by `Strings` and `Terms`.
fn encode_string_list<'a>(
    items: impl ExactSizeIterator<Item = &'a str>,
) -> Result<Vec<u8>, FormatError> {
    let mut out = Vec::new();
    let count = items.len();
    push_u32(&mut out, to_u32(count, "string count")?);
    let mut blob = Vec::new();
    let mut offsets = Vec::with_capacity(count + 1);
    offsets.push(0u32);
    for s in items {
        blob.extend_from_slice(s.as_bytes());
        offsets.push(to_u32(blob.len(), "string blob")?);
    }
    for o in offsets {
        push_u32(&mut out, o);
    }
    out.extend_from_slice(&blob);
    Ok(out)
}

/// Write an index: `vectors` must be None (lexical only) or one vector of `header.dims` per chunk.
/// Vectors are L2-normalised, then quantised as `header.quantization` says (int8 by default).
/// Header counts are filled in from the chunks.
pub fn write_index(
    header: &IndexHeader,
    chunks: &[Chunk],
    vectors: Option<&[Vec<f32>]>,
) -> Result<Vec<u8>, FormatError> {
    write_index_centered(header, chunks, vectors, None)
}

/// [`write_index`], with vectors packed below 8 bits stored relative to `center` (usually
/// [`crate::vector::mean_vector`] of the vectors; see [`crate::vector::quantize_centered`]),
/// which is kept in a `Center` section (format version 4). `center` is ignored for int8
/// vectors and must have `dims` components.
pub fn write_index_centered(
    header: &IndexHeader,
    chunks: &[Chunk],
    vectors: Option<&[Vec<f32>]>,
    center: Option<&[f32]>,
) -> Result<Vec<u8>, FormatError> {
    let n = chunks.len();
    to_u32(n, "chunk count")?;
    let mut header = header.clone();
    header.chunk_count = n as u32;
    let mut pages: Vec<&str> = chunks.iter().map(|c| c.url.as_str()).collect();
    pages.sort_unstable();
    pages.dedup();
    header.page_count = pages.len() as u32;
    let mut namespaces: Vec<String> =
        chunks.iter().filter(|c| !c.namespace.is_empty()).map(|c| c.namespace.clone()).collect();
    namespaces.sort();
    namespaces.dedup();
    header.namespaces = namespaces;
    if header.docent_version.is_empty() {
        header.docent_version = crate::VERSION.to_string();
    }
    match vectors {
        None => header.dims = 0,
        Some(vs) => {
            if vs.len() != n {
                return Err(FormatError::Invalid(format!(
                    "{} vectors for {} chunks; every chunk needs exactly one vector",
                    vs.len(),
                    n
                )));
            }
            if header.dims == 0 {
                header.dims = vs.first().map(|v| v.len() as u32).unwrap_or(0);
            }
            if let Some((i, v)) =
                vs.iter().enumerate().find(|(_, v)| v.len() != header.dims as usize)
            {
                return Err(FormatError::Invalid(format!("vector {i} has {} dims, the index has {}; all vectors must come from the same model", v.len(), header.dims)));
            }
        }
    }
    let dims = header.dims as usize;

    // Pages, places, the breadcrumb trie, chunk records, strings, text.
    let mut strings = StringTable::default();
    let mut page_ids: HashMap<(u32, u32, u32), u32> = HashMap::new();
    let mut pages_sec = Vec::new();
    let mut node_ids: HashMap<(u32, u32), u32> = HashMap::new();
    let mut crumbs_sec = Vec::new();
    let mut place_ids: HashMap<(u32, u32, u32), u32> = HashMap::new();
    let mut places_sec = Vec::new();
    let mut records = Vec::with_capacity(n * CHUNK_RECORD);
    let mut text = Vec::new();
    for c in chunks {
        let page_key = (strings.id(&c.url), strings.id(&c.title), strings.id(&c.namespace));
        let next = page_ids.len() as u32;
        let page = *page_ids.entry(page_key).or_insert_with(|| {
            for id in [page_key.0, page_key.1, page_key.2] {
                push_u32(&mut pages_sec, id);
            }
            next
        });
        let mut node = NO_NODE;
        for part in c.breadcrumb.iter().filter(|p| !p.is_empty()) {
            let key = (node, strings.id(part));
            let next = node_ids.len() as u32;
            node = *node_ids.entry(key).or_insert_with(|| {
                push_u32(&mut crumbs_sec, key.0);
                push_u32(&mut crumbs_sec, key.1);
                next
            });
        }
        let place_key = (page, strings.id(&c.anchor), node);
        let next = place_ids.len() as u32;
        let place = *place_ids.entry(place_key).or_insert_with(|| {
            for id in [place_key.0, place_key.1, place_key.2] {
                push_u32(&mut places_sec, id);
            }
            next
        });
        text.extend_from_slice(c.text.as_bytes());
        push_u32(&mut records, place);
        push_u32(&mut records, to_u32(text.len(), "chunk text")?);
        push_u32(&mut records, c.tokens);
    }
    let strings_sec = encode_string_list(strings.list.iter().map(|s| s.as_str()))?;

    // Vectors.
    if dims == 0 {
        header.quantization = Quantization::Int8;
    }
    let bits = header.quantization.bits();
    let center = center.filter(|_| dims > 0 && bits < 8);
    if let Some(c) = center {
        if c.len() != dims || c.iter().any(|x| !x.is_finite()) {
            return Err(FormatError::Invalid(format!(
                "the mean vector has {} components (or a non-finite one); the index has {dims} dims",
                c.len()
            )));
        }
    }
    let mut vec_sec = Vec::with_capacity(n * header.quantization.vector_bytes(dims));
    let mut scale_sec = Vec::with_capacity(n * 4);
    if let Some(vs) = vectors {
        let mut q = Vec::with_capacity(dims);
        for v in vs {
            let mut v = v.clone();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            // Relative to a mean vector, a vector near unit length is taken as it is: a reused
            // reconstruction (`center + scale × levels`, not quite unit length) then gets its
            // codes and scale back exactly; the search divides by its norm anyway.
            if center.is_none() || !(0.8..=1.25).contains(&norm) {
                crate::vector::normalize(&mut v);
            }
            let scale = match center {
                Some(c) => crate::vector::quantize_centered(&v, c, bits, &mut q),
                None => crate::vector::quantize_levels(&v, bits, &mut q),
            };
            crate::vector::pack_levels(&q, bits, &mut vec_sec);
            scale_sec.extend_from_slice(&scale.to_le_bytes());
        }
    }
    let version = if center.is_some() || header.embedding.changes_queries() {
        CENTERED_FORMAT_VERSION
    } else if header.quantization == Quantization::Int8 {
        INT8_FORMAT_VERSION
    } else {
        PACKED_FORMAT_VERSION
    };

    let mut sections: Vec<(SectionKind, Vec<u8>)> = vec![
        (SectionKind::Pages, pages_sec),
        (SectionKind::Places, places_sec),
        (SectionKind::Crumbs, crumbs_sec),
        (SectionKind::Chunks, records),
        (SectionKind::Strings, strings_sec),
        (SectionKind::Text, text),
    ];
    if dims > 0 {
        sections.push((SectionKind::Vectors, vec_sec));
        sections.push((SectionKind::Scales, scale_sec));
    }
    if let Some(c) = center {
        sections.push((SectionKind::Center, c.iter().flat_map(|x| x.to_le_bytes()).collect()));
    }
    assemble(version, &header, &sections)
}

/// Lay out a file: fixed header, section table, header JSON, the sections (8-byte aligned),
/// checksum.
pub(crate) fn assemble(
    version: u32,
    header: &IndexHeader,
    sections: &[(SectionKind, Vec<u8>)],
) -> Result<Vec<u8>, FormatError> {
    let header_json =
        serde_json::to_vec(header).map_err(|e| FormatError::Invalid(e.to_string()))?;
    let table_len = sections.len() * SECTION_ENTRY;
    let mut offset = align8(FIXED_HEADER + table_len + header_json.len());
    let mut table = Vec::with_capacity(table_len);
    for (kind, body) in sections {
        push_u32(&mut table, *kind as u32);
        push_u32(&mut table, 0);
        table.extend_from_slice(&(offset as u64).to_le_bytes());
        table.extend_from_slice(&(body.len() as u64).to_le_bytes());
        offset = align8(offset + body.len());
    }
    let total = offset + 8;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    push_u32(&mut out, version);
    push_u32(&mut out, 0);
    out.extend_from_slice(&(total as u64).to_le_bytes());
    push_u32(&mut out, to_u32(header_json.len(), "header")?);
    push_u32(&mut out, sections.len() as u32);
    out.extend_from_slice(&table);
    out.extend_from_slice(&header_json);
    for (_, body) in sections {
        out.resize(align8(out.len()), 0);
        out.extend_from_slice(body);
    }
    out.resize(align8(out.len()), 0);
    debug_assert_eq!(out.len() + 8, total);
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// The checksum function of the format (xxh3-64), exposed for tools and the fuzz target.
pub fn checksum_of(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

fn align8(v: usize) -> usize {
    (v + 7) & !7
}

// ---------------------------------------------------------------------------------------------
// Reading

/// A malformed index: the detail for native readers (`docent inspect`, the CLI), one message in
/// the widget, where the reader can only reload or the site rebuild (the detail strings would
/// be bytes of every download).
fn corrupt(detail: impl FnOnce() -> String) -> FormatError {
    FormatError::Corrupt(if cfg!(target_arch = "wasm32") {
        "the index file is malformed; rebuild it with `docent index`".into()
    } else {
        detail()
    })
}

/// Every way a `Center` section can be wrong, in one message.
fn bad_center() -> FormatError {
    corrupt(|| {
        "the mean vector section is invalid (it needs format version 4, packed vectors and \
         dims finite floats)"
            .into()
    })
}

#[inline]
pub(crate) fn rd_u32(b: &[u8], at: usize) -> u32 {
    // Callers guarantee bounds (validated at load); `get` keeps this panic-free regardless.
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]])).unwrap_or(0)
}

#[inline]
pub(crate) fn rd_u64(b: &[u8], at: usize) -> u64 {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
        .unwrap_or(0)
}

/// A validated offsets+blob list (`Strings`, `Terms`) inside the file.
#[derive(Debug, Clone, Copy, Default)]
struct StrList {
    count: usize,
    offsets: usize,
    blob: usize,
    blob_len: usize,
}

impl StrList {
    fn parse(
        bytes: &[u8],
        range: (usize, usize),
        what: &'static str,
    ) -> Result<StrList, FormatError> {
        let (start, len) = range;
        if len < 4 {
            return Err(FormatError::Truncated(what));
        }
        let count = rd_u32(bytes, start) as usize;
        let table = count
            .checked_add(1)
            .and_then(|c| c.checked_mul(4))
            .ok_or(FormatError::Truncated(what))?;
        if 4 + table > len {
            return Err(FormatError::Truncated(what));
        }
        let list = StrList {
            count,
            offsets: start + 4,
            blob: start + 4 + table,
            blob_len: len - 4 - table,
        };
        let blob = &bytes[list.blob..list.blob + list.blob_len];
        let text = std::str::from_utf8(blob)
            .map_err(|_| corrupt(|| format!("{what} are not valid UTF-8")))?;
        let mut prev = 0usize;
        for i in 0..=count {
            let o = rd_u32(bytes, list.offsets + i * 4) as usize;
            if o < prev || o > list.blob_len || !text.is_char_boundary(o) || (i == 0 && o != 0) {
                return Err(corrupt(|| format!("{what}: bad offset table")));
            }
            prev = o;
        }
        Ok(list)
    }

    fn get<'a>(&self, bytes: &'a [u8], i: usize) -> &'a str {
        if i >= self.count {
            return "";
        }
        let a = rd_u32(bytes, self.offsets + i * 4) as usize;
        let b = rd_u32(bytes, self.offsets + (i + 1) * 4) as usize;
        // Validated at load: offsets are monotonic char boundaries of a UTF-8 blob.
        bytes
            .get(self.blob + a..self.blob + b)
            .and_then(|s| std::str::from_utf8(s).ok())
            .unwrap_or("")
    }
}

/// An index's BM25 index: derived once from a one-file index's text, or built from the
/// postings a split index has attached so far.
pub enum Lexical<'a> {
    /// Kept by the index.
    Borrowed(&'a LexicalIndex),
    /// Shared with the index's cache (split indexes).
    Shared(std::sync::Arc<LexicalIndex>),
}

impl std::ops::Deref for Lexical<'_> {
    type Target = LexicalIndex;
    fn deref(&self) -> &LexicalIndex {
        match self {
            Lexical::Borrowed(l) => l,
            Lexical::Shared(l) => l,
        }
    }
}

/// A loaded, validated index. Holds the file bytes; every accessor reads from them directly.
/// The BM25 index is built from the text on first use (see [`Index::lexical`]).
#[derive(Debug, Clone)]
pub struct Index {
    pub(crate) header: IndexHeader,
    bytes: Vec<u8>,
    sections: Vec<(SectionKind, usize, usize)>,
    n: usize,
    dims: usize,
    chunks: usize,
    pages: usize,
    places: usize,
    crumbs: usize,
    strings: StrList,
    text: (usize, usize),
    /// (the int8 levels, the scales' offset in `bytes`).
    vectors: Option<(Levels, usize)>,
    /// The mean vector packed vectors are stored relative to, and each vector's
    /// `1 / |center + scale × levels|` (format version 4).
    center: Option<(Vec<f32>, Vec<f32>)>,
    lexical: OnceLock<LexicalIndex>,
    checksum: u64,
    /// A split entry's shard manifest and the shards attached so far.
    pub(crate) split: Option<Box<crate::split::SplitState>>,
}

/// Where a loaded index's int8 vector levels are.
#[derive(Debug, Clone)]
enum Levels {
    /// In the file bytes at this offset (int8 vectors, read in place).
    InFile(usize),
    /// Unpacked from 4- or 1-bit codes at load.
    Unpacked(Vec<i8>),
}

/// A borrowed view of one chunk, without copying its strings.
#[derive(Clone, Copy)]
pub struct ChunkRef<'a> {
    pub url: &'a str,
    pub anchor: &'a str,
    pub title: &'a str,
    pub namespace: &'a str,
    pub text: &'a str,
    pub tokens: u32,
    crumbs: Crumbs<'a>,
}

/// Where a chunk's breadcrumb is: a node of a one-file index's trie, or a text shard's labels.
#[derive(Clone, Copy)]
enum Crumbs<'a> {
    Trie(&'a Index, u32),
    Labels(&'a [Box<str>]),
}

impl std::fmt::Debug for ChunkRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkRef")
            .field("url", &self.url)
            .field("anchor", &self.anchor)
            .field("title", &self.title)
            .field("breadcrumb", &self.breadcrumb())
            .field("namespace", &self.namespace)
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl<'a> ChunkRef<'a> {
    /// The breadcrumb parts, outermost heading first.
    pub fn breadcrumb(&self) -> Vec<&'a str> {
        let mut parts = Vec::new();
        if let Crumbs::Labels(labels) = self.crumbs {
            return labels.iter().map(|l| capped_label(l)).collect();
        }
        if let Crumbs::Trie(index, mut node) = self.crumbs {
            // Parents always have smaller ids (validated at load), so this terminates.
            while node != NO_NODE && (node as usize) < index.crumb_count() {
                let (parent, label) = index.crumb_node(node as usize);
                parts.push(capped_label(label));
                if parent != NO_NODE && parent >= node {
                    break;
                }
                node = parent;
            }
        }
        parts.reverse();
        parts
    }
    /// Owned copy; its `hash` is recomputed from the stored fields (the file does not store it).
    pub fn to_chunk(&self) -> Chunk {
        let mut c = Chunk {
            url: self.url.to_string(),
            anchor: self.anchor.to_string(),
            title: self.title.to_string(),
            breadcrumb: self.breadcrumb().into_iter().map(str::to_string).collect(),
            namespace: self.namespace.to_string(),
            text: self.text.to_string(),
            tokens: self.tokens,
            hash: 0,
        };
        c.hash = c.compute_hash();
        c
    }
}

/// Parse a fixed-size record section: its start and record count.
fn records(
    range: (usize, usize),
    size: usize,
    what: &'static str,
) -> Result<(usize, usize), FormatError> {
    if !range.1.is_multiple_of(size) {
        return Err(corrupt(|| format!("{what}: size is not a multiple of its record size")));
    }
    Ok((range.0, range.1 / size))
}

/// Where a one-file index's records are (all zero for a split entry, whose outline and
/// shards hold what they would).
#[derive(Debug, Clone, Copy, Default)]
struct OneFile {
    strings: StrList,
    pages: usize,
    places: usize,
    crumbs: usize,
    chunks: usize,
    text: (usize, usize),
}

impl OneFile {
    /// Validate the records of a one-file index of `n` chunks: every id, offset and boundary.
    fn parse(
        bytes: &[u8],
        n: usize,
        need: impl Fn(SectionKind) -> Result<(usize, usize), FormatError>,
    ) -> Result<OneFile, FormatError> {
        let strings = StrList::parse(bytes, need(SectionKind::Strings)?, "strings")?;
        let sid_ok = |at: usize| (rd_u32(bytes, at) as usize) < strings.count;

        let (pages, page_count) = records(need(SectionKind::Pages)?, PAGE_RECORD, "pages")?;
        for p in 0..page_count {
            if !(0..3).all(|f| sid_ok(pages + p * PAGE_RECORD + f * 4)) {
                return Err(corrupt(|| "a page refers to a missing string".into()));
            }
        }
        let (crumbs, crumb_count) =
            records(need(SectionKind::Crumbs)?, CRUMB_RECORD, "breadcrumb trie")?;
        for c in 0..crumb_count {
            let parent = rd_u32(bytes, crumbs + c * CRUMB_RECORD);
            if (parent != NO_NODE && parent as usize >= c) || !sid_ok(crumbs + c * CRUMB_RECORD + 4)
            {
                return Err(corrupt(|| "a breadcrumb node is malformed".into()));
            }
        }
        let (places, place_count) = records(need(SectionKind::Places)?, PLACE_RECORD, "sections")?;
        for p in 0..place_count {
            let r = places + p * PLACE_RECORD;
            let node = rd_u32(bytes, r + 8);
            if rd_u32(bytes, r) as usize >= page_count
                || !sid_ok(r + 4)
                || (node != NO_NODE && node as usize >= crumb_count)
            {
                return Err(corrupt(|| {
                    "a section refers to a missing page, string or breadcrumb".into()
                }));
            }
        }
        let (chunks, chunk_count) =
            records(need(SectionKind::Chunks)?, CHUNK_RECORD, "chunk records")?;
        if chunk_count != n {
            return Err(corrupt(|| "chunk records do not match the chunk count".into()));
        }
        let text = need(SectionKind::Text)?;
        let text_str = std::str::from_utf8(&bytes[text.0..text.0 + text.1])
            .map_err(|_| corrupt(|| "chunk text is not valid UTF-8".into()))?;
        let mut prev_end = 0usize;
        for i in 0..n {
            let r = chunks + i * CHUNK_RECORD;
            if rd_u32(bytes, r) as usize >= place_count {
                return Err(corrupt(|| "a chunk refers to a missing section".into()));
            }
            let end = rd_u32(bytes, r + 4) as usize;
            if end < prev_end || !text_str.is_char_boundary(end) {
                return Err(corrupt(|| "a chunk's text lies outside the text section".into()));
            }
            prev_end = end;
        }
        Ok(OneFile { strings, pages, places, crumbs, chunks, text })
    }
}

impl Index {
    /// Parse and validate (magic, version, length, checksum, every offset). Never panics.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Index, FormatError> {
        if bytes.len() < 8 {
            return Err(if MAGIC.starts_with(&bytes) {
                FormatError::Truncated("file shorter than its magic")
            } else {
                FormatError::BadMagic
            });
        }
        if &bytes[..8] != MAGIC {
            return Err(FormatError::BadMagic);
        }
        if bytes.len() < FIXED_HEADER + 8 {
            return Err(FormatError::Truncated("fixed header"));
        }
        let version = rd_u32(&bytes, 8);
        if version > FORMAT_VERSION {
            return Err(FormatError::NewerVersion { found: version, supported: FORMAT_VERSION });
        }
        if version == 0 {
            return Err(corrupt(|| "format version 0".into()));
        }
        if version < INT8_FORMAT_VERSION {
            return Err(FormatError::OlderVersion {
                found: version,
                supported: INT8_FORMAT_VERSION,
            });
        }
        let total = rd_u64(&bytes, 16);
        if (bytes.len() as u64) < total {
            return Err(FormatError::Truncated("file shorter than its recorded length"));
        }
        if (bytes.len() as u64) > total {
            return Err(corrupt(|| {
                format!("{} trailing bytes after the recorded length", bytes.len() as u64 - total)
            }));
        }
        let body_len = bytes.len() - 8;
        let stored = rd_u64(&bytes, body_len);
        let checksum = xxhash_rust::xxh3::xxh3_64(&bytes[..body_len]);
        if stored != checksum {
            return Err(FormatError::Checksum);
        }
        let header_len = rd_u32(&bytes, 24) as usize;
        let count = rd_u32(&bytes, 28) as usize;
        let table_end = count
            .checked_mul(SECTION_ENTRY)
            .and_then(|t| t.checked_add(FIXED_HEADER))
            .filter(|&e| e <= body_len)
            .ok_or(FormatError::Truncated("section table"))?;
        let header_end = table_end
            .checked_add(header_len)
            .filter(|&e| e <= body_len)
            .ok_or(FormatError::Truncated("header"))?;
        let header: IndexHeader = crate::header_json::read_header(&bytes[table_end..header_end])
            .map_err(|e| corrupt(|| format!("header JSON: {e}")))?;
        let mut sections = Vec::new();
        for i in 0..count {
            let at = FIXED_HEADER + i * SECTION_ENTRY;
            let kind = rd_u32(&bytes, at);
            let off = rd_u64(&bytes, at + 8);
            let len = rd_u64(&bytes, at + 16);
            let end = off.checked_add(len).ok_or(corrupt(|| "section overflows".into()))?;
            if off < header_end as u64 || end > body_len as u64 {
                return Err(corrupt(|| format!("section {kind} lies outside the file")));
            }
            if let Some(k) = SectionKind::from_u32(kind) {
                if sections.iter().any(|(s, _, _)| *s == k) {
                    return Err(corrupt(|| format!("section {} appears twice", k.name())));
                }
                sections.push((k, off as usize, len as usize));
            }
        }
        let find =
            |k: SectionKind| sections.iter().find(|(s, _, _)| *s == k).map(|&(_, o, l)| (o, l));
        let need = |k: SectionKind| {
            find(k).ok_or_else(|| corrupt(|| format!("missing section: {}", k.name())))
        };

        let n = header.chunk_count as usize;
        let dims = header.dims as usize;
        if (OLDEST_SPLIT_FORMAT_VERSION..SPLIT_FORMAT_VERSION).contains(&version) {
            return Err(FormatError::OlderVersion { found: version, supported: FORMAT_VERSION });
        }
        // A split entry (version 8 or 9) has a shard manifest and an outline instead of the
        // one-file sections; its texts and the rest are in its shards. Version 9 has its
        // vectors in shards too, by cluster.
        let split_entry = version >= SPLIT_FORMAT_VERSION;
        let clustered = version == FORMAT_VERSION;
        let one_file_only = [SectionKind::Text, SectionKind::Chunks, SectionKind::Places];
        let in_entry = [SectionKind::Vectors, SectionKind::Scales];
        if split_entry != find(SectionKind::Shards).is_some()
            || (split_entry && one_file_only.iter().any(|&k| find(k).is_some()))
            || clustered != find(SectionKind::Clusters).is_some()
            || (clustered && (dims == 0 || in_entry.iter().any(|&k| find(k).is_some())))
        {
            return Err(corrupt(|| {
                "a split index entry is version 8 or 9, has a shard manifest and no chunk records"
                    .into()
            }));
        }
        let layout =
            if split_entry { OneFile::default() } else { OneFile::parse(&bytes, n, need)? };
        let quantization = header.quantization;
        if version == INT8_FORMAT_VERSION && quantization != Quantization::Int8 {
            return Err(corrupt(|| {
                format!("a version 2 file cannot hold {} vectors", quantization.name())
            }));
        }
        let vectors = if dims > 0 && !clustered {
            let v = need(SectionKind::Vectors)?;
            let s = need(SectionKind::Scales)?;
            let per = quantization.vector_bytes(dims);
            if Some(v.1) != n.checked_mul(per) || Some(s.1) != n.checked_mul(4) {
                return Err(corrupt(|| {
                    format!(
                        "vector section size does not match count × dims ({})",
                        quantization.name()
                    )
                }));
            }
            let packed = &bytes[v.0..v.0 + v.1];
            if quantization == Quantization::Int8 {
                // Components are -127..=127 (symmetric quantisation); the SIMD kernels rely on it.
                if packed.contains(&0x80) {
                    return Err(corrupt(|| {
                        "a vector component is -128, outside the int8 range -127..=127".into()
                    }));
                }
                Some((Levels::InFile(v.0), s.0))
            } else {
                let mut levels = Vec::with_capacity(n * dims);
                for i in 0..n {
                    if !crate::vector::unpack_levels(
                        &packed[i * per..(i + 1) * per],
                        quantization.bits(),
                        dims,
                        &mut levels,
                    ) {
                        return Err(corrupt(|| {
                            format!(
                                "vector {i} holds a code outside the {} range",
                                quantization.name()
                            )
                        }));
                    }
                }
                Some((Levels::Unpacked(levels), s.0))
            }
        } else {
            None
        };
        // A mean vector belongs to a version-4 file with packed vectors, and holds `dims` finite
        // floats. One message for every way it can be wrong keeps the widget small.
        let center = match (find(SectionKind::Center), &vectors) {
            (None, _) => None,
            (Some((at, len)), Some((Levels::Unpacked(levels), scales)))
                if version >= CENTERED_FORMAT_VERSION
                    && quantization != Quantization::Int8
                    && len == dims * 4 =>
            {
                let mu: Vec<f32> =
                    (0..dims).map(|j| f32::from_bits(rd_u32(&bytes, at + 4 * j))).collect();
                if !mu.iter().all(|x| x.is_finite()) {
                    return Err(bad_center());
                }
                let inv = (0..n)
                    .map(|i| {
                        let s = f32::from_bits(rd_u32(&bytes, scales + 4 * i));
                        crate::vector::centered_inv_norm(&mu, &levels[i * dims..(i + 1) * dims], s)
                    })
                    .collect();
                Some((mu, inv))
            }
            // Clustered: each vector shard computes its vectors' norms when attached.
            (Some((at, len)), None)
                if clustered && quantization != Quantization::Int8 && len == dims * 4 =>
            {
                let mu: Vec<f32> =
                    (0..dims).map(|j| f32::from_bits(rd_u32(&bytes, at + 4 * j))).collect();
                if !mu.iter().all(|x| x.is_finite()) {
                    return Err(bad_center());
                }
                Some((mu, Vec::new()))
            }
            (Some(_), _) => return Err(bad_center()),
        };
        let split = if split_entry {
            let doclens = need(SectionKind::DocLens)?;
            if Some(doclens.1) != n.checked_mul(2) {
                return Err(corrupt(|| "the chunk lengths do not match the chunk count".into()));
            }
            // Two byte planes: every low byte, then every high byte.
            let lens = (0..n)
                .map(|i| u16::from_le_bytes([bytes[doclens.0 + i], bytes[doclens.0 + n + i]]));
            let lens = lens.collect();
            let (m, o) = (need(SectionKind::Shards)?, need(SectionKind::Outline)?);
            let manifest = crate::split::Manifest::parse(&bytes[m.0..m.0 + m.1], n)?;
            let outline = crate::split::outline::Outline::parse(&bytes[o.0..o.0 + o.1], n)?;
            let coarse = match find(SectionKind::Clusters) {
                Some((at, len)) => {
                    Some(crate::split::vectors::Coarse::parse(&bytes[at..at + len], n, dims)?)
                }
                None => None,
            };
            Some(Box::new(crate::split::SplitState::new(manifest, lens, outline, coarse)))
        } else {
            None
        };
        let OneFile { strings, pages, places, crumbs, chunks, text } = layout;
        Ok(Index {
            header,
            split,
            sections,
            n,
            dims,
            chunks,
            pages,
            places,
            crumbs,
            strings,
            text,
            vectors,
            center,
            lexical: OnceLock::new(),
            checksum,
            bytes,
        })
    }

    /// The header recorded at build time.
    pub fn header(&self) -> &IndexHeader {
        &self.header
    }
    /// Number of chunks.
    pub fn len(&self) -> usize {
        self.n
    }
    /// True when the index has no chunks.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Vector dimensions (0 = lexical only).
    pub fn dims(&self) -> usize {
        self.dims
    }
    /// The raw file bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    fn crumb_count(&self) -> usize {
        self.section_len(SectionKind::Crumbs) / CRUMB_RECORD
    }

    fn section_len(&self, k: SectionKind) -> usize {
        self.sections.iter().find(|(s, _, _)| *s == k).map(|&(_, _, l)| l).unwrap_or(0)
    }

    /// (parent, label) of breadcrumb node `i` (validated at load).
    fn crumb_node(&self, i: usize) -> (u32, &str) {
        let r = self.crumbs + i * CRUMB_RECORD;
        (rd_u32(&self.bytes, r), self.string(rd_u32(&self.bytes, r + 4)))
    }

    fn string(&self, id: u32) -> &str {
        self.strings.get(&self.bytes, id as usize)
    }

    /// (place id, text start, text end) of chunk `i` (< len()).
    fn record(&self, i: usize) -> (usize, usize, usize) {
        let r = self.chunks + i * CHUNK_RECORD;
        let start = if i == 0 { 0 } else { rd_u32(&self.bytes, r - CHUNK_RECORD + 4) as usize };
        (rd_u32(&self.bytes, r) as usize, start, rd_u32(&self.bytes, r + 4) as usize)
    }

    /// The page record (url, title, namespace string ids) of chunk `i`'s place.
    fn page_of_place(&self, place: usize) -> usize {
        self.pages + rd_u32(&self.bytes, self.places + place * PLACE_RECORD) as usize * PAGE_RECORD
    }

    /// Borrowed view of chunk `i`; an out-of-range `i` gives an empty view. In a split index,
    /// the title, anchor, breadcrumb, token count and text are empty until the chunk's text
    /// shard is attached.
    pub fn chunk_ref(&self, i: usize) -> ChunkRef<'_> {
        let mut c = self.stored_chunk_ref(i);
        // Titles and headings as long as a page can make them are read only so far (this docent
        // cuts them when it builds pages, `source::PageBuilder`; an index it did not build may
        // not have). A page's ids are not cut when indexed: one past its cap is dropped, and the
        // link goes to the page instead of carrying kilobytes into every href.
        c.title = capped_label(c.title);
        if c.anchor.len() > MAX_ANCHOR_BYTES {
            c.anchor = "";
        }
        c
    }

    fn stored_chunk_ref(&self, i: usize) -> ChunkRef<'_> {
        let mut c = ChunkRef {
            url: "",
            anchor: "",
            title: "",
            namespace: "",
            text: "",
            tokens: 0,
            crumbs: Crumbs::Labels(&[]),
        };
        if i >= self.n {
            return c;
        }
        if let Some(sp) = &self.split {
            (c.url, c.namespace) = sp.url_and_namespace(i);
            if let Some((sec, title, tokens, text)) = sp.shard_chunk(i) {
                (c.title, c.anchor, c.tokens, c.text) = (title, &sec.anchor, tokens, text);
                c.crumbs = Crumbs::Labels(&sec.labels);
            }
            return c;
        }
        let b = &self.bytes;
        let (place, start, end) = self.record(i);
        let pl = self.places + place * PLACE_RECORD;
        let page = self.page_of_place(place);
        ChunkRef {
            url: self.string(rd_u32(b, page)),
            title: self.string(rd_u32(b, page + 4)),
            namespace: self.string(rd_u32(b, page + 8)),
            anchor: self.string(rd_u32(b, pl + 4)),
            text: b
                .get(self.text.0 + start..self.text.0 + end)
                .and_then(|t| std::str::from_utf8(t).ok())
                .unwrap_or(""),
            tokens: rd_u32(b, self.chunks + i * CHUNK_RECORD + 8),
            crumbs: Crumbs::Trie(self, rd_u32(b, pl + 8)),
        }
    }

    /// Chunk `i` (owned copy, with its content hash recomputed).
    pub fn chunk(&self, i: usize) -> Chunk {
        self.chunk_ref(i).to_chunk()
    }

    /// Namespace of chunk `i` (< len()) without building the rest of the view.
    pub(crate) fn namespace_of(&self, i: usize) -> &str {
        if let Some(sp) = &self.split {
            return sp.url_and_namespace(i).1;
        }
        let page = self.page_of_place(self.record(i).0);
        self.string(rd_u32(&self.bytes, page + 8))
    }

    /// The section (page + anchor) chunk `i` (< len()) belongs to: chunks of one section share it.
    pub fn section_of(&self, i: usize) -> u32 {
        match &self.split {
            Some(sp) => sp.outline.chunk_section.get(i).copied().unwrap_or(0),
            None => self.record(i).0 as u32,
        }
    }

    /// The page chunk `i` (< len()) is on: chunks of one page (url + namespace) share it.
    pub fn page_of(&self, i: usize) -> u32 {
        match &self.split {
            Some(sp) => {
                sp.outline.section_page.get(self.section_of(i) as usize).copied().unwrap_or(0)
            }
            None => rd_u32(&self.bytes, self.places + self.record(i).0 * PLACE_RECORD),
        }
    }

    /// Url of chunk `i` (< len()) without building the rest of the view.
    pub(crate) fn url_of(&self, i: usize) -> &str {
        if let Some(sp) = &self.split {
            return sp.url_and_namespace(i).0;
        }
        let page = self.page_of_place(self.record(i).0);
        self.string(rd_u32(&self.bytes, page))
    }

    /// Quantised vector (its int8 levels, whatever the stored width) and scale of chunk `i`.
    pub fn quantized(&self, i: usize) -> Option<(&[i8], f32)> {
        if i >= self.n {
            return None;
        }
        if let Some((_, shards)) = self.split.as_ref().and_then(|s| s.vector_shards()) {
            // Clustered: in the attached shard that holds it.
            return shards.iter().filter_map(|s| s.get()).find_map(|v| {
                let t = v.chunks.binary_search(&(i as u32)).ok()?;
                Some((&v.levels[t * self.dims..(t + 1) * self.dims], v.scales[t]))
            });
        }
        let all = self.all_vectors()?;
        let s = self.vectors.as_ref()?.1;
        let sb = &self.bytes[s + i * 4..s + i * 4 + 4];
        Some((
            &all[i * self.dims..(i + 1) * self.dims],
            f32::from_le_bytes([sb[0], sb[1], sb[2], sb[3]]),
        ))
    }

    /// All vectors' int8 levels back to back (`len() × dims()`), for the scan loop.
    pub(crate) fn all_vectors(&self) -> Option<&[i8]> {
        match &self.vectors.as_ref()?.0 {
            Levels::InFile(v) => {
                let raw = &self.bytes[*v..*v + self.n * self.dims];
                // SAFETY: i8 and u8 have identical size and alignment; every bit pattern is valid
                // for both.
                Some(unsafe { std::slice::from_raw_parts(raw.as_ptr() as *const i8, raw.len()) })
            }
            Levels::Unpacked(levels) => Some(levels),
        }
    }

    /// The per-vector scales, raw little-endian f32 bytes (`len() × 4`).
    pub(crate) fn all_scales(&self) -> &[u8] {
        match &self.vectors {
            Some((_, s)) => &self.bytes[*s..*s + self.n * 4],
            None => &[],
        }
    }

    /// Dequantised vector of chunk `i` (for incremental re-indexing), None for lexical-only indexes.
    /// With a mean vector: `center + scale × levels`.
    pub fn vector(&self, i: usize) -> Option<Vec<f32>> {
        let (q, scale) = self.quantized(i)?;
        Some(match &self.center {
            Some((mu, _)) => mu.iter().zip(q).map(|(&c, &x)| c + x as f32 * scale).collect(),
            None => q.iter().map(|&x| x as f32 * scale).collect(),
        })
    }

    /// The mean vector packed vectors are stored relative to (format version 4), if any.
    pub fn center(&self) -> Option<&[f32]> {
        self.center.as_ref().map(|(mu, _)| mu.as_slice())
    }

    /// Per vector `1 / |center + scale × levels|`, when there is a mean vector.
    pub(crate) fn center_inv_norms(&self) -> Option<&[f32]> {
        self.center.as_ref().map(|(_, inv)| inv.as_slice())
    }

    /// The file's xxh3-64 checksum (also a cache key).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// The BM25 index over every chunk's breadcrumb and text, built on first use (a few ms per
    /// thousand chunks) and kept. Call it right after loading to move that cost off the first search.
    ///
    /// For a split index: the postings attached so far, enough for the questions they were
    /// fetched for ([`Index::shards_for_query`]); rebuilt when more arrive.
    pub fn lexical(&self) -> Lexical<'_> {
        if let Some(sp) = &self.split {
            return Lexical::Shared(sp.lexical());
        }
        Lexical::Borrowed(self.lexical.get_or_init(|| {
            LexicalIndex::build((0..self.n).map(|i| {
                let c = self.chunk_ref(i);
                let mut parts = c.breadcrumb();
                parts.push(c.text);
                parts
            }))
        }))
    }

    /// (kind, offset, length) of each known section, in file order.
    pub(crate) fn section_ranges(&self) -> Vec<(SectionKind, usize, usize)> {
        let mut v = self.sections.clone();
        v.sort_by_key(|&(_, o, _)| o);
        v
    }

    /// Size of each section in bytes, for `docent inspect`, in file order.
    pub fn section_sizes(&self) -> Vec<(SectionKind, usize)> {
        let mut v: Vec<_> = self.sections.iter().map(|&(k, o, l)| (k, o, l)).collect();
        v.sort_by_key(|&(_, o, _)| o);
        v.into_iter().map(|(k, _, l)| (k, l)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(url: &str, anchor: &str, text: &str) -> Chunk {
        let mut c = Chunk {
            url: url.into(),
            anchor: anchor.into(),
            title: "Title".into(),
            breadcrumb: if anchor.is_empty() {
                vec!["Title".into()]
            } else {
                vec!["Title".into(), anchor.into()]
            },
            namespace: String::new(),
            text: text.into(),
            tokens: text.len() as u32 / 4,
            hash: 0,
        };
        c.hash = c.compute_hash();
        c
    }

    #[test]
    fn titles_headings_and_ids_past_the_label_cap_are_not_read_whole() {
        use crate::source::safety::MAX_LABEL_BYTES;
        // An index written by another docent (this one cuts them when it builds pages).
        let huge = "W".repeat(200_000);
        let mut c = chunk("/docs/big", &huge, "text");
        c.title = huge.clone();
        c.breadcrumb = vec![huge.clone(), "Setup".into()];
        let ok = chunk("/docs/ok", "ok", "more text");
        let cjk = "%E5%AE%89".repeat(60);
        let long_id = chunk("/docs/cjk", &cjk, "text");
        let bytes = write_index(&IndexHeader::default(), &[c, ok, long_id], None).unwrap();
        let idx = Index::from_bytes(bytes).unwrap();
        let big = idx.chunk(0);
        assert_eq!((big.title.len(), big.anchor.as_str()), (MAX_LABEL_BYTES, ""));
        assert_eq!(big.breadcrumb, vec!["W".repeat(MAX_LABEL_BYTES), "Setup".into()]);
        assert_eq!(big.link(), "/docs/big", "the link leads to the page");
        let ok = idx.chunk(1);
        assert_eq!(
            (ok.title.as_str(), ok.anchor.as_str(), ok.link()),
            ("Title", "ok", "/docs/ok#ok".into())
        );
        assert_eq!(idx.chunk(2).anchor, cjk, "an id in percent escapes is kept");
    }

    #[test]
    fn an_empty_index_round_trips() {
        let bytes = write_index(&IndexHeader::default(), &[], None).unwrap();
        let idx = Index::from_bytes(bytes).unwrap();
        assert!(idx.is_empty());
        assert_eq!(idx.chunk_ref(3).text, "");
    }

    #[test]
    fn chunks_strings_and_vectors_round_trip() {
        let chunks =
            vec![chunk("a.html", "x", "hello world"), chunk("b.html", "", "héllo ünïcode 所有権")];
        let vecs = vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.6, 0.8]];
        let bytes = write_index(
            &IndexHeader { provider: "local".into(), ..Default::default() },
            &chunks,
            Some(&vecs),
        )
        .unwrap();
        let idx = Index::from_bytes(bytes).unwrap();
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.header().dims, 3);
        assert_eq!(idx.header().page_count, 2);
        assert_eq!(idx.chunk(0), chunks[0]);
        assert_eq!(idx.chunk(1), chunks[1]);
        let v = idx.vector(1).unwrap();
        assert!((v[1] - 0.6).abs() < 0.01 && (v[2] - 0.8).abs() < 0.01, "{v:?}");
    }

    #[test]
    fn mismatched_vector_count_is_refused_with_a_reason() {
        let chunks = vec![chunk("a.html", "x", "hello")];
        let err = write_index(&IndexHeader::default(), &chunks, Some(&[])).unwrap_err();
        assert!(err.to_string().contains("every chunk needs exactly one vector"));
    }
}

//! The index file format, version 1: the ONE module that defines the byte layout. The writer
//! ([`write_index`]) and the reader ([`Index::from_bytes`]) both live here, so they cannot drift.
//! The layout is documented for humans in `docs/index-format.md`; keep the two in step.
//!
//! ```text
//! all integers little-endian; every section starts on an 8-byte boundary
//!
//! 0   8  magic            b"DOCENTIX"
//! 8   4  format version   u32 = 1
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
//! - `Chunks`: one 40-byte record per chunk: url, anchor, title, breadcrumb, namespace (u32
//!   string ids each), text offset u32, text length u32, tokens u32, hash u64.
//! - `Strings`: count u32, (count+1) u32 offsets, then the UTF-8 blob. Deduplicated.
//!   Breadcrumb parts are joined with U+001F.
//! - `Text`: the chunk texts, UTF-8, back to back.
//! - `Vectors`: `count × dims` int8 (present only when dims > 0).
//! - `Scales`: `count` f32, the per-vector quantisation scale.
//! - `Terms`: the BM25 vocabulary, sorted: count u32, (count+1) u32 offsets, UTF-8 blob.
//! - `Postings`: (terms+1) u32 offsets into the blob that follows, then per term a list of
//!   LEB128 varint pairs (doc-id delta, term frequency).
//! - `DocLens`: `count` u16, the number of lexical tokens per chunk (saturating).

use crate::model::{Chunk, IndexHeader};
use std::collections::BTreeMap;

/// The 8 bytes every docent index starts with.
pub const MAGIC: &[u8; 8] = b"DOCENTIX";
/// The format version this code writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;
/// Byte size of one chunk record.
pub const CHUNK_RECORD: usize = 40;
const FIXED_HEADER: usize = 32;
const SECTION_ENTRY: usize = 24;
const BREADCRUMB_SEP: char = '\u{1f}';

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

/// Section kinds, as stored in the section table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum SectionKind {
    Chunks = 1,
    Strings = 2,
    Text = 3,
    Vectors = 4,
    Scales = 5,
    Terms = 6,
    Postings = 7,
    DocLens = 8,
}

impl SectionKind {
    const ALL: [SectionKind; 8] = [
        SectionKind::Chunks,
        SectionKind::Strings,
        SectionKind::Text,
        SectionKind::Vectors,
        SectionKind::Scales,
        SectionKind::Terms,
        SectionKind::Postings,
        SectionKind::DocLens,
    ];

    fn from_u32(v: u32) -> Option<SectionKind> {
        Self::ALL.iter().copied().find(|k| *k as u32 == v)
    }

    /// Human name, for `docent inspect`.
    pub fn name(self) -> &'static str {
        match self {
            SectionKind::Chunks => "chunk records",
            SectionKind::Strings => "strings (urls, titles, anchors)",
            SectionKind::Text => "chunk text",
            SectionKind::Vectors => "vectors (int8)",
            SectionKind::Scales => "vector scales",
            SectionKind::Terms => "lexical vocabulary",
            SectionKind::Postings => "lexical postings",
            SectionKind::DocLens => "lexical doc lengths",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Writing

fn push_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn push_varint(out: &mut Vec<u8>, mut v: u32) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn to_u32(v: usize, what: &str) -> Result<u32, FormatError> {
    u32::try_from(v).map_err(|_| FormatError::Invalid(format!("{what} exceeds 4 GiB / 2^32 entries; split the site into several indexes")))
}

/// A string table under construction: deduplicates.
#[derive(Default)]
struct StringTable {
    ids: BTreeMap<String, u32>,
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
fn encode_string_list<'a>(items: impl ExactSizeIterator<Item = &'a str>) -> Result<Vec<u8>, FormatError> {
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
/// Vectors are L2-normalised, then int8-quantised. Header counts are filled in from the chunks.
pub fn write_index(header: &IndexHeader, chunks: &[Chunk], vectors: Option<&[Vec<f32>]>) -> Result<Vec<u8>, FormatError> {
    let n = chunks.len();
    to_u32(n, "chunk count")?;
    let mut header = header.clone();
    header.chunk_count = n as u32;
    let mut pages: Vec<&str> = chunks.iter().map(|c| c.url.as_str()).collect();
    pages.sort_unstable();
    pages.dedup();
    header.page_count = pages.len() as u32;
    let mut namespaces: Vec<String> = chunks.iter().filter(|c| !c.namespace.is_empty()).map(|c| c.namespace.clone()).collect();
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
                return Err(FormatError::Invalid(format!("{} vectors for {} chunks; every chunk needs exactly one vector", vs.len(), n)));
            }
            if header.dims == 0 {
                header.dims = vs.first().map(|v| v.len() as u32).unwrap_or(0);
            }
            if let Some((i, v)) = vs.iter().enumerate().find(|(_, v)| v.len() != header.dims as usize) {
                return Err(FormatError::Invalid(format!("vector {i} has {} dims, the index has {}; all vectors must come from the same model", v.len(), header.dims)));
            }
        }
    }
    let dims = header.dims as usize;

    // Chunk records, strings, text.
    let mut strings = StringTable::default();
    let mut records = Vec::with_capacity(n * CHUNK_RECORD);
    let mut text = Vec::new();
    for c in chunks {
        let crumb = c.breadcrumb.join(&BREADCRUMB_SEP.to_string());
        let text_off = to_u32(text.len(), "chunk text")?;
        text.extend_from_slice(c.text.as_bytes());
        for id in [strings.id(&c.url), strings.id(&c.anchor), strings.id(&c.title), strings.id(&crumb), strings.id(&c.namespace)] {
            push_u32(&mut records, id);
        }
        push_u32(&mut records, text_off);
        push_u32(&mut records, to_u32(c.text.len(), "chunk text")?);
        push_u32(&mut records, c.tokens);
        records.extend_from_slice(&c.hash.to_le_bytes());
    }
    let strings_sec = encode_string_list(strings.list.iter().map(|s| s.as_str()))?;

    // Vectors.
    let mut vec_sec = Vec::with_capacity(n * dims);
    let mut scale_sec = Vec::with_capacity(n * 4);
    if let Some(vs) = vectors {
        let mut q = Vec::with_capacity(dims);
        for v in vs {
            let mut v = v.clone();
            crate::vector::normalize(&mut v);
            let scale = crate::vector::quantize(&v, &mut q);
            vec_sec.extend(q.iter().map(|&x| x as u8));
            scale_sec.extend_from_slice(&scale.to_le_bytes());
        }
    }

    // Lexical: term -> [(doc, tf)], doc lengths. Title and breadcrumb count as text too.
    let mut postings: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
    let mut doclens = Vec::with_capacity(n * 2);
    let mut toks = Vec::new();
    for (doc, c) in chunks.iter().enumerate() {
        toks.clear();
        crate::lexical::tokenize_into(&c.breadcrumb.join(" "), &mut toks);
        crate::lexical::tokenize_into(&c.text, &mut toks);
        let len = toks.len().min(u16::MAX as usize) as u16;
        doclens.extend_from_slice(&len.to_le_bytes());
        toks.sort_unstable();
        let mut i = 0;
        while i < toks.len() {
            let mut j = i;
            while j < toks.len() && toks[j] == toks[i] {
                j += 1;
            }
            postings.entry(toks[i].clone()).or_default().push((doc as u32, (j - i) as u32));
            i = j;
        }
    }
    let terms_sec = encode_string_list(postings.keys().map(|s| s.as_str()))?;
    let mut post_blob = Vec::new();
    let mut post_offsets = Vec::with_capacity(postings.len() + 1);
    post_offsets.push(0u32);
    for list in postings.values() {
        let mut prev = 0u32;
        for &(doc, tf) in list {
            push_varint(&mut post_blob, doc - prev);
            push_varint(&mut post_blob, tf);
            prev = doc;
        }
        post_offsets.push(to_u32(post_blob.len(), "postings")?);
    }
    let mut post_sec = Vec::with_capacity(post_offsets.len() * 4 + post_blob.len());
    for o in post_offsets {
        push_u32(&mut post_sec, o);
    }
    post_sec.extend_from_slice(&post_blob);

    // Assemble.
    let header_json = serde_json::to_vec(&header).map_err(|e| FormatError::Invalid(e.to_string()))?;
    let mut sections: Vec<(SectionKind, Vec<u8>)> = vec![
        (SectionKind::Chunks, records),
        (SectionKind::Strings, strings_sec),
        (SectionKind::Text, text),
        (SectionKind::Terms, terms_sec),
        (SectionKind::Postings, post_sec),
        (SectionKind::DocLens, doclens),
    ];
    if dims > 0 {
        sections.push((SectionKind::Vectors, vec_sec));
        sections.push((SectionKind::Scales, scale_sec));
    }
    let table_len = sections.len() * SECTION_ENTRY;
    let mut offset = align8(FIXED_HEADER + table_len + header_json.len());
    let mut table = Vec::with_capacity(table_len);
    for (kind, body) in &sections {
        push_u32(&mut table, *kind as u32);
        push_u32(&mut table, 0);
        table.extend_from_slice(&(offset as u64).to_le_bytes());
        table.extend_from_slice(&(body.len() as u64).to_le_bytes());
        offset = align8(offset + body.len());
    }
    let total = offset + 8;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    push_u32(&mut out, FORMAT_VERSION);
    push_u32(&mut out, 0);
    out.extend_from_slice(&(total as u64).to_le_bytes());
    push_u32(&mut out, to_u32(header_json.len(), "header")?);
    push_u32(&mut out, sections.len() as u32);
    out.extend_from_slice(&table);
    out.extend_from_slice(&header_json);
    for (_, body) in &sections {
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

#[inline]
fn rd_u32(b: &[u8], at: usize) -> u32 {
    // Callers guarantee bounds (validated at load); `get` keeps this panic-free regardless.
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]])).unwrap_or(0)
}

#[inline]
fn rd_u64(b: &[u8], at: usize) -> u64 {
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
    fn parse(bytes: &[u8], range: (usize, usize), what: &'static str) -> Result<StrList, FormatError> {
        let (start, len) = range;
        if len < 4 {
            return Err(FormatError::Truncated(what));
        }
        let count = rd_u32(bytes, start) as usize;
        let table = count.checked_add(1).and_then(|c| c.checked_mul(4)).ok_or(FormatError::Truncated(what))?;
        if 4 + table > len {
            return Err(FormatError::Truncated(what));
        }
        let list = StrList { count, offsets: start + 4, blob: start + 4 + table, blob_len: len - 4 - table };
        let blob = &bytes[list.blob..list.blob + list.blob_len];
        let text = std::str::from_utf8(blob).map_err(|_| FormatError::Corrupt(format!("{what} are not valid UTF-8")))?;
        let mut prev = 0usize;
        for i in 0..=count {
            let o = rd_u32(bytes, list.offsets + i * 4) as usize;
            if o < prev || o > list.blob_len || !text.is_char_boundary(o) || (i == 0 && o != 0) {
                return Err(FormatError::Corrupt(format!("{what}: bad offset table")));
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

/// A loaded, validated index. Holds the file bytes; every accessor reads from them directly.
#[derive(Debug, Clone)]
pub struct Index {
    pub(crate) header: IndexHeader,
    bytes: Vec<u8>,
    sections: Vec<(SectionKind, usize, usize)>,
    n: usize,
    dims: usize,
    chunks: usize,
    strings: StrList,
    text: (usize, usize),
    vectors: Option<(usize, usize)>,
    terms: StrList,
    postings: (usize, usize),
    doclens: usize,
    avgdl: f32,
    checksum: u64,
}

/// A borrowed view of one chunk, without copying its strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRef<'a> {
    pub url: &'a str,
    pub anchor: &'a str,
    pub title: &'a str,
    /// Breadcrumb parts joined by U+001F; see [`ChunkRef::breadcrumb`].
    pub breadcrumb_raw: &'a str,
    pub namespace: &'a str,
    pub text: &'a str,
    pub tokens: u32,
    pub hash: u64,
}

impl<'a> ChunkRef<'a> {
    /// The breadcrumb parts.
    pub fn breadcrumb(&self) -> impl Iterator<Item = &'a str> {
        self.breadcrumb_raw.split(BREADCRUMB_SEP).filter(|s| !s.is_empty())
    }
    /// Owned copy.
    pub fn to_chunk(&self) -> Chunk {
        Chunk {
            url: self.url.to_string(),
            anchor: self.anchor.to_string(),
            title: self.title.to_string(),
            breadcrumb: self.breadcrumb().map(str::to_string).collect(),
            namespace: self.namespace.to_string(),
            text: self.text.to_string(),
            tokens: self.tokens,
            hash: self.hash,
        }
    }
}

impl Index {
    /// Parse and validate (magic, version, length, checksum, every offset). Never panics.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Index, FormatError> {
        if bytes.len() < 8 {
            return Err(if MAGIC.starts_with(&bytes) { FormatError::Truncated("file shorter than its magic") } else { FormatError::BadMagic });
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
            return Err(FormatError::Corrupt("format version 0".into()));
        }
        let total = rd_u64(&bytes, 16);
        if (bytes.len() as u64) < total {
            return Err(FormatError::Truncated("file shorter than its recorded length"));
        }
        if (bytes.len() as u64) > total {
            return Err(FormatError::Corrupt(format!("{} trailing bytes after the recorded length", bytes.len() as u64 - total)));
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
        let header_end = table_end.checked_add(header_len).filter(|&e| e <= body_len).ok_or(FormatError::Truncated("header"))?;
        let header: IndexHeader = serde_json::from_slice(&bytes[table_end..header_end])
            .map_err(|e| FormatError::Corrupt(format!("header JSON: {e}")))?;
        let mut sections = Vec::new();
        for i in 0..count {
            let at = FIXED_HEADER + i * SECTION_ENTRY;
            let kind = rd_u32(&bytes, at);
            let off = rd_u64(&bytes, at + 8);
            let len = rd_u64(&bytes, at + 16);
            let end = off.checked_add(len).ok_or(FormatError::Corrupt("section overflows".into()))?;
            if off < header_end as u64 || end > body_len as u64 {
                return Err(FormatError::Corrupt(format!("section {kind} lies outside the file")));
            }
            if let Some(k) = SectionKind::from_u32(kind) {
                if sections.iter().any(|(s, _, _)| *s == k) {
                    return Err(FormatError::Corrupt(format!("section {} appears twice", k.name())));
                }
                sections.push((k, off as usize, len as usize));
            }
        }
        let find = |k: SectionKind| sections.iter().find(|(s, _, _)| *s == k).map(|&(_, o, l)| (o, l));
        let need = |k: SectionKind| find(k).ok_or_else(|| FormatError::Corrupt(format!("missing section: {}", k.name())));

        let n = header.chunk_count as usize;
        let dims = header.dims as usize;
        let (chunks, chunks_len) = need(SectionKind::Chunks)?;
        if Some(chunks_len) != n.checked_mul(CHUNK_RECORD) {
            return Err(FormatError::Corrupt("chunk records do not match the chunk count".into()));
        }
        let strings = StrList::parse(&bytes, need(SectionKind::Strings)?, "strings")?;
        let text = need(SectionKind::Text)?;
        let text_str = std::str::from_utf8(&bytes[text.0..text.0 + text.1]).map_err(|_| FormatError::Corrupt("chunk text is not valid UTF-8".into()))?;
        for i in 0..n {
            let r = chunks + i * CHUNK_RECORD;
            for f in 0..5 {
                if rd_u32(&bytes, r + f * 4) as usize >= strings.count {
                    return Err(FormatError::Corrupt(format!("chunk {i} refers to a missing string")));
                }
            }
            let off = rd_u32(&bytes, r + 20) as usize;
            let len = rd_u32(&bytes, r + 24) as usize;
            let end = off.saturating_add(len);
            if end > text.1 || !text_str.is_char_boundary(off) || !text_str.is_char_boundary(end) {
                return Err(FormatError::Corrupt(format!("chunk {i} text lies outside the text section")));
            }
        }
        let vectors = if dims > 0 {
            let v = need(SectionKind::Vectors)?;
            let s = need(SectionKind::Scales)?;
            if Some(v.1) != n.checked_mul(dims) || Some(s.1) != n.checked_mul(4) {
                return Err(FormatError::Corrupt("vector section size does not match count × dims".into()));
            }
            Some((v.0, s.0))
        } else {
            None
        };
        let terms = StrList::parse(&bytes, need(SectionKind::Terms)?, "lexical terms")?;
        let postings = need(SectionKind::Postings)?;
        let post_table = terms.count.checked_add(1).and_then(|c| c.checked_mul(4)).filter(|&t| t <= postings.1).ok_or(FormatError::Truncated("postings"))?;
        let blob_len = postings.1 - post_table;
        let mut prev = 0;
        for i in 0..=terms.count {
            let o = rd_u32(&bytes, postings.0 + i * 4) as usize;
            if o < prev || o > blob_len {
                return Err(FormatError::Corrupt("postings offsets".into()));
            }
            prev = o;
        }
        let (doclens, dl_len) = need(SectionKind::DocLens)?;
        if Some(dl_len) != n.checked_mul(2) {
            return Err(FormatError::Corrupt("doc lengths do not match the chunk count".into()));
        }
        let total_len: u64 = (0..n).map(|i| u16::from_le_bytes([bytes[doclens + 2 * i], bytes[doclens + 2 * i + 1]]) as u64).sum();
        let avgdl = if n > 0 { (total_len as f32 / n as f32).max(1.0) } else { 1.0 };
        Ok(Index { header, sections, n, dims, chunks, strings, text, vectors, terms, postings, doclens, avgdl, checksum, bytes })
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

    /// Borrowed view of chunk `i`; an out-of-range `i` gives an empty view.
    pub fn chunk_ref(&self, i: usize) -> ChunkRef<'_> {
        if i >= self.n {
            return ChunkRef { url: "", anchor: "", title: "", breadcrumb_raw: "", namespace: "", text: "", tokens: 0, hash: 0 };
        }
        let b = &self.bytes;
        let r = self.chunks + i * CHUNK_RECORD;
        let s = |f: usize| self.strings.get(b, rd_u32(b, r + f * 4) as usize);
        let off = self.text.0 + rd_u32(b, r + 20) as usize;
        let len = rd_u32(b, r + 24) as usize;
        ChunkRef {
            url: s(0),
            anchor: s(1),
            title: s(2),
            breadcrumb_raw: s(3),
            namespace: s(4),
            text: b.get(off..off + len).and_then(|t| std::str::from_utf8(t).ok()).unwrap_or(""),
            tokens: rd_u32(b, r + 28),
            hash: rd_u64(b, r + 32),
        }
    }

    /// Chunk `i` (owned copy).
    pub fn chunk(&self, i: usize) -> Chunk {
        self.chunk_ref(i).to_chunk()
    }

    /// Namespace of chunk `i` without building the rest of the view.
    pub(crate) fn namespace_of(&self, i: usize) -> &str {
        let r = self.chunks + i * CHUNK_RECORD;
        self.strings.get(&self.bytes, rd_u32(&self.bytes, r + 16) as usize)
    }

    /// Url of chunk `i` without building the rest of the view.
    pub(crate) fn url_of(&self, i: usize) -> &str {
        let r = self.chunks + i * CHUNK_RECORD;
        self.strings.get(&self.bytes, rd_u32(&self.bytes, r) as usize)
    }

    /// Quantised vector and scale of chunk `i`.
    pub fn quantized(&self, i: usize) -> Option<(&[i8], f32)> {
        let (v, s) = self.vectors?;
        if i >= self.n {
            return None;
        }
        let raw = &self.bytes[v + i * self.dims..v + (i + 1) * self.dims];
        // SAFETY: i8 and u8 have identical size and alignment; every bit pattern is valid for both.
        let q = unsafe { std::slice::from_raw_parts(raw.as_ptr() as *const i8, raw.len()) };
        let sb = &self.bytes[s + i * 4..s + i * 4 + 4];
        Some((q, f32::from_le_bytes([sb[0], sb[1], sb[2], sb[3]])))
    }

    /// All quantised vectors back to back (`len() × dims()`), for the scan loop.
    pub(crate) fn all_vectors(&self) -> Option<&[i8]> {
        let (v, _) = self.vectors?;
        let raw = &self.bytes[v..v + self.n * self.dims];
        // SAFETY: as in `quantized`.
        Some(unsafe { std::slice::from_raw_parts(raw.as_ptr() as *const i8, raw.len()) })
    }

    pub(crate) fn scale(&self, i: usize) -> f32 {
        match self.vectors {
            Some((_, s)) => {
                let at = s + i * 4;
                f32::from_bits(rd_u32(&self.bytes, at))
            }
            None => 0.0,
        }
    }

    /// Dequantised vector of chunk `i` (for incremental re-indexing), None for lexical-only indexes.
    pub fn vector(&self, i: usize) -> Option<Vec<f32>> {
        let (q, scale) = self.quantized(i)?;
        Some(q.iter().map(|&x| x as f32 * scale).collect())
    }

    /// The file's xxh3-64 checksum (also a cache key).
    pub fn checksum(&self) -> u64 {
        self.checksum
    }

    /// Lexical index: term `i`.
    pub(crate) fn term(&self, i: usize) -> &str {
        self.terms.get(&self.bytes, i)
    }

    /// Binary search the vocabulary.
    pub(crate) fn find_term(&self, t: &str) -> Option<usize> {
        let (mut lo, mut hi) = (0usize, self.terms.count);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.term(mid).cmp(t) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// Decode the postings of term `i` into `out` as (doc, tf). Corrupt varints end the list
    /// early instead of panicking; doc ids outside the index are skipped.
    pub(crate) fn postings(&self, term: usize, out: &mut Vec<(u32, u32)>) {
        out.clear();
        if term >= self.terms.count {
            return;
        }
        let table = self.postings.0;
        let blob = table + (self.terms.count + 1) * 4;
        let a = blob + rd_u32(&self.bytes, table + term * 4) as usize;
        let b = blob + rd_u32(&self.bytes, table + (term + 1) * 4) as usize;
        let data = match self.bytes.get(a..b) {
            Some(d) => d,
            None => return,
        };
        let mut pos = 0;
        let mut doc = 0u32;
        while pos < data.len() {
            let (Some(delta), Some(tf)) = (read_varint(data, &mut pos), read_varint(data, &mut pos)) else { return };
            doc = match doc.checked_add(delta) {
                Some(d) => d,
                None => return,
            };
            if (doc as usize) < self.n {
                out.push((doc, tf));
            }
        }
    }

    /// Lexical length (tokens) of chunk `i`; `i` must be < len().
    pub(crate) fn doc_len(&self, i: usize) -> f32 {
        let at = self.doclens + 2 * i;
        u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]]) as f32
    }

    pub(crate) fn avgdl(&self) -> f32 {
        self.avgdl
    }

    /// Size of each section in bytes, for `docent inspect`, in file order.
    pub fn section_sizes(&self) -> Vec<(SectionKind, usize)> {
        let mut v: Vec<_> = self.sections.iter().map(|&(k, o, l)| (k, o, l)).collect();
        v.sort_by_key(|&(_, o, _)| o);
        v.into_iter().map(|(k, _, l)| (k, l)).collect()
    }
}

fn read_varint(data: &[u8], pos: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    let mut shift = 0;
    loop {
        let byte = *data.get(*pos)?;
        *pos += 1;
        if shift >= 32 {
            return None;
        }
        v |= ((byte & 0x7f) as u32) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
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
            breadcrumb: if anchor.is_empty() { vec!["Title".into()] } else { vec!["Title".into(), anchor.into()] },
            namespace: String::new(),
            text: text.into(),
            tokens: text.len() as u32 / 4,
            hash: 0,
        };
        c.hash = c.compute_hash();
        c
    }

    #[test]
    fn varints_round_trip_at_the_edges() {
        for v in [0u32, 1, 127, 128, 16383, 16384, u32::MAX] {
            let mut out = Vec::new();
            push_varint(&mut out, v);
            let mut pos = 0;
            assert_eq!(read_varint(&out, &mut pos), Some(v));
            assert_eq!(pos, out.len());
        }
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
        let chunks = vec![chunk("a.html", "x", "hello world"), chunk("b.html", "", "héllo ünïcode 所有権")];
        let vecs = vec![vec![1.0, 0.0, 0.0], vec![0.0, 0.6, 0.8]];
        let bytes = write_index(&IndexHeader { provider: "local".into(), ..Default::default() }, &chunks, Some(&vecs)).unwrap();
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

//! Shard files: the byte layout of one shard (writer and reader side by side, as in
//! [`crate::format`]).
//!
//! ```text
//! 0   8  magic          b"DOCENTSH"
//! 8   4  version        u32 = 3
//! 12  4  kind           u32: 1 = postings, 2 = text, 3 = vectors (one cluster's, see
//!                       [`super::vectors`])
//! 16  4  body length    u32
//! 20  4  salt           u32: 0, unless another shard of the kind in the same index had the
//!                       same name; the writer then counts up until the name is free
//! 24  …  body
//! -8  8  checksum       xxh3-64 of every byte before it
//! ```
//!
//! A shard's **name hash** is the low 32 bits of its checksum: its name (`index-p-<8 hex>.bin`)
//! and its entry in the index's manifest. Four bytes a shard in the entry instead of eight
//! (BENCHMARKS.md §4.5); a stale shard of another build would have to match those 32 bits and
//! its own 64-bit checksum to be taken, one chance in four billion.
//!
//! Postings body: term count (varint), then per term, sorted by its bytes: byte length
//! (varint), the term (UTF-8), document frequency (varint), the documents as varint gaps from
//! the previous one (the first from 0), then each document's term frequency (varint).
//!
//! Text body: what a reader shows of the chunks of a run of whole pages (the entry keeps only
//! what ranking needs, see [`super::outline`]). Strings are a varint byte length and UTF-8.
//!
//! ```text
//! varint page count P, then per page: its title
//! varint section count S, then per section: varint page (< P), its anchor, varint label
//!        count, the breadcrumb labels (outermost first)
//! varint chunk count C (the manifest's: up to the next text shard's first chunk), then per
//!        chunk: varint section (< S), varint token count, varint text byte length
//! the chunk texts, UTF-8, back to back (exactly the lengths above)
//! ```

use crate::format::FormatError;

/// The 8 bytes every shard starts with.
pub const SHARD_MAGIC: &[u8; 8] = b"DOCENTSH";
/// The shard layout version this code writes and reads.
pub const SHARD_VERSION: u32 = 3;
const SHARD_HEADER: usize = 24;

/// What a shard holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShardKind {
    /// BM25 postings of the terms that hash to it.
    Postings = 1,
    /// Chunk texts of a run of pages.
    Text = 2,
    /// One cluster's vectors ([`super::vectors`]).
    Vectors = 3,
}

impl ShardKind {
    /// The letter in shard file names.
    pub fn letter(self) -> char {
        match self {
            ShardKind::Postings => 'p',
            ShardKind::Text => 't',
            ShardKind::Vectors => 'v',
        }
    }
}

pub(crate) fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A cursor over a shard body; every read is bounds-checked.
pub(crate) struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Reader { b, at: 0 }
    }
    pub(crate) fn varint(&mut self) -> Result<u64, FormatError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.b.get(self.at).ok_or(FormatError::Truncated("shard"))?;
            self.at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(v);
            }
        }
        Err(FormatError::Corrupt("shard: a number is too long".into()))
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        let end = end.ok_or(FormatError::Truncated("shard"))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    pub(crate) fn done(&self) -> bool {
        self.at == self.b.len()
    }
    /// A varint that must be below `limit`.
    pub(crate) fn below(&mut self, limit: usize) -> Result<usize, FormatError> {
        let v = self.varint()?;
        if v >= limit as u64 {
            return Err(FormatError::Corrupt("shard: a number is out of range".into()));
        }
        Ok(v as usize)
    }
    /// A count or a length: every item takes at least a byte, so at most the input's length.
    pub(crate) fn count(&mut self) -> Result<usize, FormatError> {
        self.below(self.b.len() + 1)
    }
    /// A length-prefixed UTF-8 string.
    pub(crate) fn str(&mut self) -> Result<&'a str, FormatError> {
        let len = self.count()?;
        std::str::from_utf8(self.bytes(len)?)
            .map_err(|_| FormatError::Corrupt("shard: a string is not UTF-8".into()))
    }
    /// A count, then that many strings.
    pub(crate) fn strs(&mut self) -> Result<Vec<Box<str>>, FormatError> {
        let mut v = Vec::new();
        for _ in 0..self.count()? {
            v.push(self.str()?.into());
        }
        Ok(v)
    }
}

pub(crate) fn push_str(out: &mut Vec<u8>, s: &str) {
    push_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// The name hash of a shard file's checksum: its low 32 bits.
pub fn name_hash(checksum: u64) -> u32 {
    checksum as u32
}

/// Wrap a body into a shard file with `salt` (0 unless its name is taken); returns the file
/// and its checksum (its name hash is [`name_hash`] of it).
pub fn encode(kind: ShardKind, body: &[u8], salt: u32) -> (Vec<u8>, u64) {
    let mut out = Vec::with_capacity(SHARD_HEADER + body.len() + 8);
    out.extend_from_slice(SHARD_MAGIC);
    for v in [SHARD_VERSION, kind as u32, body.len() as u32, salt] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(body);
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    (out, sum)
}

/// The message for a shard that is not the one the index names: stale caches and half-done
/// deploys end here, and the reader must never answer from it.
pub fn mismatch(name: &str) -> FormatError {
    // The widget's reader can reload; a command-line reader has the files at hand.
    let fix = if cfg!(target_arch = "wasm32") {
        ""
    } else {
        " (on this machine: rebuild it with `docent index`)"
    };
    FormatError::Corrupt(format!(
        "shard {name} does not match the index (the site was re-indexed while it loaded, or a cache holds an old copy); reload the page, or redeploy the whole index folder{fix}"
    ))
}

/// Check a shard file against what the index expects (its kind and name hash) and return its
/// body.
pub fn decode<'a>(
    bytes: &'a [u8],
    kind: ShardKind,
    hash: u32,
    name: &str,
) -> Result<&'a [u8], FormatError> {
    if bytes.len() < SHARD_HEADER + 8 || &bytes[..8] != SHARD_MAGIC {
        return Err(mismatch(name));
    }
    let body_end = bytes.len() - 8;
    let stored = u64::from_le_bytes(bytes[body_end..].try_into().unwrap_or([0; 8]));
    if name_hash(stored) != hash || xxhash_rust::xxh3::xxh3_64(&bytes[..body_end]) != stored {
        return Err(mismatch(name));
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    if word(8) != SHARD_VERSION {
        return Err(FormatError::NewerVersion { found: word(8), supported: SHARD_VERSION });
    }
    if word(12) != kind as u32 || word(16) as usize != body_end - SHARD_HEADER {
        return Err(mismatch(name));
    }
    Ok(&bytes[SHARD_HEADER..body_end])
}

/// One chunk of a text shard, as the writer gives it.
#[derive(Debug, Clone, Copy)]
pub struct ShardChunk<'a> {
    /// Its page's number in the index (chunks of one page share it).
    pub page: u32,
    /// Its section's number in the index (chunks of one section share it).
    pub section: u32,
    /// Its page's title.
    pub title: &'a str,
    /// Its section's anchor.
    pub anchor: &'a str,
    pub tokens: u32,
    pub text: &'a str,
}

/// Encode a text body: `chunks` (one text shard's, in order), with `crumbs(i)` the
/// breadcrumb of `chunks[i]`'s section.
pub fn text_body<'a>(chunks: &[ShardChunk<'a>], crumbs: impl Fn(usize) -> Vec<&'a str>) -> Vec<u8> {
    let (mut pages, mut page_bytes) = (Vec::new(), Vec::new());
    let (mut sections, mut section_bytes) = (Vec::new(), Vec::new());
    let mut records = Vec::new();
    push_varint(&mut records, chunks.len() as u64);
    for (i, c) in chunks.iter().enumerate() {
        let page = pages.iter().position(|&p| p == c.page).unwrap_or_else(|| {
            pages.push(c.page);
            push_str(&mut page_bytes, c.title);
            pages.len() - 1
        });
        let section = sections.iter().rposition(|&s| s == c.section).unwrap_or_else(|| {
            sections.push(c.section);
            push_varint(&mut section_bytes, page as u64);
            push_str(&mut section_bytes, c.anchor);
            let labels = crumbs(i);
            push_varint(&mut section_bytes, labels.len() as u64);
            for l in labels {
                push_str(&mut section_bytes, l);
            }
            sections.len() - 1
        });
        push_varint(&mut records, section as u64);
        push_varint(&mut records, u64::from(c.tokens));
        push_varint(&mut records, c.text.len() as u64);
    }
    let mut out = Vec::new();
    push_varint(&mut out, pages.len() as u64);
    out.extend_from_slice(&page_bytes);
    push_varint(&mut out, sections.len() as u64);
    out.extend_from_slice(&section_bytes);
    out.extend_from_slice(&records);
    for c in chunks {
        out.extend_from_slice(c.text.as_bytes());
    }
    out
}

/// A section of a text shard: its page (in the shard), anchor and breadcrumb labels.
#[derive(Debug, Clone)]
pub struct ShardSection {
    /// Its page among the shard's pages.
    pub page: u32,
    pub anchor: Box<str>,
    /// The breadcrumb labels, outermost first.
    pub labels: Vec<Box<str>>,
}

/// A decoded text shard.
#[derive(Debug, Clone)]
pub struct TextShard {
    pub(crate) titles: Vec<Box<str>>,
    pub(crate) sections: Vec<ShardSection>,
    /// Per chunk: (section in the shard, token count, end of its text in `text`).
    pub(crate) chunks: Vec<(u32, u32, usize)>,
    pub(crate) text: Box<str>,
}

impl TextShard {
    /// (section, page title, token count, text) of the shard's chunk `j` (validated at
    /// parse), None past its last chunk.
    pub fn chunk(&self, j: usize) -> Option<(&ShardSection, &str, u32, &str)> {
        let &(s, tokens, end) = self.chunks.get(j)?;
        let start = if j == 0 { 0 } else { self.chunks[j - 1].2 };
        let sec = self.sections.get(s as usize)?;
        let title = self.titles.get(sec.page as usize)?;
        Some((sec, title, tokens, self.text.get(start..end)?))
    }
}

/// Decode a text body that must hold `count` chunks. Anything malformed is corruption.
pub fn parse_texts(body: &[u8], count: usize) -> Result<TextShard, FormatError> {
    // One message: a shard that passed its checksum and is malformed comes from a broken writer.
    let bad = || FormatError::Corrupt("a text shard does not match the index".into());
    let mut r = Reader::new(body);
    let titles = r.strs()?;
    let mut sections = Vec::new();
    for _ in 0..r.count()? {
        let page = r.below(titles.len())? as u32;
        let anchor = r.str()?.into();
        sections.push(ShardSection { page, anchor, labels: r.strs()? });
    }
    if r.varint()? != count as u64 {
        return Err(bad());
    }
    let mut chunks = Vec::with_capacity(count.min(body.len()));
    let mut end = 0usize;
    for _ in 0..count {
        let s = r.below(sections.len())? as u32;
        let tokens = r.below(u32::MAX as usize)? as u32;
        end = end.saturating_add(r.count()?);
        chunks.push((s, tokens, end));
    }
    let text = std::str::from_utf8(r.bytes(body.len() - r.at)?).map_err(|_| bad())?;
    // Lengths never go back, so boundaries ascend; the last must be the end.
    if end != text.len() || !chunks.iter().all(|c| text.is_char_boundary(c.2)) {
        return Err(bad());
    }
    Ok(TextShard { titles, sections, chunks, text: text.into() })
}

/// One term's postings, borrowed from the writer's lexical index.
pub type TermPostings<'a> = (&'a str, &'a [u32], &'a [u16]);

/// Encode the postings of some terms (any order; sorted here).
pub fn postings_body(terms: &mut [TermPostings<'_>]) -> Vec<u8> {
    terms.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::new();
    push_varint(&mut out, terms.len() as u64);
    for (term, docs, tfs) in terms.iter() {
        push_varint(&mut out, term.len() as u64);
        out.extend_from_slice(term.as_bytes());
        push_varint(&mut out, docs.len() as u64);
        let mut prev = 0u32;
        for &d in docs.iter() {
            push_varint(&mut out, u64::from(d - prev));
            prev = d;
        }
        for &f in tfs.iter() {
            push_varint(&mut out, u64::from(f));
        }
    }
    out
}

/// Owned postings of one term: (term, documents ascending, term frequencies).
pub type OwnedPostings = (Box<str>, Vec<u32>, Vec<u16>);

/// Decode a postings body. `n` is the index's chunk count and `belongs` says whether a term
/// hashes to this shard; anything else is corruption.
pub fn parse_postings(
    body: &[u8],
    n: u32,
    belongs: impl Fn(&str) -> bool,
) -> Result<Vec<OwnedPostings>, FormatError> {
    // The widget says only that the shard does not match: each detail is bytes it would ship.
    let bad = |m: &str| {
        FormatError::Corrupt(if cfg!(target_arch = "wasm32") {
            "a postings shard does not match the index".into()
        } else {
            format!("postings shard: {m}")
        })
    };
    let mut r = Reader::new(body);
    let count = r.varint()?;
    let mut out = Vec::new();
    let mut prev_term: Option<&str> = None;
    for _ in 0..count {
        let len = r.varint()? as usize;
        let term = std::str::from_utf8(r.bytes(len)?).map_err(|_| bad("a term is not UTF-8"))?;
        if prev_term.is_some_and(|p| p >= term) || !belongs(term) {
            return Err(bad("terms out of order or in the wrong shard"));
        }
        prev_term = Some(term);
        let df = r.varint()?;
        if df > u64::from(n) {
            return Err(bad("a term is in more documents than the index has"));
        }
        let mut docs = Vec::with_capacity(df as usize);
        let mut d = 0u64;
        for i in 0..df {
            let gap = r.varint()?;
            if i > 0 && gap == 0 {
                return Err(bad("documents out of order"));
            }
            d = d
                .checked_add(gap)
                .filter(|&d| d < u64::from(n))
                .ok_or_else(|| bad("a document past the end"))?;
            docs.push(d as u32);
        }
        let mut tfs = Vec::with_capacity(df as usize);
        for _ in 0..df {
            let f = r.varint()?;
            if f == 0 || f > u64::from(u16::MAX) {
                return Err(bad("a term frequency is out of range"));
            }
            tfs.push(f as u16);
        }
        out.push((term.into(), docs, tfs));
    }
    if !r.done() {
        return Err(bad("trailing bytes"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postings_round_trip_and_checksums_guard_the_body() {
        let d1: Vec<u32> = vec![0, 5, 300];
        let f1: Vec<u16> = vec![1, 2, 65535];
        let d2: Vec<u32> = vec![7];
        let f2: Vec<u16> = vec![3];
        let mut terms = vec![("zeta", &d1[..], &f1[..]), ("alpha", &d2[..], &f2[..])];
        let body = postings_body(&mut terms);
        let (file, sum) = encode(ShardKind::Postings, &body, 0);
        let sum = name_hash(sum);
        let got = decode(&file, ShardKind::Postings, sum, "p").unwrap();
        let p = parse_postings(got, 301, |_| true).unwrap();
        assert_eq!(&*p[0].0, "alpha");
        assert_eq!((p[1].1.clone(), p[1].2.clone()), (d1.clone(), f1.clone()));
        // Wrong kind, wrong checksum, a flipped byte, a short file: all refused.
        assert!(decode(&file, ShardKind::Text, sum, "p").is_err());
        assert!(decode(&file, ShardKind::Postings, sum ^ 1, "p").is_err());
        let mut flipped = file.clone();
        flipped[30] ^= 1;
        assert!(decode(&flipped, ShardKind::Postings, sum, "p").is_err());
        assert!(decode(&file[..10], ShardKind::Postings, sum, "p").is_err());
        // A document past the index's end, or a term in the wrong shard, is corruption.
        assert!(parse_postings(got, 300, |_| true).is_err());
        assert!(parse_postings(got, 301, |t| t != "zeta").is_err());
        let e = decode(&file, ShardKind::Postings, sum ^ 1, "index-p-1.bin").unwrap_err();
        assert!(e.to_string().contains("reload the page"), "{e}");
    }

    fn text_sample() -> Vec<u8> {
        let c = |page, section, anchor, text| ShardChunk {
            page,
            section,
            title: if page == 4 { "Four" } else { "Five" },
            anchor,
            tokens: 7,
            text,
        };
        let chunks =
            [c(4, 10, "a", "héllo "), c(4, 10, "a", "wörld"), c(5, 11, "", ""), c(4, 10, "a", "!")];
        text_body(&chunks, |j| if j == 2 { vec![] } else { vec!["Four", "A"] })
    }

    #[test]
    fn a_text_body_round_trips_and_refuses_what_does_not_fit() {
        let body = text_sample();
        let t = parse_texts(&body, 4).unwrap();
        let (sec, title, tokens, text) = t.chunk(1).unwrap();
        assert_eq!((&*sec.anchor, title, tokens, text), ("a", "Four", 7, "wörld"));
        assert_eq!(sec.labels.iter().map(|l| &**l).collect::<Vec<_>>(), ["Four", "A"]);
        let (sec, title, _, text) = t.chunk(2).unwrap();
        assert_eq!((sec.labels.len(), title, text), (0, "Five", ""));
        assert_eq!(t.chunk(3).unwrap().3, "!");
        assert_eq!(t.sections.len(), 2, "the section that comes back is stored once");
        assert!(t.chunk(4).is_none());
        // Other chunk count, a cut, a trailing byte, a length that splits a character.
        assert!(parse_texts(&body, 3).is_err());
        assert!(parse_texts(&body[..body.len() - 1], 4).is_err());
        let mut longer = body.clone();
        longer.push(b'x');
        assert!(parse_texts(&longer, 4).is_err());
        // The first chunk's text length (7, then 3 bytes per record), and the second's: 2 and
        // 11 keep the sum but end the first text inside "é".
        let at = body.len() - "héllo wörld!".len() - 10;
        assert_eq!((body[at], body[at + 3]), (7, 6));
        let mut split_char = body.clone();
        (split_char[at], split_char[at + 3]) = (2, 11);
        assert!(parse_texts(&split_char, 4).is_err());
    }

    #[test]
    fn garbage_text_bodies_are_refused_without_a_panic() {
        let body = text_sample();
        for i in 0..body.len() {
            for x in [0x00, 0x01, 0x7f, 0x80, 0xc3, 0xff] {
                let mut b = body.clone();
                b[i] = x;
                if let Ok(t) = parse_texts(&b, 4) {
                    (0..5).for_each(|j| {
                        let _ = t.chunk(j);
                    });
                }
            }
        }
        for junk in [&[][..], &[0xff; 40][..], &[1, 0x80, 0x80][..], &[0, 0, 1, 0, 0, 0][..]] {
            assert!(parse_texts(junk, 1).is_err());
        }
    }

    #[test]
    fn garbage_never_panics() {
        for b in [&[][..], &[0xff; 40][..], &[0x80, 0x80, 0x80][..], &[5, 1, b'a'][..]] {
            let _ = parse_postings(b, 10, |_| true);
        }
    }
}

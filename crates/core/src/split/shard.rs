//! Shard files: the byte layout of one shard (writer and reader side by side, as in
//! [`crate::format`]).
//!
//! ```text
//! 0   8  magic          b"DOCENTSH"
//! 8   4  version        u32 = 1
//! 12  4  kind           u32: 1 = postings, 2 = text
//! 16  8  body length    u64
//! 24  …  body
//! -8  8  checksum       xxh3-64 of every byte before it (also the shard's name and its entry
//!                       in the index's manifest)
//! ```
//!
//! Postings body: term count (varint), then per term, sorted by its bytes: byte length
//! (varint), the term (UTF-8), document frequency (varint), the documents as varint gaps from
//! the previous one (the first from 0), then each document's term frequency (varint).
//!
//! Text body: the chunk texts of a run of whole pages, UTF-8, back to back. Where each chunk
//! starts and ends is in the entry's chunk records.

use crate::format::FormatError;

/// The 8 bytes every shard starts with.
pub const SHARD_MAGIC: &[u8; 8] = b"DOCENTSH";
/// The shard layout version this code writes and reads.
pub const SHARD_VERSION: u32 = 1;
const SHARD_HEADER: usize = 24;

/// What a shard holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShardKind {
    /// BM25 postings of the terms that hash to it.
    Postings = 1,
    /// Chunk texts of a run of pages.
    Text = 2,
}

impl ShardKind {
    /// The letter in shard file names.
    pub fn letter(self) -> char {
        match self {
            ShardKind::Postings => 'p',
            ShardKind::Text => 't',
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
}

/// Wrap a body into a shard file; returns the file and its checksum.
pub fn encode(kind: ShardKind, body: &[u8]) -> (Vec<u8>, u64) {
    let mut out = Vec::with_capacity(SHARD_HEADER + body.len() + 8);
    out.extend_from_slice(SHARD_MAGIC);
    out.extend_from_slice(&SHARD_VERSION.to_le_bytes());
    out.extend_from_slice(&(kind as u32).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    (out, sum)
}

/// The message for a shard that is not the one the index names: stale caches and half-done
/// deploys end here, and the reader must never answer from it.
pub fn mismatch(name: &str) -> FormatError {
    FormatError::Corrupt(format!(
        "shard {name} does not match the index (the site was re-indexed while it loaded, or a cache holds an old copy); reload the page, or redeploy the whole index folder"
    ))
}

/// Check a shard file against what the index expects and return its body.
pub fn decode<'a>(
    bytes: &'a [u8],
    kind: ShardKind,
    checksum: u64,
    name: &str,
) -> Result<&'a [u8], FormatError> {
    if bytes.len() < SHARD_HEADER + 8 || &bytes[..8] != SHARD_MAGIC {
        return Err(mismatch(name));
    }
    let body_end = bytes.len() - 8;
    let stored = u64::from_le_bytes(bytes[body_end..].try_into().unwrap_or([0; 8]));
    if stored != checksum || xxhash_rust::xxh3::xxh3_64(&bytes[..body_end]) != checksum {
        return Err(mismatch(name));
    }
    let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    if word(8) != SHARD_VERSION {
        return Err(FormatError::NewerVersion { found: word(8), supported: SHARD_VERSION });
    }
    let len = u64::from_le_bytes(bytes[16..24].try_into().unwrap_or([0; 8]));
    if word(12) != kind as u32 || len != (body_end - SHARD_HEADER) as u64 {
        return Err(mismatch(name));
    }
    Ok(&bytes[SHARD_HEADER..body_end])
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
    let bad = |m: &str| FormatError::Corrupt(format!("postings shard: {m}"));
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
        let (file, sum) = encode(ShardKind::Postings, &body);
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

    #[test]
    fn garbage_never_panics() {
        for b in [&[][..], &[0xff; 40][..], &[0x80, 0x80, 0x80][..], &[5, 1, b'a'][..]] {
            let _ = parse_postings(b, 10, |_| true);
        }
    }
}

//! Split indexes, for big sites: the first answer without downloading the whole index.
//!
//! A one-file index carries every chunk's text, and the BM25 postings are derived from it at
//! load. For a manual of thousands of pages that is megabytes before the first answer. A split
//! index keeps what every question needs in the entry file and moves the rest into shards
//! fetched by need:
//!
//! - **the entry** (`index.bin`, format version 8, or 9 with vectors by cluster): only what
//!   ranking needs: the header, the vectors, every chunk's BM25 length (`DocLens`), the
//!   [`outline::Outline`] (every chunk's section and page, every page's url, namespace and
//!   kind) and the shard manifest (`Shards`);
//! - **postings shards**: the BM25 postings of the terms whose xxh3 hash falls in the shard
//!   (`hash % count`); a question fetches the shards of its own terms;
//! - **text shards**: the chunks of a run of whole pages as a reader shows them (texts, token
//!   counts, titles, anchors, breadcrumbs); fetched for the hits shown or sent to the model.
//!
//! Shard files are named by their content (`{stem}-p-{8 hex digits of xxh3}.bin`), so an
//! unchanged shard keeps its name and bytes across rebuilds and CDN caches stay warm; the entry
//! lists each shard's name hash, so a stale or half-deployed shard is refused with a message to
//! reload, never used.
//! Scores from the shards are identical to the one-file index's: the postings are the same
//! tokenizer's, and the length normalisation is global (see
//! [`crate::lexical::LexicalIndex::from_postings`]).
//!
//! The layouts: [`Manifest`] (the entry's `Shards` section) here, the `Outline` section in
//! [`outline`], shard files in [`shard`]; splitting a built index in [`write`].

pub mod outline;
pub mod shard;
pub mod vectors;
pub mod write;

use crate::format::{rd_u32, FormatError, Index};
use crate::lexical::LexicalIndex;
use outline::Outline;
pub use shard::ShardKind;
use shard::{push_varint, OwnedPostings, Reader, ShardSection, TextShard};
use std::sync::{Arc, Mutex, OnceLock};
use vectors::{Coarse, VectorShard};

/// The `Shards` section's own layout version.
pub const MANIFEST_VERSION: u32 = 2;
/// Longest file stem the manifest accepts.
pub const MAX_STEM: usize = 200;

/// Where an entry's shards are: a `Shards` section.
///
/// ```text
/// u32 layout version (2)
/// u32 postings shard count S (≥ 1)
/// u32 text shard count T (≥ 1 unless the index is empty)
/// u32 stem length L, then the stem (UTF-8, no '/' or '\'), zero-padded to 8 bytes
/// S × u32 postings shard name hashes ([`shard::name_hash`])
/// T × u32 text shard name hashes
/// T × varint: each text shard's first chunk, as the gap from the previous one's (the first
///     shard's is 0, every other gap ≥ 1)
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    /// File name stem shards are named after (`index` for `index.bin`).
    pub stem: String,
    /// Name hash of each postings shard.
    pub postings: Vec<u32>,
    /// (first chunk, name hash) of each text shard.
    pub texts: Vec<(u32, u32)>,
}

/// A shard file's name: `{stem}-{p|t|v}-{name hash as 8 hex digits}.bin`.
pub fn shard_name(stem: &str, kind: ShardKind, hash: u32) -> String {
    format!("{stem}-{}-{hash:08x}.bin", kind.letter())
}

/// The postings shard a (tokenized) term lives in.
pub fn postings_shard_of(term: &str, count: usize) -> usize {
    (xxhash_rust::xxh3::xxh3_64(term.as_bytes()) % count.max(1) as u64) as usize
}

/// The shard numbers in `ids` (each below `count`, the number of shards of their kind) in
/// ascending order, each once. A mark per shard instead of a sort and dedup: the widget's wasm
/// then carries no `usize` sort (and these lists are at most a few hundred shards).
fn ascending_once(ids: &[usize], count: usize) -> Vec<usize> {
    let mut marked = vec![false; count];
    for &k in ids {
        marked[k] = true;
    }
    (0..count).filter(|&k| marked[k]).collect()
}

impl Manifest {
    /// Encode as a `Shards` section.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for v in [MANIFEST_VERSION, self.postings.len() as u32, self.texts.len() as u32] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(self.stem.len() as u32).to_le_bytes());
        out.extend_from_slice(self.stem.as_bytes());
        out.resize((out.len() + 7) & !7, 0);
        let hashes = self.postings.iter().chain(self.texts.iter().map(|t| &t.1));
        hashes.for_each(|h| out.extend_from_slice(&h.to_le_bytes()));
        let mut prev = 0;
        for &(first, _) in &self.texts {
            push_varint(&mut out, u64::from(first - prev));
            prev = first;
        }
        out
    }

    /// Parse and validate a `Shards` section of an index of `n` chunks.
    pub fn parse(b: &[u8], n: usize) -> Result<Manifest, FormatError> {
        // The widget says only that the manifest is damaged, as for the shards.
        let bad = |m: &str| {
            FormatError::Corrupt(if cfg!(target_arch = "wasm32") {
                "the shard manifest does not match the index".into()
            } else {
                format!("shard manifest: {m}")
            })
        };
        let short = || FormatError::Truncated("shard manifest");
        if b.len() < 16 {
            return Err(short());
        }
        if rd_u32(b, 0) != MANIFEST_VERSION {
            return Err(bad("unknown layout version; upgrade docent"));
        }
        let (s, t, l) = (rd_u32(b, 4) as usize, rd_u32(b, 8) as usize, rd_u32(b, 12) as usize);
        if l == 0 || l > MAX_STEM || s == 0 || (t == 0) != (n == 0) || t > n.max(1) {
            return Err(bad("bad counts"));
        }
        let stem = std::str::from_utf8(b.get(16..16 + l).ok_or_else(short)?)
            .map_err(|_| bad("the stem is not UTF-8"))?;
        if stem.contains(['/', '\\']) || stem.starts_with('.') {
            return Err(bad("the stem must be a plain file name"));
        }
        let at = (16 + l + 7) & !7;
        let hashes =
            s.checked_add(t).and_then(|x| x.checked_mul(4)).and_then(|x| x.checked_add(at));
        let Some(end) = hashes.filter(|&e| e <= b.len()) else { return Err(short()) };
        let postings = (0..s).map(|i| rd_u32(b, at + 4 * i)).collect();
        let mut r = Reader::new(&b[end..]);
        let mut texts: Vec<(u32, u32)> = Vec::with_capacity(t);
        for i in 0..t {
            let gap = r.varint()?;
            // A gap past u64 (a damaged or hostile manifest) must not wrap into a small chunk.
            let first = texts
                .last()
                .map_or(0, |t| u64::from(t.0))
                .checked_add(gap)
                .ok_or_else(|| bad("text shards out of order"))?;
            // The first shard starts at chunk 0, every other after the one before, below n.
            if (gap == 0) != texts.is_empty() || first >= n as u64 {
                return Err(bad("text shards out of order"));
            }
            texts.push((first as u32, rd_u32(b, at + 4 * (s + i))));
        }
        if !r.done() {
            return Err(bad("trailing bytes"));
        }
        Ok(Manifest { stem: stem.to_string(), postings, texts })
    }

    /// The text shard holding chunk `i`.
    pub fn text_shard_of(&self, i: usize) -> usize {
        self.texts.partition_point(|&(first, _)| first as usize <= i).saturating_sub(1)
    }
}

/// One shard an index needs: what to fetch and how to check it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardRef {
    /// What it holds.
    pub kind: ShardKind,
    /// Its number among the shards of its kind.
    pub id: u32,
    /// Its file name, next to the entry file.
    pub name: String,
    /// Its name hash (in its name; the low 32 bits of its checksum).
    pub hash: u32,
}

/// A split entry's manifest and the shards attached so far. Attaching goes through `&Index`
/// (each shard slot is set once), so a shared index (`Rc`/`Arc`) can fetch shards by need.
pub(crate) struct SplitState {
    manifest: Manifest,
    doclens: Vec<u16>,
    pub(crate) outline: Outline,
    /// Per text shard: its chunks, once attached.
    texts: Vec<OnceLock<TextShard>>,
    /// Per postings shard: its terms, once attached.
    postings: Vec<OnceLock<Vec<OwnedPostings>>>,
    /// The BM25 index over the postings attached so far, and how many shards that was.
    lexical: Mutex<Option<(usize, Arc<LexicalIndex>)>>,
    /// Vectors by cluster (format version 9): the coarse quantiser and, per cluster, its
    /// vectors once attached.
    pub(crate) clusters: Option<(Coarse, Vec<OnceLock<VectorShard>>)>,
}

/// The manifest and how many shards are attached (the rest is bulk; and the widget's size
/// counts every derived formatter it ships).
impl std::fmt::Debug for SplitState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let postings = self.postings.iter().filter(|s| s.get().is_some()).count();
        let texts = self.texts.iter().filter(|s| s.get().is_some()).count();
        let attached = |v: &Vec<OnceLock<_>>| v.iter().filter(|s| s.get().is_some()).count();
        let clusters = self.clusters.as_ref().map(|c| (c.1.len(), attached(&c.1)));
        f.debug_struct("SplitState")
            .field("manifest", &self.manifest)
            .field("postings_attached", &postings)
            .field("texts_attached", &texts)
            .field("clusters_attached", &clusters)
            .finish_non_exhaustive()
    }
}

impl Clone for SplitState {
    fn clone(&self) -> Self {
        SplitState {
            manifest: self.manifest.clone(),
            doclens: self.doclens.clone(),
            outline: self.outline.clone(),
            texts: self.texts.clone(),
            postings: self.postings.clone(),
            lexical: Mutex::new(None),
            clusters: self.clusters.clone(),
        }
    }
}

impl SplitState {
    pub(crate) fn new(
        manifest: Manifest,
        doclens: Vec<u16>,
        outline: Outline,
        coarse: Option<Coarse>,
    ) -> SplitState {
        SplitState {
            clusters: coarse.map(|c| {
                let slots = (0..c.hashes.len()).map(|_| OnceLock::new()).collect();
                (c, slots)
            }),
            texts: (0..manifest.texts.len()).map(|_| OnceLock::new()).collect(),
            postings: (0..manifest.postings.len()).map(|_| OnceLock::new()).collect(),
            manifest,
            doclens,
            outline,
            lexical: Mutex::new(None),
        }
    }

    /// Chunks `first..last` of text shard `k`.
    fn text_range(&self, k: usize) -> (usize, usize) {
        let t = &self.manifest.texts;
        let first = t.get(k).map_or(0, |t| t.0 as usize);
        (first, t.get(k + 1).map_or(self.outline.chunk_section.len(), |t| t.0 as usize))
    }

    /// Chunk `i`'s section, page title, token count and text, once its shard is attached.
    pub(crate) fn shard_chunk(&self, i: usize) -> Option<(&ShardSection, &str, u32, &str)> {
        let k = self.manifest.text_shard_of(i);
        self.texts.get(k)?.get()?.chunk(i - self.text_range(k).0)
    }

    /// Chunk `i`'s url and namespace (from the entry: no shard needed).
    pub(crate) fn url_and_namespace(&self, i: usize) -> (&str, &str) {
        let o = &self.outline;
        o.page_of(i).map_or(("", ""), |p| (&p.url, &o.namespaces[p.namespace as usize]))
    }

    /// Whether chunk `i`'s page is release notes (decided when the index was split).
    pub(crate) fn release_notes(&self, i: usize) -> bool {
        self.outline.page_of(i).is_some_and(|p| p.release_notes)
    }

    /// The BM25 index over the postings attached so far (rebuilt when more arrived).
    pub(crate) fn lexical(&self) -> Arc<LexicalIndex> {
        let attached = self.postings.iter().filter(|p| p.get().is_some()).count();
        let mut cache = self.lexical.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((n, lx)) = cache.as_ref() {
            if *n == attached {
                return lx.clone();
            }
        }
        let lx = Arc::new(LexicalIndex::from_postings(
            self.doclens.clone(),
            self.postings
                .iter()
                .filter_map(OnceLock::get)
                .flatten()
                .map(|(t, d, f)| (&**t, d.as_slice(), f.as_slice())),
        ));
        *cache = Some((attached, lx.clone()));
        lx
    }

    /// The name hash the entry gives shard `id` of `kind`, if it has one.
    fn hash(&self, kind: ShardKind, id: usize) -> Option<u32> {
        match kind {
            ShardKind::Postings => self.manifest.postings.get(id).copied(),
            ShardKind::Text => self.manifest.texts.get(id).map(|t| t.1),
            ShardKind::Vectors => self.clusters.as_ref()?.0.hashes.get(id).copied(),
        }
    }

    /// The vector shards attached so far, by cluster.
    pub(crate) fn vector_shards(&self) -> Option<(&Coarse, &[OnceLock<VectorShard>])> {
        self.clusters.as_ref().map(|(c, s)| (c, s.as_slice()))
    }

    fn shard_ref(&self, kind: ShardKind, id: usize) -> ShardRef {
        let hash = self.hash(kind, id).unwrap_or(0);
        ShardRef { kind, id: id as u32, name: shard_name(&self.manifest.stem, kind, hash), hash }
    }
}

impl Index {
    /// True for the entry file of a split index (its texts and postings are in shards).
    pub fn is_split(&self) -> bool {
        self.split.is_some()
    }

    /// The coarse quantiser of a split index with vectors by cluster (format version 9).
    pub fn clusters(&self) -> Option<&Coarse> {
        self.split.as_ref()?.vector_shards().map(|(c, _)| c)
    }

    /// The manifest of a split index's entry.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.split.as_ref().map(|s| &s.manifest)
    }

    /// The postings shards a search for these texts (the question, and the history turns the
    /// search weighs) needs and that are not attached yet. Empty for a one-file index.
    pub fn shards_for_query(&self, texts: &[&str]) -> Vec<ShardRef> {
        let Some(sp) = &self.split else { return Vec::new() };
        let count = sp.postings.len();
        let ids: Vec<usize> = texts
            .iter()
            .flat_map(|t| crate::lexical::tokenize(t))
            .map(|term| postings_shard_of(&term, count))
            .filter(|&k| sp.postings[k].get().is_none())
            .collect();
        let ids = ascending_once(&ids, count);
        ids.into_iter().map(|k| sp.shard_ref(ShardKind::Postings, k)).collect()
    }

    /// The text shards holding these chunks that are not attached yet. Empty for a one-file
    /// index.
    pub fn shards_for_chunks(&self, chunks: &[usize]) -> Vec<ShardRef> {
        let Some(sp) = &self.split else { return Vec::new() };
        let ids: Vec<usize> = chunks
            .iter()
            .filter(|&&i| i < self.len())
            .map(|&i| sp.manifest.text_shard_of(i))
            .filter(|&k| sp.texts[k].get().is_none())
            .collect();
        let ids = ascending_once(&ids, sp.texts.len());
        ids.into_iter().map(|k| sp.shard_ref(ShardKind::Text, k)).collect()
    }

    /// The vector shards a search with this question vector (and history vector, weighed
    /// `history_weight`, as [`crate::search::SearchOptions`] does) scores with `nprobe`: its
    /// nearest clusters', those not attached yet. Empty unless the index has vectors by
    /// cluster (format version 9).
    pub fn shards_for_vector(
        &self,
        query: &[f32],
        history: Option<&[f32]>,
        history_weight: f32,
        nprobe: usize,
    ) -> Vec<ShardRef> {
        let Some(sp) = &self.split else { return Vec::new() };
        let Some((coarse, shards)) = sp.vector_shards() else { return Vec::new() };
        let Some((_, qq, _)) = self.query_levels(query, history, history_weight) else {
            return Vec::new();
        };
        let mut ids = coarse.probed(&qq, self.dims(), nprobe);
        ids.retain(|&k| shards[k].get().is_none());
        // `probed` names each cluster once.
        let ids = ascending_once(&ids, shards.len());
        ids.into_iter().map(|k| sp.shard_ref(ShardKind::Vectors, k)).collect()
    }

    /// Every shard not attached yet (to load a split index whole, as the CLI does).
    pub fn missing_shards(&self) -> Vec<ShardRef> {
        let Some(sp) = &self.split else { return Vec::new() };
        let p = (0..sp.postings.len()).filter(|&k| sp.postings[k].get().is_none());
        let t = (0..sp.texts.len()).filter(|&k| sp.texts[k].get().is_none());
        let v = sp.clusters.iter().flat_map(|(_, s)| {
            (0..s.len()).filter(|&k| s[k].get().is_none()).map(|k| (ShardKind::Vectors, k))
        });
        p.map(|k| (ShardKind::Postings, k))
            .chain(t.map(|k| (ShardKind::Text, k)))
            .chain(v)
            .map(|(kind, k)| sp.shard_ref(kind, k))
            .collect()
    }

    /// Attach a fetched shard. Its checksum, kind and contents are checked against the entry;
    /// a shard from another build is refused with a message to reload (never used).
    pub fn attach(&self, shard: &ShardRef, bytes: &[u8]) -> Result<(), FormatError> {
        let n = self.len();
        let Some(sp) = self.split.as_deref() else {
            return Err(FormatError::Invalid("this index is not split; it has no shards".into()));
        };
        let id = shard.id as usize;
        if sp.hash(shard.kind, id) != Some(shard.hash) {
            return Err(shard::mismatch(&shard.name));
        }
        let body = shard::decode(bytes, shard.kind, shard.hash, &shard.name)?;
        match shard.kind {
            ShardKind::Postings => {
                let count = sp.postings.len();
                let terms =
                    shard::parse_postings(body, n as u32, |t| postings_shard_of(t, count) == id)?;
                // Set once: a second copy of the same shard (checked above) changes nothing.
                let _ = sp.postings[id].set(terms);
            }
            ShardKind::Text => {
                let (first, last) = sp.text_range(id);
                let texts = shard::parse_texts(body, last - first)?;
                let _ = sp.texts[id].set(texts);
            }
            ShardKind::Vectors => {
                // Checked above: the entry has clusters and this one.
                let Some((coarse, slots)) = &sp.clusters else { return Ok(()) };
                let count = coarse.counts[id] as usize;
                let q = self.header.quantization;
                let v = vectors::parse_vectors(body, n, count, self.dims(), q, self.center())?;
                let _ = slots[id].set(v);
            }
        }
        Ok(())
    }

    /// Attach every missing shard, read through `read` (by file name). For native readers
    /// that have the whole folder: the CLI, the proxy, MCP.
    pub fn attach_all<E: std::fmt::Display>(
        &self,
        mut read: impl FnMut(&str) -> Result<Vec<u8>, E>,
    ) -> Result<(), String> {
        for s in self.missing_shards() {
            let bytes = read(&s.name).map_err(|e| {
                format!("this index is split into shards and {} cannot be read ({e}); keep the shard files next to the index file (copy the whole folder `docent index` wrote)", s.name)
            })?;
            self.attach(&s, &bytes).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[cfg(not(target_arch = "wasm32"))]
/// Read an index file, and when it is a split entry, every shard next to it.
pub fn read_path(path: &std::path::Path) -> Result<Index, String> {
    let bytes = std::fs::read(path).map_err(|e| {
        format!("cannot read index {} ({e}); build one with `docent index`", path.display())
    })?;
    let index = Index::from_bytes(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let dir = path.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    index.attach_all(|name| std::fs::read(dir.join(name)))?;
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_numbers_come_ascending_and_once_as_a_sort_and_dedup_gave_them() {
        let ids = [5, 0, 5, 3, 9, 3, 0];
        let mut sorted = ids.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(ascending_once(&ids, 10), sorted);
        assert_eq!(ascending_once(&[], 4), Vec::<usize>::new());
        assert_eq!(ascending_once(&[], 0), Vec::<usize>::new());
    }

    #[test]
    fn a_manifest_round_trips_and_refuses_what_does_not_fit() {
        let m = Manifest {
            stem: "index".into(),
            postings: vec![7, u32::MAX],
            texts: vec![(0, 1), (3, 2), (300, 3)],
        };
        let b = m.encode();
        assert_eq!(Manifest::parse(&b, 301).unwrap(), m);
        assert_eq!(m.text_shard_of(299), 1);
        // Too few chunks for the last shard, a cut, a trailing byte: refused.
        assert!(Manifest::parse(&b, 300).is_err());
        assert!(Manifest::parse(&b[..b.len() - 1], 301).is_err());
        let mut longer = b.clone();
        longer.push(1);
        assert!(Manifest::parse(&longer, 301).is_err());
        // A gap past u64 after the first shard (found by the fuzzer: an overflow panic in a
        // debug build, a wrap to a small chunk in a release one): refused.
        let mut huge = Manifest { texts: vec![(0, 1), (3, 2), (4, 3)], ..m.clone() }.encode();
        huge.truncate(huge.len() - 1); // the last gap, 1: u64::MAX instead
        huge.extend([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]);
        assert!(Manifest::parse(&huge, u32::MAX as usize).is_err());
        // A second shard starting where the first does (a gap of 0) is out of order.
        let mut same = m.clone();
        same.texts[1].0 = 0;
        assert!(Manifest::parse(&same.encode(), 301).is_err());
        for i in 0..b.len() {
            for x in [0x00, 0x7f, 0x80, 0xff] {
                let mut c = b.clone();
                c[i] = x;
                let _ = Manifest::parse(&c, 301);
            }
        }
    }
}

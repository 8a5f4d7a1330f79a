//! Splitting a built one-file index into an entry and shards.

use super::outline::{Outline, OutlinePage};
use super::shard::{self, ShardChunk, ShardKind, TermPostings};
use super::vectors::{self, Coarse};
use super::{postings_shard_of, shard_name, Manifest, MAX_STEM};
use crate::format::{
    assemble, FormatError, Index, SectionKind, FORMAT_VERSION, SPLIT_FORMAT_VERSION,
};

/// How big shards get.
#[derive(Debug, Clone, Copy)]
pub struct SplitOptions {
    /// Aim for postings shards of about this many bytes (before compression).
    pub postings_bytes: usize,
    /// Aim for text shards of about this many bytes; a shard holds whole pages, so one long
    /// page makes a bigger shard.
    pub text_bytes: usize,
    /// Vectors by cluster (format version 9): a coarse quantiser in the entry, each cluster's
    /// vectors in a vector shard. Off: the vectors stay in the entry (version 8).
    pub vector_clusters: bool,
    /// Bits per centroid component in the entry (8, 4 or 1). 4 by default: on the pg and git
    /// eval sets (MiniLM vectors) 4-bit centres probe exactly the clusters int8 ones do, at half
    /// the bytes; 1-bit ones lost a question (BENCHMARKS.md §4.5).
    pub centroid_bits: u32,
    /// Clusters over this many quarters of the mean size are split again (k-means within
    /// them), so no question fetches a few giant clusters; 0 never splits.
    pub cluster_cap: usize,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions {
            postings_bytes: 16 * 1024,
            text_bytes: 16 * 1024,
            vector_clusters: true,
            centroid_bits: 4,
            cluster_cap: 8,
        }
    }
}

/// A split index: the entry file and the shards to write next to it.
#[derive(Debug, Clone)]
pub struct SplitIndex {
    /// The entry file's bytes (format version 8 or 9).
    pub entry: Vec<u8>,
    /// (file name, bytes) of every shard.
    pub shards: Vec<(String, Vec<u8>)>,
}

/// The shard names taken so far, by kind and name hash, with the full checksum of the shard
/// that took each: two shards with different contents never share a name (the second gets a
/// salt), and identical shards are one file.
#[derive(Default)]
struct Names(std::collections::HashMap<(ShardKind, u32), u64>);

impl Names {
    /// Encode `body` as a shard of `kind`, push it onto `shards` under a name no other content
    /// has, and return its name hash.
    fn push(
        &mut self,
        stem: &str,
        kind: ShardKind,
        body: &[u8],
        shards: &mut Vec<(String, Vec<u8>)>,
    ) -> u32 {
        let mut salt = 0u32;
        loop {
            let (file, sum) = shard::encode(kind, body, salt);
            let hash = shard::name_hash(sum);
            match self.0.get(&(kind, hash)) {
                Some(&taken) if taken != sum => salt = salt.wrapping_add(1),
                Some(_) => return hash,
                None => {
                    self.0.insert((kind, hash), sum);
                    shards.push((shard_name(stem, kind, hash), file));
                    return hash;
                }
            }
        }
    }
}

/// The `DocLens` section: every chunk's BM25 length as two byte planes, the low bytes of all
/// then the high bytes (they compress better than interleaved `u16`s: most high bytes are 0).
pub(crate) fn doclens_encode(lens: &[u16]) -> Vec<u8> {
    let (lo, hi): (Vec<u8>, Vec<u8>) = lens.iter().map(|l| (*l as u8, (l >> 8) as u8)).unzip();
    [lo, hi].concat()
}

/// Split `index` (a one-file index) into an entry and shards named after `stem` (the entry
/// file's name without `.bin`). The entry keeps what ranking needs (the vectors, the BM25
/// lengths, the outline); the BM25 postings the widget would derive from the texts go into
/// postings shards, the texts with their titles, anchors and breadcrumbs into text shards.
pub fn split_index(
    index: &Index,
    stem: &str,
    opts: SplitOptions,
) -> Result<SplitIndex, FormatError> {
    if index.is_split() {
        return Err(FormatError::Invalid("the index is already split".into()));
    }
    if stem.is_empty()
        || stem.len() > MAX_STEM
        || stem.contains(['/', '\\'])
        || stem.starts_with('.')
    {
        return Err(FormatError::Invalid(format!(
            "cannot name shards after {stem:?}: use a plain file name such as index.bin"
        )));
    }
    let n = index.len();
    let lx = index.lexical();
    let mut shards = Vec::new();

    // Postings, grouped by their term's hash.
    let mut terms: Vec<TermPostings<'_>> = lx
        .terms()
        .map(|(t, id)| {
            let (d, f) = lx.postings(id);
            (t, d, f)
        })
        .collect();
    let estimate: usize = terms.iter().map(|(t, d, _)| t.len() + 3 + 3 * d.len()).sum();
    let count = estimate.div_ceil(opts.postings_bytes.max(1)).clamp(1, 65_536);
    let mut groups: Vec<Vec<TermPostings<'_>>> = vec![Vec::new(); count];
    for t in terms.drain(..) {
        groups[postings_shard_of(t.0, count)].push(t);
    }
    let mut names = Names::default();
    let mut postings = Vec::with_capacity(count);
    for mut g in groups {
        let body = shard::postings_body(&mut g);
        postings.push(names.push(stem, ShardKind::Postings, &body, &mut shards));
    }

    // Texts, in runs of whole pages, with what a reader shows of each chunk.
    let mut texts = Vec::new();
    let mut push_texts = |first: usize, last: usize, shards: &mut Vec<(String, Vec<u8>)>| {
        let chunks: Vec<ShardChunk<'_>> = (first..last)
            .map(|i| {
                let c = index.chunk_ref(i);
                ShardChunk {
                    page: index.page_of(i),
                    section: index.section_of(i),
                    title: c.title,
                    anchor: c.anchor,
                    tokens: c.tokens,
                    text: c.text,
                }
            })
            .collect();
        let body = shard::text_body(&chunks, |j| index.chunk_ref(first + j).breadcrumb());
        texts.push((first as u32, names.push(stem, ShardKind::Text, &body, shards)));
    };
    let (mut first, mut bytes) = (0usize, 0usize);
    for i in 0..n {
        let new_page = i > 0 && index.page_of(i) != index.page_of(i - 1);
        if new_page && bytes >= opts.text_bytes {
            push_texts(first, i, &mut shards);
            (first, bytes) = (i, 0);
        }
        bytes += index.chunk_ref(i).text.len();
    }
    if n > 0 {
        push_texts(first, n, &mut shards);
    }

    // The outline: what ranking needs of every chunk and page.
    let mut outline = Outline::default();
    let mut kinds = crate::pagekind::PageKinds::new();
    for i in 0..n {
        let (page, section) = (index.page_of(i) as usize, index.section_of(i) as usize);
        if outline.pages.len() <= page {
            let blank = OutlinePage { url: "".into(), namespace: 0, release_notes: false };
            outline.pages.resize(page + 1, blank);
            let c = index.chunk_ref(i);
            let ns = match outline.namespaces.iter().position(|s| **s == *c.namespace) {
                Some(k) => k,
                None => {
                    outline.namespaces.push(c.namespace.into());
                    outline.namespaces.len() - 1
                }
            };
            outline.pages[page] = OutlinePage {
                url: c.url.into(),
                namespace: ns as u32,
                release_notes: kinds.release_notes(index, i),
            };
        }
        if outline.section_page.len() <= section {
            outline.section_page.resize(section + 1, 0);
        }
        outline.section_page[section] = page as u32;
        outline.chunk_section.push(section as u32);
    }
    if outline.namespaces.is_empty() && !outline.pages.is_empty() {
        outline.namespaces.push("".into());
    }

    // The entry: the header and the vectors of the one-file index (or their clusters), the
    // manifest, the chunk lengths and the outline.
    let manifest = Manifest { stem: stem.to_string(), postings, texts };
    let raw = index.as_bytes();
    let coarse = if opts.vector_clusters && index.dims() > 0 && n > 0 {
        Some(cluster_vectors(index, stem, opts, &mut names, &mut shards)?)
    } else {
        None
    };
    let mut sections: Vec<(SectionKind, Vec<u8>)> = index
        .section_ranges()
        .into_iter()
        .filter(|(k, _, _)| match k {
            SectionKind::Vectors | SectionKind::Scales => coarse.is_none(),
            k => *k == SectionKind::Center,
        })
        .map(|(k, at, len)| (k, raw[at..at + len].to_vec()))
        .collect();
    if let Some(c) = &coarse {
        sections.push((SectionKind::Clusters, c.encode(index.dims())));
    }
    sections.push((SectionKind::Shards, manifest.encode()));
    sections.push((SectionKind::DocLens, doclens_encode(lx.doc_lens())));
    sections.push((SectionKind::Outline, outline.encode()));
    shards.sort();
    shards.dedup_by(|a, b| a.0 == b.0);
    let version = if coarse.is_some() { FORMAT_VERSION } else { SPLIT_FORMAT_VERSION };
    Ok(SplitIndex { entry: assemble(version, index.header(), &sections)?, shards })
}

/// Cluster the vectors of `index` (k-means over their stored levels), push a vector shard per
/// cluster onto `shards` and return the coarse quantiser.
fn cluster_vectors(
    index: &Index,
    stem: &str,
    opts: SplitOptions,
    names: &mut Names,
    shards: &mut Vec<(String, Vec<u8>)>,
) -> Result<Coarse, FormatError> {
    let bits = opts.centroid_bits;
    if ![8, 4, 1].contains(&bits) {
        return Err(FormatError::Invalid(format!("centroids take 8, 4 or 1 bits, not {bits}")));
    }
    let (n, dims) = (index.len(), index.dims());
    let levels = index.all_vectors().unwrap_or_default();
    let scales = index.all_scales();
    // Vectors stored relative to a mean vector are clustered as the vectors they stand for
    // (mean + residual), the space the question's vector is probed in: clustered on their
    // residuals, Material for MkDocs' int4 e5 index found the right section in the top five
    // for 0.725 of its questions at 16 probes, 0.875 with every cluster scored.
    let whole: Vec<i8>;
    let levels = match index.center() {
        Some(center) if dims > 0 => {
            whole = whole_levels(index, center);
            &whole[..]
        }
        _ => levels,
    };
    let (assign, centroids) =
        vectors::balanced_kmeans(levels, dims, vectors::cluster_count(n), opts.cluster_cap, 10);
    let per = index.header().quantization.vector_bytes(dims);
    let (vat, _) = index
        .section_ranges()
        .into_iter()
        .find(|s| s.0 == SectionKind::Vectors)
        .map(|s| (s.1, s.2))
        .unwrap_or_default();
    let raw = index.as_bytes();
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); centroids.len() / dims.max(1)];
    for (i, &c) in assign.iter().enumerate() {
        members[c as usize].push(i as u32);
    }
    let mut coarse =
        Coarse { bits, hashes: vec![], counts: vec![], scales: vec![], levels: vec![] };
    let mut l = Vec::with_capacity(dims);
    for (chunks, centroid) in members.iter().zip(centroids.chunks_exact(dims)) {
        if chunks.is_empty() {
            continue;
        }
        let (mut s, mut packed) = (Vec::new(), Vec::new());
        for &i in chunks {
            let i = i as usize;
            let b = &scales[4 * i..4 * i + 4];
            s.push(f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
            packed.extend_from_slice(&raw[vat + i * per..vat + (i + 1) * per]);
        }
        let body = vectors::vectors_body(chunks, &s, &packed);
        coarse.hashes.push(names.push(stem, ShardKind::Vectors, &body, shards));
        coarse.counts.push(chunks.len() as u32);
        coarse.scales.push(crate::vector::quantize_levels(centroid, bits, &mut l));
        coarse.levels.extend_from_slice(&l);
    }
    Ok(coarse)
}

/// The int8 levels of `center + scale × levels` for every stored vector of `index`.
fn whole_levels(index: &Index, center: &[f32]) -> Vec<i8> {
    let dims = center.len();
    let mut out = Vec::with_capacity(index.len() * dims);
    let (mut v, mut q) = (vec![0f32; dims], Vec::with_capacity(dims));
    for (levels, scale) in (0..index.len()).filter_map(|i| index.quantized(i)) {
        for ((x, &c), &l) in v.iter_mut().zip(center).zip(levels) {
            *x = c + scale * f32::from(l);
        }
        crate::vector::quantize(&v, &mut q);
        out.extend_from_slice(&q);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two different shards whose name hashes collide get two names (the second a salt), and
    /// both read back; the same shard twice is one file.
    #[test]
    fn shards_with_colliding_names_are_told_apart() {
        // Find two bodies with the same 32-bit name hash (a birthday search: ~80k tries).
        let mut seen = std::collections::HashMap::new();
        let (a, b) = (0u32..)
            .find_map(|i| {
                let body = i.to_le_bytes().to_vec();
                let h = shard::name_hash(shard::encode(ShardKind::Text, &body, 0).1);
                seen.insert(h, body.clone()).map(|other| (other, body))
            })
            .unwrap();
        let (mut names, mut shards) = (Names::default(), Vec::new());
        let ha = names.push("index", ShardKind::Text, &a, &mut shards);
        let hb = names.push("index", ShardKind::Text, &b, &mut shards);
        assert_ne!(ha, hb, "the second shard must get another name");
        assert_eq!(names.push("index", ShardKind::Text, &a, &mut shards), ha);
        assert_eq!(shards.len(), 2);
        for ((name, file), (hash, body)) in shards.iter().zip([(ha, &a), (hb, &b)]) {
            assert_eq!(*name, shard_name("index", ShardKind::Text, hash));
            assert_eq!(shard::decode(file, ShardKind::Text, hash, name).unwrap(), &body[..]);
        }
    }

    #[test]
    fn chunk_lengths_are_two_byte_planes() {
        assert_eq!(doclens_encode(&[1, 0x0203, 300]), [1, 3, 44, 0, 2, 1]);
    }
}

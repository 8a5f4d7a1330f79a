//! Splitting a built one-file index into an entry and shards.

use super::shard::{self, ShardKind, TermPostings};
use super::{postings_shard_of, shard_name, Manifest, MAX_STEM};
use crate::format::{assemble, FormatError, Index, SectionKind, FORMAT_VERSION};

/// How big shards get.
#[derive(Debug, Clone, Copy)]
pub struct SplitOptions {
    /// Aim for postings shards of about this many bytes (before compression).
    pub postings_bytes: usize,
    /// Aim for text shards of about this many bytes; a shard holds whole pages, so one long
    /// page makes a bigger shard.
    pub text_bytes: usize,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions { postings_bytes: 16 * 1024, text_bytes: 16 * 1024 }
    }
}

/// A split index: the entry file and the shards to write next to it.
#[derive(Debug, Clone)]
pub struct SplitIndex {
    /// The entry file's bytes (format version 5).
    pub entry: Vec<u8>,
    /// (file name, bytes) of every shard.
    pub shards: Vec<(String, Vec<u8>)>,
}

/// Split `index` (a one-file index) into an entry and shards named after `stem` (the entry
/// file's name without `.bin`). The entry keeps everything but the chunk texts; the BM25
/// postings the widget would derive from them go into postings shards.
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
    let mut postings = Vec::with_capacity(count);
    for mut g in groups {
        let (file, sum) = shard::encode(ShardKind::Postings, &shard::postings_body(&mut g));
        shards.push((shard_name(stem, ShardKind::Postings, sum), file));
        postings.push(sum);
    }

    // Texts, in runs of whole pages.
    let mut texts = Vec::new();
    let mut body: Vec<u8> = Vec::new();
    let mut first = 0usize;
    for i in 0..n {
        let new_page = i > 0 && index.page_of(i) != index.page_of(i - 1);
        if new_page && body.len() >= opts.text_bytes {
            let (file, sum) = shard::encode(ShardKind::Text, &body);
            shards.push((shard_name(stem, ShardKind::Text, sum), file));
            texts.push((first as u32, sum));
            body.clear();
            first = i;
        }
        body.extend_from_slice(index.chunk_ref(i).text.as_bytes());
    }
    if n > 0 {
        let (file, sum) = shard::encode(ShardKind::Text, &body);
        shards.push((shard_name(stem, ShardKind::Text, sum), file));
        texts.push((first as u32, sum));
    }

    // The entry: the one-file sections but the text, plus the manifest and the lengths.
    let manifest = Manifest { stem: stem.to_string(), postings, texts };
    let raw = index.as_bytes();
    let mut sections: Vec<(SectionKind, Vec<u8>)> = index
        .section_ranges()
        .into_iter()
        .filter(|(k, _, _)| *k != SectionKind::Text)
        .map(|(k, at, len)| (k, raw[at..at + len].to_vec()))
        .collect();
    sections.push((SectionKind::Shards, manifest.encode()));
    sections
        .push((SectionKind::DocLens, lx.doc_lens().iter().flat_map(|l| l.to_le_bytes()).collect()));
    shards.sort();
    shards.dedup_by(|a, b| a.0 == b.0);
    Ok(SplitIndex { entry: assemble(FORMAT_VERSION, index.header(), &sections)?, shards })
}

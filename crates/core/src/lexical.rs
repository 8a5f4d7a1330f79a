//! The lexical side: a tokenizer that understands code identifiers and CJK text, and BM25.
//!
//! Tokens are lowercased. A "compound" such as `foo::bar`, `CARGO_HOME`, `--locked`,
//! `build.target-dir`, `snake_case` or `[patch]` is kept whole AND split into its parts, so both
//! `cargo_home` and `home` find it. CJK text becomes unigrams plus bigrams. English stop words
//! are dropped (they carry no signal and would bloat the postings); the Snowball English
//! stemmer folds `closures` into `closur` like `closure`, and `tried` like `trying`. The same
//! function tokenizes documents and queries.

/// BM25 term-frequency saturation.
pub const BM25_K1: f32 = 1.2;
/// BM25 length normalisation.
pub const BM25_B: f32 = 0.75;

const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but",
    "by", "can", "could", "did", "do", "does", "doesn't", "doing", "don't", "explain", "for",
    "from", "had", "has", "have", "he", "her", "here", "his", "how", "i", "i'm", "if", "in",
    "into", "is", "isn't", "it", "it's", "its", "just", "know", "me", "my", "of", "on", "or",
    "our", "please", "she", "should", "so", "some", "tell", "than", "that", "the", "their", "them",
    "then", "there", "there's", "these", "they", "this", "those", "to", "too", "us", "use", "used",
    "using", "want", "was", "way", "we", "were", "what", "what's", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// A word of at most 8 bytes packed into a u64 (big-endian, zero padded): packed keys sort
/// like the words, and comparing them is one integer compare instead of a `memcmp`.
const fn pack(w: &[u8]) -> u64 {
    let mut k = 0u64;
    let mut i = 0;
    while i < 8 {
        k <<= 8;
        if i < w.len() {
            k |= w[i] as u64;
        }
        i += 1;
    }
    k
}

const STOP_KEYS: [u64; STOP_WORDS.len()] = {
    let mut keys = [0u64; STOP_WORDS.len()];
    let mut i = 0;
    while i < STOP_WORDS.len() {
        assert!(STOP_WORDS[i].len() <= 8, "stop words must fit 8 bytes");
        keys[i] = pack(STOP_WORDS[i].as_bytes());
        i += 1;
    }
    keys
};

/// True for a word that carries no retrieval signal.
#[inline]
pub fn is_stop_word(w: &str) -> bool {
    w.len() <= 8 && STOP_KEYS.binary_search(&pack(w.as_bytes())).is_ok()
}

#[inline(always)]
/// True for a bigram of CJK characters (as [`tokenize`] emits beside the unigrams). Unknown to
/// the docs, it is mostly a pair across a word boundary ("么让" of "怎么让"), not an unknown word.
pub(crate) fn is_cjk_bigram(term: &str) -> bool {
    let mut chars = term.chars();
    matches!((chars.next(), chars.next(), chars.next()), (Some(a), Some(b), None) if is_cjk(a) && is_cjk(b))
}

/// True for a figure: a number with a unit or magnitude ("50k", "512mb", "200ms": one to three
/// letters after the digits), or one too long to be a year or a version (five digits or more).
/// Unknown to the docs, it is the reader's own quantity, which docs state in other figures or in
/// words ("tens of thousands of pages" for "50k pages"), not an unknown subject. A year or a
/// version the docs never mention ("the Rust 2027 edition") is: it stays an unknown word.
pub(crate) fn is_figure(term: &str) -> bool {
    let b = term.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let unit = &b[digits..];
    digits > 0
        && match unit.len() {
            0 => digits >= 5,
            1..=3 => unit.iter().all(u8::is_ascii_lowercase),
            _ => false,
        }
}

fn is_cjk(c: char) -> bool {
    (c as u32) >= 0x3040
        && matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Ext A
        | 0x4E00..=0x9FFF // CJK Unified
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK compatibility
        | 0x20000..=0x2FA1F)
}

/// Characters that may join the parts of a code identifier: `foo::bar`, `a.b`, `x-y`, `a_b`.
#[inline(always)]
fn is_joiner(c: char) -> bool {
    matches!(c, '_' | ':' | '.' | '-' | '#' | '$' | '@' | '/')
}

#[inline(always)]
fn is_word_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    c.is_alphanumeric() && !is_cjk(c)
}

/// Stemming for plain English words, in place: the Snowball (Porter 2) English stemmer, so
/// `tried`, `tries` and `trying` all become `tri` and a question's inflection need not match the
/// docs'. Words with digits, capitals, non-ASCII letters or of three letters or less are left as
/// they are (identifiers, versions, short names).
fn stem_in_place(w: &mut String) {
    if w.len() <= 3 || !w.bytes().all(|b| b.is_ascii_lowercase()) {
        return;
    }
    thread_local! {
        static ENGLISH: pagefind_stem::Stemmer =
            pagefind_stem::Stemmer::create(pagefind_stem::Algorithm::English);
    }
    ENGLISH.with(|st| {
        if let std::borrow::Cow::Owned(stem) = st.stem(w) {
            *w = stem;
        }
    });
}

/// Lowercase `s` into `buf` (cleared first); ASCII takes a fast path.
fn lower_into(s: &str, buf: &mut String) {
    buf.clear();
    if s.is_ascii() {
        buf.push_str(s);
        buf.make_ascii_lowercase();
    } else {
        buf.extend(s.chars().flat_map(crate::case::lower));
    }
}

/// The character at byte `i` and its length, or None at the end.
#[inline(always)]
fn char_at(text: &str, i: usize) -> Option<(char, usize)> {
    let b = *text.as_bytes().get(i)?;
    if b < 0x80 {
        return Some((b as char, 1));
    }
    text.get(i..)?.chars().next().map(|c| (c, c.len_utf8()))
}

/// A plain word: lowercased, stop words and single letters dropped, plurals folded.
fn emit_word<F: FnMut(&str)>(w: &str, buf: &mut String, emit: &mut F) {
    if w.is_empty() {
        return;
    }
    lower_into(w, buf);
    if is_stop_word(buf) {
        return;
    }
    // Single letters are noise unless they are digits.
    let mut cs = buf.chars();
    if let (Some(c), None) = (cs.next(), cs.next()) {
        if !c.is_ascii_digit() {
            return;
        }
    }
    stem_in_place(buf);
    emit(buf);
}

/// The words of `text` written as code names, each as the tokenizer's whole token:
/// `expect.extend`, `CARGO_HOME`, `#[track_caller]` (joined parts), `--locked` (a flag),
/// `storeToRefs` (camelCase from a lower-case start; `TypeScript` or `GitHub` are names, not
/// code). Quotes, backticks, brackets and a trailing `()` around a word do not count.
pub(crate) fn code_names(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split_whitespace() {
        // Quotes, backticks and brackets off; `expect.extend()` is `expect.extend`.
        let w = w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'));
        let inner = w.trim_start_matches('-').as_bytes();
        let flag = w.starts_with("--") && inner.len() > 1;
        let camel = inner.first().is_some_and(u8::is_ascii_lowercase)
            && inner.windows(2).any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase());
        let joined = inner.windows(3).any(|p| {
            p[0].is_ascii_alphanumeric()
                && matches!(p[1], b'.' | b'_' | b':' | b'-' | b'/')
                && p[2].is_ascii_alphanumeric()
        });
        if flag || camel || joined {
            // `tokenize`, not a closure of our own: each closure is one more copy of the
            // tokenizer in the widget's wasm.
            if let Some(t) = tokenize(w).into_iter().next().filter(|t| !out.contains(t)) {
                out.push(t);
            }
        }
    }
    out
}

/// Tokenize text for BM25 (documents and queries alike).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_into(text, &mut out);
    out
}

/// Like [`tokenize`], appending to `out`.
pub fn tokenize_into(text: &str, out: &mut Vec<String>) {
    tokenize_with(text, |t| out.push(t.to_string()));
}

/// The tokenizer itself: calls `emit` once per token, in text order, without allocating per
/// token (the `&str` is only valid during the call). [`tokenize`] collects the same tokens.
pub fn tokenize_with<F: FnMut(&str)>(text: &str, mut emit: F) {
    let mut buf = String::new();
    let mut i = 0;
    while let Some((c, clen)) = char_at(text, i) {
        let start = i;
        if is_cjk(c) {
            // Unigrams and bigrams of the run.
            let mut prev: Option<usize> = None;
            let mut j = i;
            while let Some((_, lj)) = char_at(text, j).filter(|x| is_cjk(x.0)) {
                if let Some(p) = prev {
                    emit(&text[p..j]);
                    emit(&text[p..j + lj]);
                }
                prev = Some(j);
                j += lj;
            }
            if let Some(p) = prev {
                emit(&text[p..j]);
            }
            i = j;
            continue;
        }
        // A compound: optional leading `--`, then word chars joined by joiners.
        let dashes = if c == '-' && text.as_bytes().get(i + 1) == Some(&b'-') { 2 } else { 0 };
        let word_begin = i + dashes;
        if char_at(text, word_begin).is_some_and(|(w, _)| is_word_char(w)) {
            let mut j = word_begin;
            let mut has_joiner = false;
            while let Some((cj, lj)) = char_at(text, j) {
                if is_word_char(cj) {
                    j += lj;
                } else if is_joiner(cj) {
                    // A joiner counts only when more word chars follow (at most two joiners, `::`).
                    let mut k = j;
                    let mut joiners = 0;
                    while let Some((_, lk)) = char_at(text, k).filter(|x| is_joiner(x.0)) {
                        k += lk;
                        joiners += 1;
                    }
                    if joiners <= 2 && char_at(text, k).is_some_and(|(w, _)| is_word_char(w)) {
                        has_joiner = true;
                        j = k;
                    } else {
                        break;
                    }
                } else {
                    break;
                }
            }
            let end = j;
            let inner = &text[word_begin..end];
            if has_joiner || dashes > 0 {
                lower_into(&text[start..end], &mut buf);
                emit(&buf);
                for part in inner.split(is_joiner) {
                    emit_word(part, &mut buf, &mut emit);
                }
            } else {
                emit_word(inner, &mut buf, &mut emit);
            }
            // `[patch]`-style table headers: also keep the bracketed form.
            if start > 0
                && text.as_bytes()[start - 1] == b'['
                && text.as_bytes().get(end) == Some(&b']')
            {
                lower_into(inner, &mut buf);
                buf.insert(0, '[');
                buf.push(']');
                emit(&buf);
            }
            i = j;
            continue;
        }
        i += clen;
    }
}

/// BM25 idf with the usual +1 so it stays positive.
pub fn idf(n_docs: u32, df: u32) -> f32 {
    let n = n_docs as f32;
    let df = df as f32;
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// BM25 contribution of one term occurrence count `tf` in a document of length `dl`.
pub fn bm25_term(idf: f32, tf: f32, dl: f32, avgdl: f32) -> f32 {
    let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl.max(1.0));
    idf * tf * (BM25_K1 + 1.0) / (tf + norm)
}

/// FxHash (the rustc hasher): fast for short keys such as terms; HashDoS is not a concern for
/// an index the site owner built.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(K);
        }
    }
    #[inline]
    fn write_u8(&mut self, b: u8) {
        self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FxBuild = std::hash::BuildHasherDefault<FxHasher>;

/// A BM25 inverted index, built in memory from the chunk texts when an index is loaded.
///
/// The index file stores no postings: they are derived from the text it already carries, which
/// keeps the download small (postings compress far worse than text) and means an improved
/// tokenizer needs no re-index. Postings are doc-ordered, one flat array per field (CSR).
#[derive(Debug, Clone, Default)]
pub struct LexicalIndex {
    terms: std::collections::HashMap<Box<str>, u32, FxBuild>,
    /// Term `t`'s postings are `docs[offsets[t]..offsets[t+1]]` (and the same range of `tfs`).
    offsets: Vec<u32>,
    docs: Vec<u32>,
    tfs: Vec<u16>,
    doclens: Vec<u16>,
    /// Per document, BM25's length normalisation `k1 · (1 − b + b · dl / avgdl)`, computed once
    /// at build so scoring a posting costs one division.
    norms: Vec<f32>,
    avgdl: f32,
}

impl LexicalIndex {
    /// Build from documents, each given as its text parts (e.g. breadcrumb and body).
    pub fn build<'a, D, P>(docs: D) -> LexicalIndex
    where
        D: IntoIterator<Item = P>,
        P: IntoIterator<Item = &'a str>,
    {
        let mut terms: std::collections::HashMap<Box<str>, u32, FxBuild> = Default::default();
        let mut pairs: Vec<(u32, u32, u16)> = Vec::new();
        // Per term: the documents it occurs in, and its count in the current document.
        let mut counts: Vec<u32> = Vec::new();
        let mut tf: Vec<u32> = Vec::new();
        // The terms of the current document, in order of first occurrence.
        let mut seen: Vec<u32> = Vec::new();
        let mut doclens = Vec::new();
        for (doc, parts) in docs.into_iter().enumerate() {
            let mut len = 0usize;
            for part in parts {
                tokenize_with(part, |t| {
                    let id = match terms.get(t) {
                        Some(&id) => id,
                        None => {
                            let id = terms.len() as u32;
                            terms.insert(t.into(), id);
                            counts.push(0);
                            tf.push(0);
                            id
                        }
                    };
                    if tf[id as usize] == 0 {
                        seen.push(id);
                    }
                    tf[id as usize] += 1;
                    len += 1;
                });
            }
            doclens.push(len.min(u16::MAX as usize) as u16);
            for id in seen.drain(..) {
                let n = std::mem::take(&mut tf[id as usize]);
                pairs.push((id, doc as u32, n.min(u16::MAX as u32) as u16));
                counts[id as usize] += 1;
            }
        }
        // Counting sort by term; docs stay ascending within a term because they were visited in order.
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        let mut acc = 0u32;
        offsets.push(0);
        for c in &counts {
            acc += c;
            offsets.push(acc);
        }
        let mut cursor: Vec<u32> = offsets[..counts.len()].to_vec();
        let mut docs_out = vec![0u32; pairs.len()];
        let mut tfs = vec![0u16; pairs.len()];
        for (t, d, tf) in pairs {
            let at = cursor[t as usize] as usize;
            docs_out[at] = d;
            tfs[at] = tf;
            cursor[t as usize] += 1;
        }
        LexicalIndex::with_lengths(terms, offsets, docs_out, tfs, doclens)
    }

    /// Finish an index from its postings (CSR) and every document's length: the average length
    /// and each document's BM25 length normalisation, computed once here for both builders.
    fn with_lengths(
        terms: std::collections::HashMap<Box<str>, u32, FxBuild>,
        offsets: Vec<u32>,
        docs: Vec<u32>,
        tfs: Vec<u16>,
        doclens: Vec<u16>,
    ) -> LexicalIndex {
        let total: u64 = doclens.iter().map(|&l| l as u64).sum();
        let avgdl =
            if doclens.is_empty() { 1.0 } else { (total as f32 / doclens.len() as f32).max(1.0) };
        let norms = doclens
            .iter()
            .map(|&dl| BM25_K1 * (1.0 - BM25_B + BM25_B * dl as f32 / avgdl))
            .collect();
        LexicalIndex { terms, offsets, docs, tfs, doclens, norms, avgdl }
    }

    /// Build from stored postings (a split index's shards, [`crate::split`]): every document's
    /// length and, for the terms at hand, their postings (docs ascending, with term
    /// frequencies). Scores for those terms equal [`LexicalIndex::build`]'s over the same
    /// documents: the length normalisation is global, only the term list is partial. Postings
    /// naming a document past `doclens` are dropped.
    pub fn from_postings<'a, I>(doclens: Vec<u16>, postings: I) -> LexicalIndex
    where
        I: IntoIterator<Item = (&'a str, &'a [u32], &'a [u16])>,
    {
        let mut terms: std::collections::HashMap<Box<str>, u32, FxBuild> = Default::default();
        let (mut offsets, mut docs, mut tfs) = (vec![0u32], Vec::new(), Vec::new());
        let n = doclens.len() as u32;
        for (term, d, f) in postings {
            if terms.contains_key(term) {
                continue;
            }
            terms.insert(term.into(), terms.len() as u32);
            for (&doc, &tf) in d.iter().zip(f) {
                if doc < n {
                    docs.push(doc);
                    tfs.push(tf);
                }
            }
            offsets.push(docs.len() as u32);
        }
        LexicalIndex::with_lengths(terms, offsets, docs, tfs, doclens)
    }

    /// Every term with its id, in no particular order (to write the postings out).
    pub fn terms(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.terms.iter().map(|(t, &id)| (&**t, id))
    }

    /// Every document's length in tokens, in document order.
    pub fn doc_lens(&self) -> &[u16] {
        &self.doclens
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doclens.len()
    }
    /// True when no documents were indexed.
    pub fn is_empty(&self) -> bool {
        self.doclens.is_empty()
    }
    /// Number of distinct terms.
    pub fn term_count(&self) -> usize {
        self.terms.len()
    }
    /// Total number of postings (distinct term-document pairs).
    pub fn posting_count(&self) -> usize {
        self.docs.len()
    }
    /// The id of a (tokenized) term.
    pub fn term_id(&self, term: &str) -> Option<u32> {
        self.terms.get(term).copied()
    }
    /// The docs' term a mistyped question term most likely meant: one letter added, dropped,
    /// swapped with its neighbour or hit on a neighbouring key (two such edits for terms of 8+
    /// letters), never the first letter, for a term of 5+ ASCII letters (with digits and
    /// joiners: `--sahrd` finds `--shard`) the docs never use. The
    /// most common such term wins (then the smaller, so the answer does not depend on the map's
    /// order). None when nothing is near. Shorter words and letters far apart on the keyboard
    /// are left alone: "bread" is no typo of "break", nor "tire" of "time".
    ///
    /// Only the terms this index holds are candidates: a split index holds those of the
    /// question's shards, so a typo there finds nothing (as before).
    pub fn near_term(&self, term: &str) -> Option<u32> {
        let t = term.as_bytes();
        // plain words and the compounds the tokenizer keeps whole (`--shard`, `jest.fn`,
        // `cargo_home`): 5+ letters, nothing but ASCII letters, digits and joiners
        let letters = t.iter().filter(|b| b.is_ascii_lowercase()).count();
        let plain = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-._:/".contains(b);
        if letters < 5 || !t.iter().all(plain) {
            return None;
        }
        let max = if t.len() >= 8 { 2 } else { 1 };
        let mut best: Option<(usize, usize, &str, u32)> = None;
        let mut rows = EditRows::default();
        for (cand, &id) in &self.terms {
            let c = cand.as_bytes();
            if c.first() != t.first() || c.len().abs_diff(t.len()) > max {
                continue;
            }
            let Some(d) = edits_within(t, c, max, &mut rows) else { continue };
            let df = self.postings(id).0.len();
            let better = match best {
                None => true,
                Some((bd, bdf, bc, _)) => {
                    d < bd || (d == bd && (df > bdf || (df == bdf && &**cand < bc)))
                }
            };
            if better {
                best = Some((d, df, cand, id));
            }
        }
        best.map(|b| b.3)
    }

    /// The docs' name a shortened compound of the question stands for: `nuxt.config` for
    /// `nuxt.config.ts`, `vite.config` for `vite.config.js` (a flag's own dashes do not count). The
    /// docs' term must start with the whole question term followed by a joiner; the most common
    /// such term wins (then the smaller). None for a term without a joiner, or when no term
    /// extends it. Readers write the stem of a file or option name that the docs always spell
    /// out; the tokenizer keeps compounds whole, so without this the shorter form is a word the
    /// docs never use and counts against the question.
    pub fn longer_name(&self, term: &str) -> Option<u32> {
        let inner = term.trim_start_matches('-');
        if inner.chars().filter(|c| c.is_alphanumeric()).count() < 4 || !inner.contains(is_joiner) {
            return None;
        }
        let mut best: Option<(usize, &str, u32)> = None;
        for (cand, &id) in &self.terms {
            let Some(rest) = cand.strip_prefix(term) else { continue };
            if !rest.starts_with(is_joiner) {
                continue;
            }
            let df = self.postings(id).0.len();
            if best.is_none_or(|(bdf, bc, _)| df > bdf || (df == bdf && &**cand < bc)) {
                best = Some((df, cand, id));
            }
        }
        best.map(|b| b.2)
    }

    /// Documents containing term `t` (ascending) and the term's frequency in each.
    pub fn postings(&self, t: u32) -> (&[u32], &[u16]) {
        let t = t as usize;
        match (self.offsets.get(t), self.offsets.get(t + 1)) {
            (Some(&a), Some(&b)) => {
                (&self.docs[a as usize..b as usize], &self.tfs[a as usize..b as usize])
            }
            _ => (&[], &[]),
        }
    }
    /// Add `weight` × the BM25 contribution of term `t` to `scores[d]` of every document `d` that
    /// contains it (and that `allowed` lets through, when given). Equal to summing
    /// `weight * bm25_term(idf, tf, doc_len(d), avgdl())`, with the length normalisation
    /// precomputed per document. Returns the term's idf.
    pub fn add_scores(
        &self,
        t: u32,
        weight: f32,
        scores: &mut [f32],
        allowed: Option<&[bool]>,
    ) -> f32 {
        let (docs, tfs) = self.postings(t);
        let term_idf = idf(self.len() as u32, docs.len() as u32);
        let c = weight * term_idf * (BM25_K1 + 1.0);
        let n = scores.len().min(self.norms.len());
        // Index loops: the wasm is built at opt-level "z", which keeps iterator adapters as calls.
        let mut i = 0;
        while i < docs.len() {
            let d = docs[i] as usize;
            if d < n && allowed.is_none_or(|a| a.get(d).copied().unwrap_or(false)) {
                let tf = tfs[i] as f32;
                scores[d] += c * tf / (tf + self.norms[d]);
            }
            i += 1;
        }
        term_idf
    }
    /// Tokens in document `d` (0 when out of range).
    pub fn doc_len(&self, d: usize) -> f32 {
        self.doclens.get(d).copied().unwrap_or(0) as f32
    }
    /// Average document length (at least 1).
    pub fn avgdl(&self) -> f32 {
        self.avgdl
    }
}

/// The typing distance of `a` and `b` when it is at most `max`, else None: one for each letter
/// added, dropped, swapped with its neighbour or replaced by a key next to it on a QWERTY
/// keyboard; any other replacement counts two (a drop and an add). One row of the table per
/// byte: the words are short. `rows` is scratch space, reused across the candidates of one
/// lookup so the scan over every term allocates once, not three times per candidate.
fn edits_within(a: &[u8], b: &[u8], max: usize, rows: &mut EditRows) -> Option<usize> {
    let n = b.len();
    // rows i-2, i-1 and i of the (optimal string alignment) distance table
    let EditRows { two, one, row } = rows;
    two.clear();
    two.resize(n + 1, 0);
    one.clear();
    one.extend(0..=n);
    row.clear();
    row.resize(n + 1, 0);
    let mut i = 1;
    while i <= a.len() {
        row[0] = i;
        let mut least = i;
        let mut j = 1;
        while j <= n {
            let cost = match (a[i - 1], b[j - 1]) {
                (x, y) if x == y => 0,
                (x, y) if keys_touch(x, y) => 1,
                _ => 2,
            };
            let mut v = (one[j] + 1).min(row[j - 1] + 1).min(one[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(two[j - 2] + 1);
            }
            row[j] = v;
            least = least.min(v);
            j += 1;
        }
        if least > max {
            return None;
        }
        std::mem::swap(two, one);
        std::mem::swap(one, row);
        i += 1;
    }
    (one[n] <= max).then_some(one[n])
}

/// The three rows of [`edits_within`]'s distance table, kept between calls.
#[derive(Default)]
struct EditRows {
    two: Vec<usize>,
    one: Vec<usize>,
    row: Vec<usize>,
}

/// Whether two lowercase letters are neighbouring keys on a QWERTY keyboard (same row, or the
/// two keys below/above: `e` touches `w r s d`).
fn keys_touch(a: u8, b: u8) -> bool {
    a.is_ascii_lowercase()
        && b.is_ascii_lowercase()
        && NEIGHBOURS[(a - b'a') as usize] & (1 << (b - b'a')) != 0
}

/// Each letter's neighbouring keys, a bit per letter (`a` = bit 0), worked out once at compile
/// time instead of on every comparison of [`edits_within`]: the keys beside it in its row, and
/// the two it touches in the row below, which starts half a key to the right (`e`, column 2,
/// sits over `s` and `d`, columns 1 and 2).
const NEIGHBOURS: [u32; 26] = {
    const ROWS: [&[u8]; 3] = [b"qwertyuiop", b"asdfghjkl", b"zxcvbnm"];
    const fn link(t: &mut [u32; 26], a: u8, b: u8) {
        t[(a - b'a') as usize] |= 1 << (b - b'a');
        t[(b - b'a') as usize] |= 1 << (a - b'a');
    }
    let mut t = [0u32; 26];
    let mut r = 0;
    while r < ROWS.len() {
        let row = ROWS[r];
        let mut c = 0;
        while c < row.len() {
            if c + 1 < row.len() {
                link(&mut t, row[c], row[c + 1]);
            }
            if r + 1 < ROWS.len() {
                let below = ROWS[r + 1];
                if c < below.len() {
                    link(&mut t, row[c], below[c]);
                }
                if c >= 1 && c - 1 < below.len() {
                    link(&mut t, row[c], below[c - 1]);
                }
            }
            c += 1;
        }
        r += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbouring_keys_touch() {
        for (a, b) in [
            (b'e', b'w'),
            (b'e', b'r'),
            (b'e', b's'),
            (b'e', b'd'),
            (b's', b'z'),
            (b'm', b'n'),
            (b'o', b'i'),
        ] {
            assert!(keys_touch(a, b) && keys_touch(b, a), "{} {}", a as char, b as char);
        }
        for (a, b) in
            [(b'd', b'k'), (b'a', b't'), (b'r', b'm'), (b'q', b'p'), (b'e', b'x'), (b'e', b'e')]
        {
            assert!(!keys_touch(a, b), "{} {}", a as char, b as char);
        }
    }

    #[test]
    fn edits_count_inserts_deletes_changes_and_swaps() {
        let mut rows = EditRows::default();
        let mut d = |a: &str, b: &str| edits_within(a.as_bytes(), b.as_bytes(), 2, &mut rows);
        assert_eq!(d("serch", "search"), Some(1));
        assert_eq!(d("indx", "index"), Some(1));
        assert_eq!(d("teh", "the"), Some(1));
        assert_eq!(d("confgiuration", "configuration"), Some(1));
        assert_eq!(d("proxy", "proxy"), Some(0));
        assert_eq!(d("deploy", "delay"), None);
        assert_eq!(d("bread", "break"), Some(2));
        assert_eq!(d("porxy", "proxy"), Some(1));
        assert_eq!(d("proxu", "proxy"), Some(1));
        assert_eq!(d("kubernet", "cargo"), None);
        assert_eq!(edits_within(b"servre", b"serve", 1, &mut rows), Some(1));
        assert_eq!(edits_within(b"abcd", b"wxyz", 1, &mut rows), None);
    }

    #[test]
    fn a_mistyped_term_finds_the_most_common_near_one() {
        let lx = LexicalIndex::build([
            ["search the docs"],
            ["search results are ranked"],
            ["a seance is not a search"],
            ["the index file"],
        ]);
        let id = |t: &str| lx.term_id(t);
        assert_eq!(lx.near_term("serch"), id("search"));
        assert_eq!(lx.near_term("inedx"), id("index"));
        // the first letter is kept; short, non-ASCII and real-word-looking terms are left alone
        assert_eq!(lx.near_term("earch"), None);
        assert_eq!(lx.near_term("indx"), None);
        assert_eq!(lx.near_term("seaxch"), None);
        assert_eq!(lx.near_term("índex"), None);
        assert_eq!(lx.near_term("kubernet"), None);
        // compounds the tokenizer keeps whole
        let lx = LexicalIndex::build([["run with --shard=1/3"], ["call jest.advanceTimersByTime"]]);
        assert_eq!(lx.near_term("--sahrd"), lx.term_id("--shard"));
        assert_eq!(
            lx.near_term("jest.advacnetimersbytime"),
            lx.term_id("jest.advancetimersbytime")
        );
        assert_eq!(lx.near_term("--ab"), None);
    }

    #[test]
    fn a_shortened_compound_finds_the_name_the_docs_spell_out() {
        let lx = LexicalIndex::build([
            ["add the module to nuxt.config.ts"],
            ["or to nuxt.config.js, then nuxt.config.ts again"],
            ["nuxt.configure is another thing"],
            ["use --release-mode"],
        ]);
        let id = |t: &str| lx.term_id(t);
        // the most common of the names it starts, never a longer word (`nuxt.configure`)
        assert_eq!(lx.longer_name("nuxt.config"), id("nuxt.config.ts"));
        // plain words, flags (`--release` is not `--release-mode`), short stems and names
        // nothing extends are left alone
        assert_eq!(lx.longer_name("--release"), None);
        assert_eq!(lx.longer_name("nuxt"), None);
        assert_eq!(lx.longer_name("a.b"), None);
        assert_eq!(lx.longer_name("vite.config"), None);
    }

    #[test]
    fn stop_word_list_is_sorted_for_binary_search() {
        let mut s = STOP_WORDS.to_vec();
        s.sort_unstable();
        assert_eq!(s, STOP_WORDS);
        let mut k = STOP_KEYS.to_vec();
        k.sort_unstable();
        assert_eq!(k, STOP_KEYS, "packed keys sort like the words");
        assert!(STOP_WORDS.iter().all(|w| is_stop_word(w)));
        for w in ["", "abouts", "explains", "the_", "thé", "rust"] {
            assert!(!is_stop_word(w), "{w}");
        }
    }

    #[test]
    fn code_identifiers_are_kept_whole_and_split() {
        let t = tokenize("Set CARGO_HOME, run cargo build --locked, see foo::bar and snake_case.");
        for want in [
            "cargo_home",
            "home",
            "--locked",
            // the part is a plain word: stemmed
            "lock",
            "foo::bar",
            "foo",
            "bar",
            "snake_case",
            "snake",
            "case",
        ] {
            assert!(t.contains(&want.to_string()), "{want} missing from {t:?}");
        }
    }

    #[test]
    fn code_names_are_the_words_written_as_code() {
        let names =
            code_names("`expect.extend()` with --detectOpenHandles, storeToRefs and CARGO_HOME?");
        assert_eq!(names, ["expect.extend", "--detectopenhandles", "storetoref", "cargo_home"]);
        assert_eq!(code_names("#[track_caller]"), ["track_caller"]);
        // Names of things, plain words, a lone dash: not code.
        assert!(code_names("Can I use TypeScript or GitHub - a well known tool?").is_empty());
    }

    #[test]
    fn toml_table_headers_keep_their_brackets() {
        let t = tokenize("Use the [patch] section");
        assert!(t.contains(&"[patch]".to_string()), "{t:?}");
        assert!(t.contains(&"patch".to_string()));
    }

    #[test]
    fn dotted_and_dashed_keys_are_compounds() {
        let t = tokenize("build.target-dir sets it");
        assert!(t.contains(&"build.target-dir".to_string()), "{t:?}");
        assert!(t.contains(&"target".to_string()));
    }

    #[test]
    fn figures_are_numbers_with_a_unit_or_too_long_for_a_year() {
        for t in ["50k", "512mb", "200ms", "10x", "30000000000000004", "12500"] {
            assert!(is_figure(t), "{t}");
        }
        for t in ["2027", "7", "v2", "k8s", "ipv6", "utf8", "50kbps", "", "mb"] {
            assert!(!is_figure(t), "{t}");
        }
    }

    #[test]
    fn cjk_text_becomes_unigrams_and_bigrams() {
        let t = tokenize("所有権とは");
        assert!(t.contains(&"所有".to_string()), "{t:?}");
        assert!(t.contains(&"権".to_string()));
    }

    #[test]
    fn inflections_fold_and_stop_words_drop() {
        for (a, b) in [
            ("The closures", "closure"),
            ("libraries", "library"),
            ("tried", "trying"),
            ("returned", "returns"),
            ("putting", "puts"),
        ] {
            assert_eq!(tokenize(a), tokenize(b), "{a} / {b}");
            assert_eq!(tokenize(a).len(), 1, "{a}");
        }
        // Identifiers, versions and short words are not stemmed.
        assert_eq!(tokenize("Ks"), vec!["ks"]);
        assert_eq!(tokenize("utf8s"), vec!["utf8s"]);
        assert!(tokenize("what is the").is_empty());
    }

    #[test]
    fn scoring_a_term_over_its_postings_matches_bm25_per_document() {
        let ix = LexicalIndex::build([
            vec!["cargo build"],
            vec!["build scripts build a crate before cargo builds it"],
            vec!["other"],
        ]);
        let t = ix.term_id("build").unwrap();
        let (docs, tfs) = ix.postings(t);
        let idf = idf(ix.len() as u32, docs.len() as u32);
        let mut got = vec![0f32; 3];
        assert_eq!(ix.add_scores(t, 0.5, &mut got, None), idf, "it returns the term's idf");
        for (d, &score) in got.iter().enumerate() {
            let want = docs
                .iter()
                .position(|&x| x == d as u32)
                .map_or(0.0, |i| 0.5 * bm25_term(idf, tfs[i] as f32, ix.doc_len(d), ix.avgdl()));
            assert!(
                (score - want).abs() <= 1e-6 * want.abs().max(1.0),
                "doc {d}: {score} vs {want}"
            );
        }
        let mut masked = vec![0f32; 3];
        ix.add_scores(t, 0.5, &mut masked, Some(&[false, true, true]));
        assert_eq!((masked[0], masked[1]), (0.0, got[1]), "a masked-out document gets nothing");
    }

    #[test]
    fn the_inverted_index_counts_terms_per_document() {
        let ix = LexicalIndex::build([
            vec!["Ownership"],
            vec!["Vectors", "vectors and closures, vectors"],
        ]);
        assert_eq!(ix.len(), 2);
        let v = ix.term_id("vector").unwrap();
        assert_eq!(ix.postings(v), (&[1u32][..], &[3u16][..]));
        let o = ix.term_id("ownership").unwrap();
        assert_eq!(ix.postings(o).0, &[0]);
        assert_eq!(ix.doc_len(1), 4.0);
        assert!(ix.term_id("and").is_none(), "stop words are not indexed");
        assert_eq!(ix.postings(999), (&[][..], &[][..]));
    }

    #[test]
    fn the_callback_tokenizer_and_the_collecting_one_agree() {
        let text = "Set CARGO_HOME; --locked [patch] foo::bar 所有権とは Libraries' closures, a b 7 ÉCOLE Straße";
        let mut seen = Vec::new();
        tokenize_with(text, |t| seen.push(t.to_string()));
        assert_eq!(seen, tokenize(text));
        assert!(seen.contains(&"école".to_string()) && seen.contains(&"7".to_string()), "{seen:?}");
    }

    #[test]
    fn trailing_punctuation_is_not_part_of_a_word() {
        assert_eq!(tokenize("vectors."), vec!["vector"]);
        assert_eq!(tokenize("Option::None:"), vec!["option::none", "option", "none"]);
    }
}

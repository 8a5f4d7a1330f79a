//! The shared retrieval pipeline (`docent_core::retrieve`) and section-level fusion.

use docent_core::format::write_index;
use docent_core::retrieve::{fuse, merge, retrieve, Ask};
use docent_core::search::{Hit, Retriever, SearchOptions, SearchResult};
use docent_core::{Chunk, Index, IndexHeader};

fn hit(chunk: u32, lexical: bool) -> Hit {
    Hit {
        chunk,
        section: chunk,
        chunks: vec![chunk],
        score: 1.0,
        retrievers: Retriever { vector: !lexical, lexical },
        cosine: None,
        bm25: None,
    }
}

/// An index of (page, anchor, text, vector) rows; rows with the same page and anchor are chunks
/// of one section.
fn index(rows: &[(&str, &str, &str, [f32; 3])]) -> Index {
    let chunks: Vec<Chunk> = rows
        .iter()
        .map(|(page, anchor, text, _)| Chunk {
            url: page.to_string(),
            anchor: anchor.to_string(),
            title: page.to_string(),
            text: text.to_string(),
            ..Default::default()
        })
        .collect();
    let vectors: Vec<Vec<f32>> = rows.iter().map(|r| r.3.to_vec()).collect();
    let header =
        IndexHeader { provider: "test".into(), model: "m".into(), dims: 3, ..Default::default() };
    Index::from_bytes(write_index(&header, &chunks, Some(&vectors)).unwrap()).unwrap()
}

#[test]
fn fusion_ranks_chunks_found_by_both_queries_first() {
    let a = vec![hit(1, true), hit(2, true), hit(3, true)];
    let b = vec![hit(3, false), hit(4, false)];
    let f = fuse(&a, &b, 10);
    assert_eq!(f[0].chunk, 3);
    assert!(f[0].retrievers.vector && f[0].retrievers.lexical);
    assert_eq!(f.len(), 4);
    assert_eq!(fuse(&a, &b, 2).len(), 2);
}

#[test]
fn merged_results_abstain_only_when_both_abstain() {
    let yes = SearchResult {
        hits: vec![hit(1, true)],
        confidence: 0.7,
        abstained: false,
        closest: vec![hit(1, true)],
        ..Default::default()
    };
    let no = SearchResult {
        hits: vec![],
        confidence: 0.1,
        abstained: true,
        closest: vec![hit(2, true)],
        ..Default::default()
    };
    let f = merge(yes.clone(), no.clone(), 5);
    assert!(!f.abstained);
    assert_eq!(f.hits.len(), 1);
    assert!((f.confidence - 0.7).abs() < 1e-6);
    let both = merge(no.clone(), no, 5);
    assert!(both.abstained && both.hits.is_empty());
    assert_eq!(both.closest[0].chunk, 2);
}

#[test]
fn the_texts_to_embed_come_in_a_fixed_order() {
    let history = vec!["old".to_string(), "older?".to_string(), "last turn".to_string()];
    let ask = Ask { question: "q", history: &history, rewritten: Some("standalone q") };
    assert_eq!(ask.embedding_inputs(), vec!["q", "standalone q", "last turn"]);
    assert_eq!(ask.recent_history(), &history[1..]);
    let plain = Ask { question: "q", ..Default::default() };
    assert_eq!(plain.embedding_inputs(), vec!["q"]);
}

#[test]
fn a_section_liked_by_both_retrievers_through_different_chunks_ranks_first() {
    // Section a#x has two chunks: the vectors like its first, BM25 its second. Other sections are
    // each liked a little more by one retriever only. Fused per chunk, a#x's votes would be split
    // between its two chunks and it would tie at best; fused per section it wins.
    let ix = index(&[
        ("a", "x", "general words about nothing", [1.0, 0.0, 0.0]),
        ("a", "x", "the frobnicate flag explained", [0.0, 0.0, 1.0]),
        ("b", "y", "frobnicate frobnicate flag flag", [0.0, 1.0, 0.0]),
        ("c", "z", "unrelated text", [0.99, 0.14, 0.0]),
    ]);
    let q = vec![vec![1.0f32, 0.05, 0.0]];
    let ask = Ask { question: "frobnicate flag", ..Default::default() };
    let r = retrieve(&ix, &ask, &q, &SearchOptions { floor: Some(0.0), ..Default::default() });
    let first = ix.chunk(r.hits[0].chunk as usize);
    assert_eq!((first.url.as_str(), first.anchor.as_str()), ("a", "x"), "{:?}", r.hits);
    assert!(r.hits[0].retrievers.vector && r.hits[0].retrievers.lexical);
    // One hit for the section, carrying both of its chunks; no section comes out twice.
    let mut chunks = r.hits[0].chunks.clone();
    chunks.sort();
    assert_eq!(chunks, vec![0, 1], "{:?}", r.hits);
    let sections: Vec<String> = r
        .hits
        .iter()
        .map(|h| {
            let c = ix.chunk(h.chunk as usize);
            format!("{}#{}", c.url, c.anchor)
        })
        .collect();
    let mut distinct = sections.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), sections.len(), "{sections:?}");
}

#[test]
fn top_k_counts_distinct_sections_however_many_chunks_one_section_has() {
    // Section a#x has six chunks that all name the flag; three other sections name it once.
    let mut rows: Vec<(&str, &str, &str, [f32; 3])> =
        vec![("a", "x", "the frobnicate flag, frobnicate flag again", [1.0, 0.0, 0.0]); 6];
    rows.push(("b", "y", "the frobnicate flag in b", [0.9, 0.1, 0.0]));
    rows.push(("c", "z", "the frobnicate flag in c", [0.8, 0.2, 0.0]));
    rows.push(("d", "w", "the frobnicate flag in d", [0.7, 0.3, 0.0]));
    let ix = index(&rows);
    let q = [vec![1.0f32, 0.0, 0.0]];
    let ask = Ask { question: "frobnicate flag", ..Default::default() };
    for (top_k, vectors) in [(3, &q[..]), (4, &q[..]), (3, &[][..])] {
        let opts = SearchOptions { top_k, floor: Some(0.0), ..Default::default() };
        let r = retrieve(&ix, &ask, vectors, &opts);
        let pages: Vec<&str> = r.hits.iter().map(|h| ix.chunk_ref(h.chunk as usize).url).collect();
        assert_eq!(r.hits.len(), top_k, "{pages:?}");
        assert_eq!(pages[0], "a", "{pages:?}");
        let mut distinct = pages.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), top_k, "{pages:?}");
        // The long section brings its best chunks, at most three, the best one first.
        let a = &r.hits[0];
        assert_eq!(a.chunks.len(), 3, "{a:?}");
        assert_eq!(a.chunks[0], a.chunk);
        assert!(a.chunks.iter().all(|&c| c < 6), "{a:?}");
        assert!(r.hits[1..].iter().all(|h| h.chunks == vec![h.chunk]), "{:?}", r.hits);
    }
}

#[test]
fn fusing_two_queries_merges_a_section_found_through_different_chunks() {
    let mut a = hit(1, true);
    a.section = 7;
    let mut b = hit(2, false);
    b.section = 7;
    let f = fuse(&[a, hit(3, true)], &[b, hit(4, false)], 10);
    assert_eq!(f.len(), 3, "{f:?}");
    assert_eq!((f[0].chunk, f[0].chunks.clone()), (1, vec![1, 2]));
    assert!(f[0].retrievers.vector && f[0].retrievers.lexical);
}

#[test]
fn a_rewritten_query_finds_what_the_question_alone_does_not() {
    let ix = index(&[
        ("a", "x", "configure the proxy timeout", [1.0, 0.0, 0.0]),
        ("b", "y", "install the widget with a script tag", [0.0, 1.0, 0.0]),
    ]);
    let opts = SearchOptions { floor: Some(0.3), ..Default::default() };
    let history = vec!["How do I install the widget?".to_string()];
    // Without a rewrite and without vectors, "Wie lange wartet er?" finds nothing.
    let alone =
        retrieve(&ix, &Ask { question: "Wie lange wartet er?", ..Default::default() }, &[], &opts);
    assert!(alone.abstained, "{alone:?}");
    let ask = Ask {
        question: "Wie lange wartet er?",
        history: &history,
        rewritten: Some("proxy timeout"),
    };
    let r = retrieve(&ix, &ask, &[], &opts);
    assert!(!r.abstained, "{r:?}");
    assert_eq!(ix.chunk(r.hits[0].chunk as usize).url, "a");
}

#[test]
fn vectors_of_the_wrong_count_are_ignored_not_misassigned() {
    let ix = index(&[("a", "x", "alpha", [1.0, 0.0, 0.0]), ("b", "y", "beta", [0.0, 1.0, 0.0])]);
    let history = vec!["earlier".to_string()];
    let ask = Ask { question: "alpha", history: &history, rewritten: None };
    // Two inputs are expected (question, history turn); one vector is not enough to know which.
    let opts = SearchOptions { floor: Some(0.0), ..Default::default() };
    let r = retrieve(&ix, &ask, &[vec![0.0, 1.0, 0.0]], &opts);
    assert!(r.hits.iter().all(|h| !h.retrievers.vector), "{r:?}");
    assert_eq!(ix.chunk(r.hits[0].chunk as usize).url, "a");
}

#[test]
fn a_merged_result_is_uncertain_only_when_every_query_that_passed_was() {
    use docent_core::search::Outcome;
    let hit = |chunk| hit(chunk, true);
    let answered = SearchResult { hits: vec![hit(0)], confidence: 0.9, ..Default::default() };
    let unsure =
        SearchResult { hits: vec![hit(1)], confidence: 0.5, uncertain: true, ..Default::default() };
    let declined = SearchResult { abstained: true, closest: vec![hit(2)], ..Default::default() };
    assert_eq!(merge(answered.clone(), unsure.clone(), 5).outcome(), Outcome::Answered);
    assert_eq!(merge(unsure.clone(), declined.clone(), 5).outcome(), Outcome::Uncertain);
    assert_eq!(merge(unsure.clone(), unsure, 5).outcome(), Outcome::Uncertain);
    assert_eq!(merge(declined.clone(), declined, 5).outcome(), Outcome::Declined);
}

#[test]
fn a_translation_leads_the_question_it_translates() {
    // A German question over English docs is not judged by its words (it shares few with
    // them), so its own hits are fused with its translation's: on a tie the translation's first
    // section must win, as it did when the question alone was turned away.
    let ix = index(&[
        ("browser", "x", "the browser support table and browser versions", [1.0, 0.0, 0.0]),
        ("cache", "y", "caching headers for the static index file", [0.0, 1.0, 0.0]),
    ]);
    let opts = SearchOptions { floor: Some(0.3), ..Default::default() };
    let question = "Wie lange dürfen Browser die Dateien zwischenspeichern?";
    let alone = retrieve(&ix, &Ask { question, ..Default::default() }, &[], &opts);
    assert!(!alone.abstained && ix.chunk(alone.hits[0].chunk as usize).url == "browser");
    let ask = Ask { question, history: &[], rewritten: Some("caching headers static index file") };
    let r = retrieve(&ix, &ask, &[], &opts);
    assert_eq!(ix.chunk(r.hits[0].chunk as usize).url, "cache", "{r:?}");
}

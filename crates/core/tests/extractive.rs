//! Offline (extractive) answers: relevant sentences, cited, labelled as excerpts, deterministic.

use docent_core::extractive::{answer, answer_from, EXCERPTS_LABEL, NOT_COVERED};
use docent_core::format::{write_index, Index};
use docent_core::model::{Chunk, IndexHeader};
use docent_core::render::{render_markdown, RenderOptions};
use docent_core::search::{Hit, Retriever, SearchResult};

fn hit(chunk: u32, score: f32) -> Hit {
    Hit {
        chunk,
        score,
        retrievers: Retriever { vector: false, lexical: true },
        cosine: None,
        bm25: Some(score),
    }
}

fn chunk(url: &str, anchor: &str, title: &str, section: &str, text: &str) -> Chunk {
    Chunk {
        url: url.into(),
        anchor: anchor.into(),
        title: title.into(),
        breadcrumb: vec![title.into(), section.into()],
        text: text.into(),
        tokens: (text.len() / 4) as u32,
        ..Chunk::default()
    }
}

fn corpus() -> Vec<Chunk> {
    vec![
        chunk(
            "config.html",
            "build-target-dir",
            "Configuration",
            "build.target-dir",
            "The build section controls compilation. The target-dir key sets where compiled artifacts go. \
             It defaults to `target` in the workspace root.\n\n```toml\n[build]\ntarget-dir = \"out\"\n```\n\n\
             You can also set the CARGO_TARGET_DIR environment variable, which overrides the key.",
        ),
        chunk(
            "config.html",
            "build-jobs",
            "Configuration",
            "build.jobs",
            "The jobs key sets the number of parallel jobs. It defaults to the number of CPUs.",
        ),
        chunk(
            "env.html",
            "",
            "Environment variables",
            "Cargo",
            "# Environment variables\n\nCargo reads many environment variables. CARGO_TARGET_DIR sets the target directory, \
             e.g. for CI caches. CARGO_HOME sets where Cargo keeps its registry cache.\n- RUSTFLAGS passes flags to rustc.",
        ),
        chunk("misc.html", "faq", "FAQ", "Misc", "Nothing about directories here. Rust is a language."),
    ]
}

fn result(hits: Vec<Hit>) -> SearchResult {
    SearchResult { hits, confidence: 0.8, abstained: false, closest: Vec::new() }
}

#[test]
fn the_most_relevant_sentences_are_quoted_with_citations() {
    let chunks = corpus();
    let r = result(vec![hit(0, 3.0), hit(2, 2.0), hit(1, 1.0), hit(3, 0.5)]);
    let ex =
        answer_from(&chunks, &r, "How do I change the target directory (CARGO_TARGET_DIR)?", 3);
    let md = &ex.markdown;
    assert!(md.starts_with(EXCERPTS_LABEL), "{md}");
    assert!(md.contains("CARGO\\_TARGET\\_DIR"), "{md}");
    // Quotes are labelled excerpts, each ending with its source's citation.
    let quotes: Vec<&str> = md.lines().filter(|l| l.starts_with("> ")).collect();
    assert!(!quotes.is_empty() && quotes.len() <= 3, "{md}");
    for q in &quotes {
        assert!(q.ends_with(']'), "{q}");
    }
    // Sources are grouped per page and numbered in citation order from 1.
    let urls: Vec<&str> = ex.sources.iter().map(|s| s.url.as_str()).collect();
    assert_eq!(urls[0], "config.html#build-target-dir");
    assert!(urls.contains(&"env.html"), "{urls:?}");
    for (i, s) in ex.sources.iter().enumerate() {
        assert_eq!(s.n, i + 1);
        assert!(md.contains(&format!("[{}]", s.n)));
    }
    // Irrelevant sentences are not quoted; code fences are not split into sentences.
    assert!(!md.contains("Rust is a language"), "{md}");
    assert!(!md.contains("parallel jobs"), "{md}");
    assert!(!md.contains("target-dir = "), "{md}");
}

#[test]
fn the_answer_renders_with_working_citation_links() {
    let chunks = corpus();
    let r = result(vec![hit(0, 3.0), hit(2, 2.0)]);
    let ex = answer_from(&chunks, &r, "target directory", 2);
    let html = render_markdown(
        &ex.markdown,
        &RenderOptions { sources: ex.sources.clone(), ..RenderOptions::default() },
    );
    assert!(html.html.contains("<blockquote>"), "{}", html.html);
    assert!(
        html.html.contains("class=\"docent-cite\" href=\"config.html#build-target-dir\""),
        "{}",
        html.html
    );
    assert_eq!(html.cited.len(), ex.sources.len());
}

#[test]
fn brackets_in_docs_text_do_not_become_citations() {
    let chunks = vec![chunk(
        "a.html",
        "x",
        "Arrays",
        "Index",
        "Index an array with arr[1] to get the second element.",
    )];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "array index", 2);
    let html = render_markdown(
        &ex.markdown,
        &RenderOptions { sources: ex.sources.clone(), ..RenderOptions::default() },
    );
    assert!(html.html.contains("arr[1] to get"), "{}", html.html);
    assert_eq!(html.cited, vec![1], "only the excerpt's own citation: {}", html.html);
}

#[test]
fn max_sentences_is_respected_and_output_is_deterministic() {
    let chunks = vec![
        chunk(
            "a.html",
            "x",
            "A",
            "One",
            "Alpha widget one. Beta widget two. Unrelated words here.",
        ),
        chunk(
            "b.html",
            "y",
            "B",
            "Two",
            "Gamma widget three. Delta widget four. Epsilon widget five.",
        ),
    ];
    let r = result(vec![hit(0, 2.0), hit(1, 1.0)]);
    for n in 1..=6 {
        let a = answer_from(&chunks, &r, "widget", n);
        assert_eq!(a, answer_from(&chunks, &r, "widget", n));
        assert_eq!(a.markdown.matches("widget").count(), n.min(5), "{n}: {}", a.markdown);
    }
    // With room for all, sentences appear per source in document order.
    let all = answer_from(&chunks, &r, "widget", 10);
    let order: Vec<usize> = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]
        .iter()
        .map(|w| all.markdown.find(w).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", all.markdown);
    assert!(all.markdown.contains("Alpha widget one. Beta widget two. [1]"), "{}", all.markdown);
    assert_eq!(all.sources.len(), 2);
}

#[test]
fn a_question_in_another_language_still_quotes_the_best_section() {
    let chunks = corpus();
    let ex = answer_from(&chunks, &result(vec![hit(1, 1.0)]), "¿cuántos trabajos?", 2);
    assert!(ex.markdown.starts_with(EXCERPTS_LABEL));
    assert!(ex.markdown.contains("The jobs key"), "{}", ex.markdown);
    assert_eq!(ex.sources.len(), 1);
}

#[test]
fn no_hits_says_the_docs_do_not_cover_it_and_offers_the_closest_sections() {
    let chunks = corpus();
    let r = SearchResult {
        hits: vec![],
        confidence: 0.1,
        abstained: true,
        closest: vec![hit(3, 0.2), hit(1, 0.1)],
    };
    let ex = answer_from(&chunks, &r, "how do I bake bread?", 3);
    assert!(ex.markdown.starts_with(NOT_COVERED), "{}", ex.markdown);
    assert!(ex.markdown.contains("FAQ › Misc [1]"), "{}", ex.markdown);
    assert_eq!(ex.sources.len(), 2);
    let empty = answer_from(&chunks, &SearchResult::default(), "x", 3);
    assert_eq!(empty.markdown, NOT_COVERED);
    assert!(empty.sources.is_empty());
}

#[test]
fn extractive_answers_work_over_a_real_index_file() {
    let chunks = corpus();
    let header = IndexHeader {
        provider: "none".into(),
        tokenizer: "cl100k_base".into(),
        ..IndexHeader::default()
    };
    let index = Index::from_bytes(write_index(&header, &chunks, None).expect("write index"))
        .expect("read index");
    let r = result(vec![hit(2, 2.0), hit(0, 1.0)]);
    let ex = answer(&index, &r, "CARGO_HOME registry", 2);
    assert_eq!(ex, answer_from(&chunks, &r, "CARGO_HOME registry", 2));
    assert!(ex.markdown.contains("CARGO\\_HOME"), "{}", ex.markdown);
}

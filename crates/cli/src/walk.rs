//! Finding the pages of a source folder: Markdown/MDX and HTML files, include/exclude globs,
//! and the Markdown anchor flavor of the site generator that owns the folder.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use docent_core::source::{Flavor, SourceKind};
use globset::{Glob, GlobSet, GlobSetBuilder};

/// One file to index.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Absolute (or as given) path on disk.
    pub path: PathBuf,
    /// Path relative to the source folder, `/`-separated.
    pub rel: String,
    /// Markdown or HTML.
    pub kind: SourceKind,
}

/// Folders never entered: dependencies, VCS, generator caches.
const SKIP_DIRS: &[&str] =
    &["node_modules", ".git", ".vitepress", ".docusaurus", ".svn", ".hg", "target"];

/// Compile globs; a bad pattern is a clear error naming it.
pub fn globset(patterns: &[String], what: &str) -> anyhow::Result<Option<GlobSet>> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let g = Glob::new(p).map_err(|e| {
            anyhow::anyhow!(
                "bad {what} glob {p:?}: {e}. Globs look like \"**/*.md\" or \"drafts/**\""
            )
        })?;
        b.add(g);
        // "drafts" should also match everything below it.
        if !p.contains('*') && !p.contains('.') {
            if let Ok(g) = Glob::new(&format!("{}/**", p.trim_end_matches('/'))) {
                b.add(g);
            }
        }
    }
    Ok(Some(b.build().with_context(|| format!("bad {what} globs"))?))
}

/// All indexable files under `root`, sorted by relative path.
///
/// Symbolic links are followed only to files and folders under `root` (or under `within`, the
/// `--include-root`, which must be canonical): a page is public once indexed, and a hostile
/// contribution could add `docs/notes.md` linking to `~/.ssh/id_rsa`, the repository's `.env`
/// or `/proc/self/environ` (the build's environment, API keys included). Such a link is left
/// out with a warning naming it, like an include outside the source folder.
pub fn find_files(
    root: &Path,
    within: Option<&Path>,
    include: Option<&GlobSet>,
    exclude: Option<&GlobSet>,
) -> anyhow::Result<Vec<SourceFile>> {
    if !root.exists() {
        bail!("source folder {} does not exist; pass the folder with your docs (Markdown sources or built HTML)", root.display());
    }
    if !root.is_dir() {
        bail!("source {} is not a folder; pass the folder that contains your docs", root.display());
    }
    let real_root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve the source folder {}", root.display()))?;
    let allowed = within.unwrap_or(&real_root);
    let mut out = Vec::new();
    let walker = walkdir::WalkDir::new(root).follow_links(true).into_iter().filter_entry(|e| {
        if e.depth() > 0 && e.path_is_symlink() {
            // A broken link is left to the walker, which reports it.
            if let Ok(real) = e.path().canonicalize() {
                if !real.starts_with(&real_root) && !real.starts_with(allowed) {
                    eprintln!(
                        "warning: {}: a link to {}, outside {}; not read (pass --include-root with a folder above it to allow it)",
                        e.path().display(),
                        real.display(),
                        allowed.display()
                    );
                    return false;
                }
            }
        }
        if e.depth() == 0 || !e.file_type().is_dir() {
            return true;
        }
        let name = e.file_name().to_string_lossy();
        !(SKIP_DIRS.contains(&name.as_ref()) || (name.starts_with('.') && name.len() > 1))
    });
    for entry in walker {
        // A broken link, a link back to a folder above it, an unreadable folder: that entry is
        // skipped with a warning, and every other page is still indexed.
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                eprintln!("warning: {}: skipped: {e}", root.display());
                continue;
            }
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        let Some(kind) = SourceKind::detect(&rel) else { continue };
        if let Some(inc) = include {
            if !inc.is_match(&rel) {
                continue;
            }
        }
        if let Some(exc) = exclude {
            if exc.is_match(&rel) {
                continue;
            }
        }
        out.push(SourceFile { path: entry.path().to_path_buf(), rel, kind });
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(out)
}

/// The files of `root` that `flavor`'s generator makes pages of. VitePress and Docusaurus render
/// Markdown/MDX only: an `.html` file among their sources is a template or an example's markup
/// (`examples/src/counter/App/template.html`), never a page, so it is left out. A built site (its
/// output folder has an `index.html` at the top) keeps its HTML pages, whatever else it holds.
pub fn pages_of(root: &Path, flavor: Flavor, files: Vec<SourceFile>) -> Vec<SourceFile> {
    let markdown_generator = matches!(flavor, Flavor::VitePress | Flavor::Docusaurus);
    let sources = markdown_generator
        && files.iter().any(|f| f.kind == SourceKind::Markdown)
        && !root.join("index.html").is_file();
    if !sources {
        return files;
    }
    files.into_iter().filter(|f| f.kind == SourceKind::Markdown).collect()
}

/// Guess which generator's anchor rules apply to a Markdown folder: a `.vitepress` folder means
/// VitePress, a `docusaurus.config.*` (or one in a `website/` folder beside the docs) means
/// Docusaurus, a Docsify `index.html` means Docsify. Looks in the folder and up to two parents.
/// Default: GitHub's rules (github-slugger).
pub fn detect_flavor(root: &Path) -> Flavor {
    detect_generator(root).unwrap_or(Flavor::GitHub)
}

/// The generator that owns a Markdown folder, when one is found (see [`detect_flavor`]).
pub fn detect_generator(root: &Path) -> Option<Flavor> {
    let mut dir = root.canonicalize().ok();
    for _ in 0..3 {
        let Some(d) = dir.clone() else { break };
        if d.join(".vitepress").is_dir() {
            return Some(Flavor::VitePress);
        }
        // The site may sit beside its docs: Jest and React Native keep `docs/` at the
        // repository root and the site in `website/` (its config's `path: '../docs'`).
        if has_docusaurus_config(&d) || has_docusaurus_config(&d.join("website")) {
            return Some(Flavor::Docusaurus);
        }
        if let Ok(html) = std::fs::read_to_string(d.join("index.html")) {
            if html.contains("docsify") {
                return Some(Flavor::Docsify);
            }
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    None
}

/// Whether `dir` holds a Docusaurus site's `docusaurus.config.{js,ts,mjs,cjs}`.
fn has_docusaurus_config(dir: &Path) -> bool {
    ["js", "ts", "mjs", "cjs"]
        .iter()
        .any(|ext| dir.join(format!("docusaurus.config.{ext}")).is_file())
}

/// Where the (canonical) folder `root` is under the Docusaurus site that holds it, as `@site/`
/// imports name files: `""` when `root` has the site's `docusaurus.config.*`, `"docs"` when its
/// parent has it, `"website/docs"` two levels up. `None` when no config is found there (a site
/// beside its docs, as Jest's `website/`, does not hold them).
pub fn docusaurus_site_folder(root: &Path) -> Option<String> {
    let mut dir = Some(root);
    for _ in 0..3 {
        let d = dir?;
        if has_docusaurus_config(d) {
            let rel = root.strip_prefix(d).ok()?;
            let parts: Vec<String> =
                rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
            return Some(parts.join("/"));
        }
        dir = d.parent();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_link_loop_or_a_broken_link_is_skipped_and_the_rest_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("sub")).unwrap();
        std::fs::write(r.join("a.md"), "# a").unwrap();
        std::fs::write(r.join("sub/b.md"), "# b").unwrap();
        std::os::unix::fs::symlink("..", r.join("sub/loop")).unwrap();
        std::os::unix::fs::symlink("gone.md", r.join("broken.md")).unwrap();
        let files = find_files(r, None, None, None).unwrap();
        let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, vec!["a.md", "sub/b.md"]);
    }

    #[cfg(unix)]
    #[test]
    fn links_leading_out_of_the_source_folder_are_left_out_unless_within_allows() {
        let dir = tempfile::tempdir().unwrap();
        let (docs, outside) = (dir.path().join("docs"), dir.path().join("outside"));
        std::fs::create_dir_all(docs.join("guide")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(docs.join("guide/a.md"), "# a").unwrap();
        std::fs::write(outside.join("secret.md"), "# secret").unwrap();
        std::fs::write(dir.path().join(".env"), "TOKEN=hunter2").unwrap();
        let link = |to: &Path, at: &str| std::os::unix::fs::symlink(to, docs.join(at)).unwrap();
        link(&dir.path().join(".env"), "env.md");
        link(&outside, "folder");
        link(Path::new("/proc/self/environ"), "environ.md");
        link(&docs.join("guide/a.md"), "alias.md");
        link(&docs.join("guide"), "more");
        let rels = |within: Option<&Path>| -> Vec<String> {
            find_files(&docs, within, None, None).unwrap().into_iter().map(|f| f.rel).collect()
        };
        // Links within the folder are followed; links out of it are not, whatever they name.
        assert_eq!(rels(None), ["alias.md", "guide/a.md", "more/a.md"]);
        // --include-root (canonical) allows what is under it, and nothing else.
        let root = dir.path().canonicalize().unwrap();
        assert_eq!(
            rels(Some(&root)),
            ["alias.md", "env.md", "folder/secret.md", "guide/a.md", "more/a.md"]
        );
    }

    #[test]
    fn files_are_filtered_by_kind_globs_and_skipped_folders() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for f in [
            "a.md",
            "b.html",
            "c.css",
            "drafts/d.md",
            "node_modules/x/e.md",
            ".vitepress/f.md",
            "sub/g.mdx",
        ] {
            let p = r.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "# x").unwrap();
        }
        let exc = globset(&["drafts".to_string()], "exclude").unwrap();
        let files = find_files(r, None, None, exc.as_ref()).unwrap();
        let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, vec!["a.md", "b.html", "sub/g.mdx"]);
        let inc = globset(&["**/*.mdx".to_string()], "include").unwrap();
        let files = find_files(r, None, inc.as_ref(), None).unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(detect_flavor(r), Flavor::VitePress);
    }

    #[test]
    fn html_among_vitepress_or_docusaurus_sources_is_not_a_page_but_a_built_site_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        for f in ["index.md", "guide/intro.md", "examples/counter/template.html"] {
            let p = r.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "<p>{{ count }}</p>").unwrap();
        }
        let rels = |flavor| {
            let files = pages_of(r, flavor, find_files(r, None, None, None).unwrap());
            files.into_iter().map(|f| f.rel).collect::<Vec<_>>()
        };
        assert_eq!(rels(Flavor::VitePress), vec!["guide/intro.md", "index.md"]);
        assert_eq!(rels(Flavor::Docusaurus), vec!["guide/intro.md", "index.md"]);
        // Other generators (and plain folders) keep their HTML pages.
        assert_eq!(rels(Flavor::GitHub).len(), 3);
        // A built site with Markdown copies of its pages (llms plugins) is still HTML.
        std::fs::write(r.join("index.html"), "<h1>Home</h1>").unwrap();
        assert_eq!(rels(Flavor::VitePress).len(), 4);
    }

    #[test]
    fn the_source_folder_is_found_under_its_docusaurus_site() {
        let dir = std::env::temp_dir().join(format!("docent-site-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let site = dir.join("website");
        std::fs::create_dir_all(site.join("docs/guides")).unwrap();
        std::fs::write(site.join("docusaurus.config.ts"), "export default {};").unwrap();
        let at = |p: &Path| docusaurus_site_folder(&p.canonicalize().unwrap());
        assert_eq!(at(&site).as_deref(), Some(""));
        assert_eq!(at(&site.join("docs")).as_deref(), Some("docs"));
        assert_eq!(at(&site.join("docs/guides")).as_deref(), Some("docs/guides"));
        assert_eq!(at(&dir), None, "the site is below, not above");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_docusaurus_site_in_a_website_folder_beside_the_docs_is_detected() {
        // Jest's repository: `docs/` at the root, `website/docusaurus.config.js`.
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("docs")).unwrap();
        std::fs::create_dir_all(r.join("website")).unwrap();
        std::fs::write(r.join("docs/ExpectAPI.md"), "# x").unwrap();
        assert_eq!(detect_flavor(&r.join("docs")), Flavor::GitHub);
        std::fs::write(r.join("website/docusaurus.config.js"), "module.exports = {};").unwrap();
        assert_eq!(detect_flavor(&r.join("docs")), Flavor::Docusaurus);
    }

    #[test]
    fn a_bad_glob_and_a_missing_folder_give_clear_errors() {
        let err = globset(&["a[".to_string()], "include").unwrap_err().to_string();
        assert!(err.contains("bad include glob \"a[\""), "{err}");
        let err = find_files(Path::new("/definitely/not/here"), None, None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
    }
}

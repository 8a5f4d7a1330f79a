//! `docent index --check-anchors`: every link a search hit can show (`url#anchor`) must land on
//! a page of the built site that has an element with that id.
//!
//! The link's URL is mapped back to a file of the built site (the `--check-anchors=DIR` folder,
//! or the HTML source folder itself): `--base-url` is stripped, then `path`, `path.html`,
//! `path/index.html` are tried, which covers VitePress (with and without `cleanUrls`),
//! Docusaurus (`trailingSlash` on or off), mdBook and Sphinx output.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use docent_core::model::Chunk;
use scraper::Selector;

/// How many broken links the error lists before "and N more".
const SHOWN: usize = 12;

/// Checks chunk links against the files of built sites, caching each page's ids.
#[derive(Debug, Default)]
pub struct AnchorChecker {
    base_url: Option<String>,
    ids: HashMap<PathBuf, HashSet<String>>,
    problems: Vec<String>,
    checked: usize,
}

impl AnchorChecker {
    /// A checker for links built with this `--base-url` (None: relative links).
    pub fn new(base_url: Option<&str>) -> Self {
        Self { base_url: base_url.map(str::to_string), ..Self::default() }
    }

    /// Checks the links of one page's chunks against the built site in `site`; `source` names
    /// the page in messages.
    pub fn check_page(&mut self, site: &Path, source: &str, chunks: &[Chunk]) {
        for c in chunks {
            self.checked += 1;
            let Some(file) = self.page_file(site, &c.url) else {
                self.problems.push(format!(
                    "{} (from {source}): no such page in {}",
                    c.link(),
                    site.display()
                ));
                continue;
            };
            if c.anchor.is_empty() {
                continue;
            }
            let ids = self.ids.entry(file.clone()).or_insert_with(|| page_ids(&file));
            if !ids.contains(&c.anchor) {
                self.problems.push(format!(
                    "{} (from {source}): {} has no element with id \"{}\"",
                    c.link(),
                    file.display(),
                    c.anchor
                ));
            }
        }
    }

    /// How many links were checked.
    pub fn checked(&self) -> usize {
        self.checked
    }

    /// Ok, or an error listing the broken links and what to do.
    pub fn finish(&self) -> anyhow::Result<()> {
        if self.problems.is_empty() {
            return Ok(());
        }
        let mut msg = format!(
            "--check-anchors: {} of {} links would not land on a heading:\n",
            self.problems.len(),
            self.checked
        );
        for p in self.problems.iter().take(SHOWN) {
            msg.push_str(&format!("  {p}\n"));
        }
        if self.problems.len() > SHOWN {
            msg.push_str(&format!("  ... and {} more\n", self.problems.len() - SHOWN));
        }
        msg.push_str(
            "index the built HTML (its anchors are the generator's own), or check --base-url, \
             --clean-urls and --flavor against the site's settings",
        );
        anyhow::bail!(msg)
    }

    /// The file of the built site that serves `url`, if any.
    fn page_file(&self, site: &Path, url: &str) -> Option<PathBuf> {
        let mut path = url;
        if let Some(base) = &self.base_url {
            let base = base.trim_end_matches('/');
            if let Some(rest) = path.strip_prefix(base) {
                path = rest;
            }
        }
        let path = path.split(['?', '#']).next().unwrap_or("").trim_start_matches('/');
        if path.split('/').any(|p| p == "..") {
            return None;
        }
        let candidates: Vec<String> = if path.is_empty() || path.ends_with('/') {
            vec![format!("{path}index.html")]
        } else {
            vec![path.to_string(), format!("{path}.html"), format!("{path}/index.html")]
        };
        candidates.into_iter().map(|c| site.join(c)).find(|f| f.is_file())
    }
}

/// Every `id` (and `<a name>`) of an HTML file; empty when it cannot be read.
fn page_ids(file: &Path) -> HashSet<String> {
    let Ok(bytes) = std::fs::read(file) else { return HashSet::new() };
    let doc = docent_core::source::html_parse::parse_html(&String::from_utf8_lossy(&bytes));
    let mut ids = HashSet::new();
    if let Ok(sel) = Selector::parse("[id], a[name]") {
        for el in doc.select(&sel) {
            ids.extend(el.value().id().map(str::to_string));
            ids.extend(el.value().attr("name").map(str::to_string));
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(url: &str, anchor: &str) -> Chunk {
        Chunk { url: url.into(), anchor: anchor.into(), ..Chunk::default() }
    }

    fn site() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("guide")).unwrap();
        std::fs::write(
            dir.path().join("guide/install.html"),
            r#"<main><h1 id="install">Install</h1><h2 id="on-linux">On Linux</h2><a name="old"></a></main>"#,
        )
        .unwrap();
        std::fs::write(dir.path().join("index.html"), "<h1 id=\"home\">Home</h1>").unwrap();
        dir
    }

    #[test]
    fn links_to_existing_headings_pass_with_clean_and_html_urls() {
        let dir = site();
        let mut c = AnchorChecker::new(Some("/docs/"));
        c.check_page(
            dir.path(),
            "x",
            &[
                chunk("/docs/guide/install", "on-linux"),
                chunk("/docs/guide/install.html", "old"),
                chunk("/docs/", "home"),
            ],
        );
        assert_eq!(c.checked(), 3);
        c.finish().unwrap();
    }

    #[test]
    fn a_missing_anchor_or_page_is_an_error_naming_the_link() {
        let dir = site();
        let mut c = AnchorChecker::new(None);
        c.check_page(
            dir.path(),
            "guide/install.md",
            &[chunk("guide/install.html", "on-mac"), chunk("guide/gone.html", "x")],
        );
        let err = c.finish().unwrap_err().to_string();
        assert!(err.contains("2 of 2 links"), "{err}");
        assert!(err.contains("guide/install.html#on-mac"), "{err}");
        assert!(err.contains("no such page"), "{err}");
    }
}

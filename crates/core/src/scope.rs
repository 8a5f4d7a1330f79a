//! Which docs a page belongs to: the namespace (docs version, locale) of the page being read,
//! looked up in the index, so a reader of the v1 docs gets answers from v1.

use crate::format::Index;

/// The namespace of the indexed page served at `page_path` (the browser's `location.pathname`,
/// e.g. `/v1/guide/install`), or None when that page is not in the index or has no namespace.
///
/// Paths are compared without `.html`, a final `index` and trailing `/` (so VitePress clean
/// URLs, Docusaurus' `/docs/intro/` and `/docs/intro`, and `--base-url https://...` all match);
/// a relative page URL (an index built without `--base-url`) matches the end of the path.
pub fn page_namespace<'a>(index: &'a Index, page_path: &str) -> Option<&'a str> {
    let page = normalize(page_path);
    let mut last_url = None;
    for i in 0..index.len() {
        let c = index.chunk_ref(i);
        if c.namespace.is_empty() || last_url == Some(c.url) {
            continue;
        }
        last_url = Some(c.url);
        let url = normalize(strip_origin(c.url));
        let same = if c.url.starts_with('/') || c.url.contains("://") {
            url == page
        } else {
            page.strip_suffix(url).is_some_and(|rest| rest.ends_with('/'))
        };
        if same {
            return Some(c.namespace);
        }
    }
    None
}

/// `https://host/a/b` → `/a/b`; anything else unchanged.
fn strip_origin(url: &str) -> &str {
    match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/", |i| &rest[i..]),
        None => url,
    }
}

/// `/a/b.html?x#y` → `/a/b`, `/a/b/` and `/a/b/index.html` → `/a/b`, `/` → ``.
fn normalize(path: &str) -> &str {
    let p = path.split(['?', '#']).next().unwrap_or("");
    let p = p.strip_suffix(".html").unwrap_or(p);
    let p = p.trim_end_matches('/');
    let p = p.strip_suffix("/index").or_else(|| (p == "index").then_some("")).unwrap_or(p);
    p.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::write_index;
    use crate::model::{Chunk, IndexHeader};

    fn idx(pages: &[(&str, &str)]) -> Index {
        let chunks: Vec<Chunk> = pages
            .iter()
            .map(|(url, ns)| Chunk {
                url: url.to_string(),
                anchor: "a".into(),
                namespace: ns.to_string(),
                text: "some text".into(),
                title: "T".into(),
                ..Default::default()
            })
            .collect();
        Index::from_bytes(write_index(&IndexHeader::default(), &chunks, None).unwrap()).unwrap()
    }

    #[test]
    fn the_page_being_read_gives_its_namespace_whatever_the_url_style() {
        let index = idx(&[
            ("/guide/install", "en"),
            ("/v1/guide/install", "v1"),
            ("/docs/1.0/intro/", "1.0"),
            ("https://docs.example.com/fr/", "fr"),
            ("/blog/post.html", ""),
        ]);
        assert_eq!(page_namespace(&index, "/guide/install"), Some("en"));
        assert_eq!(page_namespace(&index, "/guide/install.html"), Some("en"));
        assert_eq!(page_namespace(&index, "/v1/guide/install"), Some("v1"));
        assert_eq!(page_namespace(&index, "/docs/1.0/intro"), Some("1.0"));
        assert_eq!(page_namespace(&index, "/fr/index.html"), Some("fr"));
        assert_eq!(page_namespace(&index, "/fr/"), Some("fr"));
        assert_eq!(page_namespace(&index, "/blog/post"), None, "no namespace");
        assert_eq!(page_namespace(&index, "/elsewhere"), None, "not indexed");
    }

    #[test]
    fn relative_page_urls_match_the_end_of_the_path() {
        let index = idx(&[("guide/install.html", "v2"), ("install.html", "v9")]);
        assert_eq!(page_namespace(&index, "/docs/guide/install.html"), Some("v2"));
        assert_eq!(page_namespace(&index, "/docs/reinstall.html"), None);
    }
}

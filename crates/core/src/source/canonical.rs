//! A built page's URL in the form its site links it.
//!
//! A page built as `docs/features/index.html` is served at `/docs/features/` and, by most hosts,
//! at `/docs/features` too; which one the site links depends on the generator's settings
//! (Docusaurus' `trailingSlash`, VitePress' `cleanUrls`, Sphinx' `dirhtml`). The page says which
//! in its `<link rel="canonical">`. docent takes only the *form* from it (trailing slash,
//! `.html`, `/index.html` or none), and only when the canonical names the same page: a canonical
//! that points elsewhere (Read the Docs sends `latest` pages to `stable`, versioned docs to the
//! newest version) is ignored, so an index never links a page it did not read.

/// The `href` of the page's `<link rel="canonical">`, found by a cheap scan of the document's
/// head (no HTML parse: the page is parsed once, later).
pub fn canonical_href(html: &str) -> Option<String> {
    // The head: up to `</head>` or `<body`, whichever comes first, at most 256 KiB.
    let lower = html.get(..html.len().min(256 * 1024)).unwrap_or(html).to_ascii_lowercase();
    let end = ["</head", "<body"].iter().filter_map(|t| lower.find(t)).min().unwrap_or(lower.len());
    let head = &lower[..end];
    let mut from = 0;
    while let Some(i) = head[from..].find("<link") {
        let start = from + i + "<link".len();
        let stop = head[start..].find('>').map_or(head.len(), |j| start + j);
        from = stop;
        let attrs = attributes(&html[start..stop]);
        let rel = attrs.iter().find(|(k, _)| k.eq_ignore_ascii_case("rel"));
        if rel
            .is_some_and(|(_, v)| v.split_whitespace().any(|r| r.eq_ignore_ascii_case("canonical")))
        {
            if let Some((_, href)) = attrs.iter().find(|(k, _)| k.eq_ignore_ascii_case("href")) {
                let href = href.trim();
                if !href.is_empty() {
                    return Some(href.to_string());
                }
            }
        }
    }
    None
}

/// The `name=value` attributes of a tag's inside (quoted, single-quoted or bare values).
fn attributes(tag: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = tag;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '/');
        let name_end =
            rest.find(|c: char| c.is_whitespace() || c == '=' || c == '/').unwrap_or(rest.len());
        if name_end == 0 {
            return out;
        }
        let name = rest[..name_end].to_string();
        rest = rest[name_end..].trim_start();
        let Some(after_eq) = rest.strip_prefix('=') else {
            out.push((name, String::new()));
            continue;
        };
        let after_eq = after_eq.trim_start();
        let (value, next) = match after_eq.chars().next() {
            Some(q @ ('"' | '\'')) => {
                let body = &after_eq[1..];
                let close = body.find(q).unwrap_or(body.len());
                (&body[..close], body.get(close + 1..).unwrap_or(""))
            }
            _ => {
                let stop = after_eq.find(char::is_whitespace).unwrap_or(after_eq.len());
                (&after_eq[..stop], &after_eq[stop..])
            }
        };
        out.push((name, decode_amp(value)));
        rest = next;
    }
}

fn decode_amp(v: &str) -> String {
    v.replace("&amp;", "&")
}

/// How a URL ends after its page's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Slash,
    IndexHtml,
    Html,
    Bare,
}

/// `(path stem, form)`: `/docs/features/` → (`/docs/features`, Slash).
fn split_form(path: &str) -> (&str, Form) {
    if let Some(s) = path.strip_suffix("/index.html") {
        (s, Form::IndexHtml)
    } else if path == "index.html" {
        ("", Form::IndexHtml)
    } else if let Some(s) = path.strip_suffix(".html") {
        (s, Form::Html)
    } else if let Some(s) = path.strip_suffix('/') {
        (s, Form::Slash)
    } else {
        (path, Form::Bare)
    }
}

/// The path of a URL: without scheme and host, query or fragment.
fn path_of(url: &str) -> &str {
    let url = url.split(['?', '#']).next().unwrap_or("");
    match url.find("://") {
        Some(i) => url[i + 3..].find('/').map_or("/", |j| &url[i + 3 + j..]),
        None if url.starts_with("//") => url[2..].find('/').map_or("/", |j| &url[2 + j..]),
        None => url,
    }
}

/// `url` (the page's URL from its file) in the form of `canonical`, when the canonical names
/// the same page: the same path up to its ending, or (for an index built without the site's
/// base URL) a path that ends with it. Only forms a static host serves from the same file are
/// taken: `X/`, `X/index.html` or `X` for a folder's `index.html` (`index_file`), `X.html` or `X`
/// for any other file. `None`: keep `url` as it is (no canonical, another page, the site's root,
/// or already in that form).
pub fn align_to_canonical(url: &str, index_file: bool, canonical: &str) -> Option<String> {
    let (url_stem, url_form) = split_form(url.split(['?', '#']).next().unwrap_or(""));
    let (page, _) = split_form(path_of(url));
    let (canon, canon_form) = split_form(path_of(canonical));
    let page = page.trim_start_matches('/');
    let canon = canon.trim_start_matches('/');
    if page.is_empty() || canon_form == url_form {
        return None;
    }
    let servable = match canon_form {
        Form::Bare => true,
        Form::Slash | Form::IndexHtml => index_file,
        Form::Html => !index_file,
    };
    if !servable {
        return None;
    }
    let same = canon == page || canon.ends_with(&format!("/{page}")) && !url.starts_with('/');
    if !same {
        return None;
    }
    let suffix = match canon_form {
        Form::Slash => "/",
        Form::IndexHtml => "/index.html",
        Form::Html => ".html",
        Form::Bare => "",
    };
    Some(format!("{url_stem}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_link_is_found_in_the_head_only() {
        let docusaurus = r#"<!doctype html><html><head><meta charset="UTF-8"><link data-rh="true" rel="canonical" href="https://frob.example.com/docs/features"><link rel="alternate" href="x"></head><body></body></html>"#;
        assert_eq!(
            canonical_href(docusaurus).as_deref(),
            Some("https://frob.example.com/docs/features")
        );
        let single = "<head><LINK REL='Canonical' HREF='/a/b.html?x=1&amp;y=2'></head>";
        assert_eq!(canonical_href(single).as_deref(), Some("/a/b.html?x=1&y=2"));
        assert_eq!(canonical_href("<head></head><body><link rel=canonical href=/x></body>"), None);
        assert_eq!(canonical_href("<head><link rel=\"canonical\"></head>"), None);
        assert_eq!(canonical_href("<link rel=canonical href=/bare>").as_deref(), Some("/bare"));
        // Broken markup is no panic.
        for broken in
            ["<link", "<link rel=\"canonical\" href=\"", "<link =x rel", "<link\u{e9}rel=canonical"]
        {
            let _ = canonical_href(broken);
        }
    }

    #[test]
    fn a_url_takes_the_canonical_form_of_the_same_page_only() {
        let c = "https://frob.example.com/docs/features";
        assert_eq!(
            align_to_canonical("/docs/features/", true, c).as_deref(),
            Some("/docs/features")
        );
        assert_eq!(
            align_to_canonical("https://frob.example.com/docs/features/", true, c).as_deref(),
            Some("https://frob.example.com/docs/features")
        );
        // An index built without the site's base path: a relative URL matches the canonical's end.
        assert_eq!(
            align_to_canonical(
                "docs/features/index.html",
                true,
                "https://x.dev/base/docs/features/"
            )
            .as_deref(),
            Some("docs/features/")
        );
        assert_eq!(
            align_to_canonical("guide/os.html", false, "/guide/os").as_deref(),
            Some("guide/os")
        );
        assert_eq!(
            align_to_canonical("/guide/os", false, "/guide/os.html").as_deref(),
            Some("/guide/os.html")
        );
        // A form the host would serve from another file: kept as it is.
        assert_eq!(align_to_canonical("guide/os/index.html", true, "/guide/os.html"), None);
        assert_eq!(align_to_canonical("guide/os.html", false, "/guide/os/"), None);
        // Already in that form, or the root.
        assert_eq!(align_to_canonical("/docs/features", true, c), None);
        assert_eq!(align_to_canonical("/", true, "https://frob.example.com/"), None);
        assert_eq!(align_to_canonical("index.html", true, "https://x.dev/"), None);
        // Another page: versioned docs pointing at the newest version, latest → stable.
        assert_eq!(align_to_canonical("/docs/1.0/intro/", true, "https://x.dev/docs/intro"), None);
        assert_eq!(
            align_to_canonical("/en/latest/os.html", false, "https://x.dev/en/stable/os"),
            None
        );
        assert_eq!(align_to_canonical("/features/", true, "https://x.dev/docs/features"), None);
        assert_eq!(align_to_canonical("/docs/features/", true, "https://x.dev/features"), None);
    }
}

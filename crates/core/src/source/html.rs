//! Built HTML pages (mdBook, VitePress, Docusaurus, plain sites).
//!
//! Only the main content is read: mdBook `<main>`, VitePress `.vp-doc`, Docusaurus
//! `.theme-doc-markdown`/`article`, else `main`, `article`, `[role=main]`, `body`. Navigation,
//! headers (outside the content), footers, asides, scripts, styles, search widgets, permalink
//! anchors and mdBook's hidden ("boring") code lines are dropped. A heading's `id` (or mdBook's
//! `<a class="header" href="#id">`) becomes the anchor. Pages with
//! `<meta name="robots" content="noindex">` and `<meta http-equiv="refresh">` redirect stubs are
//! skipped.

use super::{normalize_ws, PageBuilder, Parsed};
use scraper::node::Element;
use scraper::{ElementRef, Html, Node, Selector};

/// Content roots, most specific first.
pub(crate) const ROOTS: &[&str] =
    &[".vp-doc", ".theme-doc-markdown", "main", "article", "[role=main]", "#content", "body"];

/// Elements never indexed.
const SKIP_TAGS: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "nav", "footer", "aside", "button", "form",
    "input", "select", "textarea", "iframe", "canvas", "link", "meta", "head", "title", "object",
    "embed", "audio", "video", "dialog",
];

/// Class tokens of chrome that is not content (exact match).
const SKIP_CLASSES: &[&str] = &[
    "header-anchor",
    "hash-link",
    "rule",
    "rule-link",
    "grammar-railroad",
    "grammar-toggle-railroad",
    "sidebar",
    "menu-bar",
    "nav-wrapper",
    "nav-chapters",
    "mdbook-help-container",
    "VPDocFooter",
    "VPLocalNav",
    "VPDocAsideOutline",
    "edit-link",
    "prev-next",
    "pagination-nav",
    "theme-edit-this-page",
    "theme-doc-footer",
    "theme-doc-toc-mobile",
    "theme-doc-breadcrumbs",
    "table-of-contents",
    "theme-last-updated",
    "lang",
    "copy",
    "buttonGroup",
    "clean-btn",
    "skip-link",
    "visually-hidden",
    "sr-only",
    "toc",
    "DocSearch",
    "DocSearch-Button",
];

pub(crate) fn sel(s: &str) -> Selector {
    // The selectors used here are constants known to parse.
    Selector::parse(s).unwrap_or_else(|_| Selector::parse("*").expect("universal selector parses"))
}

/// Parse one HTML page. Returns [`Parsed::Skipped`] for noindex pages and redirect stubs.
pub fn parse(content: &str, file_stem: &str) -> Parsed {
    let doc = Html::parse_document(content);

    for meta in doc.select(&sel("meta")) {
        let name = meta.attr("name").unwrap_or("").to_ascii_lowercase();
        let equiv = meta.attr("http-equiv").unwrap_or("").to_ascii_lowercase();
        let value = meta.attr("content").unwrap_or("").to_ascii_lowercase();
        if (name == "robots" || name == "googlebot") && value.contains("noindex") {
            return Parsed::Skipped("noindex");
        }
        if equiv == "refresh" {
            return Parsed::Skipped("redirect");
        }
    }

    let html_title = doc
        .select(&sel("title"))
        .next()
        .map(|t| normalize_ws(&t.text().collect::<String>()))
        .map(|t| strip_site_suffix(&t))
        .filter(|t| !t.is_empty());

    let (root, is_body) = ROOTS
        .iter()
        .find_map(|r| doc.select(&sel(r)).next().map(|e| (e, *r == "body")))
        .unwrap_or_else(|| (doc.root_element(), true));

    let mut w = Walker { b: PageBuilder::new(), inline: String::new(), is_body };
    w.walk(root);
    w.flush();
    // An explicit h1 is the page title; otherwise `<title>` (minus the site name); otherwise
    // the first heading.
    let title = if w.b.first_h1.is_some() { None } else { html_title };
    Parsed::Page(w.b.finish(title, file_stem))
}

/// "Data Types - The Rust Programming Language" → "Data Types"; "Intro | My Docs" → "Intro".
pub(crate) fn strip_site_suffix(t: &str) -> String {
    for sep in [" | ", " - ", " — ", " · "] {
        if let Some(pos) = t.rfind(sep) {
            let head = t[..pos].trim();
            if !head.is_empty() {
                return head.to_string();
            }
        }
    }
    t.to_string()
}

pub(crate) fn skipped(e: &Element, is_body: bool) -> bool {
    let name = e.name();
    if SKIP_TAGS.contains(&name) || (is_body && name == "header") {
        return true;
    }
    if e.attr("hidden").is_some() || e.attr("aria-hidden") == Some("true") && name != "span" {
        return true;
    }
    if matches!(
        e.attr("role"),
        Some("navigation") | Some("search") | Some("banner") | Some("contentinfo")
    ) {
        return true;
    }
    if e.classes().any(|c| SKIP_CLASSES.contains(&c)) {
        return true;
    }
    // Search widgets and sidebars are recognised by id/class words, but only on containers:
    // content elements (a heading "Searching each line" has id `searching-each-line`) are kept.
    if !matches!(name, "div" | "section" | "form" | "span" | "ul" | "ol" | "li") {
        return false;
    }
    if let Some(id) = e.id() {
        let id = id.to_ascii_lowercase();
        if id.contains("search") || id.contains("sidebar") {
            return true;
        }
    }
    e.classes().any(|c| c.to_ascii_lowercase().contains("search"))
}

pub(crate) fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "main"
            | "header"
            | "blockquote"
            | "ul"
            | "ol"
            | "dl"
            | "dt"
            | "dd"
            | "table"
            | "thead"
            | "tbody"
            | "tfoot"
            | "figure"
            | "figcaption"
            | "details"
            | "summary"
            | "hr"
            | "center"
            | "address"
            | "fieldset"
    )
}

struct Walker {
    b: PageBuilder,
    inline: String,
    is_body: bool,
}

impl Walker {
    fn flush(&mut self) {
        let t = self.inline.trim();
        if !t.is_empty() {
            let text: Vec<String> =
                t.split('\n').map(normalize_ws).filter(|l| !l.is_empty()).collect();
            self.b.text(&text.join("\n"));
        }
        self.inline.clear();
    }

    fn walk(&mut self, el: ElementRef<'_>) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => self.inline.push_str(t),
                Node::Element(e) => {
                    if skipped(e, self.is_body) {
                        continue;
                    }
                    let Some(cel) = ElementRef::wrap(child) else { continue };
                    self.element(cel, e);
                }
                _ => {}
            }
        }
    }

    fn element(&mut self, el: ElementRef<'_>, e: &Element) {
        let name = e.name();
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.flush();
                let level = name.as_bytes()[1] - b'0';
                let text = heading_text(el);
                let anchor = heading_id(el);
                self.b.heading(level, &text, &anchor);
            }
            "pre" => {
                self.flush();
                let mut code = String::new();
                code_text(el, &mut code);
                self.b.code(&code_lang(el), &code);
            }
            "code" | "kbd" | "samp" => {
                let mut t = String::new();
                code_text(el, &mut t);
                let t = t.replace('\n', " ");
                if !t.trim().is_empty() {
                    self.inline.push('`');
                    self.inline.push_str(t.trim());
                    self.inline.push('`');
                }
            }
            "br" => self.inline.push('\n'),
            "img" => {}
            "li" => {
                self.flush();
                self.inline.push_str("- ");
                self.walk(el);
                self.flush();
            }
            "tr" => {
                self.flush();
                let cells: Vec<String> = el
                    .child_elements()
                    .filter(|c| {
                        matches!(c.value().name(), "td" | "th") && !skipped(c.value(), self.is_body)
                    })
                    .map(|c| {
                        let mut sub = Walker {
                            b: PageBuilder::new(),
                            inline: String::new(),
                            is_body: self.is_body,
                        };
                        sub.walk(c);
                        sub.flush();
                        let parts: Vec<String> = sub
                            .b
                            .sections
                            .iter()
                            .flat_map(|s| s.blocks.iter().map(|b| b.render()))
                            .collect();
                        normalize_ws(&parts.join(" "))
                    })
                    .collect();
                let row = cells.join(" | ");
                if !row.trim().is_empty() {
                    self.b.text(&row);
                }
            }
            _ if is_block(name) => {
                self.flush();
                self.walk(el);
                self.flush();
            }
            _ => self.walk(el),
        }
    }
}

/// Heading text without permalink anchors (VitePress `.header-anchor`, Docusaurus `.hash-link`).
pub(crate) fn heading_text(el: ElementRef<'_>) -> String {
    let mut out = String::new();
    fn rec(el: ElementRef<'_>, out: &mut String) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => out.push_str(t),
                Node::Element(e) => {
                    if skipped(e, false) {
                        continue;
                    }
                    if let Some(c) = ElementRef::wrap(child) {
                        rec(c, out);
                    }
                }
                _ => {}
            }
        }
    }
    rec(el, &mut out);
    normalize_ws(&out)
}

/// The heading's id, or an id on a child anchor, or mdBook's `<a class="header" href="#id">`.
pub(crate) fn heading_id(el: ElementRef<'_>) -> String {
    if let Some(id) = el.value().id() {
        return id.to_string();
    }
    for a in el.descendent_elements() {
        if let Some(id) = a.value().id().or_else(|| a.value().attr("name")) {
            return id.to_string();
        }
    }
    for a in el.descendent_elements() {
        if let Some(href) = a.value().attr("href") {
            if let Some(frag) = href.strip_prefix('#') {
                if !frag.is_empty() {
                    return frag.to_string();
                }
            }
        }
    }
    section_id(el).unwrap_or_default()
}

/// The id of the section element this heading is the title of, as DocBook writes them
/// (PostgreSQL's manual: `<div class="sect2" id="X"><div class="titlepage"><div><div><h3>`), or
/// `<section id="X"><h2>`: the nearest such ancestor whose first heading is this one.
fn section_id(el: ElementRef<'_>) -> Option<String> {
    let is_heading =
        |e: &ElementRef<'_>| matches!(e.value().name(), "h1" | "h2" | "h3" | "h4" | "h5" | "h6");
    for anc in el.ancestors().filter_map(ElementRef::wrap) {
        let first = anc.descendent_elements().find(is_heading)?;
        if first.id() != el.id() {
            return None;
        }
        let v = anc.value();
        let section_like = v.name() == "section"
            || (v.name() == "div"
                && v.attr("class").is_some_and(|c| {
                    c.split_ascii_whitespace().any(|c| {
                        c.starts_with("sect")
                            || c.starts_with("refsect")
                            || matches!(c, "chapter" | "appendix" | "preface" | "refentry")
                    })
                }));
        if section_like {
            if let Some(id) = v.id() {
                return Some(id.to_string());
            }
        }
    }
    None
}

/// Code text without mdBook's hidden lines; `<br>` as newlines.
pub(crate) fn code_text(el: ElementRef<'_>, out: &mut String) {
    for child in el.children() {
        match child.value() {
            Node::Text(t) => out.push_str(t),
            Node::Element(e) => {
                if e.has_class("boring", scraper::CaseSensitivity::CaseSensitive)
                    || matches!(e.name(), "button" | "script" | "style")
                {
                    continue;
                }
                if e.name() == "br" {
                    out.push('\n');
                    continue;
                }
                if let Some(c) = ElementRef::wrap(child) {
                    code_text(c, out);
                }
            }
            _ => {}
        }
    }
}

/// `language-*` class on the `pre`, its `code`, or the wrapping `div` (VitePress).
pub(crate) fn code_lang(pre: ElementRef<'_>) -> String {
    let mut candidates: Vec<&Element> = vec![pre.value()];
    candidates
        .extend(pre.child_elements().filter(|c| c.value().name() == "code").map(|c| c.value()));
    if let Some(parent) = pre.parent().and_then(ElementRef::wrap) {
        candidates.push(parent.value());
    }
    for e in candidates {
        for c in e.classes() {
            if let Some(lang) = c.strip_prefix("language-") {
                return lang.to_string();
            }
        }
    }
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docbook_sections_give_their_heading_the_sections_id() {
        let html = r#"<html><head><title>Continuous Archiving</title></head><body>
            <div class="sect1" id="CONTINUOUS-ARCHIVING"><div class="titlepage"><div><div>
              <h2 class="title">26.3. Continuous Archiving</h2></div></div></div>
              <p>Intro text about archiving.</p>
              <div class="sect2" id="BACKUP-ARCHIVING-WAL"><div class="titlepage"><div><div>
                <h3 class="title">26.3.1. Setting Up WAL Archiving</h3></div></div></div>
                <p>Set archive_command.</p></div>
              <div class="navfooter"><h3>Not a section title</h3><p>x</p></div>
            </div></body></html>"#;
        let p = page(html);
        let anchors: Vec<&str> = p.sections.iter().map(|s| s.anchor.as_str()).collect();
        assert!(anchors.contains(&"CONTINUOUS-ARCHIVING"), "{anchors:?}");
        assert!(anchors.contains(&"BACKUP-ARCHIVING-WAL"), "{anchors:?}");
        // A heading that is not the first heading of an id'd section gets no borrowed id.
        assert_eq!(anchors.iter().filter(|a| **a == "CONTINUOUS-ARCHIVING").count(), 1);
    }
    use crate::source::{Block, Page};

    fn page(html: &str) -> Page {
        match parse(html, "stem") {
            Parsed::Page(p) => p,
            Parsed::Skipped(r) => panic!("skipped: {r}"),
        }
    }

    #[test]
    fn noindex_and_redirect_pages_are_skipped() {
        assert_eq!(
            parse(
                r#"<html><head><meta name="robots" content="noindex"></head><body><h1>x</h1></body></html>"#,
                "p"
            ),
            Parsed::Skipped("noindex")
        );
        assert_eq!(
            parse(
                r#"<html><head><meta http-equiv="Refresh" content="0; url=new.html"></head><body>Moved</body></html>"#,
                "p"
            ),
            Parsed::Skipped("redirect")
        );
    }

    #[test]
    fn vitepress_pages_read_only_vp_doc_and_drop_header_anchors() {
        let p = page(
            r##"<html><head><title>Config | Site</title></head><body><div class="VPNav"><nav>Home Guide</nav></div>
            <aside class="VPSidebar">Sidebar link</aside><main><div class="vp-doc"><div>
            <h1 id="config" tabindex="-1">Config <a class="header-anchor" href="#config" aria-label="Permalink to &quot;Config&quot;">&ZeroWidthSpace;</a></h1>
            <p>Intro text.</p>
            <h2 id="base-url" tabindex="-1">Base URL <a class="header-anchor" href="#base-url">&ZeroWidthSpace;</a></h2>
            <div class="language-js vp-adaptive-theme"><button class="copy"></button><span class="lang">js</span><pre class="shiki"><code><span class="line">export default {}</span></code></pre></div>
            </div></div></main><footer>Footer text</footer></body></html>"##,
        );
        assert_eq!(p.title, "Config");
        assert_eq!(p.sections[0].anchor, "config");
        assert_eq!(p.sections[0].heading, "Config");
        assert_eq!(p.sections[0].blocks, vec![Block::Text("Intro text.".into())]);
        assert_eq!(p.sections[1].anchor, "base-url");
        assert_eq!(
            p.sections[1].blocks,
            vec![Block::Code { lang: "js".into(), code: "export default {}".into() }]
        );
    }

    #[test]
    fn docusaurus_pages_keep_the_article_header_h1_and_drop_hash_links() {
        let p = page(
            r##"<html><body><nav class="navbar">Docs Blog</nav><main><div class="row"><article>
            <nav class="theme-doc-breadcrumbs">Home > Intro</nav>
            <div class="theme-doc-markdown markdown"><header><h1>Intro</h1></header>
            <p>Hello.</p><h2 class="anchor" id="next-steps">Next steps<a href="#next-steps" class="hash-link" aria-label="Direct link to Next steps">&#8203;</a></h2>
            <ul><li>Read <code>docs</code></li></ul></div></article></div></main></body></html>"##,
        );
        assert_eq!(p.title, "Intro");
        assert_eq!(p.sections[1].heading, "Next steps");
        assert_eq!(p.sections[1].anchor, "next-steps");
        assert_eq!(p.sections[1].blocks, vec![Block::Text("- Read `docs`".into())]);
    }

    #[test]
    fn headings_whose_id_mentions_search_are_content_not_widgets() {
        let p = page(
            r##"<html><body><main><h2 id="searching-each-line">Searching Each Line</h2><p>Body.</p><div id="search-wrapper">Search box</div></main></body></html>"##,
        );
        assert_eq!(p.sections[0].anchor, "searching-each-line");
        assert_eq!(p.sections[0].blocks, vec![Block::Text("Body.".into())]);
    }

    #[test]
    fn plain_pages_fall_back_to_body_without_chrome() {
        let p = page(
            r#"<html><head><title>Plain - Site</title></head><body><header>Logo Menu</header><div id="search-box">Search</div>
            <h2 id="a">A</h2><p>Alpha <b>beta</b>.</p><table><tr><th>k</th><th>v</th></tr><tr><td>x</td><td>1</td></tr></table>
            <script>var x = 1;</script><footer>(c)</footer></body></html>"#,
        );
        assert_eq!(p.title, "Plain");
        let texts: Vec<String> =
            p.sections.iter().flat_map(|s| s.blocks.iter().map(|b| b.render())).collect();
        assert_eq!(texts, vec!["Alpha beta.", "k | v", "x | 1"]);
    }
}

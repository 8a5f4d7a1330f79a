//! Built HTML pages (mdBook, VitePress, Docusaurus, plain sites).
//!
//! Only the main content is read: mdBook `<main>`, VitePress `.vp-doc`, Docusaurus
//! `.theme-doc-markdown`/`article`, else `main`, `article`, `[role=main]`, `body`. Navigation,
//! headers (outside the content), footers, asides, scripts, styles, search widgets, permalink
//! anchors and mdBook's hidden ("boring") code lines are dropped. A heading's `id` (or mdBook's
//! `<a class="header" href="#id">`) becomes the anchor. Pages with
//! `<meta name="robots" content="noindex">` and `<meta http-equiv="refresh">` redirect stubs are
//! skipped, as are pages a generator makes of no docs text ([`generated`]: Sphinx's search page,
//! its index of names and its highlighted module sources).

use super::{normalize_ws, PageBuilder, Parsed};
use scraper::node::Element;
use scraper::{CaseSensitivity, ElementRef, Html, Node, Selector};

/// Content roots, most specific first.
const ROOTS: &[&str] =
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
    // Sphinx's and MkDocs' `¶` permalinks on headings and API signatures.
    "headerlink",
    // sphinx.ext.viewcode's `[source]` link after an API signature (its `[docs]` links back are
    // on the module source pages, which are not read at all: `generated`).
    "viewcode-link",
    // A footnote's number in the text and the way back to it (`footnote_mark` has the rest):
    // mdBook's and docutils' `footnote-reference`, Python-Markdown's `footnote-ref` and
    // `footnote-backref`, GitHub's `data-footnote-backref`.
    "footnote-reference",
    "footnote-ref",
    "footnote-backref",
    "data-footnote-backref",
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

/// Elements nest at most this deep after [`parse_document`] (Blink's HTML parser stops nesting
/// at 512 too).
const MAX_DEPTH: usize = 512;

/// Parse a page, with the nodes nested deeper than [`MAX_DEPTH`] lifted, in document order, to be
/// children of their ancestor at that depth. The walkers here recurse once per level, and a page
/// nesting 50,000 `<div>`s overflowed the stack and aborted `docent index`. Only machine-made
/// pages nest that deep; their text is kept, in order, and loses only its structure.
pub(crate) fn parse_document(content: &str) -> Html {
    let mut doc = super::html_parse::parse_html(content);
    let mut caps = Vec::new();
    let mut stack = vec![(doc.tree.root().id(), 0usize)];
    while let Some((id, depth)) = stack.pop() {
        let Some(node) = doc.tree.get(id) else { continue };
        if depth < MAX_DEPTH {
            stack.extend(node.children().map(|c| (c.id(), depth + 1)));
        } else if node.children().any(|c| c.has_children()) {
            caps.push(id);
        }
    }
    for cap in caps {
        let below: Vec<_> = doc
            .tree
            .get(cap)
            .map(|n| n.descendants().skip(1).map(|d| d.id()).collect())
            .unwrap_or_default();
        for id in below {
            if let Some(mut cap) = doc.tree.get_mut(cap) {
                cap.append_id(id);
            }
        }
    }
    doc
}

/// Parse one HTML page. Returns [`Parsed::Skipped`] for noindex pages and redirect stubs.
pub fn parse(content: &str, file_stem: &str) -> Parsed {
    page_of(&parse_document(content), file_stem)
}

/// The content root of a parsed page (the first of [`ROOTS`] it has, else the document), and
/// whether that is `body` (whose chrome is dropped, [`skipped`]).
pub(crate) fn content_root(doc: &Html) -> (ElementRef<'_>, bool) {
    ROOTS
        .iter()
        .find_map(|r| doc.select(&sel(r)).next().map(|e| (e, *r == "body")))
        .unwrap_or_else(|| (doc.root_element(), true))
}

/// [`parse`] of a page already parsed with [`parse_document`].
pub(crate) fn page_of(doc: &Html, file_stem: &str) -> Parsed {
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
        // Sphinx writes "<no title>" for a document without one (a moved page's stub).
        .filter(|t| !t.is_empty() && t != "<no title>");

    let (root, is_body) = content_root(doc);
    if let Some(why) = generated(root) {
        return Parsed::Skipped(why);
    }
    let mut w = Walker { b: PageBuilder::new(), inline: String::new(), is_body };
    w.walk(root);
    w.flush();
    // An explicit h1 is the page title; otherwise `<title>` (minus the site name); otherwise
    // the first heading.
    let title = if w.b.first_h1.is_some() { None } else { html_title };
    Parsed::Page(w.b.finish(title, file_stem))
}

/// Why a page is one a generator makes of no docs text, told by the elements it makes them
/// with: Sphinx's search page (`#search-results`: its only text is how to search), its index of
/// names (`genindex.html`, `py-modindex.html`: a table of links) and sphinx.ext.viewcode's
/// highlighted module sources (`_modules/`, `.viewcode-block`: code, a third of pytest's
/// chunks). Searching them finds a name's listing before the section that explains it.
fn generated(root: ElementRef<'_>) -> Option<&'static str> {
    const GENERATED: &[(&str, &str)] = &[
        ("#search-results", "a search page"),
        ("table.genindextable, table.modindextable", "an index of names"),
        (".viewcode-block", "a source listing"),
    ];
    GENERATED.iter().find(|(css, _)| root.select(&sel(css)).next().is_some()).map(|g| g.1)
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

/// Class tokens of an `<aside>` that is part of the page's text, not the site's chrome:
/// docutils' footnotes and topic boxes (`<aside class="footnote-list">`, since docutils 0.18),
/// Starlight's and other themes' callouts.
const CONTENT_ASIDES: &[&str] =
    &["footnote-list", "footnote", "topic", "starlight-aside", "admonition", "callout"];

/// Whether element `el` is left out of the page's text: chrome (navigation, sidebars, search
/// widgets, permalinks, buttons), hidden elements, scripts and styles.
pub(crate) fn skipped(el: ElementRef<'_>, is_body: bool) -> bool {
    let e = el.value();
    let name = e.name();
    if name == "aside" && e.classes().any(|c| CONTENT_ASIDES.contains(&c)) {
        return false;
    }
    if docutils_sidebar(el) {
        return false;
    }
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
    if e.classes().any(|c| SKIP_CLASSES.contains(&c)) || footnote_mark(el) {
        return true;
    }
    // Search widgets and sidebars are recognised by id/class words, but only on containers:
    // content elements (a heading "Searching each line" has id `searching-each-line`) are kept.
    if !matches!(name, "div" | "section" | "form" | "span" | "ul" | "ol" | "li") {
        return false;
    }
    // A document section is content whatever its title: Sphinx wraps every section in
    // `<section id="the-module-search-path">` (`<div class="section">` before docutils 0.17).
    if name == "section" || e.classes().any(|c| c == "section") {
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

/// A footnote's number in the text, or the way back to it from the footnote, where no class of
/// [`SKIP_CLASSES`] says so: read as words they stick to the word before them ("reachable1",
/// "equivalent.1") and leave "↩ ↩2" in the text. The footnote itself stays (where the page puts
/// it). By GitHub's `data-footnote-ref`, the DPUB-ARIA role `doc-noteref`, or a fragment link
/// whose text is `↩` and a count (mdBook's way back).
fn footnote_mark(el: ElementRef<'_>) -> bool {
    let e = el.value();
    e.attr("data-footnote-ref").is_some()
        || e.attr("role") == Some("doc-noteref")
        || (e.name() == "a"
            && e.attr("href").is_some_and(|h| h.starts_with('#'))
            && el
                .text()
                .collect::<String>()
                .trim()
                .strip_prefix('↩')
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
}

/// A sidebar box of the text (reStructuredText's `.. sidebar:: Title`): docutils writes it as
/// `<aside class="sidebar">` (`<div class="sidebar">` before 0.18) opening with its
/// `<p class="sidebar-title">`, where a theme's navigation sidebar has no such title.
fn docutils_sidebar(el: ElementRef<'_>) -> bool {
    matches!(el.value().name(), "aside" | "div")
        && el.value().classes().any(|c| c == "sidebar")
        && el
            .child_elements()
            .next()
            .is_some_and(|c| c.value().classes().any(|k| k == "sidebar-title"))
}

struct Walker {
    b: PageBuilder,
    inline: String,
    is_body: bool,
}

impl Walker {
    /// A list item: its marker (`- `, `3. `) then its content, the marker starting the item's
    /// first paragraph.
    fn list_item(&mut self, li: ElementRef<'_>, marker: &str) {
        self.flush();
        self.inline.push_str(marker);
        self.walk(li);
        self.flush();
    }

    fn flush(&mut self) {
        let t = self.inline.trim();
        // A list item's marker with nothing after it yet (an empty item) is not text.
        if !t.is_empty() && !is_list_marker(t) {
            let text: Vec<String> =
                t.split('\n').map(normalize_ws).filter(|l| !l.is_empty()).collect();
            self.b.text(&text.join("\n"));
        }
        self.inline.clear();
    }

    fn walk(&mut self, el: ElementRef<'_>) {
        // An `<ol>`'s items are numbered as a browser numbers them: from `start`, an item's
        // `value` resetting the count.
        let mut number: Option<i64> = (el.value().name() == "ol")
            .then(|| el.value().attr("start").and_then(|s| s.trim().parse().ok()).unwrap_or(1));
        for child in el.children() {
            match child.value() {
                Node::Text(t) => self.inline.push_str(t),
                Node::Element(e) => {
                    let Some(cel) = ElementRef::wrap(child) else { continue };
                    if skipped(cel, self.is_body) {
                        continue;
                    }
                    if let (Some(n), "li") = (number.as_mut(), e.name()) {
                        if let Some(v) = e.attr("value").and_then(|s| s.trim().parse().ok()) {
                            *n = v;
                        }
                        self.list_item(cel, &format!("{n}. "));
                        *n = n.saturating_add(1);
                    } else {
                        self.element(cel, e);
                    }
                }
                _ => {}
            }
        }
    }

    fn element(&mut self, el: ElementRef<'_>, e: &Element) {
        let name = e.name();
        if name == "div" || name.contains('-') {
            if let Some(tabs) = tab_set(el) {
                // Each tab's label, then its panel: the labels name what differs (npm, Yarn).
                self.flush();
                for (label, panel) in tabs {
                    self.b.text(&label);
                    self.walk(panel);
                    self.flush();
                }
                return;
            }
        }
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
                self.b.code(&code_lang(el), &code_block_text(el));
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
            "li" => self.list_item(el, "- "),
            "tr" => {
                self.flush();
                let cells: Vec<String> = el
                    .child_elements()
                    .filter(|c| {
                        matches!(c.value().name(), "td" | "th") && !skipped(*c, self.is_body)
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
            _ if super::elements::is_block(name) => {
                // A list item's marker stays to start the item's first paragraph
                // (`<li><p>Text</p></li>`, as Sphinx and mdBook write loose lists).
                if !is_list_marker(self.inline.trim()) {
                    self.flush();
                }
                self.walk(el);
                self.flush();
            }
            _ => self.walk(el),
        }
    }
}

/// A list item's marker alone: `-`, or `3.`.
fn is_list_marker(t: &str) -> bool {
    t == "-"
        || t.strip_suffix('.').is_some_and(|n| {
            !n.is_empty() && n.len() <= 20 && n.bytes().all(|b| b.is_ascii_digit() || b == b'-')
        })
}

/// Heading text without permalink anchors (VitePress `.header-anchor`, Docusaurus `.hash-link`).
pub(crate) fn heading_text(el: ElementRef<'_>) -> String {
    let mut out = String::new();
    fn rec(el: ElementRef<'_>, out: &mut String) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => out.push_str(t),
                // A line break parts words ("Setup<br>guide" is two words, not "Setupguide").
                Node::Element(e) if e.name() == "br" => out.push(' '),
                Node::Element(_) => {
                    if let Some(c) =
                        ElementRef::wrap(child).filter(|c| !skipped(*c, false) && !is_permalink(c))
                    {
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

/// A heading's own permalink mark: a link to a fragment whose text is only a mark (`#`, `¶`,
/// `§`, `🔗`) or nothing (an icon). Generators whose class for it is not chrome everywhere
/// (`anchor`, `permalink`: GitHub, Hugo themes, docent's own offline demo) left "Deployment#"
/// as the heading's words. A link whose text is the heading (mdBook's `<a class="header">`,
/// The Reference's heading `::`) stays.
fn is_permalink(a: &ElementRef<'_>) -> bool {
    let v = a.value();
    v.name() == "a"
        && v.attr("href").is_some_and(|h| h.starts_with('#'))
        && matches!(a.text().collect::<String>().trim(), "" | "¶" | "#" | "§" | "🔗")
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
    let fragment = |a: &ElementRef<'_>| {
        let frag = a.value().attr("href")?.strip_prefix('#')?;
        (!frag.is_empty()).then(|| frag.to_string())
    };
    // The heading's permalink (Sphinx's `headerlink` ¶, VitePress' `header-anchor`...) names it;
    // other links in a heading point elsewhere: docutils' "back to the contents" link
    // (`toc-backref`, `#id14`), a cross-reference (`#list`).
    let permalink = |a: &ElementRef<'_>| {
        let v = a.value();
        v.classes().any(|c| PERMALINK_CLASSES.contains(&c))
            || matches!(a.text().collect::<String>().trim(), "¶" | "#" | "§" | "🔗")
    };
    if let Some(frag) = el.descendent_elements().filter(permalink).find_map(|a| fragment(&a)) {
        return frag;
    }
    if let Some(id) = section_id(el) {
        return id;
    }
    let backref = |a: &ElementRef<'_>| a.value().classes().any(|c| c == "toc-backref");
    el.descendent_elements().filter(|a| !backref(a)).find_map(|a| fragment(&a)).unwrap_or_default()
}

/// Classes of a heading's own permalink.
const PERMALINK_CLASSES: &[&str] =
    &["headerlink", "header-anchor", "hash-link", "anchor", "permalink", "anchorjs-link"];

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

/// A code block's text as the reader sees it: [`code_text`] with trailing spaces cut from each
/// line (VitePress leaves one where it removed a `// [!code …]` notation comment).
pub(crate) fn code_block_text(pre: ElementRef<'_>) -> String {
    let mut code = String::new();
    code_text(pre, &mut code);
    code.split('\n').map(str::trim_end).collect::<Vec<_>>().join("\n")
}

/// The tabs of a tab set, as (label, panel) pairs in order, when `el` is one: VitePress code
/// groups (`.vp-code-group`: `.tabs > label` and `.blocks > *`), Material for MkDocs
/// (`.tabbed-set`: `.tabbed-labels > label` and `.tabbed-content > *`), and the ARIA pattern
/// Docusaurus and Starlight render (a `[role=tablist]` child or grandchild of `el` holding
/// `[role=tab]`s, and the `[role=tabpanel]`s below `el`). Every panel is returned, the hidden
/// ones too: a reader sees each by choosing its tab, and the Markdown sources hold them all.
/// `None` when the labels and panels do not pair up.
pub(crate) fn tab_set<'a>(el: ElementRef<'a>) -> Option<Vec<(String, ElementRef<'a>)>> {
    fn child_with<'a>(parent: ElementRef<'a>, class: &str) -> Option<ElementRef<'a>> {
        parent.child_elements().find(|c| c.value().has_class(class, CaseSensitivity::CaseSensitive))
    }
    let e = el.value();
    let text_of = |c: ElementRef<'_>| normalize_ws(&c.text().collect::<String>());
    let (labels, panels): (Vec<String>, Vec<ElementRef<'a>>) = if e
        .has_class("vp-code-group", CaseSensitivity::CaseSensitive)
    {
        let labels = child_with(el, "tabs")?;
        let blocks = child_with(el, "blocks")?;
        (
            labels.child_elements().filter(|c| c.value().name() == "label").map(text_of).collect(),
            blocks.child_elements().collect(),
        )
    } else if e.has_class("tabbed-set", CaseSensitivity::CaseSensitive) {
        let labels = child_with(el, "tabbed-labels")?;
        let blocks = child_with(el, "tabbed-content")?;
        (
            labels.child_elements().filter(|c| c.value().name() == "label").map(text_of).collect(),
            blocks.child_elements().collect(),
        )
    } else {
        let is_tablist = |c: &ElementRef<'_>| c.value().attr("role") == Some("tablist");
        let tablist = el
            .child_elements()
            .find(is_tablist)
            .or_else(|| el.child_elements().flat_map(|c| c.child_elements()).find(is_tablist))?;
        let labels = tablist
            .descendants()
            .filter_map(ElementRef::wrap)
            .filter(|c| c.value().attr("role") == Some("tab"))
            .map(text_of)
            .collect();
        let mut panels = Vec::new();
        collect_tabpanels(el, &mut panels);
        (labels, panels)
    };
    (!labels.is_empty() && labels.len() == panels.len())
        .then(|| labels.into_iter().zip(panels).collect())
}

/// The `[role=tabpanel]` elements below `el`, not looking inside a panel.
fn collect_tabpanels<'a>(el: ElementRef<'a>, out: &mut Vec<ElementRef<'a>>) {
    for c in el.child_elements() {
        if c.value().attr("role") == Some("tabpanel") {
            out.push(c);
        } else if c.value().attr("role") != Some("tablist") {
            collect_tabpanels(c, out);
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
    // Sphinx: `<div class="highlight-python3 notranslate"><div class="highlight"><pre>`.
    pre.ancestors()
        .filter_map(ElementRef::wrap)
        .take(3)
        .flat_map(|a| {
            a.value()
                .classes()
                .filter_map(|c| c.strip_prefix("highlight-"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .find(|l| !matches!(l.as_str(), "default" | "none" | "text"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_break_in_a_heading_parts_its_words() {
        let p = page(
            r#"<html><body><main><h1>Guide</h1><h2 id="s">Setup<br>guide<br/>two</h2><p>x</p></main></body></html>"#,
        );
        let s = p.sections.iter().find(|s| s.anchor == "s").expect("the h2 is a section");
        assert_eq!(s.heading, "Setup guide two");
    }

    #[test]
    fn a_headings_permalink_mark_is_not_its_words() {
        // docent's own offline demo and Hugo themes (`a.anchor` with `#`), GitHub (an icon), a
        // `§`: none of them is text of the heading; mdBook's link around the words is.
        let p = page(
            r##"<html><body><main><h1>Guide</h1>
            <h2 id="deploy">Deployment<a class="anchor" href="#deploy">#</a></h2><p>x</p>
            <h2 id="gh"><a class="anchor" aria-hidden="true" href="#gh"><svg></svg></a>Static files</h2><p>y</p>
            <h2 id="p">Proxy <a href="#p">§</a></h2><p>z</p>
            <h2 id="mdbook"><a class="header" href="#mdbook">Caching</a></h2><p>w</p>
            <h2 id="c">Step <a href="#fn1">1</a></h2><p>v</p>
            <h3 id="colons"><a class="header" href="#colons"><code>::</code></a></h3><p>u</p>
            </main></body></html>"##,
        );
        let heading =
            |a: &str| p.sections.iter().find(|s| s.anchor == a).map(|s| s.heading.as_str());
        assert_eq!(heading("deploy"), Some("Deployment"));
        assert_eq!(heading("gh"), Some("Static files"));
        assert_eq!(heading("p"), Some("Proxy"));
        assert_eq!(heading("mdbook"), Some("Caching"));
        assert_eq!(heading("c"), Some("Step 1"));
        assert_eq!(heading("colons"), Some("::"));
    }

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
    #[test]
    fn sphinx_sections_keep_their_text_anchor_and_code_language_whatever_their_title() {
        // As Sphinx 7 / docutils 0.18+ write them (python3-doc): a section whose id holds
        // "search", a heading with a "back to the contents" link before its permalink, a
        // heading with a cross-reference, a code block's language on its wrapper div.
        let html = r##"<html><head><title>Modules</title></head><body><div class="body" role="main">
            <section id="modules"><h1>Modules<a class="headerlink" href="#modules">¶</a></h1>
            <section id="the-module-search-path"><h2><a class="toc-backref" href="#id14" role="doc-backlink">The Module Search Path</a><a class="headerlink" href="#the-module-search-path" title="Link to this heading">¶</a></h2>
            <p>The interpreter first searches for a built-in module.</p>
            <div class="highlight-python3 notranslate"><div class="highlight"><pre><span></span>import sys</pre></div></div>
            </section>
            <div class="section" id="searching-sys-path"><h2>Searching sys.path</h2><p>Old docutils.</p></div>
            <section id="sequence-types-list-tuple-range"><h2>Sequence Types — <a class="reference internal" href="#list" title="list"><code>list</code></a><a class="headerlink" href="#sequence-types-list-tuple-range">¶</a></h2>
            <p>Three basic sequence types.<a class="footnote-reference brackets" href="#id3" id="id1" role="doc-noteref">1</a></p>
            <aside class="topic"><p class="topic-title">Abstract</p><p>Lists, tuples and ranges.</p></aside>
            <aside class="footnote-list brackets"><aside class="footnote brackets" id="id3" role="doc-footnote"><span class="label">1</span><p>Ranges are immutable.</p></aside></aside>
            <aside class="related"><p>Theme chrome.</p></aside>
            <aside class="sidebar"><p class="sidebar-title">Tuples</p><p>Pack values with commas.</p></aside>
            <div class="sidebar"><p class="sidebar-title">Ranges</p><p>Old docutils sidebar.</p></div>
            <aside class="sidebar"><ul><li>Theme navigation.</li></ul></aside></section>
            </section><div id="searchbox" role="search"><h3>Quick search</h3><form><input name="q"></form></div>
            </div><div class="sphinxsidebar"><p class="sidebar-title">Not a box</p><p>Contents.</p></div></body></html>"##;
        let p = page(html);
        let anchors: Vec<&str> = p.sections.iter().map(|s| s.anchor.as_str()).collect();
        assert_eq!(
            anchors,
            [
                "modules",
                "the-module-search-path",
                "searching-sys-path",
                "sequence-types-list-tuple-range"
            ],
            "{:?}",
            p.sections
        );
        let search = &p.sections[1];
        assert_eq!(search.heading, "The Module Search Path");
        assert_eq!(
            search.blocks[0],
            Block::Text("The interpreter first searches for a built-in module.".into())
        );
        assert_eq!(
            search.blocks[1],
            Block::Code { lang: "python3".into(), code: "import sys".into() }
        );
        assert_eq!(p.sections[2].blocks, [Block::Text("Old docutils.".into())]);
        let all: String =
            p.sections.iter().flat_map(|s| s.blocks.iter().map(|b| b.render())).collect();
        for chrome in ["Quick search", "Theme chrome", "Theme navigation", "Not a box"] {
            assert!(!all.contains(chrome), "{chrome}: {all}");
        }
        // docutils' topic boxes, footnotes and sidebars are text of their section.
        let seq: String = p.sections[3].blocks.iter().map(|b| b.render()).collect();
        for t in [
            "Abstract",
            "Lists, tuples and ranges.",
            "Ranges are immutable.",
            "Tuples",
            "Pack values with commas.",
            "Old docutils sidebar.",
        ] {
            assert!(seq.contains(t), "{t}: {seq}");
        }
    }

    #[test]
    fn list_items_start_their_first_paragraph_and_numbered_lists_keep_their_numbers() {
        let html = r#"<html><body><main><h1 id="t">T</h1>
            <ul><li><p>Loose item.</p><p>Second paragraph.</p></li><li>Tight item.</li><li></li></ul>
            <ol start="3"><li><p>Third.</p></li><li>Fourth.<ol><li>Nested one.</li></ol></li><li value="9">Ninth.</li><li>Tenth.</li></ol>
            </main></body></html>"#;
        let p = page(html);
        let texts: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(
            texts,
            [
                "- Loose item.",
                "Second paragraph.",
                "- Tight item.",
                "3. Third.",
                "4. Fourth.",
                "1. Nested one.",
                "9. Ninth.",
                "10. Tenth."
            ],
            "{texts:?}"
        );
    }

    use crate::source::{Block, Page};

    fn page(html: &str) -> Page {
        match parse(html, "stem") {
            Parsed::Page(p) => p,
            Parsed::Skipped(r) => panic!("skipped: {r}"),
        }
    }

    /// The rendered blocks of a page's sections, one string.
    fn text(p: &Page) -> String {
        p.sections.iter().flat_map(|s| &s.blocks).map(|b| b.render()).collect::<Vec<_>>().join("\n")
    }

    #[test]
    fn a_page_nested_deeper_than_the_limit_keeps_its_text_in_order() {
        // Deep enough to overflow a test thread's stack in the walkers without the limit.
        let n = 20_000;
        let html = format!(
            "<main><h1 id=\"t\">Deep</h1><p>before</p>{}inner text<h2 id=\"h\">Inner</h2>after{}<p>end</p></main>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        );
        let doc = parse_document(&html);
        let depth = |id| {
            let mut d = 0;
            let mut n = doc.tree.get(id).and_then(|n| n.parent());
            while let Some(node) = n {
                d += 1;
                n = node.parent();
            }
            d
        };
        let deepest = doc.tree.nodes().map(|n| depth(n.id())).max().unwrap_or(0);
        assert!(deepest <= MAX_DEPTH + 1, "{deepest}");
        let p = page(&html);
        let t = text(&p);
        let order = ["before", "inner text", "after", "end"].map(|w| t.find(w));
        assert!(order.iter().all(Option::is_some), "{t}");
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{t}");
        // A page within the limit keeps its structure.
        let p = page(
            "<main><h1 id=\"t\">T</h1><div><div><h2 id=\"h\">H</h2><p>x</p></div></div></main>",
        );
        assert_eq!(p.sections.iter().map(|s| s.anchor.as_str()).collect::<Vec<_>>(), ["t", "h"]);
    }

    #[test]
    fn tab_sets_read_every_panel_under_its_label() {
        // VitePress code group; the notation comment left a trailing space.
        let vp = page(
            r##"<main><div class="vp-doc"><h1 id="t">T</h1><div class="vp-code-group"><div class="tabs">
            <input type="radio" checked><label data-title="deploy.yml">deploy.yml</label><input type="radio"><label>terminal</label></div>
            <div class="blocks"><div class="language-yaml active"><pre><code><span class="line">on: push </span>
</code></pre></div><div class="language-sh"><pre><code>npx quuxer deploy</code></pre></div></div></div></div></main>"##,
        );
        assert_eq!(
            text(&vp),
            "deploy.yml\n```yaml\non: push\n```\nterminal\n```sh\nnpx quuxer deploy\n```"
        );
        // Docusaurus tabs: the inactive panel is `hidden`, and still read.
        let du = page(
            r##"<main><article><h1>T</h1><div class="tabs-container"><ul role="tablist" class="tabs">
            <li role="tab" aria-selected="true">Using npm</li><li role="tab">Using Yarn</li></ul>
            <div class="margin-top--md"><div role="tabpanel"><p>Run <code>npm i</code>.</p></div>
            <div role="tabpanel" hidden="">Run <code>yarn add</code>.</div></div></div></article></main>"##,
        );
        assert_eq!(text(&du), "Using npm\nRun `npm i`.\nUsing Yarn\nRun `yarn add`.");
        // Starlight: the tablist is a grandchild.
        let sl = page(
            r##"<main><h1>T</h1><starlight-tabs><div class="tablist-wrapper"><ul role="tablist">
            <li role="presentation"><a role="tab" href="#tab-1">macOS</a></li><li role="presentation"><a role="tab" href="#tab-2">Linux</a></li></ul></div>
            <div role="tabpanel" id="tab-1"><p>Use brew.</p></div><div role="tabpanel" id="tab-2" hidden><p>Use apt.</p></div></starlight-tabs></main>"##,
        );
        assert_eq!(text(&sl), "macOS\nUse brew.\nLinux\nUse apt.");
        // Material for MkDocs.
        let mk = page(
            r##"<main><h1>T</h1><div class="tabbed-set"><input type="radio" checked><input type="radio">
            <div class="tabbed-labels"><label>pip</label><label>conda</label></div><div class="tabbed-content">
            <div class="tabbed-block"><p>pip install x</p></div><div class="tabbed-block"><p>conda install x</p></div></div></div></main>"##,
        );
        assert_eq!(text(&mk), "pip\npip install x\nconda\nconda install x");
        // Labels and panels that do not pair up: read as ordinary content (hidden panels dropped).
        let odd = page(
            r##"<main><h1>T</h1><div><div role="tablist"><span role="tab">A</span><span role="tab">B</span></div>
            <div role="tabpanel"><p>Only A.</p></div></div></main>"##,
        );
        assert_eq!(text(&odd), "AB\nOnly A.");
    }

    #[test]
    fn sphinx_and_mkdocs_permalinks_stay_out_of_titles_and_text() {
        let p = page(
            r##"<html><head><title>Install &#8212; Demo 1.0 documentation</title></head><body>
            <div role="main"><section id="install"><h1>Install<a class="headerlink" href="#install" title="Link to this heading">¶</a></h1>
            <dl class="py function"><dt class="sig" id="demo.run"><span class="sig-name">run</span>()<a class="headerlink" href="#demo.run" title="Link to this definition">¶</a></dt>
            <dd><p>Runs it.</p></dd></dl>
            <section id="from-pypi"><h2>From PyPI<a class="headerlink" href="#from-pypi" title="Permanent link">&para;</a></h2><p>pip install demo</p></section>
            </section></div></body></html>"##,
        );
        let titles: Vec<(&str, &str)> =
            p.sections.iter().map(|s| (s.heading.as_str(), s.anchor.as_str())).collect();
        assert_eq!(titles, [("Install", "install"), ("From PyPI", "from-pypi")]);
        assert!(!text(&p).contains('¶'), "{}", text(&p));
    }

    #[test]
    fn pages_a_generator_makes_of_no_docs_text_are_skipped() {
        let page =
            |body: &str| parse(&format!("<html><body><main>{body}</main></body></html>"), "p");
        let skipped = |body: &str| match page(body) {
            Parsed::Skipped(why) => why,
            Parsed::Page(p) => panic!("read: {:?}", p.title),
        };
        // As Sphinx writes them (pytest's docs, Debian's python-pytest-doc).
        assert_eq!(
            skipped(
                r#"<h1>Search</h1><p>Searching for multiple words only shows matches that contain all words.</p><form action="" method="get"><input type="text" name="q"/></form><div id="search-results"></div>"#
            ),
            "a search page"
        );
        assert_eq!(
            skipped(
                r#"<h1>Python Module Index</h1><table class="indextable modindextable"><tr><td><a href="reference.html#module-pytest"><code>pytest</code></a></td></tr></table>"#
            ),
            "an index of names"
        );
        assert_eq!(
            skipped(
                r#"<h1>Source code for _pytest.cacheprovider</h1><div class="highlight"><pre><div class="viewcode-block" id="Cache"><a class="viewcode-back" href="../../reference.html#pytest.Cache">[docs]</a><span class="k">class</span> Cache:</div></pre></div>"#
            ),
            "a source listing"
        );
        // A page that explains searching, or shows a table, is a page.
        assert!(matches!(
            page(
                r#"<h1>Searching</h1><p>Use the search box.</p><table class="docutils"><tr><td>q</td></tr></table>"#
            ),
            Parsed::Page(_)
        ));
    }

    #[test]
    fn sphinx_viewcode_source_links_stay_out_of_api_signatures() {
        // As sphinx.ext.viewcode writes them (pytest's API reference, Debian's python-pytest-doc).
        let p = page(
            r##"<html><head><title>API Reference</title></head><body>
            <div class="body" role="main"><section id="caplog"><h3>caplog<a class="headerlink" href="#caplog">¶</a></h3>
            <dl class="py class"><dt class="sig sig-object py" id="pytest.LogCaptureFixture"><em class="property"><span class="pre">final</span> <span class="pre">class</span> </em><span class="sig-name descname"><span class="pre">LogCaptureFixture</span></span><a class="reference internal" href="../_modules/_pytest/logging.html#LogCaptureFixture"><span class="viewcode-link"><span class="pre">[source]</span></span></a><a class="headerlink" href="#pytest.LogCaptureFixture">¶</a></dt>
            <dd><p>Provides access and control of log capturing.</p></dd></dl>
            </section></div></body></html>"##,
        );
        let t = text(&p);
        assert!(t.contains("final class LogCaptureFixture\n"), "{t}");
        assert!(!t.contains("[source]"), "{t}");
        // The `[docs]` links back are on viewcode's own pages, which are not read at all
        // (`pages_a_generator_makes_of_no_docs_text_are_skipped`).
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
    fn footnote_numbers_and_their_way_back_are_not_words() {
        // mdBook (the rustc book), docutils, Python-Markdown (MkDocs) and GitHub's Markdown.
        let p = page(
            r##"<html><body><main><h1 id="t">T</h1>
            <p>Check every <em>reachable</em><sup class="footnote-reference" id="fr-r-1"><a href="#footnote-r">1</a></sup> <code>#[cfg]</code>.</p>
            <p>Sequence types.<a class="footnote-reference brackets" href="#id3" id="id1" role="doc-noteref">1</a></p>
            <p>Ranges<sup id="fnref:1"><a class="footnote-ref" href="#fn:1">2</a></sup> and lists<sup><a href="#user-content-fn-1" id="user-content-fnref-1" data-footnote-ref="" aria-describedby="footnote-label">3</a></sup>.</p>
            <ol class="footnote-definition"><li id="footnote-r"><p>Reachable ones only. <a href="#fr-r-1">↩</a> <a href="#fr-r-2">↩2</a></p></li></ol>
            <div class="footnote"><ol><li id="fn:1"><p>Immutable.&#160;<a class="footnote-backref" href="#fnref:1" title="Jump back">&#8617;</a></p></li></ol></div>
            <section data-footnotes class="footnotes"><ol><li id="user-content-fn-1"><p>Mutable. <a href="#user-content-fnref-1" data-footnote-backref="" aria-label="Back to reference 1" class="data-footnote-backref">↩</a></p></li></ol></section>
            <p>See <a href="#t">↩ the top</a> and <a href="#t">1</a>.</p>
            </main></body></html>"##,
        );
        let text: Vec<String> =
            p.sections.iter().flat_map(|s| s.blocks.iter().map(|b| b.render())).collect();
        let all = text.join("\n");
        for t in [
            "Check every reachable `#[cfg]`.",
            "Sequence types.",
            "Ranges and lists.",
            "Reachable ones only.",
            "Immutable.",
            "Mutable.",
            "See ↩ the top and 1.",
        ] {
            assert!(all.contains(t), "{t:?} in {all}");
        }
        assert!(!all.contains("↩2") && !all.contains("↩\n") && !all.ends_with('↩'), "{all}");
    }

    #[test]
    fn sphinxs_no_title_placeholder_is_not_a_title() {
        let p = parse(
            r#"<html><head><title>&lt;no title&gt; &#8212; pytest documentation</title></head><body>
            <div class="body" role="main"><p>This page has been moved, please see <a href="how-to/capture-warnings.html">Asserting warnings</a>.</p></div></body></html>"#,
            "recwarn",
        );
        let Parsed::Page(p) = p else { panic!("a page") };
        assert_eq!(p.title, "recwarn");
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

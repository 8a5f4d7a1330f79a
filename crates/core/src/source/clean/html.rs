//! A built HTML page as clean Markdown: the content root the indexer reads (same roots, same
//! chrome dropped, same heading anchors), written as Markdown: headings with `{#anchor}`,
//! paragraphs, lists, fenced code with its language, pipe tables, links, emphasis, quotes.

use scraper::{ElementRef, Node};

use super::CleanPage;
use crate::source::html::{
    code_block_text, code_lang, code_text, content_root, heading_id, heading_text, page_of,
    parse_document, sel, skipped, strip_site_suffix, tab_set,
};
use crate::source::{fence, normalize_ws, Parsed};

/// Clean one HTML page; `None` when the indexer would skip it (noindex, redirect).
pub fn clean(content: &str, file_stem: &str) -> Option<CleanPage> {
    // One parse for both: the indexer's reading (anchors, title) and the Markdown written here.
    let doc = parse_document(content);
    let Parsed::Page(page) = page_of(&doc, file_stem) else { return None };
    let (root, is_body) = content_root(&doc);
    let mut w = Writer { out: String::new(), is_body, has_h1: false };
    w.blocks(root, "");
    let meta = doc
        .select(&sel("meta[name=description]"))
        .next()
        .and_then(|m| m.attr("content"))
        .map(super::one_line)
        .filter(|d| !d.is_empty());
    let mut markdown = w.out.trim().to_string();
    if !w.has_h1 {
        markdown = format!("# {}\n\n{markdown}", strip_pilcrow(&strip_site_suffix(&page.title)));
    }
    let description = meta.unwrap_or_else(|| super::first_sentence(&page));
    Some(CleanPage { title: strip_pilcrow(&page.title), description, markdown: markdown + "\n" })
}

/// Sphinx ends headings with a `¶` permalink.
fn strip_pilcrow(t: &str) -> String {
    t.trim_end_matches('¶').trim_end().to_string()
}

/// The code block's language: `language-*` (most generators), else Sphinx's `highlight-*` on
/// an ancestor div.
struct Writer {
    out: String,
    is_body: bool,
    has_h1: bool,
}

impl Writer {
    /// Start a new block (a blank line), each line prefixed with `prefix` (quotes, list items).
    fn block(&mut self, prefix: &str, text: &str) {
        let text = text.trim_matches('\n');
        if text.trim().is_empty() {
            return;
        }
        if !self.out.is_empty() {
            self.out.push_str(prefix.trim_end());
            self.out.push('\n');
        }
        for line in text.lines() {
            self.out.push_str(prefix);
            self.out.push_str(line);
            self.out.push('\n');
        }
    }

    /// The block-level children of `el`; runs of inline content become paragraphs.
    fn blocks(&mut self, el: ElementRef<'_>, prefix: &str) {
        let mut para = String::new();
        for child in el.children() {
            match child.value() {
                Node::Text(t) => para.push_str(t),
                Node::Element(e) => {
                    let Some(c) = ElementRef::wrap(child) else { continue };
                    if skipped(c, self.is_body) {
                        continue;
                    }
                    let tabs =
                        (e.name() == "div" || e.name().contains('-')).then(|| tab_set(c)).flatten();
                    if let Some(tabs) = tabs {
                        self.paragraph(prefix, &mut para);
                        for (label, panel) in tabs {
                            self.block(prefix, &format!("**{}**", label.replace('*', "\\*")));
                            self.blocks(panel, prefix);
                        }
                    } else if is_block(e.name()) {
                        self.paragraph(prefix, &mut para);
                        self.element(c, prefix);
                    } else {
                        para.push_str(&self.inline(c));
                    }
                }
                _ => {}
            }
        }
        self.paragraph(prefix, &mut para);
    }

    fn paragraph(&mut self, prefix: &str, para: &mut String) {
        let lines: Vec<String> =
            para.split('\n').map(normalize_ws).filter(|l| !l.is_empty()).collect();
        self.block(prefix, &lines.join("\n"));
        para.clear();
    }

    fn element(&mut self, el: ElementRef<'_>, prefix: &str) {
        let name = el.value().name();
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = (name.as_bytes()[1] - b'0') as usize;
                self.has_h1 |= level == 1;
                let text = strip_pilcrow(&heading_text(el));
                let id = heading_id(el);
                let line = if id.is_empty() {
                    format!("{} {text}", "#".repeat(level))
                } else {
                    format!("{} {text} {{#{id}}}", "#".repeat(level))
                };
                self.block(prefix, &line);
            }
            "pre" => self.block(prefix, &fence(&code_lang(el), &code_block_text(el))),
            "ul" | "ol" => self.list(el, prefix, name == "ol"),
            "table" => {
                let t = self.table(el);
                self.block(prefix, &t);
            }
            "blockquote" => {
                let mut sub = Writer { out: String::new(), is_body: self.is_body, has_h1: true };
                sub.blocks(el, "");
                let quoted: Vec<String> = sub
                    .out
                    .trim()
                    .lines()
                    .map(|l| format!("> {l}").trim_end().to_string())
                    .collect();
                self.block(prefix, &quoted.join("\n"));
            }
            "hr" => self.block(prefix, "---"),
            "dt" => {
                let t = normalize_ws(&self.inline(el));
                self.block(prefix, &format!("**{t}**"));
            }
            _ => self.blocks(el, prefix),
        }
    }

    fn list(&mut self, el: ElementRef<'_>, prefix: &str, ordered: bool) {
        let mut items = Vec::new();
        for (i, li) in el.child_elements().filter(|c| c.value().name() == "li").enumerate() {
            if skipped(li, self.is_body) {
                continue;
            }
            let marker = if ordered { format!("{}. ", i + 1) } else { "- ".to_string() };
            let mut sub = Writer { out: String::new(), is_body: self.is_body, has_h1: true };
            sub.blocks(li, "");
            let body = sub.out.trim().to_string();
            let indent = " ".repeat(marker.len());
            let mut item = String::new();
            for (n, line) in body.lines().enumerate() {
                if n == 0 {
                    item.push_str(&marker);
                } else if !line.is_empty() {
                    item.push_str(&indent);
                }
                item.push_str(line);
                item.push('\n');
            }
            items.push(item.trim_end().to_string());
        }
        self.block(prefix, &items.join("\n"));
    }

    fn table(&self, el: ElementRef<'_>) -> String {
        let rows: Vec<Vec<String>> = el
            .select(&sel("tr"))
            .map(|tr| {
                tr.child_elements()
                    .filter(|c| matches!(c.value().name(), "td" | "th"))
                    .map(|c| normalize_ws(&self.inline(c)).replace('|', "\\|"))
                    .collect::<Vec<_>>()
            })
            .filter(|r: &Vec<String>| !r.is_empty())
            .collect();
        let Some(width) = rows.iter().map(Vec::len).max() else { return String::new() };
        let line = |r: &[String]| {
            let mut cells: Vec<&str> = r.iter().map(String::as_str).collect();
            cells.resize(width, "");
            format!("| {} |", cells.join(" | "))
        };
        let mut out = vec![line(&rows[0]), format!("|{}", " --- |".repeat(width))];
        out.extend(rows[1..].iter().map(|r| line(r)));
        out.join("\n")
    }

    /// Inline Markdown of `el` (links, code, emphasis, images, line breaks).
    fn inline(&self, el: ElementRef<'_>) -> String {
        let e = el.value();
        if skipped(el, self.is_body) {
            return String::new();
        }
        let inner = || {
            let mut s = String::new();
            for child in el.children() {
                match child.value() {
                    Node::Text(t) => s.push_str(t),
                    Node::Element(_) => {
                        if let Some(c) = ElementRef::wrap(child) {
                            s.push_str(&self.inline(c));
                        }
                    }
                    _ => {}
                }
            }
            s
        };
        match e.name() {
            "code" | "kbd" | "samp" => {
                let mut t = String::new();
                code_text(el, &mut t);
                let t = t.replace('\n', " ");
                let t = t.trim();
                if t.is_empty() {
                    String::new()
                } else if t.contains('`') {
                    format!("`` {t} ``")
                } else {
                    format!("`{t}`")
                }
            }
            "strong" | "b" => wrap("**", &inner()),
            "em" | "i" => wrap("*", &inner()),
            "br" => "\n".into(),
            "img" => match e.attr("alt").map(normalize_ws).filter(|a| !a.is_empty()) {
                Some(alt) => format!("![{alt}]({})", e.attr("src").unwrap_or("")),
                None => String::new(),
            },
            "a" => {
                let text = inner();
                match e.attr("href") {
                    Some(h)
                        if !h.is_empty()
                            && !text.trim().is_empty()
                            && !h.starts_with("javascript:") =>
                    {
                        format!("[{}]({h})", text.trim())
                    }
                    _ => text,
                }
            }
            _ => inner(),
        }
    }
}

fn wrap(mark: &str, text: &str) -> String {
    let t = text.trim();
    if t.is_empty() {
        String::new()
    } else {
        format!("{mark}{t}{mark}")
    }
}

/// The indexer's block elements, plus the ones it handles on their own (code, headings).
fn is_block(name: &str) -> bool {
    crate::source::elements::is_block(name)
        || matches!(name, "pre" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_becomes_markdown_with_anchors_code_tables_and_no_chrome() {
        let html = r##"<html><head><title>Guide - Site</title><meta name="description" content="All about the guide."></head>
            <body><nav><a href="/">Home</a></nav><main>
            <h1 id="guide">Guide<a class="header-anchor" href="#guide">#</a></h1>
            <p>Read <a href="other.html">this</a> and <code>run()</code> it, <strong>now</strong>.</p>
            <h2 id="install">Install</h2>
            <div class="language-sh"><pre><code>cargo install x
x --help</code></pre></div>
            <ul><li>one</li><li>two <em>items</em><ul><li>nested</li></ul></li></ul>
            <table><tr><th>key</th><th>value</th></tr><tr><td>a|b</td><td>1</td></tr></table>
            <blockquote><p>Quoted.</p></blockquote>
            <script>alert(1)</script>
            </main><footer>Copyright</footer></body></html>"##;
        let p = clean(html, "guide").unwrap();
        assert_eq!(p.title, "Guide");
        assert_eq!(p.description, "All about the guide.");
        // A meta description of any length (fuzzing found one of 300 characters) is one line.
        let long = format!("<html><head><meta name=\"description\" content=\"{}\"></head><body><main><h1>G</h1><p>x y z</p></main></body></html>", "\u{fffd}ab\n".repeat(100));
        let d = clean(&long, "g").unwrap().description;
        assert!(
            d.chars().count() <= super::super::MAX_DESCRIPTION_CHARS && !d.contains('\n'),
            "{d}"
        );
        let md = &p.markdown;
        assert!(
            md.starts_with("# Guide {#guide}\n\nRead [this](other.html) and `run()` it, **now**."),
            "{md}"
        );
        assert!(md.contains("## Install {#install}"), "{md}");
        assert!(md.contains("```sh\ncargo install x\nx --help\n```"), "{md}");
        assert!(
            md.contains("- one\n- two *items*\n\n  - nested") || md.contains("- two *items*"),
            "{md}"
        );
        assert!(md.contains("| key | value |\n| --- | --- |\n| a\\|b | 1 |"), "{md}");
        assert!(md.contains("> Quoted."), "{md}");
        for chrome in ["Home", "Copyright", "alert", "#</a>"] {
            assert!(!md.contains(chrome), "{chrome} in {md}");
        }
    }

    #[test]
    fn noindex_pages_are_skipped_like_the_indexer_does() {
        let html = r#"<html><head><meta name="robots" content="noindex"></head><body><p>x</p></body></html>"#;
        assert!(clean(html, "x").is_none());
    }
}

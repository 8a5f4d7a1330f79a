//! Markdown and MDX sources (VitePress, Docusaurus, Docsify).
//!
//! - YAML/TOML frontmatter ([`frontmatter`]): `title` becomes the page title; Docusaurus' `slug`
//!   (else its `id`, [`Frontmatter::route_slug`]) changes the page URL (applied by the caller, see
//!   [`super::page_url_with_slug`]); the rest is dropped.
//! - Included files ([`super::include`]): Docusaurus partials imported into the page and VitePress
//!   `@include`s and `<<<` snippets are inlined first, where the generator renders them.
//! - MDX: top-level `import`/`export` statements, `{/* comments */}` (not inside code) and JSX
//!   component tags (`<Tabs>`, `<Badge />`) are dropped; the Markdown between tags stays; a
//!   `<TabItem label="macOS">` keeps its label as a line of its own; `{frontMatter.title}` (and
//!   VitePress' `{{ $frontmatter.title }}`) becomes the frontmatter value.
//! - Admonitions (`:::tip Title` … `:::`, also `:::note[Title]`) are kept as text ("Tip: Title");
//!   a VitePress `::: code-group` gives each code block its tab title as a line before it.
//! - Code fences are kept whole, minus what the site never shows: twoslash's hidden lines and
//!   markers (```` ```ts twoslash ````), VitePress' `// [!code ...]` and Docusaurus'
//!   `// highlight-next-line` comments. A Docusaurus block's `title="jest.config.js"` is a line
//!   before it, as the site shows it; an `npm2yarn` block is repeated as the Yarn and pnpm tabs
//!   the site adds. Raw HTML tags are dropped; their text, inline or in an
//!   HTML block, stays.
//! - Heading anchors follow the [`Flavor`]; a trailing `{#custom-id}` is honoured. Docusaurus
//!   gives an h1 no id (its theme drops it), so an h1 has no anchor there.

use super::fence::{Dialect, Fences, Line};
use super::include::{expand, Includes, NoIncludes};
use super::{normalize_ws, Block, Flavor, Page, PageBuilder, Slugger};
use pulldown_cmark::{BlockQuoteKind, CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// Parse a Markdown/MDX document into a [`Page`] (includes left out: see [`parse_with`]).
pub fn parse(source: &str, flavor: Flavor, file_stem: &str) -> Page {
    parse_with(source, flavor, file_stem, &NoIncludes)
}

/// The grammar of the page at `path` with frontmatter `front`: MDX for a `.mdx` file and for
/// Docusaurus, which reads `.md` as MDX too, unless the frontmatter's `format` says otherwise.
pub fn dialect(front: Option<&str>, flavor: Flavor, path: &str) -> Dialect {
    let format = front.and_then(|f| frontmatter_value(f, "format"));
    let mdx = match format.as_deref() {
        Some("md") => false,
        Some("mdx") => true,
        _ => flavor == Flavor::Docusaurus || path.to_ascii_lowercase().ends_with(".mdx"),
    };
    if mdx {
        Dialect::Mdx
    } else {
        Dialect::CommonMark
    }
}

/// Parse the Markdown/MDX page at `path` (relative to its source folder, `/`-separated), reading
/// the files it includes through `inc` (see [`super::include`]).
pub fn parse_with(source: &str, flavor: Flavor, path: &str, inc: &dyn Includes) -> Page {
    let file = path.rsplit('/').next().unwrap_or(path);
    let file_stem = file.rsplit_once('.').map(|(s, _)| s).unwrap_or(file);
    let (front, body) = frontmatter_raw(source);
    let front_title = front.and_then(|f| frontmatter_value(f, "title"));
    // MDX has no indented code blocks: text indented inside a JSX element (`<td>` ⏎ ⏎
    // `        ~5 points in issues`) is text.
    let dialect = dialect(front, flavor, path);
    let mdx = dialect == Dialect::Mdx;
    let body = expand(body, flavor, dialect, path, inc);
    let body = preprocess(&body, front.unwrap_or(""), flavor, dialect);

    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_FOOTNOTES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    opts.insert(Options::ENABLE_GFM);

    let mut b = PageBuilder::new();
    let mut slugger = Slugger::new(flavor);
    let mut inline = String::new();
    let mut heading: Option<(u8, String)> = None;
    let mut code: Option<(String, String)> = None;
    let mut code_indented = false;
    let mut image_depth = 0usize;
    let mut list_depth = 0usize;
    let mut html_block: Option<String> = None;
    // A VitePress home page without a `title` is named by its hero (vueuse's was "index").
    let mut front_title = front_title;
    if flavor == Flavor::VitePress {
        // A `layout: home` page shows its hero and features first.
        let home = super::home::home_text(front.unwrap_or(""));
        if !home.is_empty() {
            b.text(&home.join("\n"));
            front_title = front_title.or_else(|| home.first().cloned());
        }
    }

    let flush = |b: &mut PageBuilder, inline: &mut String| {
        let lines: Vec<String> =
            inline.split('\n').map(normalize_ws).filter(|l| !l.is_empty()).collect();
        if !lines.is_empty() {
            b.text(&lines.join("\n"));
        }
        inline.clear();
    };

    // Nesting is bounded as in answers (pulldown-cmark re-matches every open container on each
    // line: one line opening 20,000 lists took seconds, a page of them minutes).
    let bounded = crate::render::limit_nesting(&body);
    // The last event closed an inline element (`</span>`).
    let mut closed_inline = false;
    for event in Parser::new_ext(&bounded, opts) {
        let after_close = std::mem::take(&mut closed_inline);
        if let Some((_, ref mut buf)) = code {
            match event {
                Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    let (lang, text) = code.take().unwrap_or_default();
                    if code_indented && mdx {
                        for block in mdx_indented_at(&text, flavor, 0) {
                            match block {
                                Block::Text(t) if list_depth > 0 => {
                                    inline.push_str(&t.replace('\n', " "));
                                    inline.push(' ');
                                }
                                Block::Text(t) => b.text(&t),
                                Block::Code { lang, code } => {
                                    flush(&mut b, &mut inline);
                                    b.code(&lang, &code);
                                }
                            }
                        }
                    } else {
                        b.code(&lang, &text);
                    }
                }
                _ => {}
            }
            continue;
        }
        if let Some(ref mut buf) = html_block {
            match event {
                Event::Html(t) | Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::HtmlBlock) => {
                    let lines = html_text(&html_block.take().unwrap_or_default(), flavor);
                    if list_depth > 0 {
                        // Inside a list item: the text continues the item's line.
                        inline.push_str(&lines.join(" "));
                        inline.push(' ');
                    } else if !lines.is_empty() {
                        b.text(&lines.join("\n"));
                    }
                }
                _ => {}
            }
            continue;
        }
        if let Some((_, ref mut buf)) = heading {
            match event {
                Event::Text(t) | Event::Code(t) => buf.push_str(&t),
                Event::SoftBreak | Event::HardBreak => buf.push(' '),
                Event::End(TagEnd::Heading(_)) => {
                    let (level, raw) = heading.take().unwrap_or_default();
                    let (text, mut anchor) = heading_text_and_anchor(&raw, &mut slugger);
                    if level == 1 && flavor == Flavor::Docusaurus {
                        // Docusaurus' theme renders an h1 without its id.
                        anchor.clear();
                    }
                    b.heading(level, &text, &anchor);
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                flush(&mut b, &mut inline);
                heading = Some((level as u8, String::new()));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                flush(&mut b, &mut inline);
                code_indented = matches!(kind, CodeBlockKind::Indented);
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split(|c: char| c.is_whitespace() || matches!(c, '{' | ',' | '[' | ':'))
                        .next()
                        .unwrap_or("")
                        .to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            Event::Start(Tag::HtmlBlock) => {
                if list_depth == 0 {
                    flush(&mut b, &mut inline);
                }
                html_block = Some(String::new());
            }
            Event::Start(Tag::Image { .. }) => image_depth += 1,
            Event::End(TagEnd::Image) => image_depth = image_depth.saturating_sub(1),
            Event::Start(Tag::List(_)) => {
                flush(&mut b, &mut inline);
                list_depth += 1;
            }
            Event::End(TagEnd::List(_)) => {
                flush(&mut b, &mut inline);
                list_depth = list_depth.saturating_sub(1);
            }
            Event::Start(Tag::Item) => {
                flush(&mut b, &mut inline);
                inline.push_str(&"  ".repeat(list_depth.saturating_sub(1)));
                inline.push_str("- ");
            }
            // A paragraph inside a list item continues the item's line.
            Event::Start(Tag::Paragraph) if list_depth == 0 => flush(&mut b, &mut inline),
            Event::End(TagEnd::Paragraph) => {
                if list_depth == 0 {
                    if flavor == Flavor::VitePress && is_attribute_list(&inline) {
                        // markdown-it-attrs' `{#id .class}` on a line of its own sets attributes
                        // of a block; the reader never sees it.
                        inline.clear();
                    }
                    flush(&mut b, &mut inline);
                } else {
                    inline.push(' ');
                }
            }
            // A GitHub alert (`> [!WARNING]`, which VitePress renders too) opens with its label,
            // as a `::: warning` container does.
            Event::Start(Tag::BlockQuote(Some(kind))) => {
                flush(&mut b, &mut inline);
                let kind = match kind {
                    BlockQuoteKind::Note => "note",
                    BlockQuoteKind::Tip => "tip",
                    BlockQuoteKind::Important => "important",
                    BlockQuoteKind::Warning => "warning",
                    BlockQuoteKind::Caution => "caution",
                };
                b.text(&admonition_label(kind, ""));
            }
            Event::End(TagEnd::Item)
            | Event::End(TagEnd::TableRow)
            | Event::End(TagEnd::TableHead)
            | Event::End(TagEnd::BlockQuote(_))
            | Event::Start(Tag::BlockQuote(_))
            | Event::End(TagEnd::FootnoteDefinition)
            | Event::Rule => flush(&mut b, &mut inline),
            Event::End(TagEnd::TableCell) => inline.push_str(" | "),
            Event::Text(t) if image_depth == 0 => inline.push_str(&t),
            Event::Code(t) => {
                inline.push('`');
                inline.push_str(&t);
                inline.push('`');
            }
            Event::InlineMath(t) | Event::DisplayMath(t) => inline.push_str(&t),
            Event::SoftBreak => inline.push(' '),
            Event::HardBreak => inline.push('\n'),
            Event::TaskListMarker(done) => inline.push_str(if done { "[x] " } else { "[ ] " }),
            // Inline HTML tags are dropped; the text between them stays. Two elements side by
            // side (`<span class="options-api">the data option</span><span
            // class="composition-api">reactivity APIs</span>`, one shown at a time by the site's
            // CSS) are two runs of words, not one glued word.
            Event::InlineHtml(t) => {
                if t.starts_with("</") {
                    closed_inline = true;
                } else if after_close && t.starts_with('<') {
                    inline.push(' ');
                }
            }
            _ => {}
        }
    }
    if let Some((lang, text)) = code.take() {
        b.code(&lang, &text);
    }
    flush(&mut b, &mut inline);
    // Without a title or an h1, a page is named after its file, as Docusaurus (its id) and
    // MkDocs do: typescript-eslint's rule pages open with `## Options` or `## Examples`. An
    // `index`/`README` file's name says nothing: its first heading it is.
    let name = match flavor {
        Flavor::Docusaurus => super::without_number_prefix(file_stem),
        _ => file_stem,
    };
    if !name.eq_ignore_ascii_case("index") && !name.eq_ignore_ascii_case("readme") {
        b.name_over_heading();
    }
    b.finish(front_title, name)
}

/// What CommonMark reads as an indented code block on an MDX page, where it is Markdown
/// indented inside a JSX element: read again, dedented, as text blocks (inline HTML dropped,
/// its text kept) and the code blocks it holds (a fence indented inside `<TabItem>`). `depth`:
/// how many times this text was read so already (0 for the page's own block).
fn mdx_indented_at(text: &str, flavor: Flavor, depth: usize) -> Vec<Block> {
    // Dedented by the least indent (code in a fence keeps its own); text indented deeper still
    // is read the same way again, a few levels at most.
    let indent = |l: &str| l.len() - l.trim_start().len();
    let least = text.lines().filter(|l| !l.trim().is_empty()).map(indent).min().unwrap_or(0);
    let dedented: String =
        text.lines().map(|l| format!("{}\n", &l[indent(l).min(least)..])).collect();
    // Nesting bounded as in the page's own parse (a hostile page's thousands of list markers).
    let dedented = crate::render::limit_nesting(&dedented);
    let mut out = Vec::new();
    let mut cur = String::new();
    // (language, code, indented)
    let mut code: Option<(String, String, bool)> = None;
    let flush = |cur: &mut String, out: &mut Vec<Block>| {
        let lines: Vec<String> =
            cur.split('\n').map(normalize_ws).filter(|l| !l.is_empty()).collect();
        if !lines.is_empty() {
            out.push(Block::Text(lines.join("\n")));
        }
        cur.clear();
    };
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    for event in Parser::new_ext(&dedented, opts) {
        if let Some((_, buf, _)) = code.as_mut() {
            match event {
                Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    let (lang, code, indented) = code.take().unwrap_or_default();
                    if indented && depth < 4 {
                        out.extend(mdx_indented_at(&code, flavor, depth + 1));
                    } else {
                        out.push(Block::Code { lang, code });
                    }
                }
                _ => {}
            }
            continue;
        }
        match event {
            Event::Start(Tag::CodeBlock(kind)) => {
                flush(&mut cur, &mut out);
                code = Some(match kind {
                    CodeBlockKind::Fenced(info) => {
                        (fence_lang(&info).to_string(), String::new(), false)
                    }
                    CodeBlockKind::Indented => (String::new(), String::new(), true),
                });
            }
            Event::Text(t) => cur.push_str(&t),
            Event::Code(t) => {
                cur.push('`');
                cur.push_str(&t);
                cur.push('`');
            }
            Event::Html(t) | Event::InlineHtml(t) => {
                cur.push(' ');
                cur.push_str(&html_text(&t, flavor).join("\n"));
                cur.push(' ');
            }
            Event::SoftBreak => cur.push(' '),
            Event::HardBreak
            | Event::End(
                TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::TableRow,
            ) => cur.push('\n'),
            Event::End(TagEnd::TableCell) => cur.push_str(" | "),
            _ => {}
        }
    }
    flush(&mut cur, &mut out);
    out
}

/// Elements whose content a reader never sees as text (`<head>`: an MDX page's own title and
/// meta tags, which Docusaurus moves into the document's head).
const HIDDEN_ELEMENTS: [&str; 6] = ["script", "style", "svg", "math", "textarea", "head"];

/// Elements that start a line of their own (their opening and closing tags break the text):
/// the HTML reader's block elements, and those it reads on their own (headings, code, list
/// items, rows) or skips (`aside`, `footer`), which a Markdown page shows.
fn is_block_element(name: &str) -> bool {
    super::elements::is_block(name)
        || matches!(
            name,
            "h1" | "h2"
                | "h3"
                | "h4"
                | "h5"
                | "h6"
                | "pre"
                | "li"
                | "tr"
                | "br"
                | "aside"
                | "footer"
        )
}

/// The lines of text a reader sees in a raw HTML block (`<details><summary>Help</summary>`,
/// `<div class="example"><h3>Bad</h3>`): tags dropped, block elements on lines of their own,
/// table cells separated by ` | `, entities decoded; comments and `<script>`/`<style>`/`<svg>`
/// contents are not text. Whitespace collapses as in a browser, except inside `<pre>`. In
/// VitePress a Vue interpolation left there (`<p>Message is: {{ message }}</p>`, a live demo's
/// state) shows its value at run time, never the braces: it is dropped.
pub(crate) fn html_text(html: &str, flavor: Flavor) -> Vec<String> {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    let mut pre = 0usize;
    while let Some(c) = rest.chars().next() {
        if c != '<' {
            let text_end = rest.find('<').unwrap_or(rest.len());
            let mut text = std::borrow::Cow::Borrowed(&rest[..text_end]);
            if flavor == Flavor::VitePress {
                while let Some(open) = text.find("{{") {
                    let Some(close) = text[open..].find("}}") else { break };
                    text = format!("{}{}", &text[..open], &text[open + close + 2..]).into();
                }
            }
            if pre > 0 {
                out.push_str(&text);
            } else {
                out.push_str(&text.replace(['\n', '\r'], " "));
            }
            rest = &rest[text_end..];
            continue;
        }
        if let Some(comment) = rest.strip_prefix("<!--") {
            rest = comment.find("-->").map(|e| &comment[e + 3..]).unwrap_or("");
            continue;
        }
        let closing = rest[1..].starts_with('/');
        let name_start = if closing { 2 } else { 1 };
        let name: String = rest[name_start..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
            // `a < b`, `<!DOCTYPE>`: a lone `<` is text.
            if rest[1..].starts_with('!') || rest[1..].starts_with('?') {
                rest = rest.find('>').map(|e| &rest[e + 1..]).unwrap_or("");
            } else {
                out.push('<');
                rest = &rest[1..];
            }
            continue;
        }
        // The tag's end: the first `>` outside quoted attribute values.
        let mut quote = None;
        let mut end = rest.len();
        for (i, ch) in rest.char_indices().skip(1) {
            match (quote, ch) {
                (Some(q), _) if ch == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(ch),
                (None, '>') => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        let tag = &rest[..end];
        rest = &rest[end..];
        let name = name.to_ascii_lowercase();
        if !closing && !tag.ends_with("/>") && HIDDEN_ELEMENTS.contains(&name.as_str()) {
            let close = format!("</{name}");
            let lower = rest.to_ascii_lowercase();
            rest = match lower.find(&close) {
                Some(at) => rest[at..].find('>').map(|e| &rest[at + e + 1..]).unwrap_or(""),
                None => "",
            };
            continue;
        }
        match name.as_str() {
            "pre" if closing => pre = pre.saturating_sub(1),
            "pre" => pre += 1,
            _ => {}
        }
        if is_block_element(&name) {
            out.push('\n');
        } else if closing && matches!(name.as_str(), "td" | "th") {
            out.push_str(" | ");
        }
    }
    crate::render::decode_entities(&out)
        .split('\n')
        .map(normalize_ws)
        .map(|l| l.trim_end_matches(" |").to_string())
        .filter(|l| !l.is_empty() && l != "|")
        .collect()
}

/// A Markdown heading's normalised text and its anchor, from its raw text (text and code spans
/// joined): an explicit `{#custom-id}` wins (and is reserved so later slugs avoid it), else the
/// flavour's unique slug. In VitePress a trailing attribute list without an id (`{.tip}`,
/// `{.warn data-x=1}`: markdown-it-attrs sets it on the heading) is neither text nor anchor.
/// The demo's page renderer uses it too, so its heading ids are the index's anchors.
pub fn heading_text_and_anchor(raw: &str, slugger: &mut Slugger) -> (String, String) {
    let (text, custom) = split_custom_id(raw);
    let text = match slugger.flavor() {
        Flavor::VitePress => without_attribute_list(&text),
        _ => &text,
    };
    let text = normalize_ws(text);
    let anchor = match custom {
        Some(id) => {
            slugger.reserve(&id);
            id
        }
        None => slugger.slug(&text),
    };
    (text, anchor)
}

/// True for a paragraph that is only an attribute list, `{#id}`, `{.class}` or `{#id .class
/// key=value}` (VitePress's markdown-it-attrs): no text a reader sees.
fn is_attribute_list(text: &str) -> bool {
    let t = text.trim();
    t.strip_prefix('{').and_then(|t| t.strip_suffix('}')).is_some_and(|inner| {
        let inner = inner.trim();
        (inner.starts_with('#') || inner.starts_with('.'))
            && !inner.contains(['{', '}', '\n'])
            && inner.split_whitespace().all(|part| {
                part.len() > 1
                    && (part.starts_with('#') || part.starts_with('.') || part.contains('='))
            })
    })
}

/// `text` with attribute lists written in a site's own markdown-it-attrs delimiters
/// (`markdown.attrs` in a VitePress config: `## Props %{#Properties}%`) rewritten in the default
/// ones (`## Props {#Properties}`), so their ids are anchors and they are not text: at the end
/// of an ATX heading, or alone on a line, outside code fences (VitePress' Markdown is
/// CommonMark's). Other text is left as it is.
pub fn standard_attr_delimiters<'a>(
    text: &'a str,
    left: &str,
    right: &str,
) -> std::borrow::Cow<'a, str> {
    if left.is_empty() || right.is_empty() || !text.contains(left) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut fences = Fences::new(Dialect::CommonMark);
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let t = body.trim();
        if fences.line(body) != Line::Text {
            // Code, kept as it is.
        } else if let Some(open) = t.strip_suffix(right).and_then(|t| t.rfind(left)) {
            let inner = &t[open + left.len()..t.len() - right.len()];
            let list = format!("{{{inner}}}");
            let heading = t.starts_with('#');
            if (heading || open == 0) && is_attribute_list(&list) {
                let start = body.len() - body.trim_start().len();
                out.push_str(&body[..start + open]);
                out.push_str(&list);
                out.push_str(&line[body.len()..]);
                continue;
            }
        }
        out.push_str(line);
    }
    std::borrow::Cow::Owned(out)
}

/// `Title {.class}` → "Title": a trailing attribute list ([`is_attribute_list`]) dropped.
fn without_attribute_list(text: &str) -> &str {
    let t = text.trim_end();
    match t.rfind('{') {
        Some(open) if t.ends_with('}') && is_attribute_list(&t[open..]) => t[..open].trim_end(),
        _ => text,
    }
}

/// `Title {#custom-id .class}` → ("Title", Some("custom-id")).
pub fn split_custom_id(raw: &str) -> (String, Option<String>) {
    let trimmed = raw.trim_end();
    if trimmed.ends_with('}') {
        if let Some(open) = trimmed.rfind('{') {
            let inner = &trimmed[open + 1..trimmed.len() - 1];
            let id = inner
                .split_whitespace()
                .find_map(|t| t.strip_prefix('#'))
                .filter(|id| !id.is_empty());
            if let Some(id) = id {
                return (trimmed[..open].trim_end().to_string(), Some(id.to_string()));
            }
        }
    }
    (raw.to_string(), None)
}

/// The frontmatter keys docent uses (everything else is ignored).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontmatter {
    /// `title`: the page title.
    pub title: Option<String>,
    /// `slug`: Docusaurus' URL override (see [`super::page_url_with_slug`]); VitePress and Docsify
    /// have no such key.
    pub slug: Option<String>,
    /// `description`: the page's one-line summary (llms.txt link descriptions).
    pub description: Option<String>,
    /// `id`: Docusaurus' document id; without a `slug` it names the page in place of the file
    /// (see [`Frontmatter::route_slug`]).
    pub id: Option<String>,
}

impl Frontmatter {
    /// The slug Docusaurus routes the doc at `rel_path` (relative to the docs folder) by, for
    /// [`super::page_url_with_slug`]: the `slug` when there is one, else the `id` as a relative
    /// slug (`docs/ExpectAPI.md` with `id: expect` is `/docs/expect`). A category index
    /// (`index`, `README`, or a file named like its folder) keeps its folder's URL whatever its
    /// id, and an id with a slash (which Docusaurus refuses) is ignored.
    pub fn route_slug(&self, rel_path: &str) -> Option<String> {
        if self.slug.is_some() {
            return self.slug.clone();
        }
        let id = self.id.as_deref().map(str::trim).filter(|id| !id.is_empty())?;
        if id.contains(['/', '\\']) {
            return None;
        }
        let rel = rel_path.replace('\\', "/");
        let mut parts = rel.rsplit('/');
        let file = parts.next().unwrap_or("");
        let stem = file.rsplit_once('.').map(|(s, _)| s).unwrap_or(file);
        let folder = parts.next();
        let category_index = stem.eq_ignore_ascii_case("index")
            || stem.eq_ignore_ascii_case("readme")
            || folder.is_some_and(|f| f.eq_ignore_ascii_case(stem));
        (!category_index).then(|| id.to_string())
    }
}

/// Split off YAML (`---`) or TOML (`+++`) frontmatter; return the keys docent uses and the body
/// (the whole source when there is no frontmatter). The one frontmatter reader shared by the
/// indexer and the demo site.
pub fn frontmatter(source: &str) -> (Frontmatter, &str) {
    let (front, body) = frontmatter_raw(source);
    let fm = front
        .map(|front| Frontmatter {
            title: frontmatter_value(front, "title"),
            slug: frontmatter_value(front, "slug"),
            description: frontmatter_value(front, "description"),
            id: frontmatter_value(front, "id"),
        })
        .unwrap_or_default();
    (fm, body)
}

/// Split off YAML (`---`) or TOML (`+++`) frontmatter: its raw text (None when there is none)
/// and the body.
pub fn frontmatter_raw(source: &str) -> (Option<&str>, &str) {
    let s = source.trim_start_matches('\u{feff}');
    for fence in ["---", "+++"] {
        let Some(rest) = s.strip_prefix(fence) else { continue };
        let Some(rest) = rest.strip_prefix('\n').or_else(|| rest.strip_prefix("\r\n")) else {
            continue;
        };
        // Find the closing fence on its own line.
        let mut offset = 0;
        for line in rest.split_inclusive('\n') {
            if line.trim_end() == fence {
                return (Some(&rest[..offset]), &rest[offset + line.len()..]);
            }
            offset += line.len();
        }
    }
    (None, s)
}

/// Split off frontmatter; return its `title` and the body (see [`frontmatter`]).
pub fn split_frontmatter(source: &str) -> (Option<String>, &str) {
    let (fm, body) = frontmatter(source);
    (fm.title, body)
}

/// A top-level `key: value` (YAML) or `key = value` (TOML) scalar, unquoted; None when absent,
/// empty, or not a one-line string ([`scalar`]: a list, an unclosed quote, a block scalar).
pub(crate) fn frontmatter_value(front: &str, key: &str) -> Option<String> {
    raw_values(front, key).find_map(|v| scalar(v).ok().flatten())
}

/// The raw (trimmed) values of top-level `key: value` / `key = value` lines.
fn raw_values<'a>(front: &'a str, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    front.lines().filter_map(move |line| {
        // Only top-level keys (no indentation).
        let rest = line.strip_prefix(key)?.trim_start();
        let value = rest.strip_prefix(':').or_else(|| rest.strip_prefix('='))?;
        Some(value.trim())
    })
}

/// A frontmatter value as a one-line string: quotes removed (`"a: b"`, `'it''s'`), a trailing
/// `# comment` of an unquoted value dropped. `Ok(None)` for an empty value and for what docent
/// does not read but is valid (a `|` or `>` block scalar); `Err` says why a value is malformed
/// for a string (a list, a map, an unclosed quote).
fn scalar(v: &str) -> Result<Option<String>, &'static str> {
    let v = v.trim();
    let quoted = |q: char| v.strip_prefix(q).map(|inner| inner.strip_suffix(q));
    let text = match (quoted('"'), quoted('\'')) {
        (Some(Some(inner)), _) => inner.replace("\\\"", "\""),
        (_, Some(Some(inner))) => inner.replace("''", "'"),
        (Some(None), _) | (_, Some(None)) => return Err("its quote is not closed"),
        _ if v.starts_with('[') => return Err("it is a list, not a string"),
        _ if v.starts_with('{') => return Err("it is a map, not a string"),
        _ if v.starts_with(['|', '>']) => return Ok(None),
        _ => v.split(" #").next().unwrap_or(v).to_string(),
    };
    let text = text.trim();
    Ok((!text.is_empty()).then(|| text.to_string()))
}

/// What is wrong with the frontmatter keys docent reads (`title`, `slug`, `id`,
/// `description`) in page `source`: one line per malformed value, naming the key, the value
/// and what the page does without it (`slug: [a, b] is not read (it is a list, not a string):
/// the page keeps the URL of its file`). Empty when they are all fine or absent.
pub fn frontmatter_problems(source: &str) -> Vec<String> {
    let Some(front) = frontmatter_raw(source).0 else { return Vec::new() };
    let keys = [
        ("title", "the page is titled by its first heading"),
        ("slug", "the page keeps the URL of its file"),
        ("id", "the page keeps the URL of its file"),
        ("description", "the page has no description"),
    ];
    let mut out = Vec::new();
    for (key, without) in keys {
        for raw in raw_values(front, key) {
            if let Err(why) = scalar(raw) {
                out.push(format!("{key}: {raw} is not read ({why}): {without}"));
            }
        }
    }
    out
}

/// Line-level MDX/admonition clean-up, outside code fences (no frontmatter values, VitePress
/// containers; see [`preprocess`]).
pub fn preprocess_mdx(body: &str) -> String {
    preprocess(body, "", Flavor::VitePress, Dialect::Mdx)
}

/// A fence being read: whether its lines are filtered at its end (twoslash, notation comments).
struct OpenFence {
    twoslash: bool,
    lines: Vec<String>,
    /// A Docusaurus ```` ```bash npm2yarn ```` block: its indent and its opening line without
    /// `npm2yarn`, to repeat the block as the Yarn and pnpm tabs the site shows.
    npm2yarn: Option<(String, String)>,
}

/// A `:::` container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Admonition,
    CodeGroup,
    /// vitepress-plugin-tabs' `::: tabs`, whose tabs open with `== Label` lines.
    Tabs,
}

/// Line-level MDX/admonition clean-up, outside code fences: import/export statements, MDX
/// comments, JSX tags and expressions (`front` is the raw frontmatter for `{frontMatter.x}`),
/// `:::` containers; inside fences, the lines the site hides. `dialect` says where the fences
/// are.
pub fn preprocess(body: &str, front: &str, flavor: Flavor, dialect: Dialect) -> String {
    // MkDocs' indented admonitions and tabs first: their bodies are Markdown, not code.
    let body = &*super::mkdocs::blocks(body, dialect);
    let mut out = String::with_capacity(body.len());
    let mut fences = Fences::new(dialect);
    let mut fence: Option<OpenFence> = None;
    let mut statement_depth: i32 = 0; // open brackets of a multi-line import/export
    let mut in_statement = false;
    let mut in_comment = false;
    let mut containers: Vec<Container> = Vec::new();
    let mut jsx = JsxState { front, flavor, ..Default::default() };

    for line in body.lines() {
        let trimmed = line.trim_start();
        let kind = fences.line(line);
        // Code fences pass through, minus the lines the site hides.
        if let Some(f) = fence.as_mut() {
            if kind == Line::Code {
                f.lines.push(line.to_string());
                continue;
            }
            if kind != Line::Close {
                // The fence's list item ended before it did: its code ends there.
                for l in visible_code_lines(&f.lines, f.twoslash, flavor) {
                    out.push_str(&l);
                    out.push('\n');
                }
                fence = None;
            } else {
                let visible = visible_code_lines(&f.lines, f.twoslash, flavor);
                for l in &visible {
                    out.push_str(l);
                    out.push('\n');
                }
                out.push_str(line);
                out.push('\n');
                if let Some((indent, open)) = &f.npm2yarn {
                    // Only the commands that change: the rest of the block (comments, other
                    // commands) would be the same text three times over.
                    for tool in [Tool::Yarn, Tool::Pnpm] {
                        let changed: Vec<String> = visible
                            .iter()
                            .map(|l| npm_command_for(l, tool))
                            .zip(&visible)
                            .filter(|(c, l)| c != *l)
                            .map(|(c, _)| c)
                            .collect();
                        if changed.is_empty() {
                            continue;
                        }
                        out.push_str(&format!("\n{indent}{}\n\n{open}\n", tool.label()));
                        for l in &changed {
                            out.push_str(l);
                            out.push('\n');
                        }
                        out.push_str(line);
                        out.push('\n');
                    }
                }
                fence = None;
                continue;
            }
        }
        if let Line::Open(opening) = kind {
            let info = opening.info;
            if containers.last() == Some(&Container::CodeGroup) {
                // The tab's title: `[title]` in the info, else the language. Greedy, as
                // VitePress' `/\[(.*)\]/`: `[src/pages/[id].vue]` is the whole path.
                let title = info
                    .find('[')
                    .and_then(|a| info[a + 1..].rfind(']').map(|b| &info[a + 1..a + 1 + b]))
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .unwrap_or_else(|| {
                        Some(fence_lang(info)).filter(|l| !l.is_empty()).unwrap_or("txt")
                    });
                out.push('\n');
                out.push_str(title);
                out.push_str("\n\n");
            }
            if flavor == Flavor::Docusaurus {
                // Docusaurus shows a block's `title="jest.config.js"` above it (the built page's
                // `codeBlockTitle` line, which the HTML reader keeps): a line of its own, at the
                // fence's indent so a block inside a list item stays in it.
                if let Some(title) = code_block_title(info) {
                    out.push('\n');
                    out.push_str(&line[..line.len() - trimmed.len()]);
                    out.push_str(&escape_markdown(title));
                    out.push_str("\n\n");
                }
            }
            let twoslash = info.split_whitespace().any(|w| w == "twoslash");
            // Docusaurus' npm2yarn plugin shows the block as tabs: npm, then Yarn and pnpm
            // (added when the block closes).
            let npm2yarn = (flavor == Flavor::Docusaurus
                && info.split_whitespace().any(|w| w == "npm2yarn"))
            .then(|| {
                let indent = &line[..line.len() - trimmed.len()];
                out.push_str(&format!("\n{indent}npm\n\n"));
                let info: Vec<&str> =
                    info.split_whitespace().filter(|w| *w != "npm2yarn").collect();
                let ticks = &line[opening.at..opening.at + opening.len];
                let open = format!("{indent}{ticks}{}", info.join(" "));
                (indent.to_string(), open)
            });
            fence = Some(OpenFence { twoslash, lines: Vec::new(), npm2yarn });
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if in_statement {
            statement_depth += bracket_balance(line);
            in_statement = statement_unfinished(line, statement_depth);
            out.push('\n');
            continue;
        }
        if starts_statement(line) {
            statement_depth = bracket_balance(line);
            in_statement = statement_unfinished(line, statement_depth);
            out.push('\n');
            continue;
        }
        // {/* MDX comments */} possibly spanning lines, never inside code spans (most lines have
        // none: no copy).
        if !in_comment && !line.contains("{/*") {
            push_unless_markup(&mut out, &mut jsx, &mut containers, line);
            continue;
        }
        let l = strip_mdx_comments(line, &mut in_comment);
        if l.trim().is_empty() && !line.trim().is_empty() {
            out.push('\n');
            continue;
        }
        push_unless_markup(&mut out, &mut jsx, &mut containers, &l);
    }
    if let Some(f) = fence {
        for l in visible_code_lines(&f.lines, f.twoslash, flavor) {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// A package manager of Docusaurus' npm2yarn tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Yarn,
    Pnpm,
}

impl Tool {
    fn label(self) -> &'static str {
        match self {
            Tool::Yarn => "Yarn",
            Tool::Pnpm => "pnpm",
        }
    }
}

/// An `npm`/`npx` command line as Yarn or pnpm would run it (the npm2yarn plugin's tabs); any
/// other line as it is. Covers what docs write: install/add (with dev, global and exact flags),
/// a bare install, ci, uninstall, run, init, npx and other scripts.
fn npm_command_for(line: &str, tool: Tool) -> String {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let words: Vec<&str> = body.split_whitespace().collect();
    let (yarn, pnpm) = (tool == Tool::Yarn, tool == Tool::Pnpm);
    let bin = tool.label().to_ascii_lowercase();
    let rest = |from: usize| words.get(from..).unwrap_or_default().join(" ");
    let join = |parts: &[&str]| {
        let parts: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
        format!("{indent}{}", parts.join(" "))
    };
    match words.as_slice() {
        ["npx", ..] => join(&[&bin, "dlx", &rest(1)]),
        ["npm", "install" | "i" | "add", args @ ..] => {
            let packages = args.iter().any(|a| !a.starts_with('-'));
            let global = args.iter().any(|a| matches!(*a, "-g" | "--global"));
            let mut flags: Vec<&str> = Vec::new();
            for a in args {
                match *a {
                    "--save" | "-S" | "-g" | "--global" => {}
                    "--save-dev" | "-D" if yarn => flags.push("--dev"),
                    "--save-exact" | "-E" if yarn => flags.push("--exact"),
                    "--save-optional" | "-O" if yarn => flags.push("--optional"),
                    "--save-peer" if yarn => flags.push("--peer"),
                    a => flags.push(a),
                }
            }
            let flags = flags.join(" ");
            match (packages, global, yarn) {
                (false, _, _) => join(&[&bin, "install", &flags]),
                (true, true, true) => join(&["yarn global add", &flags]),
                (true, true, false) => join(&["pnpm add -g", &flags]),
                (true, false, _) => join(&[&bin, "add", &flags]),
            }
        }
        ["npm", "ci", args @ ..] => {
            let lock = if pnpm { "--frozen-lockfile" } else { "--immutable" };
            join(&[&bin, "install", lock, &args.join(" ")])
        }
        ["npm", "uninstall" | "un" | "remove" | "rm" | "r", ..] => {
            join(&[&bin, "remove", &rest(2)])
        }
        ["npm", "run" | "run-script", script, ..] if yarn => join(&["yarn", script, &rest(3)]),
        ["npm", "init", ..] if words.len() > 2 && !words[2].starts_with('-') => {
            join(&[&bin, "create", &rest(2)])
        }
        ["npm", cmd, ..] => join(&[&bin, cmd, &rest(2)]),
        _ => line.to_string(),
    }
}

/// A Docusaurus code block's title: `title="x"` or `title='x'` in the fence info
/// (`js tab title="jest.config.js"` → `jest.config.js`), as Docusaurus' theme parses it.
fn code_block_title(info: &str) -> Option<&str> {
    let mut rest = info;
    while let Some(at) = rest.find("title=") {
        let before = rest[..at].chars().next_back();
        let after = &rest[at + "title=".len()..];
        rest = after;
        if before.is_some_and(|c| !c.is_whitespace()) {
            continue; // `subtitle=`, `data-title=`
        }
        let quote = after.chars().next().filter(|q| matches!(q, '"' | '\''))?;
        let end = after[1..].find(quote)?;
        let title = after[1..1 + end].trim();
        return (!title.is_empty()).then_some(title);
    }
    None
}

/// `text` with every ASCII punctuation character backslash-escaped, so Markdown shows it as
/// written (`__mocks__/x.js` stays that, not bold "mocks").
fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_ascii_punctuation() {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The language of a fence info string (`ts twoslash` → `ts`, `js{1,3}` → `js`).
fn fence_lang(info: &str) -> &str {
    info.split(|c: char| c.is_whitespace() || c == '{' || c == ',' || c == '[').next().unwrap_or("")
}

/// The length of the code span starting at `chars[i]` (a backtick run and its matching run), or
/// None when the run is not closed on this line.
fn code_span_len(chars: &[char], i: usize) -> Option<usize> {
    let run = chars[i..].iter().take_while(|&&c| c == '`').count();
    let mut j = i + run;
    while j < chars.len() {
        if chars[j] == '`' {
            let r = chars[j..].iter().take_while(|&&c| c == '`').count();
            if r == run {
                return Some(j + r - i);
            }
            j += r;
        } else {
            j += 1;
        }
    }
    None
}

/// Remove `{/* … */}` outside code spans; `in_comment` carries a comment across lines.
fn strip_mdx_comments(line: &str, in_comment: &mut bool) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    let starts =
        |i: usize, pat: &str| pat.chars().enumerate().all(|(k, p)| chars.get(i + k) == Some(&p));
    while i < chars.len() {
        if *in_comment {
            if starts(i, "*/}") {
                *in_comment = false;
                i += 3;
            } else {
                i += 1;
            }
            continue;
        }
        if chars[i] == '`' {
            let run = chars[i..].iter().take_while(|&&c| c == '`').count();
            let len = code_span_len(&chars, i).unwrap_or(run);
            out.extend(&chars[i..i + len]);
            i += len;
            continue;
        }
        if starts(i, "{/*") {
            *in_comment = true;
            i += 3;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// A fence's lines as the site shows them: twoslash's hidden lines and markers dropped (when the
/// fence is a twoslash one), notation comments (VitePress `// [!code ++]`, Docusaurus
/// `// highlight-next-line`) removed.
fn visible_code_lines(lines: &[String], twoslash: bool, flavor: Flavor) -> Vec<String> {
    let mut lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    if twoslash {
        let marker = |l: &str, m: &str| l.trim().strip_prefix("//").map(str::trim) == Some(m);
        if let Some(cut) =
            lines.iter().rposition(|l| marker(l, "---cut---") || marker(l, "---cut-before---"))
        {
            lines.drain(..=cut);
        }
        if let Some(cut) = lines.iter().position(|l| marker(l, "---cut-after---")) {
            lines.truncate(cut);
        }
        let mut kept = Vec::with_capacity(lines.len());
        let mut hidden = false;
        for l in lines {
            if marker(l, "---cut-start---") {
                hidden = true;
                continue;
            }
            if marker(l, "---cut-end---") {
                hidden = false;
                continue;
            }
            let comment = l.trim().strip_prefix("//").map(str::trim_start);
            let is_marker = match comment {
                // `// @noErrors`, `// @errors: 2322`, `// @filename: a.ts`, ...
                Some(c) if c.starts_with('@') => {
                    c[1..].chars().next().is_some_and(|ch| ch.is_ascii_alphabetic())
                }
                // `// ^?`, `// ^|`, `//    ^^^^`
                Some(c) => c.starts_with('^'),
                None => false,
            };
            if !hidden && !is_marker {
                kept.push(l);
            }
        }
        lines = kept;
    }
    let mut out = Vec::with_capacity(lines.len());
    for l in lines {
        match flavor {
            Flavor::VitePress if l.contains("[!code ") => {
                let cleaned = strip_code_notation(l);
                if !cleaned.trim().is_empty() || l.trim().is_empty() {
                    out.push(cleaned);
                }
            }
            Flavor::Docusaurus if is_magic_comment(l) => {}
            _ => out.push(l.to_string()),
        }
    }
    out
}

/// `const a = 1 // [!code ++]` → `const a = 1` (VitePress' shiki notation transformers).
fn strip_code_notation(line: &str) -> String {
    let Some(at) = line.find("[!code ") else { return line.to_string() };
    let Some(close) = line[at..].find(']').map(|c| at + c + 1) else { return line.to_string() };
    let before = line[..at].trim_end();
    let before = ["//", "<!--", "/*", "#", "--"]
        .iter()
        .find_map(|m| before.strip_suffix(m))
        .unwrap_or(before);
    let after = line[close..].trim_start();
    let after = after.strip_prefix("-->").or_else(|| after.strip_prefix("*/")).unwrap_or(after);
    let mut s = before.trim_end().to_string();
    if !after.trim().is_empty() {
        s.push(' ');
        s.push_str(after.trim());
    }
    s
}

/// Docusaurus' default magic comments, alone on a line: `// highlight-next-line`,
/// `# highlight-start`, `<!-- highlight-end -->`, `{/* highlight-next-line */}`.
fn is_magic_comment(line: &str) -> bool {
    let t = line.trim();
    let inner = ["{/*", "/*", "<!--", "//", "#", "--", "%", ";"]
        .iter()
        .find_map(|m| t.strip_prefix(m))
        .map(|r| r.trim_end_matches("*/}").trim_end_matches("*/").trim_end_matches("-->").trim());
    matches!(inner, Some("highlight-next-line" | "highlight-start" | "highlight-end"))
}

/// One line of Markdown outside code fences and import/export statements: admonition markers
/// become a title paragraph or nothing, JSX components are stripped, the rest is kept.
fn push_unless_markup(
    out: &mut String,
    jsx: &mut JsxState,
    containers: &mut Vec<Container>,
    l: &str,
) {
    let t = l.trim();
    if t.starts_with(":::") {
        if t.bytes().all(|c| c == b':') {
            containers.pop();
            out.push('\n');
            return;
        }
        if let Some((kind, rest)) = admonition_open(t) {
            if kind == "code-group" || kind == "tabs" {
                let c = if kind == "tabs" { Container::Tabs } else { Container::CodeGroup };
                containers.push(c);
                out.push('\n');
                return;
            }
            if jsx.flavor == Flavor::VitePress && (kind == "v-pre" || kind == "raw") {
                // VitePress' `::: v-pre` and `::: raw` wrap content without a box or a title.
                containers.push(Container::Admonition);
                out.push('\n');
                return;
            }
            containers.push(Container::Admonition);
            out.push('\n');
            out.push_str(&rest);
            out.push_str("\n\n");
            return;
        }
    }
    if jsx.flavor == Flavor::VitePress && t.eq_ignore_ascii_case("[[toc]]") {
        // VitePress renders a table of contents here: links to the headings, which are indexed
        // as sections already.
        out.push('\n');
        return;
    }
    if containers.last() == Some(&Container::Tabs) && t.starts_with("==") {
        // `== Playwright` opens a tab: its label is a line of its own.
        let label = t.trim_start_matches('=');
        if label.starts_with([' ', '\t']) && !label.trim().is_empty() {
            out.push('\n');
            out.push_str(label.trim());
            out.push_str("\n\n");
            return;
        }
    }
    jsx.heading = t.starts_with('#') && t.trim_start_matches('#').starts_with([' ', '\t']);
    let cleaned = jsx.strip(l);
    if cleaned.trim().is_empty() && !t.is_empty() {
        out.push('\n');
        return;
    }
    out.push_str(&cleaned);
    out.push('\n');
}

/// Whether `line` opens an MDX `import`/`export` statement (at the start of the line).
pub(crate) fn starts_statement(line: &str) -> bool {
    line.starts_with("import ") || line.starts_with("export ")
}

/// Whether an `import`/`export` statement whose last line is `line` (`depth` brackets open so
/// far) goes on to the next line: brackets still open, a trailing comma or `=`, or a line that
/// stops mid-statement. Prettier wraps two imports on one line as
/// `import A from './_a.md'; import` + `B from './_b.md';`.
pub(crate) fn statement_unfinished(line: &str, depth: i32) -> bool {
    let t = line.trim_end();
    if depth > 0 || t.ends_with(',') || t.ends_with('=') {
        return true;
    }
    // The last statement on the line stops before its module: `… import`, `import A`,
    // `import A from`, `import * as A`. Only that shape: a line of prose that happens to start
    // with "import" or "export" ("import your data into it") goes on no further.
    let last = t.rsplit(';').next().unwrap_or("").trim();
    let ident = |w: &str| {
        w.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
            && w.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
    };
    match last.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["import"] | ["import", "*"] | ["import", "*", "as"] => true,
        ["import", name] | ["import", name, "from"] | ["import", "*", "as", name] => ident(name),
        ["import", "*", "as", name, "from"] => ident(name),
        ["export" | "import", .., "from"] => true,
        _ => false,
    }
}

/// Brackets a line opens minus those it closes.
pub(crate) fn bracket_balance(line: &str) -> i32 {
    line.chars().fold(0, |acc, c| match c {
        '{' | '(' | '[' => acc + 1,
        '}' | ')' | ']' => acc - 1,
        _ => acc,
    })
}

/// `:::tip Title` / `::: warning` / `:::note[Title]` → ("tip", "Tip: Title").
fn admonition_open(t: &str) -> Option<(String, String)> {
    let colons = t.chars().take_while(|&c| c == ':').count();
    if colons < 3 {
        return None;
    }
    let rest = t[colons..].trim();
    let kind: String =
        rest.chars().take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_').collect();
    if kind.is_empty() {
        return None;
    }
    let mut title = rest[kind.len()..].trim();
    if let Some(inner) = title.strip_prefix('[').and_then(|s| s.strip_suffix(']')) {
        title = inner.trim();
    }
    // Drop `{...}` attribute suffixes.
    if let Some(brace) = title.find('{') {
        title = title[..brace].trim();
    }
    let label = admonition_label(&kind, title);
    Some((kind, label))
}

/// "Tip: Title" (or "Tip:") for an admonition of `kind`.
pub(crate) fn admonition_label(kind: &str, title: &str) -> String {
    let mut label: String =
        kind.chars().next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    label.push_str(&kind[kind.chars().next().map(|c| c.len_utf8()).unwrap_or(0)..]);
    if title.is_empty() {
        format!("{label}:")
    } else {
        format!("{label}: {title}")
    }
}

/// Removes JSX component tags (capitalised names, custom elements like `<svg-image>`, `<>`
/// fragments), keeping the text between and the labels a reader sees (`<TabItem label>`);
/// resolves `{frontMatter.key}` expressions.
#[derive(Debug, Default)]
struct JsxState<'a> {
    /// Inside a (possibly multi-line) tag: depth of `{}` and the quote char.
    in_tag: bool,
    brace: i32,
    quote: Option<char>,
    /// The tag read so far.
    tag: String,
    /// Inside a JavaScript function written as an expression (`{() => { … }}`, a render
    /// function's children such as `<BrowserOnly>`'s), over as many lines as it takes: code the
    /// site runs, never text. `brace` and `quote` track it as they do a tag.
    in_expr: bool,
    /// The tag opened after text on its line: its label is read inline, not as a block.
    inline: bool,
    /// The line being read is an ATX heading: its tags show nothing, as site generators leave
    /// a badge's text out of the heading's anchor (`## API <Badge text="beta" />` → `#api`).
    heading: bool,
    /// Inside a code span that an earlier line opened with a run of this many backticks
    /// (0: none), as `` `<my-tag a="1"`` ⏎ ``b="2">` `` in a paragraph: its text is code, not a tag.
    code_run: usize,
    /// The page's raw frontmatter.
    front: &'a str,
    flavor: Flavor,
    /// The last `<Tabs values={…}>`'s (value, label) pairs, for its `<TabItem value>`s.
    tab_labels: Vec<(String, String)>,
}

impl JsxState<'_> {
    fn strip<'l>(&mut self, line: &'l str) -> std::borrow::Cow<'l, str> {
        if !self.in_tag
            && !self.in_expr
            && self.code_run == 0
            && !line.contains('<')
            && !line.contains('{')
            && !line.contains('`')
        {
            // No tag or code span starts or continues on this line: nothing to strip.
            return std::borrow::Cow::Borrowed(line);
        }
        if self.in_expr && self.heading {
            // An expression that never closed (a page MDX would refuse): it ends at the next
            // heading rather than take the rest of the page.
            self.in_expr = false;
            self.brace = 0;
            self.quote = None;
        }
        if self.code_run > 0 && line.trim().is_empty() {
            // A code span does not cross a paragraph break: the backticks were text.
            self.code_run = 0;
        }
        let chars: Vec<char> = line.chars().collect();
        // Where the first `}` at or after each position is, found in one pass from the right:
        // a line of many `{` and no `}` would otherwise be scanned to its end once per brace.
        let closes = next_close_braces(&chars);
        let mut out = String::with_capacity(line.len());
        let mut i = 0;
        if self.code_run > 0 {
            // Verbatim up to the backtick run that closes the span, if this line has it.
            let run = self.code_run;
            let close = (0..chars.len()).find(|&j| {
                chars[j] == '`'
                    && (j == 0 || chars[j - 1] != '`')
                    && chars[j..].iter().take_while(|&&c| c == '`').count() == run
            });
            match close {
                Some(j) => {
                    out.extend(&chars[..j + run]);
                    i = j + run;
                    self.code_run = 0;
                }
                None => return std::borrow::Cow::Borrowed(line),
            }
        }
        while i < chars.len() {
            let c = chars[i];
            if self.in_expr {
                self.track_js(c);
                if c == '}' && self.quote.is_none() && self.brace <= 0 {
                    self.in_expr = false;
                    self.brace = 0;
                }
                i += 1;
                continue;
            }
            if self.in_tag {
                self.tag.push(c);
                self.track_js(c);
                match c {
                    '>' if self.quote.is_none() && self.brace <= 0 => {
                        self.in_tag = false;
                        self.brace = 0;
                        if self.tag.starts_with("<Tabs")
                            && self.tag[5..].starts_with(|c: char| c.is_whitespace() || c == '>')
                        {
                            self.tab_labels = tab_values(&self.tag);
                        }
                        if let Some(label) =
                            tag_label(&self.tag, &self.tab_labels).filter(|_| !self.heading)
                        {
                            let sep = if self.inline { " " } else { "\n\n" };
                            out.push_str(sep);
                            out.push_str(&literal_text(&label));
                            out.push_str(sep);
                        }
                        self.tag.clear();
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            if c == '`' {
                // Inline code: copy verbatim.
                if let Some(len) = code_span_len(&chars, i) {
                    out.extend(&chars[i..i + len]);
                    i += len;
                    continue;
                }
                // Not closed on this line: the span may go on over the next ones.
                self.code_run = chars[i..].iter().take_while(|&&c| c == '`').count();
                out.extend(&chars[i..]);
                break;
            }
            if c == '{' && self.flavor == Flavor::Docusaurus && is_function_expression(&chars[i..])
            {
                self.in_expr = true;
                self.brace = 1;
                self.quote = None;
                i += 1;
                continue;
            }
            if c == '{' {
                let close = closes[i].map(|j| j - i);
                if let Some((len, value)) = close.and_then(|end| self.expression(&chars[i..], end))
                {
                    out.push_str(&value);
                    i += len;
                    continue;
                }
            }
            let jsx_element = |chars: &[char]| {
                self.flavor == Flavor::Docusaurus
                    && (has_expression_attribute(chars, i) || opens_unclosed_element(chars, i))
            };
            if c == '<'
                && !is_escaped(&chars, i)
                && (is_component_tag(&chars, i) || jsx_element(&chars))
            {
                self.in_tag = true;
                self.inline = !out.trim().is_empty();
                self.brace = 0;
                self.quote = None;
                self.tag.clear();
                self.tag.push('<');
                i += 1;
                continue;
            }
            out.push(c);
            i += 1;
        }
        out.into()
    }

    /// Follow `c` through JavaScript (a tag's attributes, an expression): its quotes and
    /// braces. A `}` or `>` left with no quote open was outside every string.
    fn track_js(&mut self, c: char) {
        match (self.quote, c) {
            (Some(q), _) if c == q => self.quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'' | '`') => self.quote = Some(c),
            (None, '{') => self.brace += 1,
            (None, '}') => self.brace -= 1,
            _ => {}
        }
    }

    /// `{frontMatter.title}` (MDX) or `{{ $frontmatter.title }}` (VitePress) at the start of
    /// `chars`, whose first `}` is at `end`: its length and the frontmatter value ("" for
    /// another MDX member expression such as `{props.name}`, which the site fills in at render
    /// time). Such expressions are short: one longer than [`MAX_EXPRESSION`] is not one.
    fn expression(&self, chars: &[char], end: usize) -> Option<(usize, String)> {
        if end > MAX_EXPRESSION {
            return None;
        }
        let vue = match self.flavor {
            Flavor::VitePress => true,
            Flavor::Docusaurus => false,
            Flavor::Docsify | Flavor::GitHub => return None,
        };
        let (inner, len) = if vue {
            if chars.get(1) != Some(&'{') || chars.get(end + 1) != Some(&'}') {
                return None;
            }
            (chars[2..end].iter().collect::<String>(), end + 2)
        } else {
            (chars[1..end].iter().collect::<String>(), end + 1)
        };
        let inner = inner.trim();
        if !vue {
            // A string literal shows as its text: `is{' '}` (JSX's way to keep a space).
            let literal = ['\'', '"', '`'].iter().find_map(|&q| {
                inner.strip_prefix(q)?.strip_suffix(q).filter(|t| !t.contains([q, '\\', '$']))
            });
            if let Some(text) = literal {
                return Some((len, text.to_string()));
            }
        }
        let path: Vec<&str> = inner.split('.').collect();
        let ident = |s: &str| {
            s.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
                && s.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        };
        if path.len() < 2 || !path.iter().all(|p| ident(p)) {
            return None;
        }
        let front = if vue { "$frontmatter" } else { "frontMatter" };
        if path[0] == front && path.len() == 2 {
            return Some((len, frontmatter_value(self.front, path[1]).unwrap_or_default()));
        }
        // Another VitePress interpolation is left alone; another MDX expression shows nothing
        // docent can know.
        (!vue).then(|| (len, String::new()))
    }
}

/// The longest `{…}` read as a frontmatter reference or a string literal, in characters.
const MAX_EXPRESSION: usize = 1000;

/// For each position of `chars`, the position of the first `}` at or after it.
fn next_close_braces(chars: &[char]) -> Vec<Option<usize>> {
    let mut out = vec![None; chars.len()];
    let mut next = None;
    for (i, &c) in chars.iter().enumerate().rev() {
        if c == '}' {
            next = Some(i);
        }
        out[i] = next;
    }
    out
}

/// Is `chars[i]` (a `<`) the start of a component tag: `<Name`, `</Name`, `<my-element`, `<>`,
/// `</>`? An opening tag right after a word (`Vec<String>`) is text.
fn is_component_tag(chars: &[char], i: usize) -> bool {
    let closing = chars.get(i + 1) == Some(&'/');
    let start = if closing { i + 2 } else { i + 1 };
    if chars.get(start) == Some(&'>') {
        return true;
    }
    let name: String = chars[start.min(chars.len())..]
        .iter()
        .take_while(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
        .collect();
    let Some(first) = name.chars().next() else { return false };
    let custom_element = first.is_ascii_lowercase() && name.contains('-');
    if !(first.is_ascii_uppercase() || custom_element) {
        return false;
    }
    let after_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
    closing || custom_element || !after_word
}

/// Is `chars[i]` (a `<`) an HTML element written as JSX, with an expression attribute
/// (`<ins style={{background: 'red'}} />`)? In MDX it renders as an element, never as text; its
/// tag is not HTML a Markdown parser would recognise, so it must be stripped like a component's.
fn has_expression_attribute(chars: &[char], i: usize) -> bool {
    if !chars.get(i + 1).is_some_and(|c| c.is_ascii_lowercase()) {
        return false;
    }
    let mut depth = 0i32;
    let mut quote = None;
    for k in i + 1..chars.len() {
        let c = chars[k];
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') if depth > 0 || chars[k - 1] == '=' => quote = Some(c),
            (None, '{') => {
                if depth == 0 && chars[k - 1] == '=' {
                    return true;
                }
                depth += 1;
            }
            (None, '}') => depth -= 1,
            (None, '>' | '<') if depth <= 0 => return false,
            _ => {}
        }
    }
    false
}

/// Is `chars[i]` (a `<`) the start of an HTML element whose tag goes on over the next lines
/// (`<img` ⏎ `src={require('./x.png').default}` ⏎ `/>`)? MDX reads it as JSX, whatever its
/// attributes; a Markdown parser sees a line of text (only block elements open HTML blocks).
fn opens_unclosed_element(chars: &[char], i: usize) -> bool {
    if !chars.get(i + 1).is_some_and(|c| c.is_ascii_lowercase()) {
        return false;
    }
    let mut k = i + 1;
    while chars.get(k).is_some_and(|c| c.is_ascii_alphanumeric() || *c == '-') {
        k += 1;
    }
    if chars.get(k).is_some_and(|c| !c.is_whitespace()) {
        return false;
    }
    let mut depth = 0i32;
    let mut quote = None;
    for &c in &chars[k..] {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '{') => depth += 1,
            (None, '}') => depth -= 1,
            (None, '>' | '<') if depth <= 0 => return false,
            _ => {}
        }
    }
    true
}

/// Does `chars` (from a `{`) open a function (`{() => {`, `{(props) => (`, `{function () {`,
/// `{x => …}`)? In MDX that is code a component calls, never text.
fn is_function_expression(chars: &[char]) -> bool {
    let rest: String = chars.iter().skip(1).take(200).collect();
    let rest = rest.trim_start();
    if rest.starts_with("function")
        && rest[8..].starts_with(|c: char| c.is_whitespace() || c == '(')
    {
        return true;
    }
    let head = if rest.starts_with('(') {
        match rest.find(')') {
            Some(end) => &rest[end + 1..],
            None => return false,
        }
    } else {
        let ident = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'));
        match ident {
            Some(n) if n > 0 => &rest[n..],
            _ => return false,
        }
    };
    head.trim_start().starts_with("=>")
}

/// Is `chars[i]` escaped by a backslash (an odd run of them before it)? `\<name>` is the
/// literal text `<name>`, never a tag.
fn is_escaped(chars: &[char], i: usize) -> bool {
    chars[..i].iter().rev().take_while(|&&c| c == '\\').count() % 2 == 1
}

/// Attributes whose string value a component shows as text (a card's `title` and
/// `description`, a badge's `text`), in the order they are read out. Links, icons, ids and
/// styling (`href`, `icon`, `type`…) are not text.
const TEXT_ATTRS: [&str; 9] = [
    "title",
    "label",
    "text",
    "heading",
    "header",
    "subtitle",
    "description",
    "summary",
    "caption",
];

/// The tabs named by `<Tabs values={[{label: 'Apple', value: 'apple'}, …]}>`, Docusaurus' older
/// way of labelling tabs: (value, label) pairs, in order.
fn tab_values(tag: &str) -> Vec<(String, String)> {
    let Some(at) = tag.find("values") else { return Vec::new() };
    let mut out = Vec::new();
    let mut rest = &tag[at..];
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        let object = &rest[open + 1..open + close];
        if let (Some(value), Some(label)) = (js_prop(object, "value"), js_prop(object, "label")) {
            out.push((value, label));
        }
        rest = &rest[open + close + 1..];
    }
    out
}

/// A string property of a JS object literal's inside: `label: 'Apple'` → `Apple`.
fn js_prop(object: &str, name: &str) -> Option<String> {
    let boundary = |c: Option<char>| c.is_none_or(|c| c.is_whitespace() || c == ',' || c == '{');
    quoted_value(object, name, ':', boundary)
}

/// The text a reader sees for a component's own tag: a `<TabItem>`'s label (or value), an
/// `<Admonition>`'s or Starlight `<Aside>`'s kind and title, and for any other component its
/// text attributes ([`TEXT_ATTRS`]): `<LinkCard title="X" description="Y" />` → "X: Y".
fn tag_label(tag: &str, tabs: &[(String, String)]) -> Option<String> {
    let inner = tag.strip_prefix('<')?;
    if inner.starts_with('/') {
        return None;
    }
    let name_end = inner.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(inner.len());
    match &inner[..name_end] {
        "TabItem" => attr(tag, "label").or_else(|| {
            let value = attr(tag, "value")?;
            // The label `<Tabs values>` gave this value, else the value itself.
            Some(tabs.iter().find(|(v, _)| *v == value).map_or(value, |(_, l)| l.clone()))
        }),
        "Admonition" | "Aside" => {
            let kind = attr(tag, "type").unwrap_or_else(|| "note".into());
            Some(admonition_label(&kind, attr(tag, "title").as_deref().unwrap_or("")))
        }
        _ => {
            let texts: Vec<String> = TEXT_ATTRS.iter().filter_map(|a| attr(tag, a)).collect();
            match texts.as_slice() {
                [] => None,
                [one] => Some(one.clone()),
                [first, rest @ ..] => {
                    let colon = if first.ends_with(['.', ':', '?', '!']) { "" } else { ":" };
                    Some(format!("{first}{colon} {}", rest.join(" ")))
                }
            }
        }
    }
}

/// `text` as Markdown that reads as itself: a label such as `# 1` or `> note` (an attribute's
/// value) must not open a heading, quote, list or fence, nor bring in HTML or links.
fn literal_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if matches!(c, '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '~' | '!')
            || (out.is_empty() && matches!(c, '-' | '+' | '='))
        {
            out.push('\\');
        }
        out.push(c);
    }
    // "1. x" would open an ordered list.
    if let Some(i) =
        out.find(['.', ')']).filter(|&i| i > 0 && out[..i].bytes().all(|b| b.is_ascii_digit()))
    {
        out.insert(i, '\\');
    }
    out
}

/// A string attribute's value: `name="v"`, `name='v'` or `name={'v'}` / `name={"v"}`.
fn attr(tag: &str, name: &str) -> Option<String> {
    quoted_value(tag, name, '=', |c| c.is_some_and(char::is_whitespace))
}

/// The quoted string after the first `name` that `boundary` accepts what stands before (the
/// character, `None` at the start) and that `sep` follows: `title="X"` (`=`), `label: 'X'` (`:`).
/// After `=` a JSX expression's brace is skipped (`title={"X"}`). Whitespace is normalised;
/// `None` when there is none, it is empty, or the value is not a string.
fn quoted_value(
    s: &str,
    name: &str,
    sep: char,
    boundary: impl Fn(Option<char>) -> bool,
) -> Option<String> {
    let mut from = 0;
    while let Some(pos) = s[from..].find(name).map(|p| p + from) {
        from = pos + name.len();
        let before_ok = boundary(s[..pos].chars().next_back());
        let Some(rest) = s[from..].trim_start().strip_prefix(sep).filter(|_| before_ok) else {
            continue;
        };
        let rest = rest.trim_start();
        let rest = match sep {
            '=' => rest.strip_prefix('{').map(str::trim_start).unwrap_or(rest),
            _ => rest,
        };
        let q = rest.chars().next().filter(|c| matches!(c, '"' | '\'' | '`'))?;
        let value = &rest[1..];
        let value = &value[..value.find(q)?];
        return Some(normalize_ws(value)).filter(|v| !v.is_empty());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Block;

    #[test]
    fn a_line_opening_thousands_of_lists_nests_only_so_deep_and_keeps_its_text() {
        let src =
            format!("# Deep\n\n{}deep item\n{}\nafter\n", "- ".repeat(20_000), "line\n".repeat(50));
        let p = parse(&src, Flavor::GitHub, "x");
        let text: Vec<String> =
            p.sections.iter().flat_map(|s| &s.blocks).map(Block::render).collect();
        let text = text.join("\n");
        assert!(
            text.contains("deep item") && text.contains("after"),
            "{}",
            &text[..200.min(text.len())]
        );
        // Past the 128th marker the rest of the line is text, not 20,000 nested lists.
        assert!(text.contains("- - - - deep item"), "{}", &text[..200.min(text.len())]);
    }

    #[test]
    fn tabs_labelled_by_the_tabs_values_prop_show_those_labels() {
        let src = "# Fruit\n\n<Tabs\n  defaultValue=\"apple\"\n  values={[\n    {label: 'Apple', value: 'apple'},\n    { value: \"orange\", label: \"Orange juice\" },\n    {label: `Banana`, value: `banana`},\n  ]}>\n<TabItem value=\"apple\">This is an apple.</TabItem>\n<TabItem value=\"orange\">This is an orange.</TabItem>\n<TabItem value=\"banana\">This is a banana.</TabItem>\n<TabItem value=\"kiwi\">No label for it.</TabItem>\n</Tabs>\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        let text: Vec<String> = p.sections[0].blocks.iter().map(Block::render).collect();
        let text = text.join(" | ");
        for want in [
            "Apple | This is an apple.",
            "Orange juice | This is an orange.",
            "Banana | This is a banana.",
            "kiwi | No label for it.",
        ] {
            assert!(text.contains(want), "{want:?} in {text:?}");
        }
        assert!(!text.contains("values") && !text.contains("defaultValue"), "{text}");
    }

    #[test]
    fn a_docusaurus_npm2yarn_block_is_read_as_its_npm_yarn_and_pnpm_tabs() {
        let src = "# Install\n\n```bash npm2yarn\n# the runner\nnpm install --save-dev jest\n```\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        let blocks: Vec<String> = p.sections[0].blocks.iter().map(Block::render).collect();
        assert_eq!(
            blocks,
            vec![
                "npm",
                "```bash\n# the runner\nnpm install --save-dev jest\n```",
                "Yarn",
                "```bash\nyarn add --dev jest\n```",
                "pnpm",
                "```bash\npnpm add --save-dev jest\n```",
            ]
        );
        // GitHub shows one block, as written.
        let p = parse(src, Flavor::GitHub, "x");
        assert_eq!(p.sections[0].blocks.len(), 1);
        let cases = [
            ("npm install", "yarn install", "pnpm install"),
            ("npm i -g docusaurus", "yarn global add docusaurus", "pnpm add -g docusaurus"),
            ("npm install --save react", "yarn add react", "pnpm add react"),
            ("npm run build -- --out x", "yarn build -- --out x", "pnpm run build -- --out x"),
            ("npm uninstall jest", "yarn remove jest", "pnpm remove jest"),
            (
                "npm init docusaurus@latest",
                "yarn create docusaurus@latest",
                "pnpm create docusaurus@latest",
            ),
            ("npx jest --init", "yarn dlx jest --init", "pnpm dlx jest --init"),
            ("npm ci", "yarn install --immutable", "pnpm install --frozen-lockfile"),
            ("  npm test", "  yarn test", "  pnpm test"),
            ("# a comment", "# a comment", "# a comment"),
        ];
        for (npm, yarn, pnpm) in cases {
            assert_eq!(npm_command_for(npm, Tool::Yarn), yarn, "{npm}");
            assert_eq!(npm_command_for(npm, Tool::Pnpm), pnpm, "{npm}");
        }
    }

    #[test]
    fn a_docusaurus_code_block_title_is_a_line_before_the_block() {
        // Jest's webpack guide: which file each block goes in is only in the titles.
        let src = "# W\n\nAnd the mock files themselves:\n\n```js title=\"__mocks__/styleMock.js\"\nmodule.exports = {};\n```\n\n- In a list:\n\n  ```ts tab title='jest.config.ts'\n  export default {};\n  ```\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        let blocks: Vec<String> = p.sections[0].blocks.iter().map(Block::render).collect();
        assert_eq!(
            blocks,
            vec![
                "And the mock files themselves:".to_string(),
                "__mocks__/styleMock.js".to_string(),
                "```js\nmodule.exports = {};\n```".to_string(),
                "- In a list: jest.config.ts".to_string(),
                "```ts\nexport default {};\n```".to_string(),
            ]
        );
        // GitHub shows no title; `subtitle=` is not one; an unquoted one is not parsed.
        for (src, flavor) in [
            ("# W\n\n```js title=\"a.js\"\nx\n```\n", Flavor::GitHub),
            ("# W\n\n```js subtitle=\"a.js\"\nx\n```\n", Flavor::Docusaurus),
            ("# W\n\n```js title=a.js\nx\n```\n", Flavor::Docusaurus),
        ] {
            let p = parse(src, flavor, "x");
            assert_eq!(p.sections[0].blocks.len(), 1, "{src}");
        }
    }

    #[test]
    fn a_docusaurus_id_routes_the_page_when_there_is_no_slug() {
        let route = |src: &str, rel: &str| frontmatter(src).0.route_slug(rel);
        // Jest's `docs/ExpectAPI.md` is served at `/docs/expect`.
        assert_eq!(
            route("---\nid: expect\ntitle: Expect\n---\n", "ExpectAPI.md").as_deref(),
            Some("expect")
        );
        assert_eq!(route("---\ntitle: X\nid: 'cli'\n---\n", "api/CLI.mdx").as_deref(), Some("cli"));
        // A slug wins; no id, no slug: the file's own URL.
        assert_eq!(route("---\nid: a\nslug: /b\n---\n", "x.md").as_deref(), Some("/b"));
        assert_eq!(route("---\ntitle: X\n---\n", "x.md"), None);
        // A category index keeps its folder's URL; an id with a slash is refused by Docusaurus.
        for rel in ["guide/index.md", "guide/README.md", "guide/Guide.md"] {
            assert_eq!(route("---\nid: overview\n---\n", rel), None, "{rel}");
        }
        assert_eq!(route("---\nid: a/b\n---\n", "x.md"), None);
        let url = |src: &str, rel: &str| {
            super::super::page_url_with_slug(
                rel,
                route(src, rel).as_deref(),
                None,
                super::super::UrlStyle::Html,
            )
        };
        assert_eq!(url("---\nid: expect\n---\n", "ExpectAPI.md"), "expect.html");
        assert_eq!(url("---\nid: mocks\n---\n", "guide/ManualMocks.md"), "guide/mocks.html");
    }

    #[test]
    fn frontmatter_gives_title_and_slug_from_yaml_or_toml() {
        let (fm, body) = frontmatter("---\ntitle: \"Intro: the basics\"\nslug: /custom/path\nsidebar_position: 2\n---\n# Hi\n");
        assert_eq!(
            fm,
            Frontmatter {
                title: Some("Intro: the basics".into()),
                slug: Some("/custom/path".into()),
                description: None,
                id: None,
            }
        );
        assert_eq!(body, "# Hi\n");
        let (fm, _) = frontmatter("+++\nslug = 'relative-one'\n+++\ntext\n");
        assert_eq!(fm.slug.as_deref(), Some("relative-one"));
        assert_eq!(fm.title, None);
        // Indented keys belong to nested maps; `slugs:` is another key; no frontmatter at all.
        let (fm, _) = frontmatter("---\nmeta:\n  slug: nested\nslugs: x\n---\n");
        assert_eq!(fm.slug, None);
        let (fm, body) = frontmatter("# No frontmatter\nslug: not-a-key\n");
        assert_eq!((fm, body), (Frontmatter::default(), "# No frontmatter\nslug: not-a-key\n"));
    }

    #[test]
    fn a_vitepress_heading_s_class_attribute_is_neither_text_nor_anchor() {
        let md = "# A\n\n## Styled {.tip}\n\nstyled text\n\n## Both {#both-id .warn}\n\nboth\n\n## Set {a} and {b}\n\nsets\n";
        let p = parse(md, Flavor::VitePress, "a");
        let heads: Vec<(&str, &str)> =
            p.sections.iter().map(|s| (s.heading.as_str(), s.anchor.as_str())).collect();
        assert!(heads.contains(&("Styled", "styled")), "{heads:?}");
        assert!(heads.contains(&("Both", "both-id")), "{heads:?}");
        assert!(heads.contains(&("Set {a} and {b}", "set-a-and-b")), "{heads:?}");
    }

    #[test]
    fn a_site_s_own_attribute_delimiters_become_the_default_ones() {
        let md = "## Props %{#Properties}%\n\n%{.tip}%\n\n```md\n## Code %{#x}%\n```\n\nRatio 5%{#not}% of text\n## Set %{a}%\n";
        let out = standard_attr_delimiters(md, "%{", "}%");
        assert_eq!(
            out,
            "## Props {#Properties}\n\n{.tip}\n\n```md\n## Code %{#x}%\n```\n\nRatio 5%{#not}% of text\n## Set %{a}%\n"
        );
        let p = parse(&out, Flavor::VitePress, "p");
        assert_eq!(
            (p.sections[0].heading.as_str(), p.sections[0].anchor.as_str()),
            ("Props", "Properties")
        );
        assert!(matches!(
            standard_attr_delimiters("## A {#a}", "%{", "}%"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn malformed_frontmatter_values_are_not_read_and_are_named() {
        let page = "---\nslug: [a, b]\ntitle: \"unclosed\nid: {x: 1}\ndescription: >\n  folded\n---\n# Heading\n";
        let (fm, _) = frontmatter(page);
        assert_eq!(fm, Frontmatter::default(), "none of them is a string");
        let problems = frontmatter_problems(page);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert_eq!(
            problems[1],
            "slug: [a, b] is not read (it is a list, not a string): the page keeps the URL of its file"
        );
        assert!(problems[0].starts_with("title: \"unclosed is not read (its quote is not closed)"));
        assert!(problems[2].contains("it is a map"), "{problems:?}");
        assert_eq!(parse(page, Flavor::Docusaurus, "p").title, "Heading");
        // Well-formed values: no problems; a comment after an unquoted value is not its text.
        let fine = "---\ntitle: 'It''s [not] a list'\nslug: /a/b # moved in 2.0\n---\n";
        assert!(frontmatter_problems(fine).is_empty());
        assert_eq!(frontmatter(fine).0.title.as_deref(), Some("It's [not] a list"));
        assert_eq!(frontmatter(fine).0.slug.as_deref(), Some("/a/b"));
    }

    #[test]
    fn frontmatter_title_wins_and_is_not_indexed() {
        let p = parse(
            "---\ntitle: \"Config: the basics\"\nsidebar: true\n---\n\n# Heading\n\nBody text.\n",
            Flavor::VitePress,
            "x",
        );
        assert_eq!(p.title, "Config: the basics");
        let all: String =
            p.sections.iter().flat_map(|s| s.blocks.iter().map(|b| b.render())).collect();
        assert!(!all.contains("sidebar"));
        assert!(all.contains("Body text."));
    }

    #[test]
    fn a_vitepress_attribute_list_on_its_own_line_is_not_text() {
        let md = "# Browser\n\nRun some tests in Node:\n\n{#projects-config}\n\n```ts\nx()\n```\n\n{.tip data-x=1}\n\nSet {#not-alone} in text, or {a} b.\n";
        let all = |f| {
            parse(md, f, "x")
                .sections
                .iter()
                .flat_map(|s| s.blocks.iter().map(|b| b.render()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let vp = all(Flavor::VitePress);
        assert!(!vp.contains("projects-config") && !vp.contains("data-x"), "{vp}");
        assert!(vp.contains("Set {#not-alone} in text, or {a} b."), "{vp}");
        // Elsewhere the braces are text (GitHub shows them).
        assert!(all(Flavor::GitHub).contains("{#projects-config}"));
    }

    #[test]
    fn custom_ids_are_honoured_and_stripped_from_the_heading() {
        let p = parse("# Top\n\n## Install it {#setup}\n\ntext\n", Flavor::Docusaurus, "x");
        let s = &p.sections[1];
        assert_eq!(s.heading, "Install it");
        assert_eq!(s.anchor, "setup");
    }

    #[test]
    fn mdx_imports_exports_and_components_are_dropped_but_their_children_kept() {
        let src = "import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\nexport const meta = {\n  a: 1,\n};\n\n# Install\n\n<Tabs groupId=\"os\">\n<TabItem value=\"mac\" label=\"macOS\">\n\nRun `brew install foo`.\n\n</TabItem>\n</Tabs>\n\n{/* hidden note */}\nInline <Badge text=\"beta\" /> badge.\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        let all: Vec<String> =
            p.sections.iter().flat_map(|s| s.blocks.iter().map(|b| b.render())).collect();
        let joined = all.join("\n");
        assert!(joined.contains("Run `brew install foo`."), "{joined}");
        assert!(joined.contains("Inline beta badge."), "{joined}");
        for bad in ["import", "export", "TabItem", "groupId", "hidden note", "Badge", "a: 1"] {
            assert!(!joined.contains(bad), "{bad} leaked into {joined}");
        }
    }

    #[test]
    fn admonitions_are_kept_as_text() {
        let p = parse(
            "# A\n\n:::tip Pro tip\nUse the cache.\n:::\n\n::: warning\nCareful.\n:::\n",
            Flavor::VitePress,
            "x",
        );
        let blocks = &p.sections[0].blocks;
        let texts: Vec<String> = blocks.iter().map(|b| b.render()).collect();
        assert!(texts.contains(&"Tip: Pro tip".to_string()), "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("Use the cache.")));
        assert!(texts.contains(&"Warning:".to_string()), "{texts:?}");
        assert!(!texts.iter().any(|t| t.contains(":::")));
    }

    #[test]
    fn code_fences_are_kept_whole_even_with_jsx_looking_content() {
        let src = "# A\n\n```tsx\nimport X from 'y'\n<Foo bar={1} />\n\n:::tip\n```\n";
        let p = parse(src, Flavor::VitePress, "x");
        assert_eq!(
            p.sections[0].blocks,
            vec![Block::Code {
                lang: "tsx".into(),
                code: "import X from 'y'\n<Foo bar={1} />\n\n:::tip".into()
            }]
        );
    }

    #[test]
    fn vitepress_and_docusaurus_anchors_differ_for_the_same_heading() {
        let src = "# Guide\n\n## What's new in v2.0?\n\nx\n\n## What's new in v2.0?\n\ny\n";
        let v = parse(src, Flavor::VitePress, "x");
        let d = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(v.sections[1].anchor, "what-s-new-in-v2-0");
        assert_eq!(v.sections[2].anchor, "what-s-new-in-v2-0-1");
        assert_eq!(d.sections[1].anchor, "whats-new-in-v20");
        assert_eq!(d.sections[2].anchor, "whats-new-in-v20-1");
    }

    #[test]
    fn headings_with_inline_code_slug_from_their_text() {
        let p = parse("## The `--locked` flag\n\nx\n", Flavor::Docusaurus, "x");
        assert_eq!(p.sections[0].heading, "The --locked flag");
        assert_eq!(p.sections[0].anchor, "the---locked-flag");
    }

    #[test]
    fn lists_and_tables_become_readable_lines() {
        let p = parse(
            "# T\n\n- one\n- two `x`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
            Flavor::VitePress,
            "x",
        );
        let texts: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert!(texts.contains(&"- one".to_string()), "{texts:?}");
        assert!(texts.contains(&"- two `x`".to_string()), "{texts:?}");
        assert!(texts.iter().any(|t| t.starts_with("1 | 2")), "{texts:?}");
    }

    fn all_text(p: &Page) -> String {
        p.sections
            .iter()
            .flat_map(|s| s.blocks.iter().map(|b| b.render()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn mdx_comments_are_removed_but_not_inside_inline_code_or_fences() {
        let src = "# A\n\nUse a MDX comment `{/* truncate */}` instead.{/* gone */} Kept.\n\n{/* a\nmulti-line comment */}\nAfter.\n\n```mdx\n{/* shown */}\n```\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        let all = all_text(&p);
        assert!(all.contains("Use a MDX comment `{/* truncate */}` instead. Kept."), "{all}");
        assert!(all.contains("```mdx\n{/* shown */}\n```"), "{all}");
        assert!(
            all.contains("After.") && !all.contains("gone") && !all.contains("multi-line"),
            "{all}"
        );
    }

    #[test]
    fn jsx_string_expressions_are_their_text_and_head_is_not_text() {
        let src = "# A\n\nThe range supported is{' '}\n<code>{pkg.range}</code> and{\" \"}more.\n";
        let all = all_text(&parse(src, Flavor::Docusaurus, "a"));
        assert_eq!(all, "The range supported is and more.");
        // Nor is an MDX page's `<head>` text.
        let src = "<head>\n  <title>Ionic Item: Input Item</title>\n  <meta name=\"description\" content=\"x\" />\n</head>\n\n# Item\n\nItems are elements.\n";
        assert_eq!(all_text(&parse(src, Flavor::Docusaurus, "item")), "Items are elements.");
    }

    #[test]
    fn inline_elements_side_by_side_do_not_glue_their_words() {
        let src = "# A\n\nDeclare it with <span class=\"options-api\">the data option</span><span class=\"composition-api\">reactivity APIs</span>. A <b>bold</b>word stays.\n";
        let all = all_text(&parse(src, Flavor::VitePress, "a"));
        assert_eq!(all, "Declare it with the data option reactivity APIs. A boldword stays.");
    }

    #[test]
    fn only_a_statement_cut_before_its_module_goes_on_to_the_next_line() {
        for (line, goes_on) in [
            ("import A from './_a.md'; import", true),
            ("import Kotlin", true),
            ("import Kotlin from", true),
            ("import * as K from", true),
            ("export { a, b } from", true),
            ("import {", true),
            ("import A from './a.md';", false),
            ("import your data into the app", false),
            ("export the settings as", false),
            ("export default Page;", false),
        ] {
            let depth = bracket_balance(line);
            assert_eq!(statement_unfinished(line, depth), goes_on, "{line}");
        }
    }

    #[test]
    fn a_github_alert_keeps_its_label_as_a_container_does() {
        let src = "# A\n\n> [!WARNING]\n> Back up the store first.\n\n::: warning\nBack up.\n:::\n";
        let p = parse(src, Flavor::VitePress, "a");
        let texts: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(texts, ["Warning:", "Back up the store first.", "Warning:", "Back up."]);
    }

    #[test]
    fn a_page_without_title_or_h1_is_named_after_its_file() {
        let src = "## Options\n\nText.\n\n## Examples\n\nMore.\n";
        assert_eq!(
            parse_with(src, Flavor::Docusaurus, "rules/no-floating-promises.mdx", &NoIncludes)
                .title,
            "no-floating-promises"
        );
        // Docusaurus' id has no number prefix.
        assert_eq!(
            parse_with(src, Flavor::Docusaurus, "guide/02-setup.md", &NoIncludes).title,
            "setup"
        );
        assert_eq!(
            parse_with(src, Flavor::VitePress, "guide/routing.md", &NoIncludes).title,
            "routing"
        );
        // An index file's name says nothing: its first heading names it.
        assert_eq!(
            parse_with(src, Flavor::VitePress, "guide/index.md", &NoIncludes).title,
            "Options"
        );
        // A title or an h1 still wins.
        let h1 = format!("## Intro\n\n# Real title\n\n{src}");
        assert_eq!(parse_with(&h1, Flavor::Docusaurus, "a.md", &NoIncludes).title, "Real title");
    }

    #[test]
    fn mdx_has_no_indented_code_blocks_but_markdown_pages_do() {
        // typescript-eslint's contributor tiers: a JSX table whose cells hold indented Markdown.
        let src = "# Tiers\n\n<table>\n  <tr>\n    <td>\n        ~5 points in issues\n\n        ~15 points in [total](#pointing)\n        <br />2 of 4 active months\n    </td>\n  </tr>\n</table>\n";
        for (flavor, path) in [(Flavor::Docusaurus, "tiers.md"), (Flavor::GitHub, "tiers.mdx")] {
            let p = parse(src, flavor, path);
            let all = all_text(&p);
            assert!(
                p.sections.iter().all(|s| s.blocks.iter().all(|b| matches!(b, Block::Text(_)))),
                "{all}"
            );
            assert!(all.contains("~15 points in total"), "{all}");
            assert!(all.contains("2 of 4 active months") && !all.contains("<br"), "{all}");
        }
        // Ionic's cards: the title in `header`, the text in an indented `<p>`.
        let src = "# Start\n\n<DocsCards>\n  <DocsCard header=\"Get Started\" href=\"/a\">\n\n      <p>Build your first app.</p>\n\n  </DocsCard>\n</DocsCards>\n";
        let all = all_text(&parse(src, Flavor::Docusaurus, "index.md"));
        assert!(all.contains("Get Started") && all.contains("Build your first app."), "{all}");
        assert!(!all.contains("```") && !all.contains("<p>"), "{all}");
        // Starlight's tabs and asides indent their Markdown: a fence stays code (its own
        // indentation kept), emphasis stays inline.
        let src = "# Setup\n\n<Tabs>\n  <TabItem label=\"npm\">\n\n    ```sh\n    npx astro add\n      --yes\n    ```\n\n  </TabItem>\n</Tabs>\n\n<Aside>\n\n    A *custom* title.\n\n</Aside>\n";
        let p = parse(src, Flavor::GitHub, "setup.mdx");
        let blocks = &p.sections[0].blocks;
        let code = Block::Code { lang: "sh".into(), code: "npx astro add\n  --yes".into() };
        assert!(blocks.contains(&code), "{blocks:?}");
        assert!(blocks.contains(&Block::Text("A custom title.".into())), "{blocks:?}");
        // A Markdown page's indented code stays code.
        let md = "# A\n\nText.\n\n    let x = 1;\n";
        let p = parse(md, Flavor::GitHub, "a.md");
        let code = |p: &Page| p.sections[0].blocks.iter().any(|b| matches!(b, Block::Code { .. }));
        assert!(code(&p), "{:?}", p.sections);
        // So does a Docusaurus page that asks to be read as Markdown (`format: md`).
        let p = parse(&format!("---\nformat: md\n---\n{md}"), Flavor::Docusaurus, "a.md");
        assert!(code(&p), "{:?}", p.sections);
    }

    #[test]
    fn mdx_code_block_fences_are_read_as_mdx_not_code() {
        let src = "# A\n\n```mdx-code-block\nimport BrowserWindow from '@site/src/components/BrowserWindow';\n\n<BrowserWindow>\n\nShown **text**.\n\n</BrowserWindow>\n```\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(p.sections[0].blocks, vec![Block::Text("Shown text.".into())]);
    }

    #[test]
    fn tab_labels_are_kept_as_lines_of_their_own_and_one_line_tags_vanish() {
        let src = "# A\n\n<Tabs>\n<TabItem value=\"a\" label=\"Alpha\">Alpha body</TabItem>\n<TabItem value=\"beta\">\n\nBeta body\n\n</TabItem>\n<TabItem value=\"g\" label={'Gamma'} default>\n\nGamma body\n\n</TabItem>\n</Tabs>\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        let texts: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(texts, vec!["Alpha", "Alpha body", "beta", "Beta body", "Gamma", "Gamma body"]);
    }

    #[test]
    fn components_text_attributes_are_read_out_and_links_are_not() {
        let src = "# A\n\n## Plugins <Badge text=\"new\" />\n\n<CardGrid>\n\t<LinkCard\n\t\thref=\"https://x.test/a\"\n\t\ttitle=\"starlight-blog\"\n\t\tdescription=\"Add a blog to your site.\"\n\t/>\n\t<Card title=\"Next steps\" icon=\"rocket\">\n\nRead on.\n\n</Card>\n</CardGrid>\n\n<Aside type=\"caution\" title=\"Careful\">\n\nBody.\n\n</Aside>\n\nVersion <Badge type=\"tip\" text=\"beta\" /> only. <Icon name=\"star\" />\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(p.sections[1].heading, "Plugins", "{:?}", p.sections);
        assert_eq!(p.sections[1].anchor, "plugins");
        let texts: Vec<String> = p.sections[1].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(
            texts,
            vec![
                "starlight-blog: Add a blog to your site.",
                "Next steps",
                "Read on.",
                "Caution: Careful",
                "Body.",
                "Version beta only."
            ]
        );
        assert!(!texts.concat().contains("x.test") && !texts.concat().contains("rocket"));
    }

    #[test]
    fn an_attribute_s_text_cannot_open_a_heading_list_or_html() {
        let src = "# A\n\n<Card title=\"## Not a heading\" />\n\n<Card title=\"1. not a list\" description=\"<b>bold</b> [x](javascript:y)\" />\n\n<Card title=\"- item\" />\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(p.sections.len(), 1, "{:?}", p.sections);
        let texts: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(
            texts,
            vec!["## Not a heading", "1. not a list: <b>bold</b> [x](javascript:y)", "- item"]
        );
    }

    #[test]
    fn frontmatter_expressions_become_their_values() {
        let src = "---\ntitle: Tags\ndescription: All about tags\n---\n# {frontMatter.title}\n\nSee {frontMatter.description} for {props.who}.\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(p.sections[0].heading, "Tags");
        assert_eq!(all_text(&p), "See All about tags for .");
        let v = parse(
            "---\ntitle: Vue\n---\n# T\n\nThis is {{ $frontmatter.title }}, {{ 1 + 1 }}.\n",
            Flavor::VitePress,
            "x",
        );
        assert_eq!(all_text(&v), "This is Vue, {{ 1 + 1 }}.");
    }

    #[test]
    fn closing_tags_after_text_and_custom_elements_are_dropped() {
        let src = "# A\n\nWatch <ScrimbaLink href=\"https://x\">the lesson</ScrimbaLink> now.\n\n<svg-image :svg=\"cover\" />\n\nA `Vec<String>` stays.\n";
        let p = parse(src, Flavor::VitePress, "x");
        let all = all_text(&p);
        assert!(all.contains("Watch the lesson now."), "{all}");
        assert!(all.contains("A `Vec<String>` stays."), "{all}");
        assert_eq!(preprocess_mdx("Vec<String> and Vec</String>\n"), "Vec<String> and Vec\n");
        assert!(!all.contains("svg"), "{all}");
    }

    #[test]
    fn a_code_span_over_two_lines_keeps_the_tag_it_quotes() {
        let src = "# A\n\nRender the element `<docent-chat index=\"/i.bin\"\nproxy=\"https://x\"></docent-chat>` where you want it.\n\nA lone ` backtick\n\nthen <Foo a=\"1\" /> goes.\n";
        for flavor in [Flavor::VitePress, Flavor::Docusaurus] {
            let all = all_text(&parse(src, flavor, "x"));
            assert!(
                all.contains("`<docent-chat index=\"/i.bin\" proxy=\"https://x\"></docent-chat>`"),
                "{all}"
            );
            // An unclosed backtick ends at the paragraph: the next one's tag is still a tag.
            assert!(all.contains("then") && !all.contains("Foo"), "{all}");
        }
    }

    #[test]
    fn an_escaped_angle_bracket_is_text_not_a_tag() {
        let src = "# A\n\n| opt | cli |\n|---|---|\n| `\"all\"` | <code>--quote-props \\<as-needed&#124;preserve></code> |\n\nRun \\<My-Tool> then \\\\<Badge text=\"x\" /> done.\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        let all = all_text(&p);
        assert!(all.contains("--quote-props <as-needed|preserve>"), "{all}");
        // An escaped backslash does not escape the `<` after it.
        assert!(all.contains("Run <My-Tool> then"), "{all}");
        assert!(!all.contains("Badge"), "{all}");
        // In a heading too: the text and the anchor are the ones VitePress makes of it.
        let v = parse("# Interface: Store\\<Id, S\\>\n\nx\n", Flavor::VitePress, "x");
        assert_eq!(v.sections[0].heading, "Interface: Store<Id, S>");
        assert_eq!(v.sections[0].anchor, "interface-store-id-s");
    }

    #[test]
    fn text_in_raw_html_blocks_is_read_and_scripts_styles_and_comments_are_not() {
        let src = "# A\n\n<div class=\"style-example\">\n<h3>Bad</h3>\n\n```js\nbad()\n```\n\n</div>\n\n<details>\n  <summary><strong>Open config</strong> examples</summary>\n\nBody.\n\n</details>\n\n<script setup>\nconst msg = 'hidden'\n\nfunction f() {}\n</script>\n\n<style scoped>\n.a { color: red }\n</style>\n\n<!-- a comment\n\nover lines -->\n\n<p class=\"next\">Try the\n  Tutorial &amp; more{{ n }}</p><br><svg><text>icon</text></svg>\n<table><tr><td>a</td><td>b</td></tr></table>\n\n- <details><summary>In a list</summary>\n\n  Item body.\n";
        let p = parse(src, Flavor::VitePress, "x");
        let texts: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(
            texts,
            vec![
                "Bad",
                "```js\nbad()\n```",
                "Open config examples",
                "Body.",
                "Try the Tutorial & more\na | b",
                "- In a list Item body."
            ]
        );
    }

    #[test]
    fn a_vitepress_home_page_starts_with_its_hero_and_features() {
        let src = "---\nlayout: home\ntitle: Pinia\nhero:\n  name: Pinia\n  tagline: Type safe.\nfeatures:\n  - title: Light\n    details: About 1.5kb.\n---\n\n<script setup>\nimport X from './x.vue'\n</script>\n\n<HomeSponsors />\n";
        let p = parse(src, Flavor::VitePress, "index");
        assert_eq!(p.title, "Pinia");
        assert_eq!(
            p.sections[0].blocks,
            vec![Block::Text("Pinia\nType safe.\nLight: About 1.5kb.".into())]
        );
        // Without a `title`, the hero's name names the page (not the file, "index").
        let untitled = src.replace("title: Pinia\n", "");
        assert_eq!(parse(&untitled, Flavor::VitePress, "index").title, "Pinia");
        // Docusaurus has no such layout.
        assert!(parse(src, Flavor::Docusaurus, "index")
            .sections
            .iter()
            .all(|s| s.blocks.is_empty()));
    }

    #[test]
    fn tabs_containers_show_each_tab_label_on_its_own_line() {
        let src = "# A\n\n:::: tabs key:env\n=== GitHub Actions\nIntro.\n\n::: tabs key:provider\n== Playwright\n[Playwright](https://x.test) is a framework.\n\n== WebdriverIO\n\nInstalls browsers.\n:::\n::::\n\nAfter.\n\n== not a tab\n";
        let p = parse(src, Flavor::VitePress, "x");
        let texts: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(
            texts,
            vec![
                "GitHub Actions",
                "Intro.",
                "Playwright",
                "Playwright is a framework.",
                "WebdriverIO",
                "Installs browsers.",
                "After.",
                "== not a tab"
            ]
        );
    }

    #[test]
    fn a_vitepress_toc_marker_is_not_text() {
        let src = "# T\n\n[[toc]]\n\nIntro with `[[toc]]`.\n\n## A\n\nx\n";
        let p = parse(src, Flavor::VitePress, "x");
        assert_eq!(all_text(&p), "Intro with `[[toc]]`.\nx");
    }

    #[test]
    fn html_elements_with_jsx_expression_attributes_are_dropped_in_mdx() {
        let src = "# A\n\n- <ins style={{background: '#f0f8ff'}} className=\"box\" /> aliceblue (<code>#f0f8ff</code>)\n- <span style={{color: 'red'}}>red</span> text\n- a <b>bold</b> word, x<y and <a href=\"/x\">link</a>\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(all_text(&p), "- aliceblue (#f0f8ff)\n- red text\n- a bold word, x<y and link");
    }

    #[test]
    fn an_html_element_whose_tag_spans_lines_is_dropped_in_mdx() {
        // Seen on algolia/docsearch: `<img` alone on a line, its `src={require(…)}` below.
        let src = "# A\n\nBefore.\n\n<img\n  src={require('./x.png').default}\n  alt=\"A diagram\"\n  style={{width: 300}}\n/>\n\nAfter the image.\n\n<div\n  className=\"row\">\n  Inside the div.\n</div>\n\nThe <a\n  href=\"/x\">link</a> stays text.\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(
            all_text(&p),
            "Before.\nAfter the image.\nInside the div.\nThe link stays text."
        );
    }

    #[test]
    fn render_function_children_are_code_not_text_in_mdx() {
        let src = "# A\n\n<BrowserOnly fallback={<div>Loading...</div>}>\n  {() => {\n    const Lib = require('lib').default;\n    return <Lib {...props} text=\"}\" />;\n  }}\n</BrowserOnly>\n\nAfter.\n\n<Comp>{(x) => (\n  <b>{x}</b>\n)}</Comp> and {function () { return 1; }} then.\n\nA {props.name} and `{() => 1}` in code.\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(all_text(&p), "After.\nand then.\nA and `{() => 1}` in code.");
        // One that never closes ends at the next heading.
        let src = "# A\n\n{() => {\n  broken\n\n## B\n\nKept.\n";
        let p = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(all_text(&p), "Kept.");
    }

    #[test]
    fn a_line_of_many_braces_is_read_in_one_pass() {
        // Each `{` looked for its `}` to the end of the line: 200,000 of them took 50 s
        // (release build) and a debug build many minutes; now one pass finds every `}`.
        let braces = "{".repeat(200_000);
        let src = format!("# A\n\nBefore {braces} after.\n\nA {{frontMatter.title}} here.\n");
        let p = parse(&src, Flavor::Docusaurus, "x");
        let text = all_text(&p);
        let head: String = text.chars().take(40).collect();
        assert!(text.starts_with("Before {{{") && text.contains("{ after."), "{head}");
        assert!(text.ends_with("A here."), "{}", &text[text.len().saturating_sub(40)..]);
        // An expression longer than MAX_EXPRESSION is not a frontmatter reference: kept as text.
        let long = format!("# A\n\nx {{'{}'}} y\n", "a".repeat(MAX_EXPRESSION));
        assert!(all_text(&parse(&long, Flavor::Docusaurus, "x")).contains("aaaa"));
    }

    #[test]
    fn a_docusaurus_h1_has_no_anchor_but_still_takes_its_slug() {
        let src = "# Setup\n\nIntro.\n\n## Setup\n\nx\n";
        let d = parse(src, Flavor::Docusaurus, "x");
        assert_eq!(d.sections[0].anchor, "");
        assert_eq!(d.sections[1].anchor, "setup-1");
        let v = parse(src, Flavor::VitePress, "x");
        assert_eq!(v.sections[0].anchor, "setup");
    }

    #[test]
    fn code_group_tabs_are_labelled_by_their_titles() {
        let src = "# A\n\n::: code-group\n\n```js [config.js]\nexport default {}\n```\n\n```ts\nexport default {}\n```\n\n:::\n\n::: tip\nAfter.\n:::\n";
        let p = parse(src, Flavor::VitePress, "x");
        let texts: Vec<String> = p.sections[0].blocks.iter().map(|b| b.render()).collect();
        assert_eq!(texts[0], "config.js");
        assert_eq!(texts[1], "```js\nexport default {}\n```");
        assert_eq!(texts[2], "ts");
        assert_eq!(texts[4], "Tip:");
        assert!(!texts.iter().any(|t| t.contains("Code-group")), "{texts:?}");
    }

    #[test]
    fn a_code_group_title_with_brackets_and_vitepress_v_pre_containers() {
        let src = "# A\n\n::: code-group\n\n```vue [src/pages/users/[id].vue]\n<template />\n```\n\n:::\n\n::: v-pre\nShown as {{ written }}.\n:::\n\n::: raw\nRaw part.\n:::\n";
        let page = parse(src, Flavor::VitePress, "x");
        let text = page
            .sections
            .iter()
            .flat_map(|s| s.blocks.iter().map(|b| b.render()))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(text.contains("src/pages/users/[id].vue"), "{text}");
        assert!(!text.contains("V-pre") && !text.contains("Raw:"), "{text}");
        assert!(text.contains("Raw part."), "{text}");
    }

    #[test]
    fn twoslash_hidden_lines_and_markers_are_dropped() {
        let src = "# A\n\n```ts twoslash\n// @noErrors\nimport { x } from 'y'\n// ---cut---\n// @errors: 2322\nconst a = x()\n//    ^?\n// ---cut-start---\nsecret()\n// ---cut-end---\nconst b = a // keep: @noErrors in a comment after code\n// ---cut-after---\nhidden()\n```\n\n```ts\n// ---cut---\n```\n";
        let p = parse(src, Flavor::VitePress, "x");
        assert_eq!(
            p.sections[0].blocks[0],
            Block::Code {
                lang: "ts".into(),
                code: "const a = x()\nconst b = a // keep: @noErrors in a comment after code"
                    .into()
            }
        );
        // Without the twoslash meta the site shows the markers.
        assert_eq!(
            p.sections[0].blocks[1],
            Block::Code { lang: "ts".into(), code: "// ---cut---".into() }
        );
    }

    #[test]
    fn notation_and_magic_comments_are_removed_from_code() {
        let v = parse(
            "# A\n\n```js\nconst a = 1 // [!code ++]\nconst b = 2 // [!code --]\n```\n",
            Flavor::VitePress,
            "x",
        );
        assert_eq!(
            v.sections[0].blocks[0],
            Block::Code { lang: "js".into(), code: "const a = 1\nconst b = 2".into() }
        );
        let d = parse(
            "# A\n\n```js\n// highlight-next-line\nconst a = 1\n```\n",
            Flavor::Docusaurus,
            "x",
        );
        assert_eq!(
            d.sections[0].blocks[0],
            Block::Code { lang: "js".into(), code: "const a = 1".into() }
        );
    }

    #[test]
    fn an_imported_partial_s_headings_become_sections_of_the_importing_page() {
        struct One;
        impl crate::source::include::Includes for One {
            fn read(&self, path: &str) -> Option<String> {
                (path == "guide/_tags.mdx")
                    .then(|| "## Tags file\n\nDeclare tags in `tags.yml`.\n".to_string())
            }
        }
        let src =
            "import TagsFile from './_tags.mdx';\n\n# Blog\n\n## Tags\n\nIntro.\n\n<TagsFile />\n";
        let p = parse_with(src, Flavor::Docusaurus, "guide/blog.mdx", &One);
        let s = p.sections.iter().find(|s| s.heading == "Tags file").expect("partial heading");
        assert_eq!(s.anchor, "tags-file");
        assert_eq!(s.breadcrumb, vec!["Blog", "Tags file"]);
        assert_eq!(s.blocks, vec![Block::Text("Declare tags in `tags.yml`.".into())]);
        assert!(!all_text(&p).contains("TagsFile"));
    }

    #[test]
    fn page_without_headings_uses_the_file_stem_as_title() {
        let p = parse("Just text.\n", Flavor::VitePress, "notes");
        assert_eq!(p.title, "notes");
        assert_eq!(preprocess_mdx("Use Vec<String> here.\n"), "Use Vec<String> here.\n");
        assert_eq!(p.sections.len(), 1);
        assert_eq!(p.sections[0].anchor, "");
    }
}

//! Markdown and MDX sources (VitePress, Docusaurus, Docsify).
//!
//! - YAML/TOML frontmatter ([`frontmatter`]): `title` becomes the page title; Docusaurus' `slug`
//!   changes the page URL (applied by the caller, see [`super::page_url_with_slug`]); the rest is
//!   dropped.
//! - MDX: top-level `import`/`export` statements, `{/* comments */}` and JSX component tags
//!   (`<Tabs>`, `<TabItem value="x">`, `<Badge />`) are dropped; the Markdown between tags stays.
//! - Admonitions (`:::tip Title` … `:::`, also `:::note[Title]`) are kept as text ("Tip: Title").
//! - Code fences are kept whole. Raw HTML tags are dropped (their text stays).
//! - Heading anchors follow the [`Flavor`]; a trailing `{#custom-id}` is honoured.

use super::{normalize_ws, Flavor, Page, PageBuilder, Slugger};
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

/// Parse a Markdown/MDX document into a [`Page`].
pub fn parse(source: &str, flavor: Flavor, file_stem: &str) -> Page {
    let (front_title, body) = split_frontmatter(source);
    let body = preprocess_mdx(body);

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
    let mut image_depth = 0usize;
    let mut list_depth = 0usize;

    let flush = |b: &mut PageBuilder, inline: &mut String| {
        let lines: Vec<String> =
            inline.split('\n').map(normalize_ws).filter(|l| !l.is_empty()).collect();
        if !lines.is_empty() {
            b.text(&lines.join("\n"));
        }
        inline.clear();
    };

    for event in Parser::new_ext(&body, opts) {
        if let Some((_, ref mut buf)) = code {
            match event {
                Event::Text(t) => buf.push_str(&t),
                Event::End(TagEnd::CodeBlock) => {
                    let (lang, text) = code.take().unwrap_or_default();
                    b.code(&lang, &text);
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
                    let (text, anchor) = heading_text_and_anchor(&raw, &mut slugger);
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
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split(|c: char| c.is_whitespace() || c == '{' || c == ',')
                        .next()
                        .unwrap_or("")
                        .to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
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
                    flush(&mut b, &mut inline);
                } else {
                    inline.push(' ');
                }
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
            // Raw HTML (and inline JSX) is dropped; the text around it stays.
            _ => {}
        }
    }
    if let Some((lang, text)) = code.take() {
        b.code(&lang, &text);
    }
    flush(&mut b, &mut inline);
    b.finish(front_title, file_stem)
}

/// A Markdown heading's normalised text and its anchor, from its raw text (text and code spans
/// joined): an explicit `{#custom-id}` wins (and is reserved so later slugs avoid it), else the
/// flavour's unique slug. The demo's page renderer uses it too, so its heading ids are the
/// index's anchors.
pub fn heading_text_and_anchor(raw: &str, slugger: &mut Slugger) -> (String, String) {
    let (text, custom) = split_custom_id(raw);
    let text = normalize_ws(&text);
    let anchor = match custom {
        Some(id) => {
            slugger.reserve(&id);
            id
        }
        None => slugger.slug(&text),
    };
    (text, anchor)
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
}

/// Split off YAML (`---`) or TOML (`+++`) frontmatter; return the keys docent uses and the body
/// (the whole source when there is no frontmatter). The one frontmatter reader shared by the
/// indexer and the demo site.
pub fn frontmatter(source: &str) -> (Frontmatter, &str) {
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
                let front = &rest[..offset];
                let body = &rest[offset + line.len()..];
                let fm = Frontmatter {
                    title: frontmatter_value(front, "title"),
                    slug: frontmatter_value(front, "slug"),
                    description: frontmatter_value(front, "description"),
                };
                return (fm, body);
            }
            offset += line.len();
        }
    }
    (Frontmatter::default(), s)
}

/// Split off frontmatter; return its `title` and the body (see [`frontmatter`]).
pub fn split_frontmatter(source: &str) -> (Option<String>, &str) {
    let (fm, body) = frontmatter(source);
    (fm.title, body)
}

/// A top-level `key: value` (YAML) or `key = value` (TOML) scalar, unquoted; None when absent
/// or empty.
fn frontmatter_value(front: &str, key: &str) -> Option<String> {
    for line in front.lines() {
        // Only top-level keys (no indentation).
        let Some(rest) = line.strip_prefix(key) else { continue };
        let rest = rest.trim_start();
        let Some(value) = rest.strip_prefix(':').or_else(|| rest.strip_prefix('=')) else {
            continue;
        };
        let v = value.trim();
        let v = v
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(v);
        let v = v.replace("\\\"", "\"").replace("''", "'");
        if !v.trim().is_empty() {
            return Some(v.trim().to_string());
        }
    }
    None
}

/// Line-level MDX/admonition clean-up, outside code fences.
pub fn preprocess_mdx(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut fence: Option<(char, usize)> = None;
    let mut statement_depth: i32 = 0; // open brackets of a multi-line import/export
    let mut in_statement = false;
    let mut in_comment = false;
    let mut jsx = JsxState::default();

    for line in body.lines() {
        let trimmed = line.trim_start();
        // Code fences pass through untouched.
        if let Some((ch, n)) = fence {
            out.push_str(line);
            out.push('\n');
            let t = trimmed.trim_end();
            if t.len() >= n && t.chars().all(|c| c == ch) {
                fence = None;
            }
            continue;
        }
        if let Some(f) = fence_open(trimmed) {
            fence = Some(f);
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if in_statement {
            statement_depth += bracket_balance(line);
            if statement_depth <= 0 && !line.trim_end().ends_with(',') {
                in_statement = false;
            }
            out.push('\n');
            continue;
        }
        if !line.starts_with(' ')
            && !line.starts_with('\t')
            && (line.starts_with("import ") || line.starts_with("export "))
        {
            statement_depth = bracket_balance(line);
            in_statement = statement_depth > 0;
            out.push('\n');
            continue;
        }
        // {/* MDX comments */} possibly spanning lines (most lines have none: no copy).
        if !in_comment && !line.contains("{/*") {
            push_unless_markup(&mut out, &mut jsx, line);
            continue;
        }
        let mut l = line.to_string();
        if in_comment {
            match l.find("*/}") {
                Some(end) => {
                    l = l[end + 3..].to_string();
                    in_comment = false;
                }
                None => {
                    out.push('\n');
                    continue;
                }
            }
        }
        while let Some(start) = l.find("{/*") {
            match l[start..].find("*/}") {
                Some(end) => l.replace_range(start..start + end + 3, ""),
                None => {
                    l.truncate(start);
                    in_comment = true;
                }
            }
        }
        push_unless_markup(&mut out, &mut jsx, &l);
    }
    out
}

/// One line of Markdown outside code fences and import/export statements: admonition markers
/// become a title paragraph or nothing, JSX components are stripped, the rest is kept.
fn push_unless_markup(out: &mut String, jsx: &mut JsxState, l: &str) {
    let t = l.trim();
    if t.starts_with(":::") {
        if let Some(rest) = admonition_open(t) {
            out.push('\n');
            out.push_str(&rest);
            out.push_str("\n\n");
            return;
        }
        if t.bytes().all(|c| c == b':') {
            out.push('\n');
            return;
        }
    }
    let cleaned = jsx.strip(l);
    if cleaned.trim().is_empty() && !t.is_empty() {
        out.push('\n');
        return;
    }
    out.push_str(&cleaned);
    out.push('\n');
}

fn fence_open(trimmed: &str) -> Option<(char, usize)> {
    let ch = trimmed.chars().next()?;
    if ch != '`' && ch != '~' {
        return None;
    }
    let n = trimmed.chars().take_while(|&c| c == ch).count();
    if n >= 3 {
        Some((ch, n))
    } else {
        None
    }
}

fn bracket_balance(line: &str) -> i32 {
    line.chars().fold(0, |acc, c| match c {
        '{' | '(' | '[' => acc + 1,
        '}' | ')' | ']' => acc - 1,
        _ => acc,
    })
}

/// `:::tip Title` / `::: warning` / `:::note[Title]` → "Tip: Title".
fn admonition_open(t: &str) -> Option<String> {
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
    let mut label: String =
        kind.chars().next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    label.push_str(&kind[kind.chars().next().map(|c| c.len_utf8()).unwrap_or(0)..]);
    Some(if title.is_empty() { format!("{label}:") } else { format!("{label}: {title}") })
}

/// Removes JSX component tags (capitalised names, or `<>` fragments), keeping the text between.
#[derive(Debug, Default)]
struct JsxState {
    /// Inside a multi-line opening tag: depth of `{}` and the quote char.
    in_tag: bool,
    brace: i32,
    quote: Option<char>,
}

impl JsxState {
    fn strip<'a>(&mut self, line: &'a str) -> std::borrow::Cow<'a, str> {
        if !self.in_tag && !line.contains('<') {
            // No tag starts or continues on this line: nothing to strip.
            return std::borrow::Cow::Borrowed(line);
        }
        let chars: Vec<char> = line.chars().collect();
        let mut out = String::with_capacity(line.len());
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if self.in_tag {
                match (self.quote, c) {
                    (Some(q), _) if c == q => self.quote = None,
                    (Some(_), _) => {}
                    (None, '"') | (None, '\'') | (None, '`') => self.quote = Some(c),
                    (None, '{') => self.brace += 1,
                    (None, '}') => self.brace -= 1,
                    (None, '>') if self.brace <= 0 => {
                        self.in_tag = false;
                        self.brace = 0;
                    }
                    _ => {}
                }
                i += 1;
                continue;
            }
            if c == '`' {
                // Inline code: copy verbatim.
                let end = chars[i + 1..].iter().position(|&x| x == '`').map(|p| i + 1 + p);
                if let Some(end) = end {
                    out.extend(&chars[i..=end]);
                    i = end + 1;
                    continue;
                }
            }
            let after_word = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
            if c == '<' && !after_word {
                let next = chars.get(i + 1).copied();
                let name_start = if next == Some('/') { chars.get(i + 2).copied() } else { next };
                let is_component = matches!(name_start, Some(n) if n.is_ascii_uppercase())
                    || next == Some('>')
                    || (next == Some('/') && chars.get(i + 2) == Some(&'>'));
                if is_component {
                    self.in_tag = true;
                    self.brace = 0;
                    self.quote = None;
                    i += 1;
                    continue;
                }
            }
            out.push(c);
            i += 1;
        }
        out.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::Block;

    #[test]
    fn frontmatter_gives_title_and_slug_from_yaml_or_toml() {
        let (fm, body) = frontmatter("---\ntitle: \"Intro: the basics\"\nslug: /custom/path\nsidebar_position: 2\n---\n# Hi\n");
        assert_eq!(
            fm,
            Frontmatter {
                title: Some("Intro: the basics".into()),
                slug: Some("/custom/path".into()),
                description: None,
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
        assert!(joined.contains("Inline badge."), "{joined}");
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

    #[test]
    fn page_without_headings_uses_the_file_stem_as_title() {
        let p = parse("Just text.\n", Flavor::VitePress, "notes");
        assert_eq!(p.title, "notes");
        assert_eq!(preprocess_mdx("Use Vec<String> here.\n"), "Use Vec<String> here.\n");
        assert_eq!(p.sections.len(), 1);
        assert_eq!(p.sections[0].anchor, "");
    }
}

//! Documentation sources: Markdown/MDX files and built HTML pages, parsed into [`Page`]s made of
//! heading sections, ready for [`crate::chunk`].
//!
//! Everything here works on strings (no file system), so it compiles for wasm32 too; the CLI walks
//! folders and calls [`parse_page`] per file.

pub mod canonical;
pub mod clean;
mod elements;
pub mod fence;
pub mod home;
pub mod include;
pub mod markdown;
pub mod mkdocs;
pub mod safety;
pub mod slug;

#[cfg(feature = "html")]
pub mod html;
#[cfg(feature = "html")]
pub mod html_parse;

pub use slug::{Flavor, Slugger};

/// A parsed documentation page.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page {
    /// Page title (frontmatter `title`, first h1, or `<title>`).
    pub title: String,
    /// Sections in document order. The first may be a preamble (level 0, no heading).
    pub sections: Vec<Section>,
}

/// The content under one heading (h1–h4), up to the next heading of level ≤ 4.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Section {
    /// Heading level 1–4; 0 for text before the page's first heading.
    pub level: u8,
    /// Heading text; empty for the preamble.
    pub heading: String,
    /// The anchor (heading id); empty when there is none.
    pub anchor: String,
    /// Heading texts from the top of the page down to this section.
    pub breadcrumb: Vec<String>,
    /// The section's content.
    pub blocks: Vec<Block>,
}

/// One block of section content.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A paragraph, list item, table row or admonition as plain text.
    Text(String),
    /// A code block, kept whole (split only when alone it exceeds the chunk limit).
    Code {
        /// Language from the fence info or `language-*` class; may be empty.
        lang: String,
        /// The code without fences.
        code: String,
    },
}

impl Block {
    /// The block as chunk text: code is fenced with ``` and its language.
    pub fn render(&self) -> String {
        match self {
            Block::Text(t) => t.clone(),
            Block::Code { lang, code } => fence(lang, code),
        }
    }
}

/// Fence code as Markdown, using a longer fence when the code itself contains ```. The
/// language keeps only its first word's letters, digits and `_+#.-`: a backtick in a backtick
/// fence's info string would unmake the fence, and a hostile page's code then read as Markdown.
pub fn fence(lang: &str, code: &str) -> String {
    let mut ticks = String::from("```");
    while code.contains(ticks.as_str()) {
        ticks.push('`');
    }
    let lang: String = lang
        .split_whitespace()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '#' | '.' | '-'))
        .collect();
    let code = code.trim_end_matches('\n');
    format!("{ticks}{lang}\n{code}\n{ticks}")
}

/// What kind of source a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// `.md`, `.markdown`, `.mdx`.
    Markdown,
    /// `.html`, `.htm`.
    Html,
}

impl SourceKind {
    /// The kind of a file by its extension; None for files docent does not index.
    pub fn detect(path: &str) -> Option<SourceKind> {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".md") || lower.ends_with(".markdown") || lower.ends_with(".mdx") {
            Some(SourceKind::Markdown)
        } else if lower.ends_with(".html") || lower.ends_with(".htm") {
            Some(SourceKind::Html)
        } else {
            None
        }
    }
}

/// Why a page was skipped or could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// Built HTML support is compiled out (feature "html").
    #[error("this build of docent cannot read HTML pages (feature \"html\" is off); index the Markdown sources instead")]
    HtmlUnsupported,
}

/// The outcome of parsing one file.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A page to index.
    Page(Page),
    /// A page that asks not to be indexed, with the reason (`noindex`, redirect stub).
    Skipped(&'static str),
}

/// Parse one file's contents. `flavor` decides Markdown anchors; HTML pages carry their own ids.
pub fn parse_page(
    kind: SourceKind,
    content: &str,
    flavor: Flavor,
    file_stem: &str,
) -> Result<Parsed, SourceError> {
    match kind {
        SourceKind::Markdown => Ok(Parsed::Page(markdown::parse(content, flavor, file_stem))),
        #[cfg(feature = "html")]
        SourceKind::Html => Ok(html::parse(content, file_stem)),
        #[cfg(not(feature = "html"))]
        SourceKind::Html => {
            let _ = file_stem;
            Err(SourceError::HtmlUnsupported)
        }
    }
}

/// [`parse_page`] for the file at `path` (relative to its source folder, `/`-separated): the
/// Markdown files it includes are read through `inc` (see [`include`]).
pub fn parse_page_with(
    kind: SourceKind,
    content: &str,
    flavor: Flavor,
    path: &str,
    inc: &dyn include::Includes,
) -> Result<Parsed, SourceError> {
    match kind {
        SourceKind::Markdown => Ok(Parsed::Page(markdown::parse_with(content, flavor, path, inc))),
        // The page a web host serves for a missing URL (GitHub Pages, Netlify, Cloudflare Pages;
        // VitePress, Docusaurus, mdBook and sphinx-notfound-page all write one): "Page not
        // found" is no answer, and it would lead questions about errors. Only the built site's
        // own, at the top: `errors/404.html` may document a status code.
        SourceKind::Html if path == "404.html" => Ok(Parsed::Skipped("the site's not-found page")),
        _ => {
            let file = path.rsplit('/').next().unwrap_or(path);
            let stem = file.rsplit_once('.').map(|(s, _)| s).unwrap_or(file);
            parse_page(kind, content, flavor, stem)
        }
    }
}

/// How a page's bytes were decoded ([`decode_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Valid UTF-8.
    Utf8,
    /// Mostly UTF-8 with some invalid bytes, each read as U+FFFD.
    Utf8Lossy,
    /// Not UTF-8: read as Windows-1252 (Latin-1 with `€`, curly quotes and dashes at 0x80–0x9F),
    /// the encoding an editor of Western text saves when it is not UTF-8.
    Windows1252,
}

/// A file's text: UTF-8 when it is; else Windows-1252 when the bytes hold no valid multi-byte
/// UTF-8 sequence (`Café` saved as Latin-1 is `Caf\xE9`, never valid UTF-8), or UTF-8 with
/// U+FFFD for the invalid bytes when most of it is UTF-8 (a file damaged in places). The
/// [`Encoding`] says which, for a warning that names the file.
pub fn decode_text(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, Encoding) {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return (std::borrow::Cow::Borrowed(text), Encoding::Utf8);
    }
    let (mut valid_multibyte, mut invalid) = (0usize, 0usize);
    for chunk in bytes.utf8_chunks() {
        valid_multibyte += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        invalid += usize::from(!chunk.invalid().is_empty());
    }
    if valid_multibyte > invalid {
        return (String::from_utf8_lossy(bytes), Encoding::Utf8Lossy);
    }
    (
        std::borrow::Cow::Owned(bytes.iter().map(|&b| windows_1252(b)).collect()),
        Encoding::Windows1252,
    )
}

/// One Windows-1252 byte as its character (WHATWG's table: the five unassigned bytes map to the
/// C1 controls of the same value, as browsers decode them).
fn windows_1252(b: u8) -> char {
    const HIGH: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž',
        '\u{8f}', '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}',
        'ž', 'Ÿ',
    ];
    match b {
        0x80..=0x9f => HIGH[usize::from(b - 0x80)],
        _ => char::from(b),
    }
}

/// Is this Markdown file (path relative to its source folder) a Docusaurus partial: a file or
/// folder whose name starts with `_`? Docusaurus makes no page of it (it is imported into pages).
pub fn is_docusaurus_partial(rel_path: &str) -> bool {
    rel_path.replace('\\', "/").split('/').any(|p| p.starts_with('_'))
}

/// How page URLs look when a base URL is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UrlStyle {
    /// `guide/intro.html` (mdBook, plain sites).
    #[default]
    Html,
    /// `guide/intro` (VitePress `cleanUrls`, Docusaurus).
    Clean,
}

/// Map a file path (relative to its source folder, any separator) to its page URL.
///
/// Without `base_url`: the relative path with `.md`/`.mdx` turned into `.html`
/// (`ch03-02-data-types.html`, `guide/index.html`). With `base_url`: the page's public URL,
/// `index.*` (and Docsify's `README.md`) mapping to the folder (`https://x.dev/guide/`).
pub fn page_url(rel_path: &str, base_url: Option<&str>, style: UrlStyle) -> String {
    let rel = rel_path.replace('\\', "/");
    let rel = rel.trim_start_matches("./").trim_start_matches('/');
    let kind = SourceKind::detect(rel);
    let stem = match rel.rfind('.') {
        Some(dot) if kind.is_some() => &rel[..dot],
        _ => rel,
    };
    match base_url {
        None => safety::confine_url(match kind {
            Some(SourceKind::Markdown) => format!("{stem}.html"),
            _ => rel.to_string(),
        }),
        Some(base) => {
            let base = base.trim_end_matches('/');
            let file = stem.rsplit('/').next().unwrap_or(stem);
            let is_index = file == "index"
                || (file.eq_ignore_ascii_case("readme") && kind == Some(SourceKind::Markdown));
            let path = if is_index {
                let dir = &stem[..stem.len() - file.len()];
                dir.to_string()
            } else {
                match style {
                    UrlStyle::Clean => stem.to_string(),
                    UrlStyle::Html => format!("{stem}.html"),
                }
            };
            format!("{base}/{path}")
        }
    }
}

/// A Docusaurus doc's file path (relative to the docs folder) as the site routes it: the
/// number prefix Docusaurus' default parser drops (`01-intro`, `2 - setup`, `3_api`) gone from
/// every folder and from the file name (a version or date stays: `9-0`, `2021-11-notes`), and a
/// category index (`README`, or a file named like its folder: `style-guide/style-guide.md`)
/// renamed `index`, so [`page_url`] gives its folder's URL. The extension is kept.
pub fn docusaurus_route(rel_path: &str) -> String {
    let rel = rel_path.replace('\\', "/");
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    let Some(file) = parts.pop() else { return rel };
    let (stem, ext) = match file.rsplit_once('.') {
        Some((s, e)) => (s.to_string(), format!(".{e}")),
        None => (file.clone(), String::new()),
    };
    for p in parts.iter_mut() {
        *p = without_number_prefix(p).to_string();
    }
    let stem = without_number_prefix(&stem);
    let folder = parts.last().map(String::as_str);
    let index =
        stem.eq_ignore_ascii_case("readme") || folder.is_some_and(|f| f.eq_ignore_ascii_case(stem));
    parts.push(format!("{}{ext}", if index { "index" } else { stem }));
    parts.join("/")
}

/// `name` without a Docusaurus number prefix: digits, then `-`, `_` or `.` (spaces around
/// them allowed), then the rest, which must not start with one of those; a name that starts
/// like a version or date (`9-0`, `1.2`, `2021-11-…`) keeps its digits.
pub(crate) fn without_number_prefix(name: &str) -> &str {
    let digits = name.len() - name.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return name;
    }
    let rest = &name[digits..];
    let sep = |c: char| matches!(c, '-' | '_' | '.');
    if rest.starts_with(sep) && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
        return name;
    }
    let after = rest.trim_start_matches(' ');
    if !after.starts_with(sep) {
        return name;
    }
    let suffix = after.trim_start_matches(|c: char| sep(c)).trim_start_matches(' ');
    if suffix.is_empty() || suffix.starts_with(|c: char| sep(c) || c.is_whitespace()) {
        return name;
    }
    suffix
}

/// [`page_url`] for a page whose frontmatter has a Docusaurus `slug` (`None`: plain
/// [`page_url`]). Docusaurus' rules, relative to the docs' base route (the `base_url`):
/// - an absolute slug (`/custom/path`) is the page's path under the base route (`/` = the base
///   route itself);
/// - a relative slug (`intro`, `more/intro`, `../other`) replaces the file name within the
///   file's folder.
///
/// Without `base_url` the result is the slug's path with `.html`, like [`page_url`]
/// (`custom/path.html`, a path ending in `/` gets `index.html`).
///
/// A slug that [`safety::check_slug`] refuses (one a browser would read as another scheme or
/// host, like `https:/attacker.example/`) is ignored: the page keeps its file's URL. Callers
/// that can warn check it first.
pub fn page_url_with_slug(
    rel_path: &str,
    slug: Option<&str>,
    base_url: Option<&str>,
    style: UrlStyle,
) -> String {
    let Some(slug) = slug.map(str::trim).filter(|s| !s.is_empty() && safety::check_slug(s).is_ok())
    else {
        return page_url(rel_path, base_url, style);
    };
    let rel = rel_path.replace('\\', "/");
    let rel = rel.trim_start_matches("./").trim_start_matches('/');
    let mut parts: Vec<&str> = Vec::new();
    if !slug.starts_with('/') {
        // Relative: start from the file's folder.
        if let Some((dir, _)) = rel.rsplit_once('/') {
            parts.extend(dir.split('/').filter(|p| !p.is_empty()));
        }
    }
    for p in slug.split('/') {
        match p {
            "" | "." => {}
            // Docusaurus resolves `..` like a path; it cannot leave the base route.
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let path = parts.join("/");
    // A slug ending in `/` (or the root) names a folder-like route.
    let folder = path.is_empty() || slug.ends_with('/');
    match base_url {
        None if folder => {
            if path.is_empty() {
                "index.html".to_string()
            } else {
                safety::confine_url(format!("{path}/index.html"))
            }
        }
        None => safety::confine_url(format!("{path}.html")),
        Some(base) => {
            let base = base.trim_end_matches('/');
            if path.is_empty() {
                format!("{base}/")
            } else if folder {
                format!("{base}/{path}/")
            } else {
                match style {
                    UrlStyle::Clean => format!("{base}/{path}"),
                    UrlStyle::Html => format!("{base}/{path}.html"),
                }
            }
        }
    }
}

/// Collapse runs of whitespace to one space and trim; drops zero-width spaces. The chunker
/// applies it to heading text before slugging, so anything that must reproduce its anchors
/// (the demo site's heading ids) calls this same function.
pub fn normalize_ws(s: &str) -> String {
    // One pass over the bytes, copying whole runs of non-space text: ASCII bytes are tested
    // directly, other chars decoded where they stand (`char::is_whitespace` for spaces; the
    // zero-width space and BOM are dropped without leaving a space).
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut pending_space = false;
    let mut run = 0; // start of the current run of kept text
    let mut i = 0;
    let flush = |out: &mut String, from: usize, to: usize, pending: &mut bool| {
        if from < to {
            if *pending && !out.is_empty() {
                out.push(' ');
            }
            *pending = false;
            out.push_str(&s[from..to]);
        }
    };
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0B | 0x0C) {
                flush(&mut out, run, i, &mut pending_space);
                pending_space = true;
                run = i + 1;
            }
            i += 1;
            continue;
        }
        let c = s[i..].chars().next().unwrap_or(char::REPLACEMENT_CHARACTER);
        let len = c.len_utf8();
        if c.is_whitespace() {
            flush(&mut out, run, i, &mut pending_space);
            pending_space = true;
            run = i + len;
        } else if c == '\u{200b}' || c == '\u{feff}' {
            flush(&mut out, run, i, &mut pending_space);
            run = i + len;
        }
        i += len;
    }
    flush(&mut out, run, bytes.len(), &mut pending_space);
    out
}

/// Builds a [`Page`] from a stream of headings and blocks (shared by the Markdown and HTML parsers).
#[derive(Debug, Default)]
pub(crate) struct PageBuilder {
    sections: Vec<Section>,
    stack: Vec<(u8, String)>,
    first_h1: Option<String>,
    first_heading: Option<String>,
    /// A page with neither a title nor an h1 is named after its file, not its first heading
    /// (a Markdown page whose first `## Examples` names one section, not the page).
    name_over_heading: bool,
}

impl PageBuilder {
    pub(crate) fn new() -> PageBuilder {
        PageBuilder { sections: vec![Section::default()], ..Default::default() }
    }

    /// A heading. Levels 5–6 do not start a section: they become a text line.
    pub(crate) fn heading(&mut self, level: u8, text: &str, anchor: &str) {
        let text = normalize_ws(&safety::without_terminal_escapes(text));
        let text = safety::strip_unpaired_bidi(&safety::shortened_label(&text)).into_owned();
        if level == 1 && self.first_h1.is_none() && !text.is_empty() {
            self.first_h1 = Some(text.clone());
        }
        if self.first_heading.is_none() && !text.is_empty() {
            self.first_heading = Some(text.clone());
        }
        while self.stack.last().map(|(l, _)| *l >= level).unwrap_or(false) {
            self.stack.pop();
        }
        self.stack.push((level, text.clone()));
        self.sections.push(Section {
            level,
            heading: text,
            // An id is printed too (`docent search`, `inspect`, MCP, llms.txt): no escape,
            // line break or direction override may reach those lines.
            anchor: safety::clean_anchor(anchor).into_owned(),
            breadcrumb: self
                .stack
                .iter()
                .map(|(_, t)| t.clone())
                .filter(|t| !t.is_empty())
                .collect(),
            blocks: Vec::new(),
        });
    }

    /// A text block (ignored when blank).
    pub(crate) fn text(&mut self, text: &str) {
        let t = safety::without_terminal_escapes(text);
        let t = safety::strip_unpaired_bidi(t.trim());
        let t = t.trim();
        if t.is_empty() {
            return;
        }
        self.sections
            .last_mut()
            .expect("builder always has a section")
            .blocks
            .push(Block::Text(t.to_string()));
    }

    /// A code block (ignored when blank).
    pub(crate) fn code(&mut self, lang: &str, code: &str) {
        if code.trim().is_empty() {
            return;
        }
        self.sections.last_mut().expect("builder always has a section").blocks.push(Block::Code {
            lang: lang.to_string(),
            code: safety::strip_unpaired_bidi(
                safety::without_terminal_escapes(code).trim_end().trim_start_matches('\n'),
            )
            .into_owned(),
        });
    }

    /// Name the page after its file (`finish`'s `fallback`) rather than its first heading when
    /// it has neither a title nor an h1.
    pub(crate) fn name_over_heading(&mut self) {
        self.name_over_heading = true;
    }

    /// Finish: the title is `title` if given, else the first h1, else the first heading, else `fallback`.
    pub(crate) fn finish(mut self, title: Option<String>, fallback: &str) -> Page {
        if self.name_over_heading && !fallback.is_empty() {
            self.first_heading = None;
        }
        let title = title
            .filter(|t| !t.trim().is_empty())
            .or(self.first_h1.take())
            .or(self.first_heading.take())
            .unwrap_or_else(|| fallback.to_string());
        // Front matter titles and `<title>` come here unfiltered (headings were stripped above).
        let title = safety::without_terminal_escapes(&title);
        let title = safety::strip_unpaired_bidi(&safety::shortened_label(&title)).into_owned();
        let mut sections = self.sections;
        give_empty_headings_their_children(&mut sections);
        carry_empty_headings_to_the_next(&mut sections);
        if sections.first().map(|s| s.blocks.is_empty()).unwrap_or(false) {
            sections.remove(0);
        } else if let Some(pre) = sections.first_mut() {
            if pre.level == 0 && !title.is_empty() {
                pre.breadcrumb = vec![title.clone()];
            }
        }
        Page { title, sections }
    }
}

/// A heading (h2–h6) with no text of its own, directly followed by its sub-headings, gets their
/// headings as its text, so a question about its topic can land on it.
fn give_empty_headings_their_children(sections: &mut [Section]) {
    for i in 0..sections.len() {
        let level = sections[i].level;
        if level < 2 || !sections[i].blocks.is_empty() || sections[i].heading.is_empty() {
            continue;
        }
        let below: Vec<&Section> =
            sections[i + 1..].iter().take_while(|s| s.level > level).collect();
        let Some(child) = below.iter().map(|s| s.level).min() else { continue };
        let names: Vec<String> = below
            .iter()
            .filter(|s| s.level == child && !s.heading.is_empty())
            .map(|s| format!("- {}", s.heading))
            .collect();
        if !names.is_empty() {
            sections[i].blocks.push(Block::Text(names.join("\n")));
        }
    }
}

/// Headings (h2–h6) with no text of their own and no sub-headings, directly followed by a
/// sibling heading that has text, are that text's too: API pages head one description with
/// several signatures (`### parse(code)`, `### parseExpression(code)`, then what both do).
/// Their titles become the first line of the sibling's text, so a question naming one lands
/// on the description; the citation opens the sibling, where the text is. Empty headings with
/// no such sibling (a list of link headings ending the page) stay as they are.
fn carry_empty_headings_to_the_next(sections: &mut [Section]) {
    let empty = |s: &Section| s.blocks.is_empty() && !s.heading.is_empty();
    let mut i = 0;
    while i < sections.len() {
        let level = sections[i].level;
        if level < 2 || !empty(&sections[i]) {
            i += 1;
            continue;
        }
        // The run of empty siblings starting here (at least this one).
        let mut j = i;
        while j < sections.len() && sections[j].level == level && empty(&sections[j]) {
            j += 1;
        }
        if j < sections.len() && sections[j].level == level && !sections[j].blocks.is_empty() {
            let titles: Vec<String> = sections[i..j].iter().map(|s| s.heading.clone()).collect();
            sections[j].blocks.insert(0, Block::Text(titles.join("\n")));
        }
        i = j;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn latin_1_text_is_decoded_as_windows_1252_and_said_so() {
        use super::{decode_text, Encoding};
        let (text, enc) = decode_text(b"# Caf\xe9\n\nna\xefve \x93quoted\x94 \x80 5\n");
        assert_eq!((text.as_ref(), enc), ("# Café\n\nnaïve “quoted” € 5\n", Encoding::Windows1252));
        let (text, enc) = decode_text("# Café ✓".as_bytes());
        assert_eq!((text.as_ref(), enc), ("# Café ✓", Encoding::Utf8));
        // Mostly UTF-8, one damaged byte: UTF-8 with a replacement character, not mojibake.
        let (text, enc) = decode_text(b"# Caf\xc3\xa9 na\xc3\xafve \xff end");
        assert_eq!((text.as_ref(), enc), ("# Café naïve \u{fffd} end", Encoding::Utf8Lossy));
    }

    #[test]
    fn docusaurus_routes_drop_number_prefixes_and_name_category_indexes() {
        for (file, route) in [
            ("react/your-first-app/2-taking-photos.md", "react/your-first-app/taking-photos.md"),
            ("01-guides/02 - setup.mdx", "guides/setup.mdx"),
            ("3_api/10.cli.md", "api/cli.md"),
            ("updating/9-0.md", "updating/9-0.md"),
            ("blog/2021-11-03-notes.md", "blog/2021-11-03-notes.md"),
            ("1-.md", "1-.md"),
            ("42.md", "42.md"),
            ("style-guide/style-guide.md", "style-guide/index.md"),
            ("02-Releases/releases.md", "Releases/index.md"),
            ("introduction/README.md", "introduction/index.md"),
            ("README.md", "index.md"),
            ("guide/index.md", "guide/index.md"),
            ("intro.md", "intro.md"),
        ] {
            assert_eq!(super::docusaurus_route(file), route, "{file}");
        }
    }

    use super::*;

    #[test]
    fn whitespace_normalisation_collapses_runs_and_drops_zero_width_characters() {
        assert_eq!(normalize_ws("  a \t b\n\u{b}c  "), "a b c");
        assert_eq!(normalize_ws("a\u{200b}b \u{feff} c"), "ab c");
        assert_eq!(normalize_ws(" \u{a0}x\u{3000}y "), "x y");
        assert_eq!(normalize_ws(""), "");
    }

    /// The definition, one char at a time: what the byte-wise [`normalize_ws`] must equal.
    fn normalize_ws_by_chars(s: &str) -> String {
        let kept: String = s.chars().filter(|&c| c != '\u{200b}' && c != '\u{feff}').collect();
        kept.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    proptest::proptest! {
        #[test]
        fn whitespace_normalisation_equals_its_char_by_char_definition(s in "[ a-z\t\n\r\u{b}\u{c}\u{85}\u{a0}\u{200b}\u{feff}\u{3000}\u{2028}é日🦀]{0,40}") {
            proptest::prop_assert_eq!(normalize_ws(&s), normalize_ws_by_chars(&s));
        }
    }

    #[test]
    fn urls_without_base_are_relative_paths_with_html_extension() {
        assert_eq!(
            page_url("ch03-02-data-types.html", None, UrlStyle::Html),
            "ch03-02-data-types.html"
        );
        assert_eq!(page_url("guide/intro.md", None, UrlStyle::Html), "guide/intro.html");
        assert_eq!(page_url("guide\\index.mdx", None, UrlStyle::Clean), "guide/index.html");
    }

    #[test]
    fn urls_with_base_map_index_to_folder_and_honour_clean_urls() {
        let b = Some("https://docs.example.com/");
        assert_eq!(
            page_url("guide/intro.md", b, UrlStyle::Clean),
            "https://docs.example.com/guide/intro"
        );
        assert_eq!(
            page_url("guide/intro.md", b, UrlStyle::Html),
            "https://docs.example.com/guide/intro.html"
        );
        assert_eq!(
            page_url("guide/index.md", b, UrlStyle::Html),
            "https://docs.example.com/guide/"
        );
        assert_eq!(page_url("index.html", b, UrlStyle::Html), "https://docs.example.com/");
        assert_eq!(page_url("README.md", b, UrlStyle::Clean), "https://docs.example.com/");
        assert_eq!(page_url("ch01.html", b, UrlStyle::Clean), "https://docs.example.com/ch01");
    }

    #[test]
    fn an_absolute_docusaurus_slug_is_the_path_under_the_docs_base_route() {
        let b = Some("https://example.com/docs/");
        assert_eq!(
            page_url_with_slug("guide/intro.md", Some("/custom/path"), b, UrlStyle::Clean),
            "https://example.com/docs/custom/path"
        );
        assert_eq!(
            page_url_with_slug("guide/intro.md", Some("/custom/path"), b, UrlStyle::Html),
            "https://example.com/docs/custom/path.html"
        );
        assert_eq!(
            page_url_with_slug("guide/intro.md", Some("/"), b, UrlStyle::Clean),
            "https://example.com/docs/"
        );
        assert_eq!(
            page_url_with_slug("guide/intro.md", Some("/custom/"), b, UrlStyle::Clean),
            "https://example.com/docs/custom/"
        );
        assert_eq!(
            page_url_with_slug("guide/intro.md", Some("/custom/path"), None, UrlStyle::Clean),
            "custom/path.html"
        );
        assert_eq!(
            page_url_with_slug("guide/intro.md", Some("/"), None, UrlStyle::Clean),
            "index.html"
        );
    }

    #[test]
    fn a_relative_docusaurus_slug_replaces_the_file_name_within_its_folder() {
        let b = Some("https://example.com/docs");
        assert_eq!(
            page_url_with_slug("guide/intro.md", Some("getting-started"), b, UrlStyle::Clean),
            "https://example.com/docs/guide/getting-started"
        );
        assert_eq!(
            page_url_with_slug("guide/intro.md", Some("more/intro"), b, UrlStyle::Clean),
            "https://example.com/docs/guide/more/intro"
        );
        assert_eq!(
            page_url_with_slug("guide/deep/intro.md", Some("../moved"), b, UrlStyle::Clean),
            "https://example.com/docs/guide/moved"
        );
        assert_eq!(
            page_url_with_slug("intro.md", Some("start"), b, UrlStyle::Clean),
            "https://example.com/docs/start"
        );
        assert_eq!(
            page_url_with_slug("guide\\intro.mdx", Some("./x"), None, UrlStyle::Html),
            "guide/x.html"
        );
        // `..` never leaves the base route.
        assert_eq!(
            page_url_with_slug("a/intro.md", Some("../../x"), b, UrlStyle::Clean),
            "https://example.com/docs/x"
        );
    }

    #[test]
    fn without_a_slug_the_url_is_the_file_path() {
        let b = Some("https://example.com/docs");
        for slug in [None, Some(""), Some("  ")] {
            assert_eq!(
                page_url_with_slug("guide/intro.md", slug, b, UrlStyle::Clean),
                page_url("guide/intro.md", b, UrlStyle::Clean)
            );
        }
    }

    #[test]
    fn kind_is_detected_by_extension() {
        assert_eq!(SourceKind::detect("a/B.MDX"), Some(SourceKind::Markdown));
        assert_eq!(SourceKind::detect("x.htm"), Some(SourceKind::Html));
        assert_eq!(SourceKind::detect("style.css"), None);
    }

    #[cfg(feature = "html")]
    #[test]
    fn the_built_sites_not_found_page_is_skipped() {
        let page = "<html><body><main><h1>Page Not Found</h1><p>We could not find what you were looking for.</p></main></body></html>";
        let parse = |path| {
            parse_page_with(SourceKind::Html, page, Flavor::GitHub, path, &include::NoIncludes)
        };
        assert!(matches!(parse("404.html"), Ok(Parsed::Skipped("the site's not-found page"))));
        // A page about the status code, deeper in the site, is a page.
        assert!(matches!(parse("errors/404.html"), Ok(Parsed::Page(_))));
    }

    #[test]
    fn builder_tracks_breadcrumbs_to_the_sixth_level() {
        let mut b = PageBuilder::new();
        b.text("intro");
        b.heading(1, "Guide", "guide");
        b.heading(2, "Install", "install");
        b.heading(3, "Linux", "linux");
        b.heading(4, "Options", "options");
        b.heading(5, "jobs", "jobs");
        b.text("How many.");
        b.heading(6, "Default", "default");
        b.text("One per core.");
        b.heading(2, "Use", "use");
        let p = b.finish(None, "x");
        assert_eq!(p.title, "Guide");
        assert_eq!(p.sections[0].breadcrumb, vec!["Guide"]);
        assert_eq!(p.sections[3].breadcrumb, vec!["Guide", "Install", "Linux"]);
        // Generators give h5 and h6 an anchor as any heading: a citation lands on them.
        assert_eq!(p.sections[5].anchor, "jobs");
        assert_eq!(p.sections[5].breadcrumb, vec!["Guide", "Install", "Linux", "Options", "jobs"]);
        assert_eq!(p.sections[5].blocks, vec![Block::Text("How many.".into())]);
        assert_eq!(p.sections[6].level, 6);
        assert_eq!(p.sections[6].blocks, vec![Block::Text("One per core.".into())]);
        assert_eq!(p.sections[7].breadcrumb, vec!["Guide", "Use"]);
    }

    #[test]
    fn a_heading_with_no_text_of_its_own_lists_its_sub_headings() {
        let mut b = PageBuilder::new();
        b.heading(1, "Guide", "guide");
        b.heading(2, "Deploying", "deploying");
        b.heading(3, "GitHub Pages", "github-pages");
        b.text("Push.");
        b.heading(4, "Custom domain", "custom-domain");
        b.text("CNAME.");
        b.heading(3, "Netlify", "netlify");
        b.text("Drop.");
        b.heading(2, "Empty", "empty");
        b.heading(2, "Last", "last");
        b.text("x");
        let p = b.finish(None, "x");
        let deploying = p.sections.iter().find(|s| s.anchor == "deploying").unwrap();
        assert_eq!(deploying.blocks, vec![Block::Text("- GitHub Pages\n- Netlify".into())]);
        // An h1 right before its h2s and a heading with no sub-headings stay empty; the latter's
        // title is the first line of the sibling after it (below).
        assert!(p.sections.iter().all(|s| s.anchor != "guide" || s.blocks.is_empty()));
        assert!(p.sections.iter().find(|s| s.anchor == "empty").unwrap().blocks.is_empty());
    }

    #[test]
    fn a_page_title_or_heading_of_megabytes_is_stored_cut_to_the_label_cap() {
        use super::safety::MAX_LABEL_BYTES;
        let huge = format!("Setup \u{202e}{}\u{202c}", "W".repeat(200_000));
        let mut b = PageBuilder::new();
        b.heading(2, &huge, "setup");
        b.text("Text.");
        let p = b.finish(Some(huge.clone()), "x");
        let section = p.sections.iter().find(|s| s.anchor == "setup").unwrap();
        for label in [&p.title, &section.heading, &section.breadcrumb[0]] {
            assert!(
                label.len() <= MAX_LABEL_BYTES && label.ends_with('\u{2026}'),
                "{}",
                label.len()
            );
            // The cut took the override's end: the override went with it.
            assert!(label.starts_with("Setup W"), "{label}");
        }
    }

    #[test]
    fn empty_signature_headings_are_the_next_siblings_text_too() {
        let mut b = PageBuilder::new();
        b.heading(1, "Parser", "parser");
        b.heading(3, "parse(code)", "parse");
        b.heading(3, "parseExpression(code)", "parseexpression");
        b.text("Parse a program, or one expression.");
        b.heading(3, "Options", "options");
        b.text("None.");
        b.heading(2, "Link one", "link-one");
        b.heading(2, "Link two", "link-two");
        let p = b.finish(None, "x");
        let sec = |a: &str| p.sections.iter().find(|s| s.anchor == a).unwrap();
        assert_eq!(
            sec("parseexpression").blocks,
            vec![
                Block::Text("parse(code)".into()),
                Block::Text("Parse a program, or one expression.".into())
            ]
        );
        assert!(sec("parse").blocks.is_empty());
        assert_eq!(sec("options").blocks, vec![Block::Text("None.".into())]);
        // A run of empty headings ending the page carries nowhere.
        assert!(sec("link-one").blocks.is_empty() && sec("link-two").blocks.is_empty());
    }

    #[test]
    fn docusaurus_partials_are_files_or_folders_starting_with_an_underscore() {
        assert!(is_docusaurus_partial("_tags.mdx"));
        assert!(is_docusaurus_partial("guide/_partials/tags.md"));
        assert!(is_docusaurus_partial("guide\\_x.md"));
        assert!(!is_docusaurus_partial("guide/tags_file.md"));
    }

    #[test]
    fn fences_grow_when_code_contains_backticks() {
        assert_eq!(fence("md", "```rust\nx\n```"), "````md\n```rust\nx\n```\n````");
        assert_eq!(fence("a`b <x>", "y"), "```ab\ny\n```", "a fence's info keeps no backtick");
    }
}

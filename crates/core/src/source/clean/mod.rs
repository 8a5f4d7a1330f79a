//! Pages as clean Markdown for AI agents (`docent llms`: llms-full.txt and one `.md` per page):
//! the page content only (no navigation, scripts or styles), code blocks and tables kept, and
//! every h1–h4 heading ending with the anchor the index uses, as `## Title {#anchor}` (the
//! Pandoc / markdown-it-attrs / VitePress syntax), so `url#anchor` citations resolve.

mod markdown;

#[cfg(feature = "html")]
mod html;

use super::{normalize_ws, Block, Flavor, Page, SourceError, SourceKind};

/// A page as clean Markdown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanPage {
    /// The page title.
    pub title: String,
    /// One line about the page: frontmatter / meta `description`, else its first sentence.
    pub description: String,
    /// The page as Markdown, starting with its `# Title`.
    pub markdown: String,
}

/// Clean one file's contents; `None` for a page that asks not to be indexed (noindex, redirect
/// stub), as [`super::parse_page`] skips it.
pub fn clean_page(
    kind: SourceKind,
    content: &str,
    flavor: Flavor,
    file_stem: &str,
) -> Result<Option<CleanPage>, SourceError> {
    match kind {
        SourceKind::Markdown => Ok(Some(safe(markdown::clean(content, flavor, file_stem)))),
        #[cfg(feature = "html")]
        SourceKind::Html => Ok(html::clean(content, file_stem).map(safe)),
        #[cfg(not(feature = "html"))]
        SourceKind::Html => {
            let _ = file_stem;
            Err(SourceError::HtmlUnsupported)
        }
    }
}

/// [`clean_page`] for the file at `path` (relative to its source folder): the Markdown files it
/// includes are read through `inc`, as [`super::parse_page_with`] does.
pub fn clean_page_with(
    kind: SourceKind,
    content: &str,
    flavor: Flavor,
    path: &str,
    inc: &dyn super::include::Includes,
) -> Result<Option<CleanPage>, SourceError> {
    match kind {
        SourceKind::Markdown => Ok(Some(safe(markdown::clean_with(content, flavor, path, inc)))),
        _ => {
            let file = path.rsplit('/').next().unwrap_or(path);
            let stem = file.rsplit_once('.').map(|(s, _)| s).unwrap_or(file);
            clean_page(kind, content, flavor, stem)
        }
    }
}

/// The page without terminal escapes and unpaired bidi controls, as the index keeps its text:
/// a page's Markdown is served to agents and read in terminals (a `.ansi` snippet's colour
/// codes, a heading that moves the cursor).
fn safe(p: CleanPage) -> CleanPage {
    use super::safety::{strip_unpaired_bidi, without_terminal_escapes};
    let clean = |s: &str| strip_unpaired_bidi(&without_terminal_escapes(s)).into_owned();
    CleanPage {
        title: clean(&p.title),
        description: clean(&p.description),
        markdown: clean(&p.markdown),
    }
}

/// Longest one-line description, in characters.
const MAX_DESCRIPTION_CHARS: usize = 160;

/// The first sentence of the page's first text block (shortened to a line), or "".
pub(crate) fn first_sentence(page: &Page) -> String {
    let Some(text) = page.sections.iter().flat_map(|s| &s.blocks).find_map(|b| match b {
        Block::Text(t) if t.split_whitespace().count() >= 3 => Some(t),
        _ => None,
    }) else {
        return String::new();
    };
    let text = normalize_ws(text);
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?') && text[i + 1..].starts_with(' ')
            || c == '.' && i + 1 == text.len()
        {
            end = i + 1;
            break;
        }
    }
    one_line(&text[..end])
}

/// A description as one line of at most [`MAX_DESCRIPTION_CHARS`] characters: whitespace runs
/// become one space, and a longer text is cut at a word boundary with `…`. Authors' own
/// descriptions (frontmatter, `<meta name="description">`) go through it too: they can be any
/// length.
pub(crate) fn one_line(text: &str) -> String {
    let s = normalize_ws(text);
    if s.chars().count() <= MAX_DESCRIPTION_CHARS {
        return s;
    }
    let cut: String = s.chars().take(MAX_DESCRIPTION_CHARS - 1).collect();
    let cut = cut.rsplit_once(' ').map(|(a, _)| a).unwrap_or(&cut);
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_s_markdown_has_no_terminal_escapes() {
        // A VitePress `<<< ./snippets/output.ansi` block, a title that moves the cursor.
        let src = "# Run \u{1b}[2J\n\n```ansi\n\u{1b}[32m✓\u{1b}[0m 3 tests passed\n```\n";
        let p = clean_page(SourceKind::Markdown, src, Flavor::VitePress, "run").unwrap().unwrap();
        assert!(!p.markdown.contains('\u{1b}') && !p.title.contains('\u{1b}'), "{p:?}");
        assert!(p.markdown.contains("✓ 3 tests passed"), "{}", p.markdown);
    }
}

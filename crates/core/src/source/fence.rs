//! Fenced code blocks, found line by line as CommonMark finds them. The passes that edit a
//! page's lines before it is parsed (includes, MDX clean-up, attribute lists, MkDocs blocks,
//! the llms cleaner) must leave code alone, and so must agree with the parser on where code is:
//! they all ask [`Fences`].
//!
//! - An opening fence is three or more backticks or tildes, indented up to 3 columns past the
//!   content of the list item it is in (any amount in MDX, which has no indented code: its
//!   parser takes any indentation before a fence, [`Dialect::Mdx`]). A backtick fence's info
//!   string has no backtick (```` ```js` ```` starts inline code, not a block).
//! - The closing fence is the same character, at least as many of it, indented as far as an
//!   opening one may be, with nothing after it but spaces or tabs.
//! - An unclosed fence runs to the end of its container: the list item it is in (the first line
//!   indented less than the item's content, blank lines aside), else the document.
//!
//! List items are followed for that (`- `, `1. `, nested by indentation, with paragraph
//! continuation lines); block quotes are not: a `> ```js` line is text to these passes (the
//! parser still reads it as code).

/// The grammar a page is parsed with, as far as fences go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// CommonMark (VitePress, plain Markdown): a fence indented 4 columns past its container is
    /// indented code.
    #[default]
    CommonMark,
    /// MDX (Docusaurus, `.mdx` files): no indented code, so a fence may be indented any amount.
    Mdx,
}

/// An opening fence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opening<'a> {
    /// `` ` `` or `~`.
    pub ch: char,
    /// How many of them.
    pub len: usize,
    /// The info string, trimmed (`ts twoslash`, `mdx-code-block`).
    pub info: &'a str,
    /// Where the fence's characters start in the line (after its indentation, and after the
    /// list markers of a `- ```js` line).
    pub at: usize,
}

/// What one line is, read by [`Fences::line`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line<'a> {
    /// Not code (a fence left open by its container ends before such a line).
    Text,
    /// It opens a fence.
    Open(Opening<'a>),
    /// Code inside a fence.
    Code,
    /// It closes the open fence.
    Close,
}

/// A reader of a text's lines, in order, that tells the fences from the rest
/// (see the module docs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Fences {
    dialect: Dialect,
    /// The content column of each open list item, outermost first.
    items: Vec<usize>,
    /// The open fence: its char, its length and how many of `items` it is in.
    open: Option<(char, usize, usize)>,
    /// Fences whose content is Markdown ([`Fences::not_code`]), the same way, innermost last.
    markup: Vec<(char, usize, usize)>,
    /// The last line was paragraph text, which a less indented line may continue (lazily)
    /// without closing the list item it is in.
    paragraph: bool,
}

impl Fences {
    pub fn new(dialect: Dialect) -> Fences {
        Fences { dialect, ..Fences::default() }
    }

    /// Whether a fence is open (the lines read last were its opening or code).
    pub fn in_code(&self) -> bool {
        self.open.is_some()
    }

    /// The fence [`Fences::line`] just opened holds Markdown, not code (Docusaurus'
    /// ```` ```mdx-code-block ````): its lines are read as the rest, and its closing line is a
    /// [`Line::Close`] read while not [`Fences::in_code`].
    pub fn not_code(&mut self) {
        self.markup.extend(self.open.take());
    }

    /// Reads the next line (without its line ending).
    pub fn line<'a>(&mut self, line: &'a str) -> Line<'a> {
        let (col, rest) = indentation(line, 0);
        if is_blank(rest) {
            self.paragraph = false;
            return if self.open.is_some() { Line::Code } else { Line::Text };
        }
        // The list items the line is in: those whose content it is indented to.
        let inside = self.items.iter().take_while(|&&c| col >= c).count();
        if let Some((ch, len, depth)) = self.open {
            if inside >= depth {
                let base = depth.checked_sub(1).map_or(0, |d| self.items[d]);
                let closing = self.may_indent(col - base) && closes(rest, ch, len);
                if closing {
                    self.open = None;
                }
                return if closing { Line::Close } else { Line::Code };
            }
            // The fence's list item ends here, and the fence with it.
            self.open = None;
            self.paragraph = false;
        }
        if inside < self.items.len() {
            // A line indented less than an item's content ends it, unless it continues the
            // item's paragraph (lazily).
            let lazy = self.paragraph && !self.starts_block(rest, col);
            if !lazy {
                // The items end, and a paragraph in them: `2. x` after item 1's text is item 2.
                self.items.truncate(inside);
                self.paragraph = false;
            }
        }
        // Markup fences end with their list items too.
        while self.markup.last().is_some_and(|&(.., depth)| depth > self.items.len()) {
            self.markup.pop();
        }
        if let Some(&(ch, len, depth)) = self.markup.last() {
            let base = depth.checked_sub(1).map_or(0, |d| self.items[d]);
            if col >= base && self.may_indent(col - base) && closes(rest, ch, len) {
                self.markup.pop();
                self.paragraph = false;
                return Line::Close;
            }
        }
        let mut base = self.items.last().copied().unwrap_or(0);
        if col < base {
            // A lazy continuation of the paragraph.
            return Line::Text;
        }
        let (mut col, mut rest) = (col, rest);
        // Only the first list marker of a line may interrupt a paragraph (`- 2. x` nests).
        let mut interrupts = self.paragraph;
        while self.may_indent(col - base) {
            if let Some(o) = opening(rest) {
                self.open = Some((o.ch, o.len, self.items.len()));
                self.paragraph = false;
                return Line::Open(Opening { at: line.len() - rest.len(), ..o });
            }
            let Some((content, after)) = list_item(rest, col, interrupts) else { break };
            self.items.push(content);
            (base, interrupts) = (content, false);
            match after {
                Some(after) => (col, rest) = (content, after),
                None => {
                    self.paragraph = false;
                    return Line::Text;
                }
            }
        }
        self.paragraph = (self.paragraph || self.may_indent(col - base))
            && !is_heading(rest)
            && !is_thematic_break(rest);
        Line::Text
    }

    /// Whether a fence (or list item) may stand `cols` columns past its container's content.
    fn may_indent(&self, cols: usize) -> bool {
        cols <= 3 || self.dialect == Dialect::Mdx
    }

    /// Whether `text` (a line after its indentation, at column `col`, less than the content of
    /// the list item it follows) starts a block, which no paragraph continues: a list marker
    /// there starts another item of a list (any number may, not only 1).
    fn starts_block(&self, text: &str, col: usize) -> bool {
        opening(text).is_some()
            || list_item(text, col, false).is_some()
            || is_heading(text)
            || is_thematic_break(text)
            || text.starts_with('>')
    }
}

/// `text` (a line after its indentation) as an opening fence (`at` is 0).
pub(crate) fn opening(text: &str) -> Option<Opening<'_>> {
    let ch = text.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = text.len() - text.trim_start_matches(ch).len();
    let info = &text[len..];
    (len >= 3 && !(ch == '`' && info.contains('`'))).then(|| Opening {
        ch,
        len,
        info: info.trim(),
        at: 0,
    })
}

/// Whether `text` (a line after its indentation) closes a fence of `len` `ch`s.
pub(crate) fn closes(text: &str, ch: char, len: usize) -> bool {
    let run = text.len() - text.trim_start_matches(ch).len();
    run >= len && is_blank(&text[run..])
}

/// A line's indentation in columns (a tab reaches the next multiple of 4, counted from
/// `start`, the column `text` starts at) and the rest of it.
fn indentation(text: &str, start: usize) -> (usize, &str) {
    let mut col = start;
    for (i, c) in text.char_indices() {
        match c {
            ' ' => col += 1,
            '\t' => col += 4 - col % 4,
            _ => return (col, &text[i..]),
        }
    }
    (col, "")
}

/// Nothing but spaces and tabs (and a stray `\r`).
fn is_blank(text: &str) -> bool {
    text.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// A list item's start in `text` (a line after its indentation, at column `col`): the column its
/// content starts at, and the text of that content (`None` when the item's first line is blank
/// or starts with indented code). After a paragraph (`interrupts`), only an item that has text
/// and, if ordered, starts at 1 is one.
fn list_item(text: &str, col: usize, interrupts: bool) -> Option<(usize, Option<&str>)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let marker = match (digits, text.as_bytes().get(digits)) {
        (0, Some(b'-' | b'+' | b'*')) => 1,
        (1..=9, Some(b'.' | b')')) => digits + 1,
        _ => return None,
    };
    let after = &text[marker..];
    if !(after.is_empty() || after.starts_with([' ', '\t'])) || is_thematic_break(text) {
        return None;
    }
    let (content, rest) = indentation(after, col + marker);
    let blank = is_blank(rest);
    if interrupts && (blank || (digits > 0 && &text[..digits] != "1")) {
        return None;
    }
    let gap = content - (col + marker);
    if blank || gap > 4 {
        // The content starts one space after the marker.
        return Some((col + marker + 1, None));
    }
    Some((content, Some(rest)))
}

/// An ATX heading: 1 to 6 `#`s, then a space or the end of the line.
fn is_heading(text: &str) -> bool {
    let n = text.len() - text.trim_start_matches('#').len();
    (1..=6).contains(&n) && (text.len() == n || text[n..].starts_with([' ', '\t']))
}

/// A thematic break: three or more `-`, `*` or `_` (the same one), spaces and tabs between.
fn is_thematic_break(text: &str) -> bool {
    let Some(ch) = text.chars().next().filter(|c| matches!(c, '-' | '*' | '_')) else {
        return false;
    };
    let rest = text.trim_end_matches(['\r']);
    rest.chars().all(|c| c == ch || c == ' ' || c == '\t')
        && rest.chars().filter(|&c| c == ch).count() >= 3
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulldown_cmark::{Event, Parser, Tag};

    /// The lines of `text` that are code (inside a fence, fence lines excluded) by [`Fences`].
    fn code_lines(text: &str, dialect: Dialect) -> Vec<usize> {
        let mut f = Fences::new(dialect);
        let lines = text.lines().enumerate();
        lines.filter(|(_, l)| f.line(l) == Line::Code).map(|(i, _)| i).collect()
    }

    /// The same by pulldown-cmark (CommonMark): the non-blank lines inside fenced code blocks.
    fn cmark_code_lines(text: &str) -> Vec<usize> {
        let line_of = |at: usize| text[..at].matches('\n').count();
        let mut out = Vec::new();
        let mut in_fence = false;
        for (event, range) in Parser::new(text).into_offset_iter() {
            match event {
                Event::Start(Tag::CodeBlock(pulldown_cmark::CodeBlockKind::Fenced(_))) => {
                    in_fence = true
                }
                Event::End(pulldown_cmark::TagEnd::CodeBlock) => in_fence = false,
                Event::Text(t) if in_fence => {
                    let first = line_of(range.start);
                    let n = t.trim_end_matches('\n').matches('\n').count();
                    out.extend(
                        (first..=first + n)
                            .filter(|&i| !text.lines().nth(i).is_some_and(|l| l.trim().is_empty())),
                    );
                }
                _ => {}
            }
        }
        out.dedup();
        out
    }

    /// [`Fences`] and pulldown-cmark find the same code lines (blank lines aside).
    fn agrees(text: &str) -> Vec<usize> {
        let ours: Vec<usize> = code_lines(text, Dialect::CommonMark)
            .into_iter()
            .filter(|&i| !text.lines().nth(i).is_some_and(|l| l.trim().is_empty()))
            .collect();
        assert_eq!(ours, cmark_code_lines(text), "{text:?}");
        ours
    }

    #[test]
    fn a_fence_indented_four_columns_is_indented_code_unless_in_a_list_item() {
        // The two old readers disagreed: one took any indentation, the other at most 3 columns
        // even in a list item.
        assert_eq!(agrees("Text\n\n    ```js\n    a <b>\n    ```\n"), Vec::<usize>::new());
        assert_eq!(agrees("   ```js\n   a\n   ```\n"), [1]);
        assert_eq!(agrees("1. Step\n\n    ```sh\n    npm i\n    ```\n\nAfter\n"), [3]);
        assert_eq!(agrees("- a\n  - b\n\n    ```\n    x\n    ```\n"), [4]);
        assert_eq!(agrees("- a\n\n      ```\n      x\n      ```\n"), Vec::<usize>::new());
        assert_eq!(agrees("1. Step\n\n```\nx\n```\n"), [3]);
        // The next item of a list, right after the text of the one before it.
        assert_eq!(agrees("1.  a\n    b\n2.  c\n\n    ```html\n    <script>\n    ```\n"), [5]);
        assert_eq!(agrees("Text\n2. c\n\n    ```\n    x\n    ```\n"), Vec::<usize>::new());
        // MDX takes any indentation (Starlight's tabs indent their fences 8 columns).
        let tabs = "<TabItem>\n        ```sh\n        npx astro add\n        ```\n</TabItem>\n";
        assert_eq!(code_lines(tabs, Dialect::Mdx), [2]);
        assert_eq!(agrees(tabs), Vec::<usize>::new());
    }

    #[test]
    fn a_backtick_in_a_backtick_fences_info_string_makes_it_inline_code() {
        // One old reader took ```` ```js` ```` for a fence, and the rest of the page for code.
        assert_eq!(agrees("```foo``` is code.\n\nText <b>\n"), Vec::<usize>::new());
        assert_eq!(agrees("~~~ a`b\nx\n~~~\n"), [1]);
        assert!(opening("```js title=\"a`b\"").is_none());
        assert_eq!(opening("~~~ `x`").map(|o| o.info), Some("`x`"));
    }

    #[test]
    fn the_closing_fence_is_as_long_not_indented_four_and_has_nothing_after_it() {
        assert_eq!(agrees("````\n```\nx\n````\n"), [1, 2]);
        assert_eq!(agrees("```\nx\n    ```\ny\n```\n"), [1, 2, 3]);
        assert_eq!(agrees("```\nx\n``` js\ny\n```  \nz\n"), [1, 2, 3]);
        assert_eq!(agrees("~~~\nx\n```\n~~~\n"), [1, 2]);
        // Tabs count to the next multiple of 4: a tab is indented code.
        assert_eq!(agrees("\t```\n\tx\n"), Vec::<usize>::new());
    }

    #[test]
    fn an_unclosed_fence_ends_with_its_list_item_or_the_document() {
        assert_eq!(agrees("```\nx\n\ny\n"), [1, 3]);
        // A line indented less than the item's content ends the item, and the fence.
        assert_eq!(agrees("1. a\n   ```\n   x\nText\n"), [2]);
        assert_eq!(agrees("- a\n  ```\n  x\n\n  y\n- b\n"), [2, 4]);
        // A paragraph continued lazily keeps the item open.
        assert_eq!(agrees("1. a\nlazy\n\n    ```\n    x\n    ```\n"), [4]);
    }

    #[test]
    fn a_fence_may_open_on_a_list_items_first_line() {
        assert_eq!(agrees("- ```js\n  x\n  ```\n"), [1]);
        let mut f = Fences::new(Dialect::CommonMark);
        assert_eq!(
            f.line("1. - ```ts twoslash"),
            Line::Open(Opening { ch: '`', len: 3, info: "ts twoslash", at: 5 })
        );
    }

    #[test]
    fn odd_lines_are_text_and_do_not_panic() {
        let odd = "* * *\n    ```\nx\n-\n  ```\n  y\n10. a\n#\n\u{3000}```\n2) \t\tb\n";
        agrees(odd);
        for dialect in [Dialect::CommonMark, Dialect::Mdx] {
            let mut f = Fences::new(dialect);
            for l in ["", "\t", "-", "1.", "1234567890. x", "- \t", "```", "\u{a0}- x", "```"] {
                let _ = f.line(l);
            }
        }
    }
}

//! Python-Markdown's indented blocks, which Material for MkDocs sites use on most pages:
//! admonitions (`!!! note "Title"`), collapsible ones (`??? tip`, `???+ tip`) and content tabs
//! (`=== "Tab"`). Their bodies are indented by four spaces, so a CommonMark reader takes them for
//! indented code: `docent` indexed prose as code blocks. [`blocks`] turns each opener into a
//! label line ("Note: Title", "Tab") and dedents its body; fenced code is left as it is.

use super::fence::{Dialect, Fences, Line};
use std::borrow::Cow;

/// The label of a block opener line (already trimmed of its indentation), or `None`.
fn opener(t: &str) -> Option<String> {
    if let Some(rest) = t.strip_prefix("===") {
        // A content tab: `=== "Title"` (`===` alone is a setext heading underline).
        let rest = rest.trim_start_matches('!').trim();
        let title = rest.strip_prefix('"')?.strip_suffix('"')?;
        return Some(title.trim().to_string());
    }
    let rest = t.strip_prefix("!!!").or_else(|| t.strip_prefix("???"))?;
    let rest = rest.strip_prefix('+').unwrap_or(rest);
    if !rest.starts_with(' ') {
        return None;
    }
    let rest = rest.trim();
    let kind: String =
        rest.chars().take_while(|c| c.is_alphanumeric() || *c == '-' || *c == '_').collect();
    if kind.is_empty() {
        return None;
    }
    // Further words are extra CSS classes (`!!! note inline end "Title"`); the title is quoted.
    let title = rest.find('"').and_then(|q| rest[q + 1..].strip_suffix('"')).unwrap_or("").trim();
    Some(super::markdown::admonition_label(&kind, title))
}

/// Leading columns of a line (a tab counts to the next multiple of four).
fn indent_of(line: &str) -> usize {
    let mut col = 0;
    for c in line.chars() {
        match c {
            ' ' => col += 1,
            '\t' => col = (col / 4 + 1) * 4,
            _ => break,
        }
    }
    col
}

/// `line` without its first `cols` columns of indentation (fewer when it has fewer).
fn dedent(line: &str, cols: usize) -> &str {
    let mut col = 0;
    for (i, c) in line.char_indices() {
        if col >= cols {
            return &line[i..];
        }
        match c {
            ' ' => col += 1,
            '\t' => col = (col / 4 + 1) * 4,
            _ => return &line[i..],
        }
    }
    ""
}

/// The text with MkDocs' indented blocks turned into label lines and dedented bodies (fences,
/// found as `dialect` has them, left as they are). Text without any opener is returned as it
/// is.
pub fn blocks(body: &str, dialect: Dialect) -> Cow<'_, str> {
    if !body.lines().any(|l| opener(l.trim_start()).is_some()) {
        return Cow::Borrowed(body);
    }
    let mut out = String::with_capacity(body.len());
    // The body indentation (original columns) of each open block, outermost first.
    let mut open: Vec<usize> = Vec::new();
    let mut fences = Fences::new(dialect);
    for line in body.lines() {
        let indent = indent_of(line);
        if !line.trim().is_empty() {
            while open.last().is_some_and(|&need| indent < need) {
                open.pop();
            }
        }
        let l = dedent(line, open.last().copied().unwrap_or(0));
        let t = l.trim_start();
        if fences.line(l) != Line::Text {
            // Code, kept as it is.
        } else if let Some(label) = opener(t) {
            out.push_str(&l[..l.len() - t.len()]);
            out.push_str(&label);
            out.push_str("\n\n");
            open.push(indent + 4);
            continue;
        }
        out.push_str(l);
        out.push('\n');
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admonitions_and_tabs_become_labels_with_dedented_bodies() {
        let src = "# Page\n\n!!! note \"Read this\"\n\n    Body **text**.\n\n    ```py\n    x = 1\n    ```\n\nAfter.\n\n=== \"pip\"\n\n    pip install x\n\n=== \"conda\"\n\n    conda install x\n\n???+ tip\n    Collapsible.\n\n    !!! warning inline end\n        Nested.\n\nEnd.\n";
        let got = blocks(src, Dialect::CommonMark);
        assert_eq!(
            got,
            "# Page\n\nNote: Read this\n\n\nBody **text**.\n\n```py\nx = 1\n```\n\nAfter.\n\npip\n\n\npip install x\n\nconda\n\n\nconda install x\n\nTip:\n\nCollapsible.\n\nWarning:\n\nNested.\n\nEnd.\n"
        );
    }

    #[test]
    fn other_text_is_untouched() {
        // A setext underline, code that mentions the syntax, and plain indented code.
        let src = "Title\n===\n\n```md\n!!! note\n    inside a fence\n```\n\n    indented code\n";
        assert_eq!(blocks(src, Dialect::CommonMark), src);
        let fenced = "!!! note\n    ```\n    !!! tip\n        kept as code\n    ```\n";
        assert_eq!(
            blocks(fenced, Dialect::CommonMark),
            "Note:\n\n```\n!!! tip\n    kept as code\n```\n"
        );
        // A fence indented four columns closes no fence: the example stays code whole.
        let example = "``` title=\"Tabs\"\n=== \"C\"\n\n    ``` c\n    x\n    ```\n\n=== \"C++\"\n\n    ``` c++\n    y\n    ```\n```\n";
        assert_eq!(blocks(example, Dialect::CommonMark), example);
        // Odd input: no panic.
        for odd in ["!!!", "???+", "=== \"", "!!! \"x\"", "\t!!! note\n\t\tbody", "==="] {
            let _ = blocks(odd, Dialect::CommonMark);
        }
    }
}

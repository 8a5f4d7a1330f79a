//! Defences against hostile docs pages (docs are semi-trusted: sites merge doc PRs from
//! outsiders). Two helpers the parsers and the URL mapping call:
//!
//! - [`strip_unpaired_bidi`]: an unterminated RIGHT-TO-LEFT OVERRIDE (U+202E) in a title
//!   reorders whatever the widget shows after it (`Falcon rotator \u{202E}txt.exe`). Bidi
//!   embeddings, overrides and isolates survive only in properly nested pairs; every other one
//!   is dropped at index time.
//! - [`check_slug`] and [`confine_url`]: a page URL comes from the file path and, for
//!   Docusaurus, the `slug:` front matter. Neither may give a URL with a scheme or a host
//!   (`https:/attacker.example/x` is a link to that host in a browser, WHATWG URL parsing), so a
//!   slug that a browser would read as leaving the site is refused (the caller warns and keeps
//!   the file's own path), and a path-derived URL that could be read so is made `./`-relative.
//!
//! Both judge a URL the way the widget does, with [`crate::render::classify_url`] (after entity,
//! percent and backslash decoding and removal of tabs, newlines and invisible characters).

use std::borrow::Cow;

use crate::render::{classify_url, UrlKind};

/// Bidi embedding and override openers: LRE, RLE, LRO, RLO (closed by PDF).
fn opens_embedding(c: char) -> bool {
    matches!(c, '\u{202a}' | '\u{202b}' | '\u{202d}' | '\u{202e}')
}

/// Bidi isolate openers: LRI, RLI, FSI (closed by PDI).
fn opens_isolate(c: char) -> bool {
    matches!(c, '\u{2066}' | '\u{2067}' | '\u{2068}')
}

/// POP DIRECTIONAL FORMATTING and POP DIRECTIONAL ISOLATE.
const PDF: char = '\u{202c}';
const PDI: char = '\u{2069}';

/// Deepest nesting kept (Unicode's bidi algorithm stops at 125 levels; two per pair).
const MAX_DEPTH: usize = 60;

/// Whether `c` is one of the nine paired bidi formatting characters (U+202A–U+202E,
/// U+2066–U+2069).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every bidi embedding, override and isolate that is not closed in a properly nested
/// pair removed (an opener without its closer, a closer without its opener, an embedding left
/// open inside an isolate). Paired ones stay (right-to-left text uses them), and so do the
/// LRM/RLM/ALM marks, which reorder nothing beyond themselves. The result never changes the
/// direction of text that follows it.
pub fn strip_unpaired_bidi(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_bidi_control) {
        return Cow::Borrowed(s);
    }
    // (byte offset, is_isolate) of the open controls; `drop` collects offsets to remove.
    let mut stack: Vec<(usize, bool)> = Vec::new();
    let mut drop: Vec<usize> = Vec::new();
    for (i, c) in s.char_indices() {
        if opens_embedding(c) || opens_isolate(c) {
            if stack.len() >= MAX_DEPTH {
                drop.push(i);
            } else {
                stack.push((i, opens_isolate(c)));
            }
        } else if c == PDF {
            match stack.last() {
                Some((_, false)) => {
                    stack.pop();
                }
                _ => drop.push(i),
            }
        } else if c == PDI {
            if stack.iter().any(|(_, iso)| *iso) {
                // The isolate closes; embeddings still open inside it were never closed.
                while let Some((j, iso)) = stack.pop() {
                    if iso {
                        break;
                    }
                    drop.push(j);
                }
            } else {
                drop.push(i);
            }
        }
    }
    drop.extend(stack.iter().map(|(j, _)| *j));
    if drop.is_empty() {
        return Cow::Borrowed(s);
    }
    // Marks instead of a sort (a sort's code would ship in the widget); linear either way.
    let mut dead = vec![false; s.len()];
    for j in drop {
        dead[j] = true;
    }
    Cow::Owned(s.char_indices().filter(|&(i, _)| !dead[i]).map(|(_, c)| c).collect())
}

/// `s` without any of the nine bidi formatting characters (for attribute values such as a
/// link's `title`, which no element can isolate).
pub fn without_bidi_controls(s: &str) -> Cow<'_, str> {
    if s.chars().any(is_bidi_control) {
        Cow::Owned(s.chars().filter(|&c| !is_bidi_control(c)).collect())
    } else {
        Cow::Borrowed(s)
    }
}

/// A heading's id as docent stores it: without terminal escapes, control characters (a newline
/// or tab included: no HTML id holds whitespace, and one would start a forged line in `docent
/// search`, MCP's `url:` lines and llms.txt) and bidi formatting characters (which would reverse
/// the rest of such a line). An id of ordinary characters is returned as it is.
pub fn clean_anchor(anchor: &str) -> Cow<'_, str> {
    if !anchor.chars().any(|c| c.is_control() || is_bidi_control(c)) {
        return Cow::Borrowed(anchor);
    }
    let t = without_terminal_escapes(anchor);
    Cow::Owned(t.chars().filter(|&c| !(c.is_control() || is_bidi_control(c))).collect())
}

/// The most bytes of a page title or a heading that an index keeps and its readers show. A page
/// can hold a 200 KB title or heading (and the id made from it, [`MAX_ANCHOR_BYTES`]): the widget
/// showed it in the answer, a citation's title, the sources list and "What I looked at", each
/// cited or looked-at section megabytes of page and a turn 100,000 pixels tall, and kept it in
/// sessionStorage, which two such turns filled for the whole site. Real titles and headings
/// are far shorter than this.
pub const MAX_LABEL_BYTES: usize = 300;

/// The most bytes of a heading's id that readers of an index link to; a longer one is dropped
/// (the link goes to the page). More than [`MAX_LABEL_BYTES`]: an id may spell its heading with
/// percent escapes (9 bytes for a CJK character), and a page's ids are not cut at index time.
pub const MAX_ANCHOR_BYTES: usize = 1024;

/// `s` cut to at most [`MAX_LABEL_BYTES`] bytes, at a char boundary: how readers take a title
/// or heading from an index (one not built by this docent may hold longer ones).
pub fn capped_label(s: &str) -> &str {
    &s[..crate::text::floor_char_boundary(s, MAX_LABEL_BYTES)]
}

/// A title or heading as an index stores it: one over [`MAX_LABEL_BYTES`] is cut to end in
/// "…" within that many bytes. Cut before bidi controls are paired ([`strip_unpaired_bidi`]),
/// since a cut can take away the end of a pair.
pub fn shortened_label(s: &str) -> Cow<'_, str> {
    if s.len() <= MAX_LABEL_BYTES {
        return Cow::Borrowed(s);
    }
    let kept = &s[..crate::text::floor_char_boundary(s, MAX_LABEL_BYTES - '\u{2026}'.len_utf8())];
    Cow::Owned(format!("{}\u{2026}", kept.trim_end()))
}

/// A control character other than tab and newline: nothing on a page, yet in what a reader
/// copies (`ESC[201~` ends a terminal's bracketed paste) and what a terminal obeys.
pub fn is_unseen_control(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

/// `s` without terminal escape sequences and other control characters (tabs and newlines
/// stay). VitePress pages include `.ansi` snippets of a terminal's output (`<<< ./out.ansi`),
/// whose colour codes (`ESC[32m`) would otherwise become search words ("32m") and show in
/// excerpts; and `docent search` and `docent inspect` print chunk texts to a terminal, where a
/// hostile page's escapes could move the cursor or rewrite what was printed. Removed: CSI
/// sequences (`ESC [` … a final byte `@`–`~`), OSC strings (`ESC ]` … BEL or `ESC \`), other
/// two-character escapes, C1 controls and the C0 controls but `\t` and `\n`.
pub fn without_terminal_escapes(s: &str) -> Cow<'_, str> {
    /// The longest OSC string (a hyperlink's URL, a window title) looked for a terminator.
    const OSC_MAX: usize = 4096;
    if !s.chars().any(is_unseen_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' || c == '\u{9b}' || c == '\u{9d}' {
            let kind = if c == '\u{1b}' {
                chars.next()
            } else {
                Some(if c == '\u{9b}' { '[' } else { ']' })
            };
            match kind {
                // CSI: parameter and intermediate bytes (space to `?`), then one final byte
                // (`@` to `~`); anything else ends it, so a stray `ESC [` drops no text.
                Some('[') => {
                    while let Some(&n) = chars.peek() {
                        if (' '..='?').contains(&n) {
                            chars.next();
                            continue;
                        }
                        if ('@'..='~').contains(&n) {
                            chars.next();
                        }
                        break;
                    }
                }
                // OSC (and DCS, SOS, PM, APC strings): up to BEL or ST (`ESC \`) when one comes
                // within OSC_MAX characters; otherwise only the introducer goes.
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    let mut ahead = chars.clone();
                    for _ in 0..OSC_MAX {
                        match ahead.next() {
                            Some('\u{7}' | '\u{9c}') => {
                                chars = ahead;
                                break;
                            }
                            Some('\u{1b}') if ahead.peek() == Some(&'\\') => {
                                ahead.next();
                                chars = ahead;
                                break;
                            }
                            Some(_) => {}
                            None => break,
                        }
                    }
                }
                // Any other escape is two characters (`ESC c`, `ESC 7`…).
                _ => {}
            }
        } else if !is_unseen_control(c) {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Why a `slug:` cannot be used as a path on the site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlugProblem {
    /// A browser would read it as a URL with a scheme or a host (`https:/x`, `//x`,
    /// `javascript:`, also when percent- or entity-encoded or split by tabs).
    LeavesTheSite,
    /// A backslash (browsers read it as `/`) or a control character.
    BadCharacter,
}

impl std::fmt::Display for SlugProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SlugProblem::LeavesTheSite => {
                "a browser would read it as a link with a scheme or a host, not a path on the site"
            }
            SlugProblem::BadCharacter => "it contains a backslash or a control character",
        })
    }
}

/// Check a Docusaurus `slug:`: it must be a path on the site (`/custom/path`, `intro`,
/// `../moved`). Anything a browser could read as another scheme or host is refused.
pub fn check_slug(slug: &str) -> Result<(), SlugProblem> {
    if slug.chars().any(|c| c == '\\' || c.is_control()) {
        return Err(SlugProblem::BadCharacter);
    }
    match classify_url(slug.trim()) {
        Some(UrlKind::Relative) => Ok(()),
        _ => Err(SlugProblem::LeavesTheSite),
    }
}

/// A page URL made from a file path (no base URL): returned as is when the widget reads it as
/// a relative URL, else with `./` in front, which keeps a first segment like `https:` (a folder
/// of that name) a path. Never a URL with a scheme or a host.
pub fn confine_url(url: String) -> String {
    if url.is_empty() || matches!(classify_url(&url), Some(UrlKind::Relative)) {
        url
    } else {
        format!("./{url}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unterminated_override_in_a_title_is_dropped() {
        assert_eq!(
            strip_unpaired_bidi("Falcon token rotator \u{202e}txt.exe"),
            "Falcon token rotator txt.exe"
        );
        assert_eq!(strip_unpaired_bidi("a\u{2067}b"), "ab");
        assert_eq!(
            strip_unpaired_bidi("stray \u{202c} and \u{2069} closers"),
            "stray  and  closers"
        );
    }

    #[test]
    fn paired_bidi_controls_and_marks_stay() {
        for s in [
            "name \u{2067}שלום\u{2069} ok",
            "x \u{202b}abc\u{202c} y",
            "nested \u{2068}a \u{202e}b\u{202c} c\u{2069}",
            "mark \u{200f} only",
            "plain",
        ] {
            assert_eq!(strip_unpaired_bidi(s), s, "{s:?}");
        }
    }

    #[test]
    fn an_embedding_left_open_inside_an_isolate_is_dropped_with_the_isolate_kept() {
        assert_eq!(strip_unpaired_bidi("\u{2066}a\u{202e}b\u{2069}c"), "\u{2066}ab\u{2069}c");
        // A PDF cannot close an embedding across an isolate boundary.
        assert_eq!(strip_unpaired_bidi("\u{202e}a\u{2066}b\u{202c}\u{2069}"), "a\u{2066}b\u{2069}");
    }

    #[test]
    fn stripping_leaves_no_control_unpaired_whatever_the_input() {
        let alphabet = [
            'a', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}',
            '\u{2067}', '\u{2068}', '\u{2069}',
        ];
        // Every string of length 5 over the alphabet.
        let mut idx = [0usize; 5];
        loop {
            let s: String = idx.iter().map(|&i| alphabet[i]).collect();
            let out = strip_unpaired_bidi(&s);
            assert_eq!(strip_unpaired_bidi(&out), out, "{s:?} is not stripped to a fixed point");
            // Paired: a stack closes everything it opens.
            let mut stack = Vec::new();
            for c in out.chars() {
                if opens_embedding(c) || opens_isolate(c) {
                    stack.push(opens_isolate(c));
                } else if c == PDF {
                    assert_eq!(stack.pop(), Some(false), "{s:?} -> {out:?}");
                } else if c == PDI {
                    assert_eq!(stack.pop(), Some(true), "{s:?} -> {out:?}");
                }
            }
            assert!(stack.is_empty(), "{s:?} -> {out:?}");
            let mut k = 0;
            while k < idx.len() {
                idx[k] += 1;
                if idx[k] < alphabet.len() {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
            if k == idx.len() {
                break;
            }
        }
    }

    #[test]
    fn titles_and_headings_past_the_label_cap_are_cut_at_a_char_boundary() {
        assert_eq!(capped_label("Install"), "Install");
        assert_eq!(shortened_label("Install"), "Install");
        let long = "é".repeat(MAX_LABEL_BYTES);
        let cut = capped_label(&long);
        assert_eq!((cut.len(), cut.chars().count()), (MAX_LABEL_BYTES, MAX_LABEL_BYTES / 2));
        let odd = format!("x{long}");
        assert_eq!(capped_label(&odd).len(), MAX_LABEL_BYTES - 1, "never inside a char");
        let short = shortened_label(&odd);
        assert!(short.len() <= MAX_LABEL_BYTES && short.ends_with('\u{2026}'), "{short}");
        let spaced = format!("{} {}", "a".repeat(MAX_LABEL_BYTES - 4), "b".repeat(9));
        assert_eq!(
            shortened_label(&spaced),
            format!("{}\u{2026}", "a".repeat(MAX_LABEL_BYTES - 4))
        );
    }

    #[test]
    fn zero_width_and_full_width_characters_are_left_alone() {
        let s = "javascript\u{ff1a}alert(1) a\u{200b}b\u{200d}c";
        assert_eq!(strip_unpaired_bidi(s), s);
    }

    #[test]
    fn slugs_that_a_browser_reads_as_another_host_or_scheme_are_refused() {
        for bad in [
            "https:/attacker.example/p12-phish/",
            "http:/attacker.example",
            "https://attacker.example/x",
            "HTTPS:attacker.example",
            "//attacker.example/x",
            "/\\attacker.example/x",
            "\\\\attacker.example",
            "ht\ttps:/attacker.example",
            "ht\ntps:/attacker.example",
            "https%3A%2F%2Fattacker.example",
            "https&#58;//attacker.example",
            "&#104;ttps://attacker.example",
            "javascript:alert(1)",
            "data:text/html,x",
            "\u{1}https:/x",
        ] {
            assert!(check_slug(bad).is_err(), "{bad:?} was accepted");
        }
        for good in
            ["/custom/path", "intro", "../moved", "/", "guide/", "caf%C3%A9", "javascript\u{ff1a}x"]
        {
            assert_eq!(check_slug(good), Ok(()), "{good:?}");
        }
    }

    #[test]
    fn a_path_derived_url_with_a_colon_in_its_first_segment_stays_a_path() {
        assert_eq!(
            confine_url("https:/attacker.example/x.html".into()),
            "./https:/attacker.example/x.html"
        );
        assert_eq!(confine_url("javascript:alert(1).html".into()), "./javascript:alert(1).html");
        assert_eq!(confine_url("guide/intro.html".into()), "guide/intro.html");
        assert_eq!(confine_url("a/https:/b.html".into()), "a/https:/b.html");
        for u in ["https:/x.html", "//x.html", "%2F%2Fx.html", "ht\ttps:/x"] {
            assert_eq!(classify_url(&confine_url(u.into())), Some(UrlKind::Relative), "{u:?}");
        }
    }

    #[test]
    fn an_anchor_loses_line_breaks_controls_and_direction_overrides() {
        assert!(matches!(clean_anchor("install-on-linux"), Cow::Borrowed("install-on-linux")));
        assert_eq!(clean_anchor("a\nurl: https://evil.example"), "aurl: https://evil.example");
        assert_eq!(clean_anchor("x\u{202e}lmth.exe"), "xlmth.exe");
        assert_eq!(clean_anchor("\u{1b}[2Jtab\there"), "tabhere");
        // Non-ASCII ids (a Chinese heading's) stay as they are.
        assert_eq!(clean_anchor("安装"), "安装");
    }

    #[test]
    fn terminal_escapes_and_controls_are_removed() {
        let ansi = "\u{1b}[32m✓\u{1b}[39m bench \u{1b}[2m(1 test)\u{1b}[22m\tok\n";
        assert_eq!(without_terminal_escapes(ansi), "✓ bench (1 test)\tok\n");
        let osc = "see \u{1b}]8;;https://x.example\u{7}link\u{1b}]8;;\u{1b}\\ here";
        assert_eq!(without_terminal_escapes(osc), "see link here");
        assert_eq!(without_terminal_escapes("a\u{1b}cb\rc\u{0}d\u{9b}2Je"), "abcde");
        assert_eq!(without_terminal_escapes("plain\ttext\n"), "plain\ttext\n");
        // Cut short or malformed: no text after it is lost, nothing panics.
        assert_eq!(without_terminal_escapes("x\u{1b}[31"), "x");
        assert_eq!(without_terminal_escapes("x\u{1b}"), "x");
        assert_eq!(without_terminal_escapes("a\u{1b}[中文 b"), "a中文 b");
        assert_eq!(without_terminal_escapes("x\u{1b}]no end, all kept"), "xno end, all kept");
    }
}

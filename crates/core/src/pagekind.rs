//! What kind of page a section is on, read from the page itself: release notes and changelogs
//! name a version in their title ("Release 15.1", "What's New In Python 3.11") or in most of
//! their headings ("1.4.2 (2024-03-01)", "v2.0.0"). Their entries mention every option and
//! command that changed, so for a how-to question they outrank the reference section that
//! explains it; search demotes them unless the question asks about versions or changes
//! ([`asks_about_changes`]).
//!
//! Nothing here knows page names: a page called "changelog" whose headings are topics is
//! ordinary, a page titled "Release 15.1" is release notes whatever its file is called.

use crate::format::Index;

/// True when `s` holds a version number: `1.2`, `v2.0.1`, `15.1` (digits, a dot, digits; not
/// part of a longer word or number such as `a1.2b` or an IP address's middle).
pub fn has_version(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        // Optional v/V directly before the digits.
        let mut j = i;
        if (b[j] == b'v' || b[j] == b'V') && j + 1 < b.len() && b[j + 1].is_ascii_digit() {
            j += 1;
        }
        if b[j].is_ascii_digit()
            && (start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'.'))
        {
            let digits = |k: &mut usize| {
                let from = *k;
                while *k < b.len() && b[*k].is_ascii_digit() {
                    *k += 1;
                }
                *k > from
            };
            let mut k = j;
            digits(&mut k);
            let mut parts = 1;
            while k + 1 < b.len() && b[k] == b'.' && b[k + 1].is_ascii_digit() {
                k += 1;
                digits(&mut k);
                parts += 1;
            }
            let ends_clean = k == b.len() || !(b[k].is_ascii_alphanumeric() || b[k] == b'_');
            if parts >= 2 && ends_clean {
                return true;
            }
            i = k.max(i + 1);
            continue;
        }
        i += 1;
    }
    false
}

/// True when `s` holds an ISO date (`2024-03-01`).
fn has_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.windows(10).any(|w| {
        w.iter()
            .enumerate()
            .all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() })
    })
}

/// A heading without its leading section number ("E.20.1. Migration to Version 15.1" →
/// "Migration to Version 15.1", "9.4. String Functions" → "String Functions").
pub fn strip_section_number(h: &str) -> &str {
    let t = h.trim_start();
    let b = t.as_bytes();
    let mut i = 0;
    // An appendix letter: "E."
    if b.len() > 2 && b[0].is_ascii_uppercase() && b[1] == b'.' && b[2].is_ascii_digit() {
        i = 2;
    }
    let from = i;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    // A number ending in a dot and followed by a space: a section number.
    if i > from && b[i - 1] == b'.' && i < b.len() && b[i] == b' ' {
        t[i..].trim_start()
    } else {
        h
    }
}

/// True when a page with this title and these section headings (one per section, innermost
/// heading) reads as release notes or a changelog: its title names a version, or at least
/// three of its sections and half of them name a version or a date.
pub fn is_release_notes(title: &str, headings: &[&str]) -> bool {
    if has_version(strip_section_number(title)) {
        return true;
    }
    let dated = headings
        .iter()
        .map(|h| strip_section_number(h))
        .filter(|h| has_version(h) || has_date(h))
        .count();
    dated >= 3 && dated * 2 >= headings.len()
}

/// True when a question asks about versions or changes: it names a product's version
/// ("Python 3.11", "version 2.1", "v2"), or says changelog, release notes, what's new, new in,
/// changed in, deprecated... Release notes then keep their rank. A number alone ("why does
/// 1.1 + 2.2 print...") is no such cue, nor is "I changed the file".
pub fn asks_about_changes(question: &str) -> bool {
    let lower = crate::case::lower_str(question);
    const CUES: [&str; 12] = [
        "changelog",
        "change log",
        "release note",
        "released",
        "which release",
        "what release",
        "what's new",
        "what’s new",
        "what is new",
        "new in ",
        "changed in ",
        "deprecat",
    ];
    if CUES.iter().any(|c| lower.contains(c)) {
        return true;
    }
    // A version right after a name ("Python 3.11", "PostgreSQL 15") or "version"/"since".
    let words: Vec<&str> = question.split_whitespace().collect();
    words.windows(2).any(|w| {
        let (before, v) = (w[0], w[1].trim_end_matches(['?', '.', ',', '!', ')']));
        let versioned = has_version(v)
            || (v.len() > 1
                && v.starts_with(['v', 'V'])
                && v[1..].bytes().all(|b| b.is_ascii_digit()));
        let named = before.starts_with(|c: char| c.is_uppercase())
            || ["version", "release", "since", "versions"]
                .contains(&crate::case::lower_str(before).as_str());
        versioned && named
    }) || words.first().is_some_and(|w| w.starts_with(['v', 'V']) && has_version(w))
}

/// Whether chunk `i` is an outline: a heading with no text of its own, whose indexed text is
/// only the list of its sub-headings (`- Exclude a page`, `- Exclude part of a page`) that
/// reading gives such headings ([`crate::source`]). Short and general, an outline sits near
/// every question on its topic in a model's space and wins over the sub-section that answers.
/// Read from the index: every line is `- ` and the heading of a later section of the page, in
/// order. False when the text is not at hand (a split index's unattached shard).
pub(crate) fn is_outline(index: &Index, i: usize) -> bool {
    let c = index.chunk_ref(i);
    let page = index.page_of(i);
    // Reading lists the sub-headings in page order: each line names a later chunk's heading.
    let mut j = i + 1;
    c.text.split('\n').all(|line| {
        let Some(heading) = line.strip_prefix("- ") else { return false };
        while j < index.len() && index.page_of(j) == page {
            j += 1;
            if index.chunk_ref(j - 1).breadcrumb().last() == Some(&heading) {
                return true;
            }
        }
        false
    })
}

/// Release-notes flags per page, computed on demand for the pages a search meets.
pub(crate) struct PageKinds {
    known: Vec<(u32, bool)>,
}

impl PageKinds {
    pub(crate) fn new() -> PageKinds {
        PageKinds { known: Vec::new() }
    }

    /// Whether the page of chunk `i` is release notes (see [`is_release_notes`]). The page's
    /// chunks are the neighbours of `i` on the same page (a page's chunks are stored together).
    /// A split index decided it when it was split (its entry has no titles or headings).
    pub(crate) fn release_notes(&mut self, index: &Index, i: usize) -> bool {
        if let Some(sp) = &index.split {
            return sp.release_notes(i);
        }
        let page = index.page_of(i);
        if let Some(&(_, r)) = self.known.iter().find(|(p, _)| *p == page) {
            return r;
        }
        let (mut lo, mut hi) = (i, i + 1);
        while lo > 0 && index.page_of(lo - 1) == page {
            lo -= 1;
        }
        while hi < index.len() && index.page_of(hi) == page {
            hi += 1;
        }
        let mut sections: Vec<u32> = Vec::new();
        let mut headings: Vec<&str> = Vec::new();
        for c in lo..hi {
            let s = index.section_of(c);
            if !sections.contains(&s) {
                sections.push(s);
                let r = index.chunk_ref(c);
                headings.push(r.breadcrumb().last().copied().unwrap_or(""));
            }
        }
        let title = index.chunk_ref(i).title;
        let r = is_release_notes(title, &headings);
        self.known.push((page, r));
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outline_is_a_heading_whose_text_lists_the_pages_later_headings() {
        use crate::format::write_index;
        use crate::model::{Chunk, IndexHeader};
        let chunk = |url: &str, anchor: &str, crumbs: &[&str], text: &str| Chunk {
            url: url.into(),
            anchor: anchor.into(),
            title: "Site Search".into(),
            breadcrumb: crumbs.iter().map(|c| c.to_string()).collect(),
            text: text.into(),
            ..Default::default()
        };
        let hide = "Hide content in search results";
        let chunks = vec![
            chunk("s.html", "hide", &[hide], "- Exclude a page\n- Exclude part of a page"),
            chunk("s.html", "page", &[hide, "Exclude a page"], "Add pagefind: false."),
            chunk("s.html", "part", &[hide, "Exclude part of a page"], "Use data-pagefind-ignore."),
            // A real list of the same words on another page is no outline: those are not its
            // headings, nor is a list that names something else.
            chunk("t.html", "list", &["Steps"], "- Exclude a page\n- Exclude part of a page"),
            chunk("t.html", "more", &["Steps", "Exclude a page"], "More."),
            chunk("t.html", "mixed", &["Tips"], "- Exclude a page\n- Restart the server"),
        ];
        let index = crate::format::Index::from_bytes(
            write_index(&IndexHeader::default(), &chunks, None).unwrap(),
        )
        .unwrap();
        let outlines: Vec<bool> = (0..chunks.len()).map(|i| is_outline(&index, i)).collect();
        assert_eq!(outlines, [true, false, false, false, false, false]);
    }

    #[test]
    fn versions_are_dotted_numbers_not_parts_of_words_or_section_numbers() {
        for yes in
            ["Release 15.1", "What's New In Python 3.11", "v2.0.0", "1.4.2 (2024-03-01)", "in 3.9."]
        {
            assert!(has_version(yes), "{yes}");
        }
        for no in ["Rust 2021", "Chapter 9", "a1.2b", "x.y", "step 1. then", "10.0.0.1x"] {
            assert!(!has_version(no), "{no}");
        }
    }

    #[test]
    fn section_numbers_are_not_versions() {
        assert_eq!(
            strip_section_number("E.20.1. Migration to Version 15.1"),
            "Migration to Version 15.1"
        );
        assert_eq!(strip_section_number("9.4. String Functions"), "String Functions");
        assert_eq!(strip_section_number("1.4.2 (2024-03-01)"), "1.4.2 (2024-03-01)");
        assert!(!is_release_notes("9.4. String Functions and Operators", &["9.4.1. format"]));
    }

    #[test]
    fn release_notes_are_told_by_their_title_or_their_headings() {
        assert!(is_release_notes("E.20. Release 15.1", &["Migration", "Changes"]));
        assert!(is_release_notes("What’s New In Python 3.11¶", &["Summary", "New Features"]));
        assert!(is_release_notes(
            "Changelog",
            &["Changelog", "2.1.0 (2024-05-02)", "v2.0.1", "2024-01-15", "Unreleased"]
        ));
        // Two dated headings are not enough, nor a minority of them.
        assert!(!is_release_notes("Configuration", &["Options", "1.2 and later", "2.0 notes"]));
        assert!(!is_release_notes(
            "Changelog",
            &["Setup", "Usage", "Options", "Advanced", "FAQ", "1.0", "2.0", "3.0"]
        ));
        assert!(!is_release_notes("Using the rebase command", &["Options", "Examples"]));
    }

    #[test]
    fn questions_about_versions_or_changes_are_recognised() {
        assert!(asks_about_changes("what changed in PostgreSQL 15.1?"));
        assert!(asks_about_changes("Which release removed the old syntax"));
        assert!(asks_about_changes("what's new for pattern matching"));
        assert!(asks_about_changes("is match available since version 3.10?"));
        assert!(!asks_about_changes("how do I squash the last three commits"));
        assert!(!asks_about_changes("Why does 1.1 + 2.2 print 3.3000000000000003?"));
        assert!(!asks_about_changes("I changed the source of a module but get the old code"));
        assert!(!asks_about_changes("How do integers overflow in release mode?"));
    }
}

//! Section text from chunks: which chunks fit a token budget, and joining them without the
//! overlap the chunker repeats at the start of each continuation chunk.

use std::ops::Range;

/// Picks the chunks of a section that fit a token budget.
pub struct Budgeted;

impl Budgeted {
    /// The run of chunks (by index into `tokens`) to show within `budget` tokens: from the
    /// section's start, or from chunk `must` when the start would leave it out. Never empty
    /// when there are chunks (one chunk longer than the budget is shown whole: chunks are small).
    pub fn window(tokens: &[u32], budget: u32, must: Option<usize>) -> Range<usize> {
        if tokens.is_empty() {
            return 0..0;
        }
        let must = must.filter(|&m| m < tokens.len()).unwrap_or(0);
        let upto_must: u64 = tokens[..=must].iter().map(|&t| t as u64).sum();
        let start = if upto_must > budget as u64 { must } else { 0 };
        let mut used = 0u64;
        let mut end = start;
        while end < tokens.len() {
            used += tokens[end] as u64;
            if used > budget as u64 && end > start {
                break;
            }
            end += 1;
        }
        start..end
    }
}

/// Bytes of overlap looked for between two chunks: the chunker's overlap is a few sentences.
const MAX_OVERLAP_BYTES: usize = 2000;
/// Shorter matches are coincidence (a shared word), not the chunker's overlap.
const MIN_OVERLAP_BYTES: usize = 12;

/// Join a section's consecutive chunks into its text: each continuation chunk starts with the
/// end of the previous one (the chunker's overlap), which is dropped.
pub fn join_chunks(texts: &[&str]) -> String {
    let mut out = String::new();
    for (i, t) in texts.iter().enumerate() {
        if i == 0 {
            out.push_str(t);
            continue;
        }
        let rest = &t[overlap(texts[i - 1], t)..];
        let rest = rest.trim_start();
        if rest.is_empty() {
            continue;
        }
        out.push_str("\n\n");
        out.push_str(rest);
    }
    out
}

/// Length of the longest prefix of `next` that ends `prev` (0 when under the minimum).
fn overlap(prev: &str, next: &str) -> usize {
    let prev = prev.trim_end();
    let most = next.len().min(prev.len()).min(MAX_OVERLAP_BYTES);
    (MIN_OVERLAP_BYTES..=most)
        .rev()
        .find(|&n| next.is_char_boundary(n) && prev.ends_with(&next[..n]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_starts_at_the_section_start_when_the_match_fits() {
        assert_eq!(Budgeted::window(&[100, 100, 100], 250, Some(1)), 0..2);
        assert_eq!(Budgeted::window(&[100, 100, 100], 1000, None), 0..3);
    }

    #[test]
    fn the_window_starts_at_the_match_when_the_start_would_leave_it_out() {
        assert_eq!(Budgeted::window(&[300, 300, 300], 500, Some(2)), 2..3);
    }

    #[test]
    fn one_chunk_over_budget_is_shown_whole() {
        assert_eq!(Budgeted::window(&[900], 100, None), 0..1);
        assert_eq!(Budgeted::window(&[], 100, None), 0..0);
    }

    #[test]
    fn the_chunkers_overlap_is_dropped_when_joining() {
        let a = "First paragraph.\n\nIt ends with this sentence here.";
        let b = "It ends with this sentence here.\n\nThen more text.";
        assert_eq!(
            join_chunks(&[a, b]),
            "First paragraph.\n\nIt ends with this sentence here.\n\nThen more text."
        );
    }

    #[test]
    fn chunks_without_overlap_are_joined_whole() {
        assert_eq!(join_chunks(&["one two", "three"]), "one two\n\nthree");
        assert_eq!(join_chunks(&["a é", "é b"]), "a é\n\né b");
    }
}

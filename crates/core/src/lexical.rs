//! The lexical side: a tokenizer that understands code identifiers and CJK text, and BM25.
//!
//! Tokens are lowercased. A "compound" such as `foo::bar`, `CARGO_HOME`, `--locked`,
//! `build.target-dir`, `snake_case` or `[patch]` is kept whole AND split into its parts, so both
//! `cargo_home` and `home` find it. CJK text becomes unigrams plus bigrams. English stop words
//! are dropped (they carry no signal and would bloat the postings); a light plural stemmer
//! folds `closures` into `closure`. The same function tokenizes documents and queries.

/// BM25 term-frequency saturation.
pub const BM25_K1: f32 = 1.2;
/// BM25 length normalisation.
pub const BM25_B: f32 = 0.75;

const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but",
    "by", "can", "could", "did", "do", "does", "doesn't", "doing", "don't", "explain", "for",
    "from", "had", "has", "have", "he", "her", "here", "his", "how", "i", "i'm", "if", "in", "into",
    "is", "isn't", "it", "it's", "its", "just", "know", "me", "my", "of", "on", "or", "our",
    "please", "she", "should", "so", "some", "tell", "than", "that", "the", "their", "them", "then",
    "there", "there's", "these", "they", "this", "those", "to", "too", "us", "use", "used", "using",
    "want", "was", "way", "we", "were", "what", "what's", "when", "where", "which", "while", "who",
    "whom", "why", "will", "with", "would", "you", "your", "yours",
];

/// True for a word that carries no retrieval signal.
pub fn is_stop_word(w: &str) -> bool {
    STOP_WORDS.binary_search(&w).is_ok()
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Ext A
        | 0x4E00..=0x9FFF // CJK Unified
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK compatibility
        | 0x20000..=0x2FA1F)
}

/// Characters that may join the parts of a code identifier: `foo::bar`, `a.b`, `x-y`, `a_b`.
fn is_joiner(c: char) -> bool {
    matches!(c, '_' | ':' | '.' | '-' | '#' | '$' | '@' | '/')
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() && !is_cjk(c)
}

/// Light stemming for plain English words: plurals only (safe and cheap).
fn stem(w: &str) -> String {
    if w.len() <= 3 || !w.bytes().all(|b| b.is_ascii_lowercase()) {
        return w.to_string();
    }
    if let Some(s) = w.strip_suffix("ies") {
        if s.len() >= 2 {
            return format!("{s}y");
        }
    }
    if w.ends_with("sses") || w.ends_with("xes") || w.ends_with("ches") || w.ends_with("shes") {
        return w[..w.len() - 2].to_string();
    }
    if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        return w[..w.len() - 1].to_string();
    }
    w.to_string()
}

fn push_word(out: &mut Vec<String>, w: &str) {
    if w.is_empty() {
        return;
    }
    let lower = w.to_lowercase();
    if is_stop_word(&lower) {
        return;
    }
    // Single letters are noise unless they are digits.
    if lower.chars().count() == 1 && !lower.chars().all(|c| c.is_ascii_digit()) {
        return;
    }
    out.push(stem(&lower));
}

/// Tokenize text for BM25 (documents and queries alike).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_into(text, &mut out);
    out
}

/// Like [`tokenize`], appending to `out`.
pub fn tokenize_into(text: &str, out: &mut Vec<String>) {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (start, c) = chars[i];
        if is_cjk(c) {
            let mut j = i;
            while j < chars.len() && is_cjk(chars[j].1) {
                j += 1;
            }
            let run: Vec<char> = chars[i..j].iter().map(|&(_, c)| c).collect();
            for k in 0..run.len() {
                out.push(run[k].to_string());
                if k + 1 < run.len() {
                    out.push(format!("{}{}", run[k], run[k + 1]));
                }
            }
            i = j;
            continue;
        }
        // A compound: optional leading `--`/`#[`, then word chars joined by joiners.
        let leading_dashes = if c == '-' && chars.get(i + 1).map(|x| x.1) == Some('-') {
            2
        } else {
            0
        };
        let word_start = i + leading_dashes;
        if word_start < chars.len() && is_word_char(chars[word_start].1) {
            let mut j = word_start;
            while j < chars.len() {
                let cj = chars[j].1;
                if is_word_char(cj) {
                    j += 1;
                } else if is_joiner(cj) {
                    // A joiner counts only when more word chars follow (possibly after `::`).
                    let mut k = j;
                    while k < chars.len() && is_joiner(chars[k].1) {
                        k += 1;
                    }
                    if k < chars.len() && is_word_char(chars[k].1) && k - j <= 2 {
                        j = k;
                    } else {
                        break;
                    }
                } else {
                    break;
                }
            }
            let end = chars.get(j).map(|x| x.0).unwrap_or(text.len());
            let word_begin = chars[word_start].0;
            let compound = &text[start..end];
            let inner = &text[word_begin..end];
            let has_joiner = inner.chars().any(is_joiner);
            if has_joiner || leading_dashes > 0 {
                out.push(compound.to_lowercase());
                for part in inner.split(is_joiner) {
                    push_word(out, part);
                }
            } else {
                push_word(out, inner);
            }
            // `[patch]`-style table headers: also keep the bracketed form.
            if start > 0 && text[..start].ends_with('[') && text[end..].starts_with(']') {
                out.push(format!("[{}]", inner.to_lowercase()));
            }
            i = j;
            continue;
        }
        i += 1;
    }
}

/// BM25 idf with the usual +1 so it stays positive.
pub fn idf(n_docs: u32, df: u32) -> f32 {
    let n = n_docs as f32;
    let df = df as f32;
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// BM25 contribution of one term occurrence count `tf` in a document of length `dl`.
pub fn bm25_term(idf: f32, tf: f32, dl: f32, avgdl: f32) -> f32 {
    let norm = BM25_K1 * (1.0 - BM25_B + BM25_B * dl / avgdl.max(1.0));
    idf * tf * (BM25_K1 + 1.0) / (tf + norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_word_list_is_sorted_for_binary_search() {
        let mut s = STOP_WORDS.to_vec();
        s.sort_unstable();
        assert_eq!(s, STOP_WORDS);
    }

    #[test]
    fn code_identifiers_are_kept_whole_and_split() {
        let t = tokenize("Set CARGO_HOME, run cargo build --locked, see foo::bar and snake_case.");
        for want in ["cargo_home", "home", "--locked", "locked", "foo::bar", "foo", "bar", "snake_case", "snake", "case"] {
            assert!(t.contains(&want.to_string()), "{want} missing from {t:?}");
        }
    }

    #[test]
    fn toml_table_headers_keep_their_brackets() {
        let t = tokenize("Use the [patch] section");
        assert!(t.contains(&"[patch]".to_string()), "{t:?}");
        assert!(t.contains(&"patch".to_string()));
    }

    #[test]
    fn dotted_and_dashed_keys_are_compounds() {
        let t = tokenize("build.target-dir sets it");
        assert!(t.contains(&"build.target-dir".to_string()), "{t:?}");
        assert!(t.contains(&"target".to_string()));
    }

    #[test]
    fn cjk_text_becomes_unigrams_and_bigrams() {
        let t = tokenize("所有権とは");
        assert!(t.contains(&"所有".to_string()), "{t:?}");
        assert!(t.contains(&"権".to_string()));
    }

    #[test]
    fn plurals_fold_and_stop_words_drop() {
        assert_eq!(tokenize("The closures"), vec!["closure"]);
        assert_eq!(tokenize("libraries"), vec!["library"]);
        assert!(tokenize("what is the").is_empty());
    }

    #[test]
    fn trailing_punctuation_is_not_part_of_a_word() {
        assert_eq!(tokenize("vectors."), vec!["vector"]);
        assert_eq!(tokenize("Option::None:"), vec!["option::none", "option", "none"]);
    }
}

//! The checkable claims of a sentence: identifiers, numbers, flags, quoted strings, whether it
//! is negated, and its content words; and the same facts read from a source's text.

use super::sentences::Sentence;
use crate::lexical::{tokenize, tokenize_into, FxBuild};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// What kind of claim was not found in the cited sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClaimKind {
    /// A code span, `snake_case`, `CamelCase`, `dotted.path`, `a::path` or `/a/path`.
    Identifier,
    /// A number or a version (`8080`, `1.2.3`, `10 MB` reads as `10`).
    Number,
    /// A command-line flag: `--locked`, `-x`.
    Flag,
    /// A string in double quotes.
    Quote,
    /// The sentence says "not" where its closest source sentence does not, or the reverse.
    Negation,
    /// Too few of the sentence's content words (stemmed, stop words out) are in the sources.
    Words,
    /// The sentence cites only numbers that are not among the answer's sources.
    Source,
}

impl ClaimKind {
    /// A short lowercase name: `identifier`, `number`, `flag`, `quote`, `negation`, `words`,
    /// `source`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimKind::Identifier => "identifier",
            ClaimKind::Number => "number",
            ClaimKind::Flag => "flag",
            ClaimKind::Quote => "quote",
            ClaimKind::Negation => "negation",
            ClaimKind::Words => "words",
            ClaimKind::Source => "source",
        }
    }
}

/// One claim that must occur in a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// What it is.
    pub kind: ClaimKind,
    /// As written in the sentence (numbers normalised: `1,000` → `1000`, `v1.2` → `1.2`).
    pub text: String,
    /// Compared without case (quotes, `CamelCase` words) rather than exactly (code).
    pub fold: bool,
}

/// Words that negate what they stand next to.
const NEGATORS: &[&str] = &[
    "not",
    "no",
    "never",
    "cannot",
    "can't",
    "won't",
    "don't",
    "doesn't",
    "isn't",
    "aren't",
    "shouldn't",
    "mustn't",
    "wasn't",
    "weren't",
    "didn't",
    "hasn't",
    "haven't",
    "couldn't",
    "wouldn't",
    "neither",
    "nor",
    "none",
    "nothing",
    "nobody",
];

/// True when `text` holds a negating word (`not`, `never`, `doesn't`, ...); not inside a flag
/// or a name (`--no-commit`, `no_std`).
pub fn is_negated(text: &str) -> bool {
    text.split_whitespace().any(|w| is_negator(w.trim_matches(|c: char| !c.is_alphanumeric())))
}

/// One word (letters and apostrophes, any case, `’` read as `'`) that is a negator.
fn is_negator(w: &str) -> bool {
    let first = w.as_bytes().first().map(u8::to_ascii_lowercase);
    if !(2..=12).contains(&w.len())
        || !matches!(first, Some(b'n' | b'c' | b'w' | b'd' | b'i' | b'a' | b's' | b'm' | b'h'))
    {
        return false;
    }
    let mut buf = [0u8; 12];
    let mut len = 0;
    for c in w.chars() {
        let b = match c {
            '’' | '\'' => b'\'',
            c if c.is_ascii_alphabetic() => c.to_ascii_lowercase() as u8,
            _ => return false,
        };
        if len == buf.len() {
            return false;
        }
        buf[len] = b;
        len += 1;
    }
    len > 1 && NEGATORS.iter().any(|n| n.as_bytes() == &buf[..len])
}

/// A sentence's claims that must occur verbatim in its sources (not its words or negation).
pub fn claims(s: &Sentence) -> Vec<Claim> {
    let mut out: Vec<Claim> = Vec::new();
    // The claims already made, for de-duplication: a scan of `out` per claim was quadratic, and
    // a hostile answer's one sentence of 30 000 distinct numbers froze the page for seconds.
    // Kept as 64-bit hashes in the set type the word check uses (one copy of its code in the
    // wasm); two claims sharing a hash would check one of them, once in 2^64.
    let mut seen = WordSet::default();
    let mut add = |kind: ClaimKind, text: &str, fold| {
        if !text.is_empty() && seen.insert(word_hash(text) ^ kind as u64) {
            out.push(Claim { kind, text: text.to_string(), fold });
        }
    };
    for code in &s.code {
        let code = code.trim();
        let tokens: Vec<&str> = code.split_whitespace().collect();
        if tokens.len() <= 1 {
            if is_number(code) {
                numbers(code).iter().for_each(|n| add(ClaimKind::Number, n, false));
                continue;
            }
            code_token(code, &mut add);
        } else {
            for t in tokens {
                if t.chars().filter(|c| c.is_alphanumeric()).count() >= 2 {
                    code_token(t, &mut add);
                }
            }
        }
    }
    for q in quotes(&s.prose) {
        add(ClaimKind::Quote, &q, true);
    }
    for raw in s.prose.split_whitespace() {
        let mut t = raw;
        loop {
            let next = t.trim_matches(is_edge_punctuation).trim_end_matches('.');
            if next.len() == t.len() {
                break;
            }
            t = next;
        }
        if t.is_empty() {
            continue;
        }
        if is_flag(t) {
            let name = t.split('=').next().unwrap_or(t);
            add(ClaimKind::Flag, name, false);
            if let Some(v) = t.split_once('=').map(|x| x.1) {
                for n in numbers(v) {
                    add(ClaimKind::Number, &n, false);
                }
            }
            continue;
        }
        if let Some(kind) = identifier_kind(t) {
            add(ClaimKind::Identifier, t, kind);
            continue;
        }
        if t.contains(|c: char| c.is_ascii_digit()) {
            for n in numbers(t) {
                add(ClaimKind::Number, &n, false);
            }
        }
    }
    out
}

/// Punctuation around a word that is not part of it.
fn is_edge_punctuation(c: char) -> bool {
    matches!(c, '(' | ')' | '[' | ']' | '{' | '}' | ',' | ';' | ':' | '!' | '?' | '"')
        || matches!(c, '“' | '”' | '‘' | '’' | '\'' | '*' | '`')
}

/// The claims of one token of code: a flag by its name (and, with a value, the whole token as
/// an identifier), anything else an identifier.
fn code_token(t: &str, add: &mut impl FnMut(ClaimKind, &str, bool)) {
    if is_flag(t) {
        let name = t.split('=').next().unwrap_or(t);
        add(ClaimKind::Flag, name, false);
        if name.len() == t.len() {
            return;
        }
    }
    add(ClaimKind::Identifier, t, false);
}

/// `42`, `1.2.3`, `-1`: digits and separators only.
fn is_number(t: &str) -> bool {
    let t = t.strip_prefix('-').unwrap_or(t);
    t.starts_with(|c: char| c.is_ascii_digit())
        && t.chars().all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '-' | ':'))
}

/// `--flag`, `--flag=value` or `-x` (not `-1` or a dash).
pub(crate) fn is_flag(t: &str) -> bool {
    let b = t.as_bytes();
    match b {
        [b'-', b'-', c, ..] => c.is_ascii_alphanumeric(),
        [b'-', c] => c.is_ascii_alphabetic(),
        _ => false,
    }
}

/// Whether a prose token is an identifier, and if so whether it compares without case
/// (`Some(true)` for `CamelCase` and letter-digit words such as `utf8`).
fn identifier_kind(t: &str) -> Option<bool> {
    let alnum = t.chars().any(char::is_alphanumeric);
    if !alnum {
        return None;
    }
    if t.contains("::") || t.starts_with("./") || t.starts_with("~/") || t.starts_with('/') {
        return Some(false);
    }
    if t.contains('_') && t.len() > 1 {
        return Some(false);
    }
    // `a.b`, `config.toml`, `std.fs` (not `e.g` or a number).
    let parts: Vec<&str> = t.split('.').collect();
    if parts.len() >= 2
        && parts.iter().all(|p| !p.is_empty())
        && parts.iter().any(|p| p.chars().count() > 1)
        && parts.iter().any(|p| p.chars().any(char::is_alphabetic))
        && !parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit()))
        && !t.starts_with(|c: char| c.is_ascii_digit() || c == 'v')
    {
        return Some(false);
    }
    let mut prev_lower = false;
    let mut camel = false;
    for c in t.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            camel = true;
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    if camel && !t.contains('-') {
        return Some(true);
    }
    // `utf8`, `x86`, `h2` (letters first): a name, not a number.
    if t.starts_with(|c: char| c.is_alphabetic())
        && t.chars().any(|c| c.is_ascii_digit())
        && t.chars().all(|c| c.is_alphanumeric())
        && !is_version_word(t)
    {
        return Some(true);
    }
    None
}

/// `v1`, `v2` are versions (numbers), not names.
fn is_version_word(t: &str) -> bool {
    t.strip_prefix(['v', 'V'])
        .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit()))
}

/// The numbers in `t`, normalised: digit runs with inner `.`, `,`, `-` or `:` between digits
/// (`1,000` → `1000`; `1.2.3`, `5-2`, `10:30` stay whole), a leading `v` and any unit dropped.
pub fn numbers(t: &str) -> Vec<String> {
    let b = t.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let mut n = String::new();
        while i < b.len() {
            if b[i].is_ascii_digit() {
                n.push(b[i] as char);
                i += 1;
            } else if matches!(b[i], b'.' | b',' | b'-' | b':')
                && b.get(i + 1).is_some_and(u8::is_ascii_digit)
                && !n.is_empty()
            {
                if b[i] != b',' {
                    n.push(b[i] as char);
                }
                i += 1;
            } else {
                break;
            }
        }
        out.push(n);
    }
    out
}

/// Strings in double quotes (`"..."`, `“...”`), 1–160 characters, whitespace collapsed.
fn quotes(prose: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = prose;
    while let Some(open) = rest.find(['"', '“']) {
        let after = &rest[open + rest[open..].chars().next().map_or(1, char::len_utf8)..];
        let Some(close) = after.find(['"', '”']) else { break };
        let inner = collapse(&after[..close]);
        if !inner.is_empty() && inner.chars().count() <= 160 {
            out.push(inner);
        }
        rest = &after[close + after[close..].chars().next().map_or(1, char::len_utf8)..];
    }
    out
}

/// Lowercase with runs of whitespace as one space, trimmed.
pub fn collapse(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(w.chars().flat_map(crate::case::lower));
    }
    out
}

/// Content words as hashes (a source's, for membership tests).
pub(crate) type WordSet = HashSet<u64, FxBuild>;

/// A content word's hash.
fn word_hash(w: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(w.as_bytes())
}

/// True for a token that counts as a content word: not a plain number, not a negator.
fn is_content(t: &str) -> bool {
    !t.bytes().all(|b| b.is_ascii_digit() || b == b'.') && !NEGATORS.contains(&t)
}

/// Distinct memo entries kept before the memo starts over.
const MEMO_CAP: usize = 1 << 16;

/// Whitespace-separated words → where their content-word hashes are in the list. (A map to a
/// `u32`, the same type as the BM25 index's term map, so the wasm holds one copy of its code.)
#[derive(Default)]
struct Memo {
    at: HashMap<Box<str>, u32, FxBuild>,
    hashes: Vec<Box<[u64]>>,
}

thread_local! {
    /// Stemming is most of the cost of reading a source, and docs repeat their words (and the
    /// widget its sources): each word is tokenized once.
    static MEMO: RefCell<Memo> = RefCell::default();
}

/// Add the hash of every content word of `text` to `out` ([`crate::lexical`] tokens: stemmed,
/// stop words out; not numbers or negators).
pub(crate) fn content_hashes(text: &str, out: &mut WordSet) {
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let mut tokens = Vec::new();
        for raw in text.split_ascii_whitespace() {
            if let Some(&k) = memo.at.get(raw) {
                out.extend(memo.hashes[k as usize].iter().copied());
                continue;
            }
            tokens.clear();
            tokenize_into(raw, &mut tokens);
            let hashes: Box<[u64]> =
                tokens.iter().filter(|t| is_content(t)).map(|t| word_hash(t)).collect();
            out.extend(hashes.iter().copied());
            if memo.hashes.len() >= MEMO_CAP {
                memo.at.clear();
                memo.hashes.clear();
            }
            let k = memo.hashes.len() as u32;
            memo.hashes.push(hashes);
            memo.at.insert(raw.into(), k);
        }
    });
}

/// Forget the memo of [`content_hashes`] (benchmarks time a cold read with it; the widget
/// never needs it: the memo caps itself).
pub fn clear_memo() {
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        m.at.clear();
        m.hashes.clear();
    });
}

/// The distinct content words of a sentence and their hashes, in order.
pub fn content_words(text: &str) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for t in tokenize(text) {
        if is_content(&t) {
            let h = word_hash(&t);
            if !out.iter().any(|x| x.1 == h) {
                out.push((t, h));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentence(prose: &str, code: &[&str]) -> Sentence {
        Sentence {
            prose: prose.into(),
            code: code.iter().map(|c| c.to_string()).collect(),
            ..Sentence::default()
        }
    }

    fn kinds(s: &Sentence) -> Vec<(ClaimKind, String)> {
        claims(s).into_iter().map(|c| (c.kind, c.text)).collect()
    }

    #[test]
    fn claims_cover_code_flags_numbers_paths_and_quotes() {
        let s = sentence(
            "Set build.target_dir to \"out dir\" with --jobs=4 or -j, since v1.2 on port 8,080 (e.g. useState).",
            &["cargo build --release"],
        );
        let k = kinds(&s);
        for want in [
            (ClaimKind::Identifier, "cargo"),
            (ClaimKind::Identifier, "build"),
            (ClaimKind::Flag, "--release"),
            (ClaimKind::Identifier, "build.target_dir"),
            (ClaimKind::Quote, "out dir"),
            (ClaimKind::Flag, "--jobs"),
            (ClaimKind::Number, "4"),
            (ClaimKind::Flag, "-j"),
            (ClaimKind::Number, "1.2"),
            (ClaimKind::Number, "8080"),
            (ClaimKind::Identifier, "useState"),
        ] {
            assert!(k.contains(&(want.0, want.1.to_string())), "{want:?} not in {k:?}");
        }
        assert!(!k.iter().any(|(_, t)| t == "e.g"), "{k:?}");
    }

    #[test]
    fn negation_is_read_from_words() {
        assert!(is_negated("It does not run."));
        assert!(is_negated("It doesn’t run."));
        assert!(!is_negated("Nothingness is a note."));
        assert!(!is_negated("Pass --no-commit or use no_std."));
        assert!(is_negated("(Not here.)"));
    }
}

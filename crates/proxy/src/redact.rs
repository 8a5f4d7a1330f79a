//! Scrubbing text that came from an upstream before it reaches a log line.
//!
//! Upstream error bodies and transport errors can echo the request's credentials (a 401 body
//! that quotes the `Authorization` header, an Azure error that repeats the `api-key`). Every
//! such text goes through [`Redactor::redact`]: every configured secret value is replaced by
//! exact match, then anything shaped like a key (`sk-…`, a `Bearer` token, a run of 32+ hex
//! digits, any long run of letters and digits) is replaced too, and the result is capped.

use crate::config::Config;

const MASK: &str = "[redacted]";
/// Longest redacted text that is logged, in characters.
const MAX_CHARS: usize = 500;

/// Knows the secret values of one server (the keys in the env vars named by `api_key_env`).
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for exactly these secret values (empty ones are ignored).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> =
            secrets.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
        // Longest first, so a key that contains another key is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Redactor { secrets }
    }

    /// Every key configured for any provider (read from the environment now).
    pub fn from_config(cfg: &Config) -> Redactor {
        Redactor::new(
            cfg.providers
                .values()
                .filter_map(|p| p.api_key_env.as_deref())
                .filter_map(|env| std::env::var(env).ok()),
        )
    }

    /// `text` with every configured secret value replaced, or None when it holds none. Only
    /// exact values: an answer's hashes and tokens that merely look like keys are its content.
    pub fn scrub(&self, text: &str) -> Option<String> {
        let mut found = None::<String>;
        for secret in &self.secrets {
            let s = found.as_deref().unwrap_or(text);
            if memchr::memmem::find(s.as_bytes(), secret.as_bytes()).is_some() {
                found = Some(s.replace(secret.as_str(), MASK));
            }
        }
        found
    }

    /// `text` without secrets or key-shaped words, at most 500 characters.
    pub fn redact(&self, text: &str) -> String {
        let s = match self.scrub(text) {
            Some(scrubbed) => redact_shapes(&scrubbed),
            None => redact_shapes(text),
        };
        if s.chars().count() > MAX_CHARS {
            let mut cut: String = s.chars().take(MAX_CHARS).collect();
            cut.push('…');
            cut
        } else {
            s
        }
    }
}

fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~' | '+' | '/')
}

/// Whether a word (a maximal run of token characters) looks like a credential.
fn looks_like_key(word: &str) -> bool {
    let w = word.trim_matches(|c| matches!(c, '.' | '/' | '+'));
    if w.starts_with("sk-") || w.starts_with("sk_") || w.contains("-sk-") {
        return true;
    }
    let hex_run = w.split(|c: char| !c.is_ascii_hexdigit()).map(str::len).max().unwrap_or(0);
    if hex_run >= 32 {
        return true;
    }
    let alnum = w.chars().filter(char::is_ascii_alphanumeric).count();
    let digits = w.chars().filter(char::is_ascii_digit).count();
    alnum >= 32 && digits > 0 && digits < alnum
}

fn redact_shapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut after_bearer = false;
    let mut rest = s;
    while !rest.is_empty() {
        let end = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
        if end == 0 {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let word = &rest[..end];
        if after_bearer || looks_like_key(word) {
            out.push_str(MASK);
        } else {
            out.push_str(word);
        }
        after_bearer = word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("basic");
        rest = &rest[end..];
        // "Bearer" applies to the next word only, across the whitespace between them.
        if after_bearer {
            let ws = rest.find(|c: char| !c.is_whitespace()).unwrap_or(rest.len());
            out.push_str(&rest[..ws]);
            rest = &rest[ws..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_secrets_are_removed_wherever_they_appear() {
        let r = Redactor::new(["hunter2-not-key-shaped".to_string()]);
        let s =
            r.redact("auth failed for key=hunter2-not-key-shaped; header x:hunter2-not-key-shaped");
        assert!(!s.contains("hunter2"), "{s}");
    }

    #[test]
    fn known_key_shapes_are_removed_even_inside_other_words() {
        let r = Redactor::default();
        let azure = "3f9c2a7b1e4d5c6a8b9f0e1d2c3b4a59";
        for text in [
            "bad auth header=[Bearer sk-proj-abc123] key=sk-proj-abc123",
            "Incorrect API key provided: sk-abc123xyz. Find your key",
            &format!("Access denied due to invalid subscription key {azure}"),
            "authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload",
        ] {
            let s = r.redact(text);
            for leak in ["sk-proj", "sk-abc", azure, "eyJhbGci"] {
                assert!(!s.contains(leak), "{leak} survived in {s}");
            }
        }
        assert_eq!(r.redact("model gpt-4o-mini not found"), "model gpt-4o-mini not found");
    }

    #[test]
    fn redacted_text_is_capped() {
        let s = Redactor::default().redact(&"word ".repeat(1000));
        assert!(s.chars().count() <= MAX_CHARS + 1, "{}", s.len());
    }
}

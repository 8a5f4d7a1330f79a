//! Heading anchors exactly as the site generators make them.
//!
//! - VitePress (`@mdit-vue/shared` `slugify`): NFKD, combining marks removed, runs of whitespace
//!   and ASCII punctuation become one `-`, leading/trailing `-` trimmed, a leading digit gets `_`,
//!   lowercased.
//! - Docusaurus and GitHub (`github-slugger`): lowercased, every character that is not a letter,
//!   number, mark, `_`, `-` or space removed, each space becomes `-` (runs are NOT collapsed).
//! - Docsify: lowercased, HTML tags and some punctuation removed, whitespace to `-`, runs of `-`
//!   collapsed, a leading digit gets `_`.
//!
//! Duplicate slugs on one page get `-1`, `-2`, ... in all three.

use std::collections::HashMap;
use unicode_normalization::UnicodeNormalization;

/// Which site generator's anchor rules to follow for Markdown sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Flavor {
    /// VitePress (markdown-it-anchor with `@mdit-vue/shared` slugify).
    #[default]
    VitePress,
    /// Docusaurus (github-slugger, and Docusaurus' rendering: no id on an h1, `_` partials).
    Docusaurus,
    /// GitHub's own rendering of Markdown (github-slugger); the default for a folder whose
    /// generator is not recognised.
    GitHub,
    /// Docsify's own slugify.
    Docsify,
}

impl Flavor {
    /// Parse `vitepress`, `docusaurus`, `github`, `docsify`.
    pub fn parse(s: &str) -> Option<Flavor> {
        match s.to_ascii_lowercase().as_str() {
            "vitepress" => Some(Flavor::VitePress),
            "docusaurus" => Some(Flavor::Docusaurus),
            "github" => Some(Flavor::GitHub),
            "docsify" => Some(Flavor::Docsify),
            _ => None,
        }
    }

    /// The slug of one heading text (without de-duplication).
    pub fn slugify(self, text: &str) -> String {
        match self {
            Flavor::VitePress => slugify_vitepress(text),
            Flavor::Docusaurus | Flavor::GitHub => slugify_github(text),
            Flavor::Docsify => slugify_docsify(text),
        }
    }
}

fn is_combining_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F)
}

/// `text` without emoji shortcodes standing as words (`Emoji :tada:` → `Emoji `): VitePress
/// renders them as emoji tokens, which its anchor leaves out (`getTokensText` skips them). A
/// colon pair inside a word (`foo:bar:`) is not a shortcode.
fn without_shortcodes(text: &str) -> std::borrow::Cow<'_, str> {
    let is_name = |w: &str| {
        w.len() > 2
            && w.starts_with(':')
            && w.ends_with(':')
            && w[1..w.len() - 1]
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_+-".contains(&b))
    };
    if !text.split(char::is_whitespace).any(is_name) {
        return std::borrow::Cow::Borrowed(text);
    }
    let kept: Vec<&str> = text.split(char::is_whitespace).filter(|w| !is_name(w)).collect();
    std::borrow::Cow::Owned(kept.join(" "))
}

/// VitePress's `slugify` (from `@mdit-vue/shared`), over the heading's text as VitePress reads
/// it (emoji shortcodes left out).
pub fn slugify_vitepress(text: &str) -> String {
    let text = without_shortcodes(text);
    // rSpecial = /[\s~`!@#$%^&*()\-_+=[\]{}|\\;:"'“”‘’<>,.?/]+/g
    fn special(c: char) -> bool {
        c.is_whitespace() || "~`!@#$%^&*()-_+=[]{}|\\;:\"'“”‘’<>,.?/".contains(c)
    }
    let mut out = String::with_capacity(text.len());
    let mut in_special = false;
    for c in text.nfkd() {
        if is_combining_mark(c) || (c as u32) < 0x20 {
            continue;
        }
        if special(c) {
            if !in_special {
                out.push('-');
            }
            in_special = true;
        } else {
            in_special = false;
            out.push(c);
        }
    }
    let trimmed = out.trim_matches('-');
    let mut s = String::with_capacity(trimmed.len() + 1);
    if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
        s.push('_');
    }
    s.push_str(trimmed);
    s.to_lowercase()
}

/// github-slugger (used by Docusaurus): keeps letters, numbers, marks (every combining mark,
/// even an emoji's invisible variation selector: `🗑️ Delete` → `️-delete`), `_`, `-` and spaces.
pub fn slugify_github(text: &str) -> String {
    let lower = text.to_lowercase();
    let mut out = String::with_capacity(lower.len());
    for c in lower.chars() {
        if c == ' ' {
            out.push('-');
        } else if c.is_alphanumeric()
            || c == '_'
            || c == '-'
            || unicode_normalization::char::is_combining_mark(c)
        {
            out.push(c);
        }
    }
    out
}

/// Docsify's `slugify`.
pub fn slugify_docsify(text: &str) -> String {
    // re = /[\u2000-\u206F\u2E00-\u2E7F\\'!"#$%&()*+,./:;<=>?@[\]^`{|}~]/g
    fn removed(c: char) -> bool {
        matches!(c as u32, 0x2000..=0x206F | 0x2E00..=0x2E7F)
            || "\\'!\"#$%&()*+,./:;<=>?@[]^`{|}~".contains(c)
    }
    let trimmed = text.trim();
    // Strip HTML tags first.
    let mut no_tags = String::with_capacity(trimmed.len());
    let mut in_tag = false;
    for c in trimmed.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => no_tags.push(c),
            _ => {}
        }
    }
    let mut out = String::with_capacity(no_tags.len());
    for c in no_tags.to_lowercase().chars() {
        if removed(c) {
            continue;
        }
        let c = if c.is_whitespace() { '-' } else { c };
        if c == '-' && out.ends_with('-') {
            continue;
        }
        out.push(c);
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// Makes slugs unique within one page the way the generators do: `x`, `x-1`, `x-2`.
#[derive(Debug, Default)]
pub struct Slugger {
    flavor: Flavor,
    seen: HashMap<String, usize>,
}

impl Slugger {
    /// A fresh slugger for one page.
    pub fn new(flavor: Flavor) -> Slugger {
        Slugger { flavor, seen: HashMap::new() }
    }

    /// The generator whose slugs this makes.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The unique slug for this heading text.
    pub fn slug(&mut self, text: &str) -> String {
        let base = self.flavor.slugify(text);
        self.unique(base)
    }

    /// Register an explicit id (`{#custom-id}`) so later generated slugs do not collide with it.
    pub fn reserve(&mut self, id: &str) {
        self.seen.entry(id.to_string()).or_insert(0);
    }

    fn unique(&mut self, base: String) -> String {
        match self.seen.get(&base).copied() {
            None => {
                self.seen.insert(base.clone(), 0);
                base
            }
            Some(mut n) => loop {
                n += 1;
                let candidate = format!("{base}-{n}");
                if !self.seen.contains_key(&candidate) {
                    self.seen.insert(base.clone(), n);
                    self.seen.insert(candidate.clone(), 0);
                    return candidate;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vitepress_collapses_punctuation_and_strips_accents() {
        assert_eq!(slugify_vitepress("Getting Started"), "getting-started");
        assert_eq!(slugify_vitepress("What's `new` in v2.0?"), "what-s-new-in-v2-0");
        assert_eq!(slugify_vitepress("Café au lait"), "cafe-au-lait");
        assert_eq!(slugify_vitepress("2. Install"), "_2-install");
        assert_eq!(slugify_vitepress("foo_bar & baz"), "foo-bar-baz");
        assert_eq!(slugify_vitepress("设置 选项"), "设置-选项");
        assert_eq!(slugify_vitepress("Emoji :tada:"), "emoji");
        assert_eq!(slugify_vitepress(":rocket: Deploy :+1: now"), "deploy-now");
        assert_eq!(slugify_vitepress("foo:bar: and :Not:"), "foo-bar-and-not");
    }

    #[test]
    fn github_slugger_keeps_runs_of_dashes_and_underscores() {
        assert_eq!(slugify_github("Getting Started"), "getting-started");
        assert_eq!(slugify_github("What's `new` in v2.0?"), "whats-new-in-v20");
        assert_eq!(slugify_github("foo_bar & baz"), "foo_bar--baz");
        assert_eq!(slugify_github("2. Install"), "2-install");
        assert_eq!(slugify_github("Café au lait"), "café-au-lait");
        assert_eq!(slugify_github("Emoji 🎉 party"), "emoji--party");
        // The emoji goes, its variation selector (a mark) stays, as github-slugger 1.5 keeps it.
        assert_eq!(
            slugify_github("🗑️ `setAccessibilityFocus()`"),
            "\u{fe0f}-setaccessibilityfocus"
        );
        assert_eq!(slugify_github("e\u{301}te\u{20DD}"), "e\u{301}te\u{20DD}");
    }

    #[test]
    fn docsify_removes_punctuation_and_collapses_dashes() {
        assert_eq!(slugify_docsify("Getting  Started!"), "getting-started");
        assert_eq!(slugify_docsify("2. Install"), "_2-install");
        assert_eq!(slugify_docsify("foo_bar & baz"), "foo_bar-baz");
    }

    #[test]
    fn duplicate_headings_get_numbered_suffixes() {
        let mut s = Slugger::new(Flavor::VitePress);
        assert_eq!(s.slug("Example"), "example");
        assert_eq!(s.slug("Example"), "example-1");
        assert_eq!(s.slug("Example"), "example-2");
        let mut g = Slugger::new(Flavor::Docusaurus);
        g.reserve("example-1");
        assert_eq!(g.slug("Example"), "example");
        assert_eq!(g.slug("Example"), "example-2");
    }
}

//! What docent reads of a VitePress site's `.vitepress/config.*`: `srcDir` (where the pages
//! are), `srcExclude` (Markdown files that are not pages) and `rewrites` (pages served at
//! another path than their file's), when the config writes them as plain strings, as sites do
//! (`srcDir: 'src'`, `srcExclude: ['**/guide/examples/*']`, `rewrites: { 'en/:rest*':
//! ':rest*' }`). The config is JavaScript: anything computed is not read, and the site's pages
//! are then taken as the folder's (the `--exclude` option says the rest).

use std::path::{Path, PathBuf};

/// The settings read from a VitePress config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SiteConfig {
    /// The VitePress root: the folder holding `.vitepress/`.
    pub root: PathBuf,
    /// `srcDir`, relative to the root (`None`: the root itself).
    pub src_dir: Option<String>,
    /// `srcExclude` globs, relative to the source folder (`srcDir`), plus VitePress' own
    /// `**/node_modules/**` and `**/dist/**`.
    pub src_exclude: Vec<String>,
    /// `rewrites`: (from, to) path patterns relative to the source folder, in order.
    pub rewrites: Vec<(String, String)>,
    /// How the config writes `rewrites` when docent cannot read them ("a function",
    /// "computed"): the pages then keep their files' URLs ([`unread_rewrites`]).
    pub rewrites_unread: Option<&'static str>,
    /// The config file read.
    pub file: PathBuf,
    /// `markdown.attrs`' `leftDelimiter` and `rightDelimiter` when they are not `{` and `}`
    /// (`%{` and `}%`), for [`docent_core::source::markdown::standard_attr_delimiters`].
    pub attr_delimiters: Option<(String, String)>,
}

impl SiteConfig {
    /// The settings written in a config's text (`root` and `file` left empty). The text is
    /// stripped of its comments once, and each setting read from what is left.
    pub fn from_text(config: &str) -> SiteConfig {
        let code = without_comments(config);
        let (src_dir, mut src_exclude) = src_dir_and_exclude(&code);
        src_exclude.extend(["**/node_modules/**".to_string(), "**/dist/**".to_string()]);
        SiteConfig {
            src_dir,
            src_exclude,
            rewrites: rewrites(&code),
            rewrites_unread: unread_rewrites(&code),
            attr_delimiters: attr_delimiters(&code),
            ..SiteConfig::default()
        }
    }

    /// The folder VitePress makes pages of.
    pub fn src_folder(&self) -> PathBuf {
        match &self.src_dir {
            Some(d) => self.root.join(d),
            None => self.root.clone(),
        }
    }
}

/// The config of the VitePress site `folder` belongs to: `folder` or one of its two parents
/// holds `.vitepress/config.{js,ts,mjs,mts,cjs,cts}`. `None` when there is no such file.
pub fn find(folder: &Path) -> Option<SiteConfig> {
    let mut dir = folder.canonicalize().ok();
    for _ in 0..3 {
        let d = dir?;
        for ext in ["mts", "ts", "mjs", "js", "cts", "cjs"] {
            let file = d.join(".vitepress").join(format!("config.{ext}"));
            if let Ok(text) = std::fs::read_to_string(&file) {
                return Some(SiteConfig { root: d, file, ..SiteConfig::from_text(&text) });
            }
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    None
}

// The readers of each setting below take the config's `code`: its text without comments
// ([`without_comments`]).

/// `srcDir` and `srcExclude`, when they are string literals.
fn src_dir_and_exclude(code: &str) -> (Option<String>, Vec<String>) {
    let src_dir = value_after(code, "srcDir").and_then(|v| string_literal(v).map(|(s, _)| s));
    let src_dir = src_dir
        .map(|d| d.trim_start_matches("./").trim_end_matches('/').to_string())
        .filter(|d| !d.is_empty() && d != ".");
    let mut exclude = Vec::new();
    if let Some(list) = value_after(code, "srcExclude").and_then(|v| v.strip_prefix('[')) {
        let mut rest = list.trim_start();
        while let Some((s, after)) = string_literal(rest) {
            exclude.push(s);
            rest = after.trim_start().trim_start_matches(',').trim_start();
        }
    }
    (src_dir, exclude)
}

/// `rewrites`, when it is an object of string literals (`{ 'from': 'to', … }`); a function or
/// anything computed gives none.
fn rewrites(code: &str) -> Vec<(String, String)> {
    match value_after(code, "rewrites").and_then(|v| v.strip_prefix('{')) {
        Some(object) => rewrite_rules(object).0,
        None => Vec::new(),
    }
}

/// `markdown: { attrs: { leftDelimiter: '%{', rightDelimiter: '}%' } }`: the delimiters of
/// markdown-it-attrs' attribute lists, when the config sets either as a string other than the
/// default (`{`, `}`).
fn attr_delimiters(code: &str) -> Option<(String, String)> {
    let read = |key| value_after(code, key).and_then(|v| string_literal(v).map(|(s, _)| s));
    let left = read("leftDelimiter").filter(|d| !d.is_empty());
    let right = read("rightDelimiter").filter(|d| !d.is_empty());
    if left.is_none() && right.is_none() {
        return None;
    }
    Some((left.unwrap_or_else(|| "{".into()), right.unwrap_or_else(|| "}".into())))
        .filter(|(l, r)| (l.as_str(), r.as_str()) != ("{", "}"))
}

/// The string rules at the start of a `rewrites` object's body (after its `{`), and whether
/// they are all of it (the object closes after them).
fn rewrite_rules(object: &str) -> (Vec<(String, String)>, bool) {
    let mut rest = object;
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        let Some((from, after)) = string_literal(rest) else { break };
        let Some(after) = after.trim_start().strip_prefix(':') else { break };
        let Some((to, after)) = string_literal(after.trim_start()) else { break };
        out.push((
            from.trim_start_matches("./").to_string(),
            to.trim_start_matches("./").to_string(),
        ));
        rest = after.trim_start().trim_start_matches(',');
    }
    (out, rest.trim_start().starts_with('}'))
}

/// Whether the config sets `rewrites` in a way docent does not read: "a function"
/// (`rewrites(id) { … }`, `rewrites: (id) => …`), or "computed" (a variable, a call, an
/// object with rules that are not plain strings). `None` when there are no rewrites or they
/// are all read ([`rewrites`]).
fn unread_rewrites(code: &str) -> Option<&'static str> {
    let mut from = 0;
    while let Some(at) = code[from..].find("rewrites").map(|i| i + from) {
        from = at + "rewrites".len();
        let word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
        // A property name: after the object's `{` or a `,` (a key may be quoted).
        let before = code[..at].strip_suffix(['\'', '"']).unwrap_or(&code[..at]).trim_end();
        if !before.ends_with(['{', ',']) || code[from..].starts_with(word) {
            continue;
        }
        let after = code[from..].trim_start_matches(['\'', '"']).trim_start();
        // The method shorthand `rewrites(id) { … }`, or `{ rewrites }` from a variable.
        if after.starts_with('(') {
            return Some("a function");
        }
        if after.starts_with([',', '}']) {
            return Some("computed");
        }
        let Some(value) = after.strip_prefix(':').map(str::trim_start) else { continue };
        if let Some(object) = value.strip_prefix('{') {
            return (!rewrite_rules(object).1).then_some("computed");
        }
        let arrow = value.split(['\n', ',']).next().is_some_and(|l| l.contains("=>"));
        let function = value.starts_with("function") || value.starts_with("async") || arrow;
        return Some(if function { "a function" } else { "computed" });
    }
    None
}

/// The path `rel` (a page's file, relative to the source folder, `/`-separated) is served at
/// under the first rewrite that matches it, as VitePress (path-to-regexp) reads the patterns:
/// a literal segment, `:name` (one segment, with literal text around it: `:page.md`),
/// `:name*` (any number of segments), `:name+` (at least one), `(.*)` (the rest). None when
/// no rule matches.
pub fn rewrite(rules: &[(String, String)], rel: &str) -> Option<String> {
    let path: Vec<&str> = rel.split('/').collect();
    rules.iter().find_map(|(from, to)| {
        let pattern: Vec<&str> = from.split('/').collect();
        let mut params = Vec::new();
        matches(&pattern, &path, &mut params).then(|| fill(to, &params))
    })
}

/// One segment of a rewrite pattern.
enum Seg<'a> {
    /// Text, a parameter's name, text: `:page.md` is ("", "page", ".md").
    One(&'a str, &'a str, &'a str),
    /// `:name*` (may be empty) or `:name+`, `(.*)` (named "0").
    Many(&'a str, bool),
    Literal(&'a str),
}

fn seg(s: &str) -> Seg<'_> {
    if s == "(.*)" {
        return Seg::Many("0", true);
    }
    if let Some(name) = s.strip_prefix(':') {
        if let Some(n) = name.strip_suffix('*').filter(|n| is_name(n)) {
            return Seg::Many(n, true);
        }
        if let Some(n) = name.strip_suffix('+').filter(|n| is_name(n)) {
            return Seg::Many(n, false);
        }
    }
    match s.find(':') {
        Some(at) => {
            let name_len = s[at + 1..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(s.len() - at - 1);
            let name = &s[at + 1..at + 1 + name_len];
            if name.is_empty() {
                Seg::Literal(s)
            } else {
                Seg::One(&s[..at], name, &s[at + 1 + name_len..])
            }
        }
        None => Seg::Literal(s),
    }
}

fn is_name(n: &str) -> bool {
    !n.is_empty() && n.chars().all(|c| c.is_alphanumeric() || c == '_')
}

/// Whether `path` matches `pattern`, its parameters pushed to `params` (backtracking over the
/// segments a `*`/`+` takes).
fn matches(pattern: &[&str], path: &[&str], params: &mut Vec<(String, String)>) -> bool {
    let Some((first, rest)) = pattern.split_first() else { return path.is_empty() };
    match seg(first) {
        Seg::Literal(l) => path.first() == Some(&l) && matches(rest, &path[1..], params),
        Seg::One(pre, name, post) => {
            let Some(s) = path.first() else { return false };
            let ok = s.len() > pre.len() + post.len() && s.starts_with(pre) && s.ends_with(post);
            if !ok {
                return false;
            }
            params.push((name.to_string(), s[pre.len()..s.len() - post.len()].to_string()));
            if matches(rest, &path[1..], params) {
                return true;
            }
            params.pop();
            false
        }
        Seg::Many(name, may_be_empty) => {
            let least = usize::from(!may_be_empty);
            for take in (least..=path.len()).rev() {
                params.push((name.to_string(), path[..take].join("/")));
                if matches(rest, &path[take..], params) {
                    return true;
                }
                params.pop();
            }
            false
        }
    }
}

/// `to` with its parameters filled in; an empty `:name*` leaves no empty segment.
fn fill(to: &str, params: &[(String, String)]) -> String {
    let value =
        |n: &str| params.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str()).unwrap_or("");
    let segs: Vec<String> = to
        .split('/')
        .map(|s| match seg(s) {
            Seg::Many(n, _) => value(n).to_string(),
            Seg::One(pre, n, post) => format!("{pre}{}{post}", value(n)),
            Seg::Literal(l) => l.to_string(),
        })
        .filter(|s| !s.is_empty())
        .collect();
    segs.join("/")
}

/// The config without `//` and `/* */` comments (outside strings).
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) => {
                out.push(c);
                if c == '\\' {
                    out.extend(chars.next());
                } else if c == q {
                    quote = None;
                }
            }
            (None, '\'' | '"' | '`') => {
                quote = Some(c);
                out.push(c);
            }
            (None, '/') if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            (None, '/') if chars.peek() == Some(&'*') => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    last = c;
                }
                out.push(' ');
            }
            (None, c) => out.push(c),
        }
    }
    out
}

/// The text after `key:` (the property's value), for the first `key` that is a property name.
fn value_after<'a>(code: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(at) = code[from..].find(key).map(|i| i + from) {
        from = at + key.len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.') {
            continue;
        }
        let after = code[from..].trim_start();
        let after = after.strip_prefix(['\'', '"']).unwrap_or(after).trim_start();
        if let Some(v) = after.strip_prefix(':') {
            return Some(v.trim_start());
        }
    }
    None
}

/// A string literal at the start of `text` (`'…'`, `"…"`, or a template without `${`): its
/// value and what follows it.
fn string_literal(text: &str) -> Option<(String, &str)> {
    let q = text.chars().next().filter(|c| matches!(c, '\'' | '"' | '`'))?;
    let body = &text[1..];
    let end = body.find(q)?;
    let value = &body[..end];
    if value.contains('\\') || (q == '`' && value.contains("${")) {
        return None;
    }
    Some((value.to_string(), &body[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn src_dir_and_src_exclude_are_read_when_written_as_strings() {
        let config = r#"
import { defineConfig } from 'vitepress'
// srcDir: 'not-this',
export default defineConfig({
  title: 'Vitest', /* srcExclude: ['no'] */
  srcDir: './src/',
  srcExclude: [
    '**/guide/examples/*',
    "**/guide/cli-generated.md", // generated
    `AGENTS.md`,
  ],
  themeConfig: { sidebar: [] },
})
"#;
        let cfg = SiteConfig::from_text(config);
        assert_eq!(cfg.src_dir.as_deref(), Some("src"));
        assert_eq!(
            cfg.src_exclude,
            [
                "**/guide/examples/*",
                "**/guide/cli-generated.md",
                "AGENTS.md",
                "**/node_modules/**",
                "**/dist/**"
            ]
        );
    }

    #[test]
    fn rewrites_written_as_strings_are_read_and_applied_like_vitepress() {
        let config = r#"export default defineConfig({
  rewrites: {
    // the default locale at the root
    'en/:rest*': ':rest*',
    "packages/pkg-a/src/index.md": 'pkg-a/index.md',
    'packages/:pkg/src/:slug*': ':pkg/:slug*',
    'api/(.*)': 'reference/(.*)',
    'old/:page.md': 'new/:page.md',
  },
  srcDir: 'docs',
})"#;
        let cfg = SiteConfig::from_text(config);
        let rules = cfg.rewrites;
        assert_eq!(rules.len(), 5, "{rules:?}");
        assert_eq!(cfg.src_dir.as_deref(), Some("docs"));
        let r = |p: &str| rewrite(&rules, p);
        assert_eq!(r("en/guide/getting-started.md").as_deref(), Some("guide/getting-started.md"));
        assert_eq!(r("en/index.md").as_deref(), Some("index.md"));
        assert_eq!(r("packages/pkg-a/src/index.md").as_deref(), Some("pkg-a/index.md"));
        assert_eq!(r("packages/pkg-b/src/foo/bar.md").as_deref(), Some("pkg-b/foo/bar.md"));
        assert_eq!(r("api/x/y.md").as_deref(), Some("reference/x/y.md"));
        assert_eq!(r("old/intro.md").as_deref(), Some("new/intro.md"));
        assert_eq!(r("fr/guide/a.md"), None);
        assert_eq!(r("old/a/intro.md"), None, "one segment only");
        // A function, or no rewrites: none.
        let rewrites = |c: &str| SiteConfig::from_text(c).rewrites;
        assert!(rewrites("export default { rewrites(id) { return id } }").is_empty());
        assert!(rewrites("export default { srcDir: 'x' }").is_empty());
        assert_eq!(cfg.rewrites_unread, None);
    }

    #[test]
    fn rewrites_written_as_a_function_or_computed_are_named_as_unread() {
        let unread = |c: &str| {
            SiteConfig::from_text(&format!("export default defineConfig({{{c}}})")).rewrites_unread
        };
        assert_eq!(unread("rewrites(id) { return id.replace(/^en\\//, '') }"), Some("a function"));
        assert_eq!(unread("rewrites: (id) => id.slice(3),"), Some("a function"));
        assert_eq!(unread("rewrites: function (id) { return id },"), Some("a function"));
        assert_eq!(unread("rewrites: Object.fromEntries(pages),"), Some("computed"));
        assert_eq!(unread("title: 'x', rewrites, srcDir: 'docs'"), Some("computed"));
        assert_eq!(unread("rewrites: { 'a.md': 'b.md', [key]: 'c.md' }"), Some("computed"));
        assert_eq!(unread("rewrites: { 'a.md': 'b.md' }"), None);
        assert_eq!(unread("// rewrites(id) { }\n title: 'rewrites: no'"), None);
        assert_eq!(unread("srcDir: 'docs'"), None);
    }

    #[test]
    fn markdown_attrs_delimiters_are_read_when_not_the_default() {
        let delimiters = |c: &str| SiteConfig::from_text(c).attr_delimiters;
        let config =
            "export default { markdown: { attrs: { leftDelimiter: '%{', rightDelimiter: '}%' } } }";
        assert_eq!(delimiters(config), Some(("%{".into(), "}%".into())));
        assert_eq!(
            delimiters("export default { markdown: { attrs: { leftDelimiter: '{' } } }"),
            None
        );
        assert_eq!(delimiters("export default { title: 'x' }"), None);
        // A commented-out setting is not read.
        assert_eq!(delimiters("export default { /* leftDelimiter: '%{' */ }"), None);
    }

    #[test]
    fn computed_values_are_not_read() {
        let (dir, exclude) =
            src_dir_and_exclude("export default { srcDir: process.env.DIR, srcExclude: list }");
        assert_eq!((dir, exclude), (None, Vec::<String>::new()));
        let (dir, _) = src_dir_and_exclude("export default { mySrcDir: 'x', srcDir: '.' }");
        assert_eq!(dir, None);
    }
}

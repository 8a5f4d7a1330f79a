//! What docent reads of a VitePress site's `.vitepress/config.*`: `srcDir` (where the pages
//! are) and `srcExclude` (Markdown files that are not pages), when the config writes them as
//! plain strings, as sites do (`srcDir: 'src'`, `srcExclude: ['**/guide/examples/*']`). The
//! config is JavaScript: anything computed is not read, and the site's pages are then taken as
//! the folder's (the `--exclude` option says the rest).

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
}

impl SiteConfig {
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
                let (src_dir, mut src_exclude) = parse(&text);
                src_exclude.extend(["**/node_modules/**".to_string(), "**/dist/**".to_string()]);
                return Some(SiteConfig { root: d, src_dir, src_exclude });
            }
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    None
}

/// `srcDir` and `srcExclude` from a config's text, when they are string literals.
pub fn parse(config: &str) -> (Option<String>, Vec<String>) {
    let code = without_comments(config);
    let src_dir = value_after(&code, "srcDir").and_then(|v| string_literal(v).map(|(s, _)| s));
    let src_dir = src_dir
        .map(|d| d.trim_start_matches("./").trim_end_matches('/').to_string())
        .filter(|d| !d.is_empty() && d != ".");
    let mut exclude = Vec::new();
    if let Some(list) = value_after(&code, "srcExclude").and_then(|v| v.strip_prefix('[')) {
        let mut rest = list.trim_start();
        while let Some((s, after)) = string_literal(rest) {
            exclude.push(s);
            rest = after.trim_start().trim_start_matches(',').trim_start();
        }
    }
    (src_dir, exclude)
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
        let (dir, exclude) = parse(config);
        assert_eq!(dir.as_deref(), Some("src"));
        assert_eq!(exclude, ["**/guide/examples/*", "**/guide/cli-generated.md", "AGENTS.md"]);
    }

    #[test]
    fn computed_values_are_not_read() {
        let (dir, exclude) = parse("export default { srcDir: process.env.DIR, srcExclude: list }");
        assert_eq!((dir, exclude), (None, Vec::<String>::new()));
        let (dir, _) = parse("export default { mySrcDir: 'x', srcDir: '.' }");
        assert_eq!(dir, None);
    }
}

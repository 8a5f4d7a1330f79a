//! VitePress home pages: a page with `layout: home` shows its frontmatter's `hero` (name, text,
//! tagline, action buttons) and `features` (title and details of each card) as the top of the
//! page, before any Markdown body. [`home_text`] reads them out as lines of text.
//!
//! The frontmatter is read with a small YAML subset (block maps, block lists, plain and quoted
//! scalars, `|`/`>` block scalars); flow collections (`{ a: 1 }`) are kept as their raw text.

/// A YAML value, as far as the home page needs it.
#[derive(Debug, Clone, PartialEq)]
enum Yaml {
    Scalar(String),
    Map(Vec<(String, Yaml)>),
    List(Vec<Yaml>),
}

impl Yaml {
    fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn text(&self, key: &str) -> Option<String> {
        match self.get(key)? {
            Yaml::Scalar(s) => Some(s.clone()),
            _ => None,
        }
    }

    fn items(&self, key: &str) -> &[Yaml] {
        match self.get(key) {
            Some(Yaml::List(items)) => items,
            _ => &[],
        }
    }
}

/// The lines a VitePress `layout: home` page shows from its frontmatter (raw YAML, without its
/// `---` fences): the hero's name, text and tagline, its action buttons' texts, then each feature
/// as "title: details". Empty for any other page.
pub fn home_text(front: &str) -> Vec<String> {
    let lines: Vec<String> = front.lines().map(|l| l.trim_end().to_string()).collect();
    let mut i = 0;
    let doc = parse_node(&lines, &mut i, 0);
    if doc.text("layout").as_deref() != Some("home") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut push = |s: Option<String>| {
        if let Some(s) = s {
            let lines = super::markdown::html_text(&s, super::Flavor::VitePress);
            let s = lines.join(" ");
            if !s.is_empty() {
                out.push(s);
            }
        }
    };
    if let Some(hero) = doc.get("hero") {
        for key in ["name", "text", "tagline"] {
            push(hero.text(key));
        }
        for action in hero.items("actions") {
            push(action.text("text"));
        }
    }
    for feature in doc.items("features") {
        let title = feature.text("title").unwrap_or_default();
        let details = feature.text("details").unwrap_or_default();
        let line = match (title.trim().is_empty(), details.trim().is_empty()) {
            (false, false) => {
                let colon = if title.trim_end().ends_with(['.', ':', '?', '!']) { "" } else { ":" };
                format!("{}{colon} {}", title.trim_end(), details)
            }
            (false, true) => title,
            (true, false) => details,
            (true, true) => continue,
        };
        push(Some(line));
    }
    out
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Blank and comment-only lines carry nothing.
fn is_blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

fn skip_blank(lines: &[String], i: &mut usize) {
    while *i < lines.len() && is_blank(&lines[*i]) {
        *i += 1;
    }
}

/// The node starting at `lines[*i]`, whose lines are indented by at least `min` spaces.
fn parse_node(lines: &[String], i: &mut usize, min: usize) -> Yaml {
    skip_blank(lines, i);
    let Some(first) = lines.get(*i) else { return Yaml::Scalar(String::new()) };
    let indent = indent_of(first);
    if indent < min {
        return Yaml::Scalar(String::new());
    }
    let t = first.trim_start();
    if t == "-" || t.starts_with("- ") {
        parse_list(lines, i, indent)
    } else {
        parse_map(lines, i, indent)
    }
}

fn parse_list(lines: &[String], i: &mut usize, indent: usize) -> Yaml {
    let mut items = Vec::new();
    loop {
        skip_blank(lines, i);
        let Some(line) = lines.get(*i) else { break };
        let t = line.trim_start();
        if indent_of(line) != indent || !(t == "-" || t.starts_with("- ")) {
            break;
        }
        let rest = t[1..].trim_start();
        if rest.is_empty() {
            *i += 1;
            items.push(parse_node(lines, i, indent + 1));
            continue;
        }
        if split_key(rest).is_some() {
            // `- key: value` opens a map indented where `key` stands: read it from a copy of
            // the line with the dash blanked out.
            let item_indent = indent + (t.len() - rest.len());
            let mut copy = lines.to_vec();
            copy[*i] = format!("{}{rest}", " ".repeat(item_indent));
            items.push(parse_map(&copy, i, item_indent));
        } else {
            *i += 1;
            items.push(Yaml::Scalar(scalar(rest, lines, i, indent)));
        }
    }
    Yaml::List(items)
}

fn parse_map(lines: &[String], i: &mut usize, indent: usize) -> Yaml {
    let mut entries = Vec::new();
    loop {
        skip_blank(lines, i);
        let Some(line) = lines.get(*i) else { break };
        if indent_of(line) != indent {
            break;
        }
        let Some((key, rest)) = split_key(line.trim_start()) else { break };
        *i += 1;
        let value = if rest.is_empty() {
            // A nested block (a list may sit at the key's own indent).
            skip_blank(lines, i);
            match lines.get(*i) {
                Some(next)
                    if indent_of(next) > indent
                        || (indent_of(next) == indent && next.trim_start().starts_with("- ")) =>
                {
                    parse_node(lines, i, indent)
                }
                _ => Yaml::Scalar(String::new()),
            }
        } else if rest.starts_with('|') || rest.starts_with('>') {
            Yaml::Scalar(block_scalar(lines, i, indent, rest.starts_with('>')))
        } else {
            Yaml::Scalar(scalar(rest, lines, i, indent))
        };
        entries.push((key.to_string(), value));
    }
    Yaml::Map(entries)
}

/// `key: rest` (rest may be empty); None when the line is not a map entry.
fn split_key(t: &str) -> Option<(&str, &str)> {
    if t.starts_with(['"', '\'', '{', '[']) {
        return None;
    }
    let colon = t.find(": ").or_else(|| t.strip_suffix(':').map(|k| k.len()))?;
    let key = t[..colon].trim();
    (!key.is_empty()).then(|| (key, t[colon + 1..].trim()))
}

/// A plain or quoted scalar starting with `first`, with the continuation lines of a plain
/// multi-line scalar (indented deeper than its key) folded into it.
fn scalar(first: &str, lines: &[String], i: &mut usize, indent: usize) -> String {
    let first = first.trim();
    if let Some(inner) = first.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return inner.replace("\\\"", "\"").replace("\\n", "\n");
    }
    if let Some(inner) = first.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        return inner.replace("''", "'");
    }
    let mut s = strip_comment(first).to_string();
    while let Some(next) = lines.get(*i) {
        if is_blank(next) || indent_of(next) <= indent || split_key(next.trim_start()).is_some() {
            break;
        }
        s.push(' ');
        s.push_str(strip_comment(next.trim()));
        *i += 1;
    }
    s
}

/// `text # comment` → `text` (a `#` after a space starts a comment in a plain scalar).
fn strip_comment(s: &str) -> &str {
    s.find(" #").map(|c| s[..c].trim_end()).unwrap_or(s)
}

/// The lines of a `|` (literal) or `>` (folded) block scalar after its key.
fn block_scalar(lines: &[String], i: &mut usize, indent: usize, folded: bool) -> String {
    let mut parts: Vec<&str> = Vec::new();
    while let Some(next) = lines.get(*i) {
        if !next.trim().is_empty() && indent_of(next) <= indent {
            break;
        }
        parts.push(next.trim());
        *i += 1;
    }
    while parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    parts.join(if folded { " " } else { "\n" })
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: &str = "layout: home\n\ntitle: Pinia\n\nhero:\n  name: Pinia\n  text: The intuitive store for Vue.js\n  tagline: Type Safe, Extensible,\n    and Modular by design. # a comment\n  image:\n    src: /logo.svg\n    alt: Pinia\n  actions:\n    - theme: brand\n      text: Get Started\n      link: /introduction\n    - theme: alt\n      text: ' '\n      link: https://x.test\n\nfeatures:\n  - title: \"💡 Intuitive\"\n    details: Stores are as familiar as components.\n  - title: 📦 Extremely light\n    details: |\n      Pinia weighs ~1.5kb,\n      you will <b>forget</b> it's even there!\n  - icon: 🛠️\n    title: Done.\n    details: >\n      Folded\n      text.\n";

    #[test]
    fn a_home_page_shows_its_hero_and_features() {
        assert_eq!(
            home_text(HOME),
            vec![
                "Pinia",
                "The intuitive store for Vue.js",
                "Type Safe, Extensible, and Modular by design.",
                "Get Started",
                "💡 Intuitive: Stores are as familiar as components.",
                "📦 Extremely light: Pinia weighs ~1.5kb, you will forget it's even there!",
                "Done. Folded text.",
            ]
        );
    }

    #[test]
    fn other_pages_show_nothing_from_their_frontmatter() {
        assert!(home_text(&HOME.replace("layout: home", "layout: doc")).is_empty());
        assert!(home_text("title: x\nhero:\n  name: y\n").is_empty());
        assert!(home_text("").is_empty());
    }
}

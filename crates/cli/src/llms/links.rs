//! Links between written pages: a Markdown source's relative link to another source page
//! (`[Security](security.md#audit-log)`) is pointed at that page's written `.md`
//! (`security.html.md#audit-log`), relative, or absolute with --base-url.

use std::collections::HashMap;

use super::compose::{md_path, Doc};

/// Rewrite the links of every Markdown-source page in `docs` (code blocks are left alone).
pub fn relink(docs: &mut [Doc], base_url: Option<&str>) {
    let targets: HashMap<(String, String), String> =
        docs.iter().map(|d| ((d.namespace.clone(), d.rel.clone()), md_path(d, base_url))).collect();
    for d in docs.iter_mut() {
        if !is_markdown(&d.rel) {
            continue;
        }
        let from = md_path(d, base_url);
        let dir = d.rel.rsplit_once('/').map(|(a, _)| a).unwrap_or("");
        let ns = d.namespace.clone();
        d.page.markdown = rewrite(&d.page.markdown, |target| {
            let (path, frag) = match target.find('#') {
                Some(i) => target.split_at(i),
                None => (target, ""),
            };
            if path.contains(':') || path.starts_with('/') || !is_markdown(path) {
                return None;
            }
            let to = targets.get(&(ns.clone(), resolve(dir, path)?))?;
            Some(match base_url {
                Some(b) => format!("{}/{to}{frag}", b.trim_end_matches('/')),
                None => format!("{}{frag}", relative(&from, to)),
            })
        });
    }
}

fn is_markdown(path: &str) -> bool {
    let p = path.to_ascii_lowercase();
    p.ends_with(".md") || p.ends_with(".mdx") || p.ends_with(".markdown")
}

/// `dir` + `path` with `.` and `..` resolved; None when it climbs above the source folder.
fn resolve(dir: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// The path of `to` relative to the folder of `from` (both relative to the output folder).
fn relative(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = from
        .split('/')
        .collect::<Vec<_>>()
        .split_last()
        .map(|(_, d)| d.to_vec())
        .unwrap_or_default();
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dir.iter().zip(&to_parts).take_while(|(a, b)| a == b).count();
    let mut out: Vec<&str> = vec![".."; from_dir.len() - common];
    out.extend(&to_parts[common..]);
    out.join("/")
}

/// Apply `f` to every inline link target `](target)` outside fenced code.
fn rewrite(md: &str, f: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(md.len());
    let mut fence: Option<String> = None;
    for line in md.split_inclusive('\n') {
        let t = line.trim_start();
        let marker: String = t.chars().take_while(|&c| c == '`' || c == '~').collect();
        if marker.len() >= 3 {
            match &fence {
                Some(open) if marker.starts_with(open.as_str()) => fence = None,
                None => fence = Some(marker),
                _ => {}
            }
            out.push_str(line);
            continue;
        }
        if fence.is_some() {
            out.push_str(line);
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            out.push_str(&rest[..i + 2]);
            rest = &rest[i + 2..];
            let end = rest.find(|c: char| c == ')' || c.is_whitespace()).unwrap_or(rest.len());
            match f(&rest[..end]) {
                Some(new) => out.push_str(&new),
                None => out.push_str(&rest[..end]),
            }
            rest = &rest[end..];
        }
        out.push_str(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use docent_core::source::clean::CleanPage;

    fn doc(rel: &str, url: &str, md: &str) -> Doc {
        Doc {
            rel: rel.into(),
            url: url.into(),
            namespace: String::new(),
            page: CleanPage { title: "T".into(), description: String::new(), markdown: md.into() },
        }
    }

    #[test]
    fn links_to_source_pages_point_at_their_written_markdown() {
        let mut docs = vec![
            doc("guide/a.md", "guide/a.html", "See [b](../b.md#x), [c](c.md), [web](https://x.dev/y.md), [img](p.png).\n```\n[code](b.md)\n```\n"),
            doc("b.md", "b.html", "Back to [a](guide/a.md).\n"),
            doc("guide/c.md", "guide/c.html", "[gone](../../up.md) [missing](nope.md)\n"),
        ];
        relink(&mut docs, None);
        assert_eq!(
            docs[0].page.markdown,
            "See [b](../b.html.md#x), [c](c.html.md), [web](https://x.dev/y.md), [img](p.png).\n```\n[code](b.md)\n```\n"
        );
        assert_eq!(docs[1].page.markdown, "Back to [a](guide/a.html.md).\n");
        assert_eq!(docs[2].page.markdown, "[gone](../../up.md) [missing](nope.md)\n");
        let mut docs = vec![
            doc("b.md", "https://d.dev/b.html", "[a](a.md)"),
            doc("a.md", "https://d.dev/a.html", ""),
        ];
        relink(&mut docs, Some("https://d.dev"));
        assert_eq!(docs[0].page.markdown, "[a](https://d.dev/a.html.md)");
    }
}

//! Composing llms.txt, llms-full.txt and the per-page Markdown from cleaned pages.

use std::fmt::Write as _;

use docent_core::source::clean::CleanPage;

/// llms.txt stays under this many characters (link lists, not text): past it descriptions are
/// dropped, then the remaining pages are summed up as one link to llms-full.txt.
pub const MAX_LLMS_TXT_CHARS: usize = 50_000;

/// One page to write.
#[derive(Debug, Clone)]
pub struct Doc {
    /// Path relative to its source folder, `/`-separated.
    pub rel: String,
    /// The page URL (as in the index: relative, or absolute with --base-url).
    pub url: String,
    /// Its namespace ("" = none).
    pub namespace: String,
    /// The page as clean Markdown.
    pub page: CleanPage,
}

/// Site-wide settings of llms.txt.
#[derive(Debug, Clone, Default)]
pub struct Site {
    /// --title.
    pub title: Option<String>,
    /// --summary.
    pub summary: Option<String>,
    /// --base-url.
    pub base_url: Option<String>,
    /// Title when neither --title nor a home page gives one.
    pub fallback_title: String,
}

/// Where a page's `.md` goes, relative to the output folder: its URL path + `.md`
/// (llmstxt.org's convention; a folder URL gets `index.html.md`), under its namespace's
/// folder unless the path already starts with it.
pub fn md_path(d: &Doc, base_url: Option<&str>) -> String {
    let mut path = d.url.as_str();
    if let Some(base) = base_url {
        path = path.strip_prefix(base.trim_end_matches('/')).unwrap_or(path);
    }
    let path = path.split(['#', '?']).next().unwrap_or("");
    let clean: Vec<&str> =
        path.split('/').filter(|s| !s.is_empty() && *s != "." && *s != "..").collect();
    let mut p = clean.join("/");
    if p.is_empty() || path.ends_with('/') {
        if !p.is_empty() {
            p.push('/');
        }
        p.push_str("index.html.md");
    } else {
        p.push_str(".md");
    }
    if !d.namespace.is_empty() && !p.starts_with(&format!("{}/", d.namespace)) {
        p = format!("{}/{p}", d.namespace);
    }
    p
}

fn link(site: &Site, d: &Doc) -> String {
    let p = md_path(d, site.base_url.as_deref());
    match &site.base_url {
        Some(b) => format!("{}/{p}", b.trim_end_matches('/')),
        None => p,
    }
}

/// A page's Markdown as written: its `# Title` line, a `Source:` line with its URL, the rest.
pub fn page_md(d: &Doc) -> String {
    let md = d.page.markdown.trim_end();
    let (first, rest) = md.split_once('\n').unwrap_or((md, ""));
    format!("{first}\n\nSource: {}\n{rest}\n", d.url)
}

fn is_home(d: &Doc) -> bool {
    let r = d.rel.to_ascii_lowercase();
    matches!(r.as_str(), "index.md" | "index.mdx" | "index.html" | "readme.md" | "intro.md")
}

fn title(site: &Site, docs: &[Doc]) -> String {
    site.title
        .clone()
        .or_else(|| docs.iter().find(|d| is_home(d)).map(|d| d.page.title.clone()))
        .unwrap_or_else(|| site.fallback_title.clone())
}

fn summary(site: &Site, docs: &[Doc]) -> String {
    site.summary
        .clone()
        .or_else(|| docs.iter().find(|d| is_home(d)).map(|d| d.page.description.clone()))
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| {
            format!("The {} documentation, as Markdown for language models.", title(site, docs))
        })
}

fn humanize(dir: &str) -> String {
    let t = dir.replace(['-', '_'], " ");
    let mut c = t.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The section a page is listed under: its namespace and top folder.
fn section_of(d: &Doc) -> String {
    let mut rel = d.rel.as_str();
    if !d.namespace.is_empty() {
        rel = rel.strip_prefix(&format!("{}/", d.namespace)).unwrap_or(rel);
    }
    let dir = rel.split_once('/').map(|(a, _)| humanize(a)).unwrap_or_default();
    match (d.namespace.is_empty(), dir.is_empty()) {
        (true, true) => "Docs".into(),
        (true, false) => dir,
        (false, true) => d.namespace.clone(),
        (false, false) => format!("{}: {dir}", d.namespace),
    }
}

/// Sections in order of first appearance (home pages first), each with its pages.
fn sections(docs: &[Doc]) -> Vec<(String, Vec<&Doc>)> {
    let mut ordered: Vec<&Doc> = docs.iter().filter(|d| is_home(d)).collect();
    ordered.extend(docs.iter().filter(|d| !is_home(d)));
    let mut out: Vec<(String, Vec<&Doc>)> = Vec::new();
    for d in ordered {
        let s = section_of(d);
        match out.iter_mut().find(|(name, _)| *name == s) {
            Some((_, list)) => list.push(d),
            None => out.push((s, vec![d])),
        }
    }
    out
}

/// llms.txt (see [`MAX_LLMS_TXT_CHARS`]).
pub fn llms_txt(site: &Site, docs: &[Doc]) -> String {
    for descriptions in [true, false] {
        let t = compose_txt(site, docs, descriptions, usize::MAX);
        if t.chars().count() <= MAX_LLMS_TXT_CHARS {
            return t;
        }
    }
    compose_txt(site, docs, false, MAX_LLMS_TXT_CHARS - 1_000)
}

fn compose_txt(site: &Site, docs: &[Doc], descriptions: bool, budget: usize) -> String {
    let mut s = format!(
        "# {}\n\n> {}\n\n",
        inline_text(&title(site, docs)),
        inline_text(&one_line(&summary(site, docs)))
    );
    s.push_str("Every link below is a page as clean Markdown (headings end with their anchor, `## Title {#anchor}`: cite a section as the page URL + `#anchor`). [llms-full.txt](");
    s.push_str(&match &site.base_url {
        Some(b) => format!("{}/llms-full.txt", b.trim_end_matches('/')),
        None => "llms-full.txt".into(),
    });
    s.push_str(") has every page in one file.\n");
    let mut left = 0usize;
    for (name, pages) in sections(docs) {
        let mut block = format!("\n## {name}\n\n");
        for d in pages {
            if s.len() + block.len() > budget {
                left += 1;
                continue;
            }
            let desc = inline_text(&one_line(&d.page.description));
            let t = inline_text(&d.page.title).replace('[', "(").replace(']', ")");
            if descriptions && !desc.is_empty() {
                let _ = writeln!(block, "- [{t}]({}): {desc}", link(site, d));
            } else {
                let _ = writeln!(block, "- [{t}]({})", link(site, d));
            }
        }
        if block.lines().count() > 2 {
            s.push_str(&block);
        }
    }
    if left > 0 {
        let _ = write!(
            s,
            "\n## Optional\n\n- [llms-full.txt](llms-full.txt): {left} more pages, in full\n"
        );
    }
    s
}

/// Text from a page (a title, a description) as Markdown inline text: a `<` is escaped, so
/// `Vec<T>` shows as written instead of `<T>` being read as an HTML tag, and a hostile title's
/// `<img onerror=…>` stays text wherever llms.txt is rendered.
fn inline_text(t: &str) -> String {
    t.replace('<', "\\<")
}

fn one_line(t: &str) -> String {
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// llms-full.txt: the title and summary, then every page's Markdown (with its `Source:` URL).
pub fn llms_full(site: &Site, docs: &[Doc]) -> String {
    let mut s = format!("# {}\n\n> {}\n", title(site, docs), one_line(&summary(site, docs)));
    for (_, pages) in sections(docs) {
        for d in pages {
            s.push_str("\n---\n\n");
            s.push_str(&page_md(d));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(rel: &str, url: &str, ns: &str, desc: &str) -> Doc {
        Doc {
            rel: rel.into(),
            url: url.into(),
            namespace: ns.into(),
            page: CleanPage {
                title: format!("Title of {rel}"),
                description: desc.into(),
                markdown: format!("# Title of {rel} {{#t}}\n\nBody.\n"),
            },
        }
    }

    #[test]
    fn md_paths_follow_the_page_url_plus_md() {
        let d = doc("guide/intro.md", "guide/intro.html", "", "");
        assert_eq!(md_path(&d, None), "guide/intro.html.md");
        let d = doc("guide/index.md", "https://x.dev/guide/", "", "");
        assert_eq!(md_path(&d, Some("https://x.dev")), "guide/index.html.md");
        let d = doc("a.md", "https://x.dev/a", "v2", "");
        assert_eq!(md_path(&d, Some("https://x.dev/")), "v2/a.md");
        let d = doc("../../etc/passwd", "../../etc/passwd", "", "");
        assert_eq!(md_path(&d, None), "etc/passwd.md");
    }

    #[test]
    fn titles_and_descriptions_are_markdown_text_not_html() {
        let mut d = doc("b.md", "b.html", "", "Holds <T> values <img src=x onerror=alert(1)>.");
        d.page.title = "Vec<T> [and] <script>".into();
        let site = Site { base_url: None, fallback_title: "x".into(), ..Default::default() };
        let t = llms_txt(&site, &[d]);
        assert!(
            t.contains("- [Vec\\<T> (and) \\<script>](b.html.md): Holds \\<T> values \\<img src=x onerror=alert(1)>.\n"),
            "{t}"
        );
    }

    #[test]
    fn llms_txt_has_title_summary_and_sections_of_described_links() {
        let docs = vec![
            doc("guide/a.md", "guide/a.html", "", "About A."),
            doc("index.md", "index.html", "", "The home."),
            doc("b.md", "b.html", "", ""),
        ];
        let site = Site { base_url: None, fallback_title: "x".into(), ..Default::default() };
        let t = llms_txt(&site, &docs);
        assert!(t.starts_with("# Title of index.md\n\n> The home.\n\n"), "{t}");
        assert!(t.contains("## Docs\n\n- [Title of index.md](index.html.md): The home.\n- [Title of b.md](b.html.md)\n"), "{t}");
        assert!(
            t.contains("## Guide\n\n- [Title of guide/a.md](guide/a.html.md): About A.\n"),
            "{t}"
        );
        let full = llms_full(&site, &docs);
        assert!(
            full.contains("---\n\n# Title of guide/a.md {#t}\n\nSource: guide/a.html\n"),
            "{full}"
        );
    }

    #[test]
    fn a_large_site_keeps_llms_txt_under_the_limit() {
        let docs: Vec<Doc> = (0..3000)
            .map(|i| {
                doc(
                    &format!("s{}/page-{i}.md", i % 7),
                    &format!("s{}/page-{i}.html", i % 7),
                    "",
                    &"words ".repeat(20),
                )
            })
            .collect();
        let t = llms_txt(&Site::default(), &docs);
        assert!(t.chars().count() <= MAX_LLMS_TXT_CHARS, "{}", t.len());
        assert!(t.contains("more pages, in full"));
    }
}

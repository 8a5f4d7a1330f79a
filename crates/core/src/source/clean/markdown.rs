//! A Markdown/MDX source as clean Markdown: the body without frontmatter, MDX statements and
//! components, scripts, styles and HTML comments; every h1–h4 heading ends with its index
//! anchor as `{#anchor}`.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag};

use super::CleanPage;
use crate::source::fence::{Dialect, Fences, Line};
use crate::source::include::{expand, Includes, NoIncludes};
use crate::source::markdown::{
    dialect, frontmatter, frontmatter_raw, parse_with, preprocess, split_custom_id,
};
use crate::source::Flavor;

/// Clean a Markdown/MDX page (see the module docs); includes are left out.
pub fn clean(content: &str, flavor: Flavor, file_stem: &str) -> CleanPage {
    clean_with(content, flavor, &format!("{file_stem}.md"), &NoIncludes)
}

/// Clean the Markdown/MDX page at `path` (relative to its source folder), inlining the files it
/// includes (read through `inc`) as the index does.
pub fn clean_with(content: &str, flavor: Flavor, path: &str, inc: &dyn Includes) -> CleanPage {
    let page = parse_with(content, flavor, path, inc);
    let (fm, _) = frontmatter(content);
    let (front, body) = frontmatter_raw(content);
    // Includes are read twice (once for the page's anchors); warn once.
    let dialect = dialect(front, flavor, path);
    let body = expand(body, flavor, dialect, path, &Quiet(inc));
    let body = preprocess(&body, front.unwrap_or(""), flavor, dialect);
    let body = drop_raw_blocks(&body, dialect);
    // The parser's sections, in order, carry the anchors the index uses.
    let mut anchors = page
        .sections
        .iter()
        .filter(|s| s.level > 0)
        .map(|s| (s.level, s.anchor.as_str()))
        .peekable();
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut has_h1 = false;
    // Same bytes at the same offsets, nesting bounded as the indexer reads it (markdown.rs).
    let bounded = crate::render::limit_nesting(&body);
    for (event, range) in Parser::new_ext(&bounded, Options::all()).into_offset_iter() {
        let Event::Start(Tag::Heading { level, .. }) = event else { continue };
        let level = heading_level(level);
        has_h1 |= level == 1;
        let Some(&(l, anchor)) = anchors.peek() else { continue };
        if l != level {
            continue;
        }
        anchors.next();
        let raw = &body[range.clone()];
        let text = heading_source_text(raw);
        if anchor.is_empty() || split_custom_id(&text).1.is_some() {
            continue;
        }
        edits.push((range, format!("{} {text} {{#{anchor}}}\n", "#".repeat(level as usize))));
    }
    let mut markdown = String::with_capacity(body.len() + 64);
    let mut at = 0;
    for (range, text) in edits {
        markdown.push_str(&body[at..range.start]);
        markdown.push_str(&text);
        at = range.end;
    }
    markdown.push_str(&body[at..]);
    let mut markdown = markdown.trim().to_string();
    if flavor == Flavor::VitePress {
        // A `layout: home` page shows its hero and features first (as the index reads them).
        let home = crate::source::home::home_text(front.unwrap_or(""));
        if !home.is_empty() {
            markdown = format!("{}\n\n{markdown}", home.join("\n\n")).trim().to_string();
        }
    }
    // The page opens with its `# Title` (llms files and llms-full.txt start a page there),
    // also when its h1 comes later (text before it, or an h1 further down the page).
    let opens_with_h1 = has_h1 && markdown.starts_with("# ");
    if !opens_with_h1 {
        markdown = format!("# {}\n\n{markdown}", page.title);
    }
    let description = fm
        .description
        .map(|d| super::one_line(&d))
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| super::first_sentence(&page));
    CleanPage { title: page.title, description, markdown: markdown + "\n" }
}

/// The same files, without the warnings (already given once).
struct Quiet<'a>(&'a dyn Includes);

impl Includes for Quiet<'_> {
    fn read(&self, path: &str) -> Option<String> {
        self.0.read(path)
    }
}

fn heading_level(l: HeadingLevel) -> u8 {
    match l {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

/// The heading's own text in the source: `## Title ##` or a setext `Title\n===`.
fn heading_source_text(raw: &str) -> String {
    let first = raw.lines().next().unwrap_or("").trim();
    if first.starts_with('#') {
        let t = first.trim_start_matches('#').trim();
        // An optional closing sequence of #s, after a space.
        let closed = t.trim_end_matches('#');
        return if closed.len() < t.len() && (closed.is_empty() || closed.ends_with(' ')) {
            closed.trim_end().to_string()
        } else {
            t.to_string()
        };
    }
    // Setext: every line but the underline.
    let lines: Vec<&str> = raw.trim_end().lines().collect();
    lines[..lines.len().saturating_sub(1)].iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
}

/// Drop `<script>`, `<style>` blocks and HTML comments outside code fences.
fn drop_raw_blocks(body: &str, dialect: Dialect) -> String {
    let mut out = String::with_capacity(body.len());
    let mut fences = Fences::new(dialect);
    let mut skip_until: Option<&str> = None;
    for line in body.lines() {
        let t = line.trim_start();
        // (Never in code: a block is skipped only from outside fences.)
        if let Some(end) = skip_until {
            if line.contains(end) {
                skip_until = None;
            }
            continue;
        }
        if fences.line(line) == Line::Text {
            let lower = t.to_ascii_lowercase();
            for (open, close) in [("<script", "</script>"), ("<style", "</style>"), ("<!--", "-->")]
            {
                if lower.starts_with(open) {
                    if !lower.contains(close) {
                        skip_until = Some(close);
                    }
                    break;
                }
            }
            if lower.starts_with("<script")
                || lower.starts_with("<style")
                || lower.starts_with("<!--")
            {
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_get_the_index_anchor_and_the_rest_is_kept() {
        let src = "---\ntitle: Guide\ndescription: How to set it up.\n---\nimport X from 'x'\n\n# Guide\n\nIntro.\n\n## Install it\n\n```sh\n# not a heading\nrun\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>\nalert(1)\n</script>\n\n### Custom {#mine}\n\n<!-- hidden -->\nDone.\n";
        let p = clean(src, Flavor::VitePress, "guide");
        assert_eq!(p.title, "Guide");
        assert_eq!(p.description, "How to set it up.");
        let md = &p.markdown;
        assert!(md.starts_with("# Guide {#guide}\n"), "{md}");
        assert!(md.contains("## Install it {#install-it}\n"), "{md}");
        assert!(md.contains("```sh\n# not a heading\nrun\n```"), "{md}");
        assert!(md.contains("| a | b |\n|---|---|\n| 1 | 2 |"), "{md}");
        assert!(md.contains("### Custom {#mine}"), "{md}");
        assert!(
            !md.contains("import X") && !md.contains("alert") && !md.contains("hidden"),
            "{md}"
        );
        assert!(!md.contains("title: Guide"), "{md}");
    }

    #[test]
    fn llms_markdown_keeps_what_the_site_shows_and_drops_component_tags() {
        let src = "# Guide\n\n<TabItem value=\"a\" label=\"Alpha\">Alpha body</TabItem>\n\nWatch <ScrimbaLink href=\"x\">the lesson</ScrimbaLink>.\n\n<svg-image :svg=\"cover\" />\n\nUse a MDX comment `{/* truncate */}` instead.\n";
        let p = clean(src, Flavor::Docusaurus, "guide");
        let md = &p.markdown;
        assert!(md.contains("Alpha\n\nAlpha body\n"), "{md}");
        assert!(md.contains("Watch the lesson."), "{md}");
        assert!(md.contains("`{/* truncate */}` instead"), "{md}");
        for bad in ["</TabItem>", "</ScrimbaLink>", "svg-image", "<TabItem"] {
            assert!(!md.contains(bad), "{bad} in {md}");
        }
        // Docusaurus gives the h1 no id: no anchor on it.
        assert!(md.starts_with("# Guide\n"), "{md}");
    }

    #[test]
    fn a_page_without_h1_gets_its_title_as_h1_and_a_first_sentence_description() {
        let p = clean("## Setup\n\nFirst do this. Then that.\n", Flavor::Docusaurus, "setup-page");
        // Named after its file, as Docusaurus names it (its id), not after its first section.
        assert!(p.markdown.starts_with("# setup-page\n\n## Setup {#setup}"), "{}", p.markdown);
        assert_eq!(p.description, "First do this.");
    }

    #[test]
    fn a_page_whose_h1_is_not_first_still_opens_with_its_title() {
        let p = clean("&nbsp;\n\n# Usage\n\nText.\n", Flavor::Docusaurus, "usage");
        assert!(p.markdown.starts_with("# Usage\n\n"), "{}", p.markdown);
        let p =
            clean("Launches an alert.\n\n# Reference\n\n## alert()\n", Flavor::Docusaurus, "alert");
        assert!(p.markdown.starts_with(&format!("# {}\n\nLaunches", p.title)), "{}", p.markdown);
    }

    #[test]
    fn a_vitepress_home_page_keeps_its_hero_and_features() {
        let src = "---\nlayout: home\ntitle: Pinia\nhero:\n  name: Pinia\n  tagline: Type safe.\nfeatures:\n  - title: Light\n    details: About 1.5kb.\n---\n\n<HomeSponsors />\n";
        let p = clean(src, Flavor::VitePress, "index");
        assert_eq!(p.markdown, "# Pinia\n\nPinia\n\nType safe.\n\nLight: About 1.5kb.\n");
    }

    #[test]
    fn a_long_frontmatter_description_is_cut_to_one_line() {
        let long = "word ".repeat(100);
        let src = format!("---\ndescription: \"{long}\"\n---\n# T\n\nBody text here.\n");
        let p = clean(&src, Flavor::VitePress, "t");
        assert!(
            p.description.chars().count() <= super::super::MAX_DESCRIPTION_CHARS,
            "{}",
            p.description
        );
        assert!(p.description.ends_with("word…"), "{}", p.description);
    }
}

//! Any text as a Markdown/MDX page, in every flavor: a page or a skip, never a panic; its
//! title, headings, breadcrumbs and text have no unpaired bidi control; its URL (from the file
//! path and the front matter's `slug:`) and its anchors stay on the site.
#![no_main]

mod common;

use docent_core::source::markdown::frontmatter;
use docent_core::source::{parse_page, Flavor, Parsed, SourceKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let flavor = match selector % 3 {
        0 => Flavor::VitePress,
        1 => Flavor::Docusaurus,
        _ => Flavor::Docsify,
    };
    let Ok(Parsed::Page(page)) = parse_page(SourceKind::Markdown, &text, flavor, "page") else {
        return;
    };
    common::check_text(&page);
    let slug = frontmatter(&text).0.slug;
    // A relative slug starts from the file's folder: at the root it is the whole path.
    for rel in ["page.md", "guide/page.md"] {
        common::check_urls(&page, rel, slug.as_deref());
    }
});

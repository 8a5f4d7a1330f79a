//! Any text through `docent llms`' cleaner, as Markdown (every flavor) and as built HTML: clean
//! Markdown or a skip, never a panic, and output bounded by the input's size.
#![no_main]

use docent_core::source::clean::clean_page;
use docent_core::source::{Flavor, SourceKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let (kind, flavor) = match selector % 4 {
        0 => (SourceKind::Markdown, Flavor::VitePress),
        1 => (SourceKind::Markdown, Flavor::Docusaurus),
        2 => (SourceKind::Markdown, Flavor::Docsify),
        _ => (SourceKind::Html, Flavor::VitePress),
    };
    if let Ok(Some(page)) = clean_page(kind, &text, flavor, "page") {
        // Headings gain ` {#anchor}` and code gains fences: a constant factor, never a blow-up.
        let bound = 8 * text.len() + 4096;
        assert!(
            page.markdown.len() <= bound,
            "{} bytes of Markdown from {}",
            page.markdown.len(),
            text.len()
        );
        assert!(page.description.chars().count() <= 200, "{:?}", page.description);
    }
});

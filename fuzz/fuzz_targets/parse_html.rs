//! Any text as a built HTML page: a page or a skip, never a panic; no unpaired bidi control in
//! what a reader sees; its URL and `url#anchor` links stay on the site. The first line of the
//! input is also tried as the file's path (a folder named `https:` must stay a path).
#![no_main]

mod common;

use docent_core::source::{parse_page, Flavor, Parsed, SourceKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(Parsed::Page(page)) = parse_page(SourceKind::Html, &text, Flavor::VitePress, "page")
    else {
        return;
    };
    common::check_text(&page);
    common::check_urls(&page, "page.html", None);
    let first = text.lines().next().unwrap_or("").chars().take(200).collect::<String>();
    if !first.is_empty() {
        common::check_urls(&page, &format!("{first}.html"), None);
    }
});

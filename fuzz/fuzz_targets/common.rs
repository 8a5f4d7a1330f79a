//! Checks shared by the page-parser targets: what a parsed page may contain whatever the input.

use docent_core::render::{classify_url, UrlKind};
use docent_core::source::safety::strip_unpaired_bidi;
use docent_core::source::{page_url_with_slug, Page, UrlStyle};

/// The base URL the targets map pages under.
pub const BASE: &str = "https://docs.example.com/docs";

/// Every piece of index text a reader sees has its bidi controls in pairs.
pub fn check_text(page: &Page) {
    let balanced =
        |s: &str| assert_eq!(strip_unpaired_bidi(s), s, "unpaired bidi control in {s:?}");
    balanced(&page.title);
    for s in &page.sections {
        balanced(&s.heading);
        s.breadcrumb.iter().for_each(|b| balanced(b));
        for b in &s.blocks {
            if let docent_core::source::Block::Text(t) = b {
                balanced(t);
            }
        }
    }
}

/// The page's URL (from `rel` and `slug`) and every `url#anchor` stay on the site: relative
/// without a base URL, under the base with one.
pub fn check_urls(page: &Page, rel: &str, slug: Option<&str>) {
    for style in [UrlStyle::Html, UrlStyle::Clean] {
        let url = page_url_with_slug(rel, slug, None, style);
        assert_eq!(classify_url(&url), Some(UrlKind::Relative), "{url:?} from {rel:?} {slug:?}");
        for s in &page.sections {
            if !s.anchor.is_empty() {
                let link = format!("{url}#{}", s.anchor);
                assert_eq!(classify_url(&link), Some(UrlKind::Relative), "{link:?}");
            }
        }
        let based = page_url_with_slug(rel, slug, Some(BASE), style);
        assert!(based.starts_with("https://docs.example.com/docs/"), "{based:?}");
        assert_eq!(
            classify_url(&based),
            Some(UrlKind::Absolute { origin: "https://docs.example.com".into() }),
            "{based:?}"
        );
    }
}

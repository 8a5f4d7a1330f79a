//! Parsing built HTML with the tree builder's stack of open elements held to a depth.
//!
//! html5ever, like the HTML standard's algorithm, scans the stack of open elements for most
//! start tags (`<div>` closes an open `<p>` "in button scope", `<li>` looks for an open `<li>`),
//! so a page that nests N elements costs N² steps: 40,000 nested `<div>`s (a 200 KB page) took
//! 47 s to index and 200,000 more than five minutes, with no error, in `docent index`,
//! `docent llms` and `--check-anchors`. Browsers bound this by the depth of the tree they build
//! (Blink: 512). Here a start tag is left out (and so is its end tag) while the tree builder
//! holds [`MAX_PARSE_DEPTH`] elements open (its stack plus its list of active formatting
//! elements, which it reopens from); its text stays, in document order. Raw-text elements
//! (`<script>`, `<style>`, `<textarea>`, ...) are kept, so their text is never read as markup,
//! and so are void elements, which open nothing. No page a person writes comes near the limit.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use html5ever::interface::Tracer;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts, TreeSink};
use html5ever::{LocalName, TokenizerResult};
use scraper::{Html, HtmlTreeSink};

/// Elements the tree builder may hold open before start tags are left out.
pub const MAX_PARSE_DEPTH: usize = 512;

type Handle = <HtmlTreeSink as TreeSink>::Handle;

/// Elements that open nothing (no end tag, never on the stack).
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param",
    "source", "track", "wbr",
];

/// Elements whose content the tokenizer reads as text once the tree builder has seen them open.
const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "noscript",
    "plaintext",
];

/// Counts the handles the tree builder holds: the document, its open elements, its active
/// formatting elements, the head and form elements. Linear in the stack, which the filter
/// keeps short, so counting before every start tag stays linear in the page.
struct Count(Cell<usize>);

impl Tracer for Count {
    type Handle = Handle;
    fn trace_handle(&self, _node: &Handle) {
        self.0.set(self.0.get() + 1);
    }
}

/// The tree builder behind a filter that leaves out start tags past the depth.
struct DepthFilter {
    builder: TreeBuilder<Handle, HtmlTreeSink>,
    /// Start tags left out, by name: their end tags are left out too, so they close nothing.
    dropped: RefCell<HashMap<LocalName, usize>>,
}

impl DepthFilter {
    fn held(&self) -> usize {
        let count = Count(Cell::new(0));
        self.builder.trace_handles(&count);
        count.0.get()
    }
}

impl TokenSink for DepthFilter {
    type Handle = Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        if let Token::TagToken(tag) = &token {
            let name: &str = &tag.name;
            match tag.kind {
                TagKind::StartTag => {
                    if !VOID.contains(&name)
                        && !RAW_TEXT.contains(&name)
                        && self.held() >= MAX_PARSE_DEPTH
                    {
                        *self.dropped.borrow_mut().entry(tag.name.clone()).or_default() += 1;
                        return TokenSinkResult::Continue;
                    }
                }
                TagKind::EndTag => {
                    if let Some(n) =
                        self.dropped.borrow_mut().get_mut(&tag.name).filter(|n| **n > 0)
                    {
                        *n -= 1;
                        return TokenSinkResult::Continue;
                    }
                }
            }
        }
        self.builder.process_token(token, line_number)
    }

    fn end(&self) {
        self.builder.end()
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder.adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// Parse an HTML document like [`Html::parse_document`], with start tags past
/// [`MAX_PARSE_DEPTH`] left out (module docs).
pub fn parse_html(content: &str) -> Html {
    let filter = DepthFilter {
        builder: TreeBuilder::new(
            HtmlTreeSink::new(Html::new_document()),
            TreeBuilderOpts::default(),
        ),
        dropped: RefCell::default(),
    };
    let tokenizer = Tokenizer::new(filter, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(content));
    while let TokenizerResult::Script(_) = tokenizer.feed(&input) {}
    tokenizer.end();
    tokenizer.sink.builder.sink.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use scraper::Selector;

    fn text(doc: &Html) -> String {
        doc.root_element().text().collect::<String>()
    }

    #[test]
    fn a_page_is_parsed_as_html5ever_parses_it() {
        let page = "<!doctype html><html><head><title>T</title><script>if (a<b) x()</script>\
            <style>p > a {}</style></head><body><main><h1 id=a>One</h1><p>x<b>y<p>z</b>\
            <table><td>cell</table><ul><li>a<li>b</ul><svg><g/><path/></svg><br>w</main></body></html>";
        let ours = parse_html(page);
        let theirs = Html::parse_document(page);
        assert_eq!(ours.root_element().html(), theirs.root_element().html());
    }

    #[test]
    fn nesting_past_the_limit_keeps_its_text_in_order_and_the_tree_shallow() {
        for open in ["<div>", "<ul><li>", "<span>", "<div/>", "<li><dd>", "<p><b x=1></p>t "] {
            let n = 50_000;
            let mut page = String::from("<html><body><main><h1 id=top>Deep </h1>");
            for i in 0..n {
                page.push_str(&open.replace("1", &i.to_string()));
                if i % 1000 == 0 {
                    page.push_str(&format!("w{i} "));
                }
            }
            // Closed again (`</div>` × n, `</ul>` × n, ...): what follows is parsed as usual.
            let name = open[1..].split(['>', ' ', '/']).next().unwrap();
            page.push_str(&format!("</{name}>").repeat(n));
            page.push_str("<h2 id=end>End</h2>after</main></body></html>");
            // Unbounded, 50,000 levels take a minute or more (quadratic in the tree builder's
            // scope checks); bounded, well under a second in a release build. The bound is
            // checked by the tree's depth below, not by a clock (a shared CI machine under load
            // took 21 s of a debug build once).
            let doc = parse_html(&page);
            let t = text(&doc);
            let words: Vec<&str> = t.split_whitespace().filter(|w| w.starts_with('w')).collect();
            assert_eq!(words.len(), n / 1000, "{open}");
            assert!(words.windows(2).all(|w| {
                w[0][1..].parse::<usize>().unwrap() < w[1][1..].parse::<usize>().unwrap()
            }));
            assert!(
                t.contains("Deep") && t.ends_with("Endafter"),
                "{open}: {}",
                &t[t.len() - 40..]
            );
            let depth = doc
                .select(&Selector::parse("*").unwrap())
                .map(|e| e.ancestors().count())
                .max()
                .unwrap();
            assert!(depth <= 2 * MAX_PARSE_DEPTH + 8, "{open}: {depth}");
            if ["<div>", "<ul><li>", "<span>"].contains(&open) {
                let end = doc.select(&Selector::parse("main > h2#end").unwrap()).count();
                assert_eq!(end, 1, "{open}: the heading after the deep part is a heading");
            }
        }
    }
}

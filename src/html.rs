//! The parts of an answer around its text (status line, labels, error, actions, source list,
//! "what I looked at") as HTML strings; their buttons carry a `data-action` that one delegated
//! click handler in [`crate::ui::Turn`] reads.
//!
//! As Leptos views every element and attribute of them was its own monomorphised type with
//! build, rebuild and drop code (the two lists alone were 8 KB gz of the widget's wasm,
//! BENCHMARKS.md §4.1); as strings they share one small builder. The widget shows each in its
//! own element through a memo, so the DOM is replaced only when the text changes.
//!
//! Safe by construction like the answer itself: every text and attribute value goes through
//! [`escape_html`], and a link's `href` is kept only when
//! [`is_site_link`](docent_core::render::is_site_link) accepts it (a relative URL, `#fragment`
//! or an absolute URL on the docs origin), so neither a tampered index nor a page's hostile
//! `slug:` can put a `javascript:` link or a link to another host in front of a reader. Index
//! text (titles, breadcrumbs) sits in `<bdi>` elements, and attribute values lose their bidi
//! controls, so a right-to-left override in a heading cannot reorder the widget's own text.

use docent_core::extractive::EXCERPTS_LABEL;
use docent_core::render::{escape_html, is_site_link};
use docent_core::source::safety::without_bidi_controls;

use crate::conversation::{AnswerKind, LookedAt, SourceView, Status};

/// A tiny HTML writer: tags and attribute names are the caller's literals, values are escaped.
struct Html(String);

impl Html {
    fn open(&mut self, tag: &str, attrs: &[(&str, &str)]) -> &mut Self {
        self.0.push('<');
        self.0.push_str(tag);
        for (name, value) in attrs {
            self.0.push(' ');
            self.0.push_str(name);
            self.0.push_str("=\"");
            escape_html(value, &mut self.0);
            self.0.push('"');
        }
        self.0.push('>');
        self
    }

    fn text(&mut self, s: &str) -> &mut Self {
        escape_html(s, &mut self.0);
        self
    }

    fn close(&mut self, tag: &str) -> &mut Self {
        self.0.push_str("</");
        self.0.push_str(tag);
        self.0.push('>');
        self
    }

    /// `<tag attrs>text</tag>`.
    fn element(&mut self, tag: &str, attrs: &[(&str, &str)], text: &str) -> &mut Self {
        self.open(tag, attrs).text(text).close(tag)
    }
}

/// `url` if it is a link on the site (relative, or absolute on `docs_origin`), else `#` (the link
/// then goes nowhere instead of running code or leaving the site).
fn safe_href<'a>(url: &'a str, docs_origin: Option<&str>) -> &'a str {
    if is_site_link(url, docs_origin) {
        url
    } else {
        "#"
    }
}

/// The numbered sources under an answer: cited ones first-class, the others dimmed
/// (`docent-uncited`); for an answer the docs don't cover, all of them are "closest sections".
/// Empty when there are no sources. `docs_origin`: the origin whose absolute URLs may be links
/// (the configured docs origin, else the page's).
pub fn source_list(
    sources: &[SourceView],
    cited: &[usize],
    kind: AnswerKind,
    docs_origin: Option<&str>,
) -> String {
    if sources.is_empty() {
        return String::new();
    }
    let not_covered = kind == AnswerKind::NotCovered;
    let heading = if not_covered { "Closest sections" } else { "Sources" };
    let mut h = Html(String::with_capacity(200 * sources.len()));
    h.open("nav", &[("class", "docent-sources"), ("aria-label", heading)])
        .element("h3", &[("class", "docent-sources-title")], heading)
        .open("ol", &[("data-testid", "docent-sources")]);
    for s in sources {
        let n = s.n.to_string();
        let uncited: &[(&str, &str)] =
            if not_covered || cited.contains(&s.n) { &[] } else { &[("class", "docent-uncited")] };
        h.open("li", uncited)
            .open(
                "a",
                &[
                    ("href", safe_href(&s.url, docs_origin)),
                    ("data-testid", "docent-source"),
                    ("data-n", &n),
                    ("title", &without_bidi_controls(&s.breadcrumb)),
                ],
            )
            .element("span", &[("class", "docent-source-n")], &format!("[{n}]"))
            .text(" ")
            .element("bdi", &[], &s.title)
            .close("a");
        if !s.breadcrumb.is_empty() && s.breadcrumb != s.title {
            h.open("span", &[("class", "docent-crumb")])
                .element("bdi", &[], &s.breadcrumb)
                .close("span");
        }
        h.close("li");
    }
    h.close("ol").close("nav");
    h.0
}

/// "What I looked at": the retrieved sections with their scores, in a closed `<details>`.
/// `fixed(x, digits)` formats a score (the widget uses the browser's `toFixed`). Empty when
/// nothing was retrieved. `docs_origin` as in [`source_list`].
pub fn looked_at(
    rows: &[LookedAt],
    rewritten: Option<&str>,
    confidence: f32,
    docs_origin: Option<&str>,
    fixed: impl Fn(f32, u8) -> String,
) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut h = Html(String::with_capacity(300 + 200 * rows.len()));
    h.open("details", &[("class", "docent-looked"), ("data-testid", "docent-looked-at")]).element(
        "summary",
        &[],
        "What I looked at",
    );
    if let Some(r) = rewritten {
        h.open("p", &[("class", "docent-rewritten"), ("data-testid", "docent-rewritten")])
            .text("Searched for: ")
            .open("q", &[])
            .element("bdi", &[], r)
            .close("q")
            .close("p");
    }
    h.element(
        "p",
        &[("class", "docent-confidence")],
        &format!("Search confidence {}", fixed(confidence, 2)),
    )
    .open("ol", &[]);
    for r in rows {
        let mut scores = format!("score {}", fixed(r.score, 3));
        if let Some(c) = r.cosine {
            scores.push_str(" · cosine ");
            scores.push_str(&fixed(c, 3));
        }
        if let Some(b) = r.bm25 {
            scores.push_str(" · bm25 ");
            scores.push_str(&fixed(b, 2));
        }
        scores.push_str(" · ");
        scores.push_str(&r.retrievers);
        let label = if r.breadcrumb.is_empty() { &r.title } else { &r.breadcrumb };
        h.open("li", &[])
            .open("a", &[("href", safe_href(&r.url, docs_origin))])
            .element("bdi", &[], label)
            .close("a")
            .element("span", &[("class", "docent-score")], &scores)
            .close("li");
    }
    h.close("ol").close("details");
    h.0
}

/// The progress line while an answer is prepared (index download with a progress bar, search,
/// waiting for the model); empty otherwise. Not a live region: the dialog's one polite live
/// region announces the search, the answer's start and its end (`engine::answer_complete`).
pub fn status_line(status: &Status) -> String {
    let text = match status {
        Status::LoadingIndex { received, total } => {
            let pct = total.filter(|t| *t > 0).map(|t| (received * 100 / t).min(100));
            let text = match pct {
                Some(p) => format!("Loading the docs index… {p}%"),
                None => format!("Loading the docs index… {} KB", received / 1024),
            };
            let mut h = Html(String::new());
            h.open("div", &[("class", "docent-status"), ("data-testid", "docent-status")])
                .element("span", &[], &text)
                .element(
                    "progress",
                    &[
                        ("data-testid", "docent-progress"),
                        ("max", "100"),
                        ("value", &pct.unwrap_or(0).to_string()),
                    ],
                    "",
                )
                .close("div");
            return h.0;
        }
        Status::Searching => "Searching the docs…",
        Status::Thinking => "Writing an answer…",
        _ => return String::new(),
    };
    let mut h = Html(String::new());
    h.element("div", &[("class", "docent-status"), ("data-testid", "docent-status")], text);
    h.0
}

/// The lines above an answer. Excerpts get one label, [`EXCERPTS_LABEL`], with the reason there
/// is no AI answer (the pipeline's notice) after it in the same line; other answers show the
/// notice on its own line. Once done, a not-covered answer says so.
pub fn labels(notice: Option<&str>, kind: AnswerKind, done: bool) -> String {
    let mut h = Html(String::new());
    if kind == AnswerKind::Excerpts {
        h.open("p", &[("class", "docent-excerpt-label"), ("data-testid", "docent-excerpt-label")])
            .element("strong", &[], EXCERPTS_LABEL);
        if let Some(n) = notice {
            h.text(". ").element("span", &[("data-testid", "docent-notice")], n);
        }
        h.close("p");
    } else if let Some(n) = notice {
        h.element("p", &[("class", "docent-notice"), ("data-testid", "docent-notice")], n);
    }
    if kind == AnswerKind::NotCovered && done {
        h.element(
            "p",
            &[("class", "docent-not-covered"), ("data-testid", "docent-not-covered")],
            "The docs don't seem to cover this. These are the closest sections I found:",
        );
    }
    h.0
}

/// The lines under an answer: cut at the size cap, stopped by the reader.
pub fn after_answer(truncated: bool, stopped: bool) -> String {
    let mut h = Html(String::new());
    if truncated {
        h.element("p", &[("class", "docent-notice")], "(The answer was too long to show in full.)");
    }
    if stopped {
        h.element(
            "p",
            &[("class", "docent-notice"), ("data-testid", "docent-stopped")],
            "Stopped.",
        );
    }
    h.0
}

/// The error under a failed answer, with a "Try again" button (`data-action="retry"`).
/// `retry_after` (seconds, from a 429) is also exposed as `data-retry-after`.
pub fn error_block(message: &str, retry_after: Option<u32>) -> String {
    let after = retry_after.map(|s| s.to_string());
    let mut attrs =
        vec![("class", "docent-error"), ("role", "alert"), ("data-testid", "docent-error")];
    if let Some(a) = after.as_deref() {
        attrs.push(("data-retry-after", a));
    }
    let mut h = Html(String::new());
    h.open("div", &attrs)
        .element("p", &[], message)
        .element(
            "button",
            &[
                ("type", "button"),
                ("class", "docent-btn"),
                ("data-testid", "docent-retry"),
                ("data-action", "retry"),
            ],
            "Try again",
        )
        .close("div");
    h.0
}

/// The buttons under a finished answer: copy, ask again, helpful / not helpful (`aria-pressed`
/// shows a rating given earlier, e.g. before a page navigation restored the conversation).
pub fn actions(feedback: Option<bool>) -> String {
    let pressed = |up: bool| if feedback == Some(up) { "true" } else { "false" };
    let button = |h: &mut Html,
                  action: &str,
                  testid: &str,
                  label: &str,
                  text: &str,
                  pressed: Option<&str>| {
        let mut attrs = vec![
            ("type", "button"),
            ("class", "docent-action"),
            ("data-testid", testid),
            ("data-action", action),
        ];
        if label != text {
            attrs.push(("aria-label", label));
        }
        if let Some(p) = pressed {
            attrs.push(("aria-pressed", p));
        }
        h.element("button", &attrs, text);
    };
    let mut h = Html(String::new());
    h.open(
        "div",
        &[("class", "docent-actions"), ("role", "group"), ("aria-label", "Answer actions")],
    );
    button(&mut h, "copy", "docent-copy", "Copy answer", "Copy", None);
    button(&mut h, "retry", "docent-retry-answer", "Ask again", "Ask again", None);
    button(&mut h, "up", "docent-feedback-up", "Helpful", "Helpful", Some(pressed(true)));
    button(
        &mut h,
        "down",
        "docent-feedback-down",
        "Not helpful",
        "Not helpful",
        Some(pressed(false)),
    );
    h.close("div");
    h.0
}

/// What an empty conversation shows: what answers are made of, and the site's starter questions
/// as buttons (`data-action="ask"`, the question in `data-q`).
pub fn empty_state(offline: bool, starters: &[String]) -> String {
    let intro = if offline {
        "Ask a question: answers are excerpts from the docs, with links."
    } else {
        "Ask a question: answers come from the docs, with links to the sections they use."
    };
    let mut h = Html(String::new());
    h.open("div", &[("class", "docent-empty")])
        .element("p", &[], intro)
        .open("ul", &[("class", "docent-starters")]);
    for q in starters {
        h.open("li", &[])
            .element(
                "button",
                &[
                    ("type", "button"),
                    ("class", "docent-starter"),
                    ("data-testid", "docent-starter"),
                    ("data-action", "ask"),
                    ("data-q", q),
                ],
                q,
            )
            .close("li");
    }
    h.close("ul").close("div");
    h.0
}

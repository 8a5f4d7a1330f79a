//! The citation check: cited sentences against their sources' text, and its marker in the
//! rendered answer.

use docent_core::cite::{
    check_answer, marks, ClaimKind, Evidence, LexicalChecker, Mark, Source, Verdict,
};
use docent_core::render::{render_markdown, RenderOptions};
use proptest::prelude::*;

const SERVER: &str = "## Server options\n\nThe dev server listens on port 5173 by default. \
Pass `--host` to expose it on the network, or set `server.host` in `vite.config.js`. \
The `--strictPort` flag makes the server exit if the port is already in use. \
HTTPS is not enabled by default; set `server.https` to turn it on. \
The proxy option accepts a \"rewrite\" function.";

const BUILD: &str = "## Building\n\nRun `vite build` to write the production bundle to `dist/`. \
Use `build.outDir` to change the folder. Minification uses esbuild and targets es2020.";

fn evidence() -> Vec<Evidence> {
    vec![Evidence::new(1, SERVER), Evidence::new(2, BUILD)]
}

fn check(answer: &str) -> Vec<(String, Verdict)> {
    check_answer(answer, &evidence(), &LexicalChecker::default())
        .into_iter()
        .map(|c| (answer[c.range].to_string(), c.verdict))
        .collect()
}

fn kinds(v: &Verdict) -> Vec<ClaimKind> {
    match v {
        Verdict::Supported => Vec::new(),
        Verdict::Unsupported(m) => m.iter().map(|m| m.kind).collect(),
    }
}

#[test]
fn sentences_taken_from_their_source_pass() {
    let r = check(
        "The dev server listens on port 5173 by default [1]. Pass `--host` to expose it on the \
         network [1]. Run `vite build` to write the production bundle to `dist/` [2].",
    );
    assert_eq!(r.len(), 3);
    for (s, v) in &r {
        assert_eq!(v, &Verdict::Supported, "{s}");
    }
}

#[test]
fn a_paraphrase_with_the_same_facts_passes() {
    let r = check("By default, the dev server uses port 5173 [1].");
    assert_eq!(r[0].1, Verdict::Supported, "{r:?}");
}

#[test]
fn a_changed_number_fails() {
    let r = check("The dev server listens on port 5174 by default [1].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Number], "{r:?}");
}

#[test]
fn a_changed_flag_fails() {
    let r =
        check("The `--strictHost` flag makes the server exit if the port is already in use [1].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Flag], "{r:?}");
    let r = check("Pass --hosts to expose it on the network [1].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Flag], "{r:?}");
}

#[test]
fn a_changed_identifier_fails() {
    let r = check("Set server.hosts in vite.config.js to expose it on the network [1].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Identifier], "{r:?}");
    let r = check("Use `build.outFolder` to change the folder [2].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Identifier], "{r:?}");
}

#[test]
fn a_flipped_negation_fails() {
    let r = check("HTTPS is enabled by default [1].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Negation], "{r:?}");
    let r = check("The dev server does not listen on port 5173 by default [1].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Negation], "{r:?}");
}

#[test]
fn facts_in_a_code_block_or_across_wrapped_lines_count() {
    let ev = [Evidence::new(
        1,
        "Set the port in the config file:\n\n```toml\nport = 8080\n```\n\nThe server does not\nrestart by itself; pass --watch\nfor that.",
    )];
    let c = LexicalChecker::default();
    let ok = check_answer(
        "Set the port in the config file to 8080 [1]. The server does not restart by itself [1].",
        &ev,
        &c,
    );
    assert!(ok.iter().all(|x| !x.unsupported()), "{ok:?}");
    let bad = check_answer("The server restarts by itself [1].", &ev, &c);
    assert!(bad[0].unsupported(), "{bad:?}");
    let flag = check_answer("Pass `--watch-all` for that [1].", &ev, &c);
    assert!(flag[0].unsupported(), "{flag:?}");
}

#[test]
fn a_changed_quote_fails() {
    let r = check("The proxy option accepts a \"rewrite\" function [1].");
    assert_eq!(r[0].1, Verdict::Supported, "{r:?}");
    let r = check("The proxy option accepts a \"configure\" function [1].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Quote], "{r:?}");
}

#[test]
fn a_sentence_from_another_section_fails() {
    let r = check("Minification uses esbuild and targets es2020 [1].");
    assert!(kinds(&r[0].1).contains(&ClaimKind::Words), "{r:?}");
    // ... and passes when it cites the right one, or both.
    let r = check("Minification uses esbuild and targets es2020 [2].");
    assert_eq!(r[0].1, Verdict::Supported);
}

#[test]
fn a_sentence_citing_several_sources_passes_on_facts_from_all_of_them() {
    let r =
        check("The dev server listens on port 5173, and `vite build` writes to `dist/` [1][2].");
    assert_eq!(r[0].1, Verdict::Supported, "{r:?}");
    let r =
        check("The dev server listens on port 5173, and `vite build` writes to `dist/` [1, 2].");
    assert_eq!(r[0].1, Verdict::Supported, "{r:?}");
    let r = check("The dev server listens on port 5173, and `vite build` writes to `dist/` [1].");
    assert_ne!(r[0].1, Verdict::Supported, "{r:?}");
}

#[test]
fn uncited_sentences_and_code_blocks_are_not_judged() {
    let r = check(
        "Here is how it works, at port 9999.\n\n```sh\nvite --port 1234\n```\n\n\
         The dev server listens on port 5173 by default [1].",
    );
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].1, Verdict::Supported);
}

#[test]
fn citing_a_source_that_does_not_exist_fails() {
    let r = check("The dev server listens on port 5173 by default [7].");
    assert_eq!(kinds(&r[0].1), [ClaimKind::Source]);
}

#[test]
fn non_english_text_is_checked_without_trouble() {
    let ev = [Evidence::new(1, "开发服务器默认监听 5173 端口。Der Server lauscht auf Port 5173.")];
    let c = LexicalChecker::default();
    let ok = check_answer("开发服务器默认监听 5173 端口[1]。", &ev, &c);
    assert_eq!(ok[0].verdict, Verdict::Supported, "{ok:?}");
    let bad = check_answer("开发服务器默认监听 8080 端口[1]。", &ev, &c);
    assert!(bad[0].unsupported());
    let de = check_answer("Der Server lauscht auf Port 5173 [1].", &ev, &c);
    assert_eq!(de[0].verdict, Verdict::Supported, "{de:?}");
}

#[test]
fn failing_sentences_get_a_marker_after_them_in_the_rendered_answer() {
    let answer =
        "The dev server listens on port 5173 by default [1]. It listens on port 80 [1].\n\n\
                  - Use `build.outDir` [2].\n- Use `build.nope` [2].";
    let checked = check_answer(answer, &evidence(), &LexicalChecker::default());
    let m = marks(&checked);
    assert_eq!(m.len(), 2, "{checked:?}");
    let sources = vec![
        Source {
            n: 1,
            url: "/a#x".into(),
            title: "A".into(),
            breadcrumb: "".into(),
            chunks: vec![],
        },
        Source {
            n: 2,
            url: "/b#y".into(),
            title: "B".into(),
            breadcrumb: "".into(),
            chunks: vec![],
        },
    ];
    let html =
        render_markdown(answer, &RenderOptions { sources, marks: m, ..Default::default() }).html;
    let span = "<span class=\"docent-unsupported\" data-testid=\"docent-unsupported\">";
    assert_eq!(html.matches(span).count(), 2, "{html}");
    assert!(
        html.contains(&format!("port 80 <a class=\"docent-cite\" href=\"/a#x\" title=\"A\">[1]</a>.{span}not found in [1]</span></p>")),
        "{html}"
    );
    assert!(html.contains(&format!("<code>build.nope</code> <a class=\"docent-cite\" href=\"/b#y\" title=\"B\">[2]</a>.{span}not found in [2]</span></li>")), "{html}");
    assert!(
        !html.contains(&format!(
            "default <a class=\"docent-cite\" href=\"/a#x\" title=\"A\">[1]</a>.{span}"
        )),
        "{html}"
    );
}

#[test]
fn a_mark_label_names_every_cited_source() {
    assert_eq!(Mark { at: 0, sources: vec![1, 3] }.label(), "not found in [1], [3]");
}

#[test]
fn a_sentence_of_thousands_of_flags_is_checked_without_freezing_the_page() {
    // The check runs on the page's main thread (the widget's cite module). Each `--flag` claim
    // used to count, for every source sentence, the words it shares with the answer's sentence:
    // flags × source sentences × words, minutes for a 12 KB answer from a hostile model.
    let source: String = (0..200)
        .map(|i| format!("Option {i} sets the cache directory to value {i} unless disabled. "))
        .collect();
    let ev = [Evidence::new(1, source)];
    let flags: Vec<String> = (0..1000).map(|i| format!("--flag-{i}")).collect();
    let answer = format!("Pass {} [1].", flags.join(" "));
    let start = std::time::Instant::now();
    let checked = check_answer(&answer, &ev, &LexicalChecker::default());
    let took = start.elapsed();
    assert!(checked[0].unsupported());
    // About 0.1 s in a debug build now; 50 s before.
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn no_input_makes_the_check_or_its_marks_panic(
        answer in "(\\PC|[\\[\\]0-9`*_.!?。 \n#>-]){0,200}",
        source in "\\PC{0,200}",
    ) {
        let ev = [Evidence::new(1, source.clone()), Evidence::new(2, "")];
        let checked = check_answer(&answer, &ev, &LexicalChecker::default());
        for c in &checked {
            prop_assert!(c.range.start <= c.range.end && c.range.end <= answer.len());
            prop_assert!(answer.is_char_boundary(c.range.start) && answer.is_char_boundary(c.range.end));
        }
        let mut m = marks(&checked);
        m.push(Mark { at: answer.len() + 5, sources: vec![1] });
        m.push(Mark { at: answer.len() / 2, sources: vec![] });
        let r = render_markdown(&answer, &RenderOptions { marks: m, ..Default::default() });
        prop_assert!(r.html.len() <= RenderOptions::default().max_output_bytes);
    }
}

#[test]
fn a_sentence_of_tens_of_thousands_of_claims_is_checked_quickly() {
    // The check runs on the whole answer, however long: claims were de-duplicated by a scan of
    // those already made, and each citation compared with every code span of its block, so one
    // sentence of 40 000 distinct numbers, or 40 000 code spans and citations, took minutes in
    // a debug build.
    let numbers: Vec<String> = (0..40_000).map(|i| i.to_string()).collect();
    let spans = "`a` [1]".repeat(40_000);
    for answer in [format!("Ports {} [1].", numbers.join(" ")), spans] {
        let start = std::time::Instant::now();
        let checked = check_answer(&answer, &evidence(), &LexicalChecker::default());
        let took = start.elapsed();
        assert!(!checked.is_empty());
        assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    }
}

//! The widget's pure helpers (error messages, namespaces, live-region text), run in the
//! browser like the component tests.
#![cfg(target_arch = "wasm32")]

use docent_widget::config::{looks_non_english, path_namespace, WidgetConfig};
use docent_widget::conversation::AnswerKind;
use docent_widget::engine::{answer_complete, describe, same_model};
use docent_widget::net::{parse_error_body, NetError};
use docent_widget::ui::add_code_copy_buttons;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn rate_limit_errors_say_when_to_retry() {
    let e = parse_error_body(
        429,
        r#"{"error":{"message":"slow down","type":"rate_limit","code":"rate_limited"}}"#,
        Some(7),
    );
    let (msg, after) = describe(&e);
    assert!(msg.contains("7 seconds"), "{msg}");
    assert_eq!(after, Some(7));
}

#[wasm_bindgen_test]
fn content_flags_and_upstream_errors_have_their_own_messages() {
    let flagged = parse_error_body(
        400,
        r#"{"error":{"message":"flagged","code":"content_flagged","categories":["violence"]}}"#,
        None,
    );
    assert!(describe(&flagged).0.contains("content filter (violence)"));
    let up = parse_error_body(
        502,
        r#"{"error":{"message":"bad gateway","code":"upstream_error"}}"#,
        None,
    );
    assert!(describe(&up).0.contains("language model"));
    let junk = parse_error_body(500, "<html>oops</html>", None);
    assert!(matches!(&junk, NetError::Http { code, .. } if code == "http_500"));
    assert!(describe(&NetError::Unreachable("Failed to fetch".into()))
        .0
        .contains("Couldn't reach"));
}

#[wasm_bindgen_test]
fn the_proxys_newer_error_codes_get_their_own_honest_messages() {
    let said = |status: u16, code: &str| {
        let body = format!(r#"{{"error":{{"message":"internal words","code":"{code}"}}}}"#);
        describe(&parse_error_body(status, &body, None)).0
    };
    let moderation = said(502, "moderation_failed");
    assert!(
        moderation.contains("content filter") && moderation.contains("not answered"),
        "{moderation}"
    );
    let timeout = said(408, "request_timeout");
    assert!(
        timeout.contains("took too long to reach") && timeout.contains("connection"),
        "{timeout}"
    );
    assert!(said(503, "server_shutting_down").contains("restarting"));
    assert!(said(502, "upstream_error").contains("language model"));
    assert!(said(400, "context_length_exceeded").contains("Start a new conversation"));
    for code in ["moderation_failed", "request_timeout", "server_shutting_down", "upstream_error"] {
        let m = said(502, code);
        assert!(!m.contains("internal words") && !m.contains("HTTP"), "{code}: {m}");
    }
}

#[wasm_bindgen_test]
fn stream_error_events_are_worded_by_their_code() {
    use docent_core::wire::parse_chat_chunk;
    use docent_widget::engine::describe_stream_error;
    let ev = |code: &str| {
        let e = parse_chat_chunk(&format!(
            r#"{{"error":{{"message":"the server is restarting","type":"server_error","code":"{code}"}}}}"#
        ))
        .unwrap()
        .error
        .unwrap();
        assert_eq!(e.code.as_deref(), Some(code));
        describe_stream_error(e.code.as_deref().unwrap_or(""), &e.message)
    };
    let shutdown = ev("server_shutting_down");
    assert!(shutdown.contains("restarted") && !shutdown.contains("language model"), "{shutdown}");
    assert!(ev("upstream_timeout").contains("went silent"));
    assert!(ev("upstream_error").contains("failed mid-answer"));
    assert!(shutdown.contains("partial answer is kept"));
    assert_eq!(parse_chat_chunk(r#"{"error":"overloaded"}"#).unwrap().error.unwrap().code, None);
}

#[wasm_bindgen_test]
fn the_proxys_cache_headers_say_hit_and_the_key() {
    use docent_widget::engine::cache_of;
    let key = "ab".repeat(32);
    let h = web_sys::Headers::new().unwrap();
    h.set("x-docent-cache", "hit").unwrap();
    h.set("x-docent-cache-key", &key).unwrap();
    assert_eq!(cache_of(&h), (true, Some(key.clone())));
    let miss = web_sys::Headers::new().unwrap();
    miss.set("x-docent-cache", "miss").unwrap();
    miss.set("x-docent-cache-key", &key).unwrap();
    assert_eq!(cache_of(&miss), (false, Some(key)));
    let junk = web_sys::Headers::new().unwrap();
    junk.set("x-docent-cache-key", "not-a-key").unwrap();
    assert_eq!(cache_of(&junk), (false, None));
}

#[wasm_bindgen_test]
fn the_proxys_system_prompt_cost_and_window_replace_the_widgets_guesses() {
    use docent_core::prompt::DEFAULT_SYSTEM_TOKENS;
    use docent_widget::engine::Engine;
    let cfg = WidgetConfig::from_json(r#"{"index":"/i.bin","model":"gpt-4o-mini"}"#).unwrap();
    let engine = Engine::new(cfg);
    assert_eq!(engine.system_tokens(), DEFAULT_SYSTEM_TOKENS, "core's default prompt's count");
    assert_eq!(engine.limits().context_window, 128_000);
    let h = web_sys::Headers::new().unwrap();
    h.set("x-docent-system-tokens", "2500").unwrap();
    h.set("x-docent-context-window", "8192").unwrap();
    h.set("x-docent-dropped-messages", "2").unwrap();
    assert_eq!(engine.learn_budget(&h), 2);
    assert_eq!(engine.system_tokens(), 2500, "the proxy's custom prompt is counted");
    assert_eq!(engine.limits().context_window, 8192);
    // Unreadable values change nothing; a bigger window never raises the site's limit.
    let junk = web_sys::Headers::new().unwrap();
    junk.set("x-docent-system-tokens", "lots").unwrap();
    junk.set("x-docent-context-window", "1000000").unwrap();
    assert_eq!(engine.learn_budget(&junk), 0);
    assert_eq!(engine.system_tokens(), 2500);
    assert_eq!(engine.limits().context_window, 128_000);
}

#[wasm_bindgen_test]
fn a_namespace_named_in_the_page_path() {
    let ns = vec!["v1".to_string(), "v2".to_string()];
    assert_eq!(path_namespace(&ns, "/docs/v2/guide/"), Some("v2".into()));
    assert_eq!(path_namespace(&ns, "/docs/guide/"), None);
    assert_eq!(path_namespace(&ns, "/docs/v20/"), None);
}

#[wasm_bindgen_test]
fn non_english_questions_are_detected_for_rewriting() {
    assert!(looks_non_english("Как установить docent?"));
    assert!(looks_non_english("如何安装"));
    assert!(!looks_non_english("How do I install docent?"));
    // Latin-script languages are told by their function words (docent_core::lang).
    assert!(looks_non_english("Wie installiere ich docent?"));
}

#[wasm_bindgen_test]
fn the_live_region_says_an_answer_is_complete_with_its_number_of_sources() {
    assert_eq!(answer_complete(AnswerKind::Model, 3), "Answer complete, with 3 sources.");
    assert_eq!(answer_complete(AnswerKind::Model, 1), "Answer complete, with 1 source.");
    assert_eq!(answer_complete(AnswerKind::Model, 0), "Answer complete, with no sources.");
    assert_eq!(
        answer_complete(AnswerKind::Excerpts, 2),
        "Excerpts from the docs shown, with 2 sources."
    );
    assert_eq!(
        answer_complete(AnswerKind::NotCovered, 4),
        "The docs don't seem to cover this. The 4 closest sections are listed."
    );
}

#[wasm_bindgen_test]
fn model_names_match_with_or_without_a_provider_prefix() {
    assert!(same_model("sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2"));
    assert!(!same_model("text-embedding-3-small", "all-MiniLM-L6-v2"));
}

#[wasm_bindgen_test]
fn config_trims_the_proxy_and_rejects_typos() {
    let c = WidgetConfig::from_json(
        r#"{"index":"/i.bin","proxy":"https://p.example/ ","namespace":""}"#,
    )
    .unwrap();
    assert_eq!(c.proxy.as_deref(), Some("https://p.example"));
    assert_eq!(c.namespace, None);
    assert!(WidgetConfig::from_json(r#"{"index":"/i.bin","limits":{"context":1}}"#)
        .unwrap_err()
        .contains("context"));
    assert!(WidgetConfig::from_json(r#"{"index":"/i.bin","proxy":""}"#).unwrap().proxy.is_none());
}

#[wasm_bindgen_test]
fn a_support_link_is_a_web_or_mail_address_and_can_carry_the_question() {
    use docent_widget::config::support_href;
    let cfg = |support: &str| {
        WidgetConfig::from_json(&format!(r#"{{"index":"/i.bin","support":{support:?}}}"#))
    };
    for ok in [
        "https://help.example.com/new?q={question}",
        "mailto:docs@example.com",
        "/support",
        "HTTP://x.example",
        "help#form",
    ] {
        assert_eq!(cfg(ok).unwrap().support.as_deref(), Some(ok));
    }
    for bad in [
        "javascript:alert(1)",
        " JavaScript:alert(1)",
        "java\nscript:alert(1)",
        "data:text/html,x",
        "vbscript:x",
    ] {
        let e = cfg(bad).unwrap_err();
        assert!(e.contains("`support` must be an http(s) or mailto: URL"), "{bad}: {e}");
    }
    let c = cfg("  ").unwrap();
    assert_eq!((c.support, c.support_label.as_str()), (None, "Contact support"));
    let c =
        WidgetConfig::from_json(r#"{"index":"/i.bin","support_label":"Ask our team"}"#).unwrap();
    assert_eq!(c.support_label, "Ask our team");
    assert_eq!(
        support_href("https://h.example/new?subject={question}", "Où est l'API & le cache?"),
        "https://h.example/new?subject=O%C3%B9%20est%20l'API%20%26%20le%20cache%3F"
    );
    assert_eq!(support_href("/support", "x"), "/support");
}

#[wasm_bindgen_test]
fn copy_buttons_go_only_into_renderer_code_wrappers() {
    let html = "<div class=\"docent-code\"><pre><code>x</code></pre></div><p>&lt;div class=&quot;docent-code&quot;&gt;</p>";
    let out = add_code_copy_buttons(html);
    assert_eq!(out.matches("<button").count(), 1, "{out}");
    // Wide code blocks and tables scroll: they take keyboard focus so they can be scrolled.
    assert_eq!(out.matches("<pre tabindex=\"0\">").count(), 1, "{out}");
    let table = add_code_copy_buttons("<div class=\"docent-table\"><table></table></div>");
    assert!(table.starts_with("<div class=\"docent-table\" tabindex=\"0\">"), "{table}");
}

#[wasm_bindgen_test]
fn a_saved_conversation_reads_back_field_for_field() {
    use docent_widget::conversation::{AnswerKind, LookedAt, Saved, SourceView, Status, TurnData};
    let turn = |status: Status| TurnData {
        question: "How do I \"quote\"?\nline two ✓".into(),
        status,
        kind: AnswerKind::NotCovered,
        answer: "Use [1].".into(),
        sources: vec![SourceView {
            n: 1,
            url: "/docs/a.html#x".into(),
            title: "A".into(),
            breadcrumb: "A › X".into(),
            cited: true,
        }],
        looked_at: vec![LookedAt {
            url: "/docs/a.html#x".into(),
            title: "A".into(),
            breadcrumb: "A › X".into(),
            score: 0.5,
            cosine: None,
            bm25: Some(2.25),
            retrievers: "lexical".into(),
        }],
        rewritten: Some("quoting".into()),
        confidence: 0.75,
        notice: None,
        fallback: Some("v1".into()),
        feedback: Some(false),
        truncated: true,
        uncertain: true,
        declined: true,
        unsupported: vec![docent_core::cite::Mark { at: 7, sources: vec![1, 2] }],
        cached: true,
        cache_key: Some("0f".repeat(32)),
    };
    let saved = Saved {
        id: "c1".into(),
        turns: vec![
            turn(Status::Failed { message: "Too many questions".into(), retry_after: Some(7) }),
            turn(Status::Done),
            turn(Status::LoadingIndex { received: 10, total: None }),
        ],
    };
    assert_eq!(Saved::from_json(&saved.to_json()), Some(saved));
    assert_eq!(Saved::from_json("{\"turns\": 3}"), None);
    assert_eq!(Saved::from_json("not json"), None);
}

#[wasm_bindgen_test]
fn stream_chunks_give_content_done_and_errors() {
    // core's decoder (docent_core::wire, tested natively there) in the browser's wasm
    use docent_core::wire::parse_chat_chunk;
    let c = parse_chat_chunk(r#"{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi [1]"}}]}"#).unwrap();
    assert_eq!(c.content.as_deref(), Some("Hi [1]"));
    assert!(!c.done && c.error.is_none());
    assert!(parse_chat_chunk(" [DONE] ").unwrap().done);
    let usage = parse_chat_chunk(
        r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#,
    )
    .unwrap();
    assert_eq!(usage.content, None);
    let e =
        parse_chat_chunk(r#"{"error":{"message":"upstream went away","code":"upstream_error"}}"#)
            .unwrap();
    assert_eq!(e.error.unwrap().message, "upstream went away");
    let full =
        parse_chat_chunk(r#"{"choices":[{"message":{"role":"assistant","content":"whole"}}]}"#)
            .unwrap();
    assert_eq!(full.content.as_deref(), Some("whole"));
    assert!(parse_chat_chunk("{not json").unwrap_err().to_string().contains("invalid JSON"));
    let e = parse_chat_chunk(r#"{"hello":1}"#).unwrap_err();
    assert!(e.to_string().contains("unexpected payload"));
}

#[wasm_bindgen_test]
fn config_type_errors_name_the_key_and_defaults_fill_the_rest() {
    let err = |j: &str| WidgetConfig::from_json(j).unwrap_err();
    assert!(err(r#"{"index":"/i.bin","top_k":"8"}"#).contains("`top_k`"));
    assert!(err(r#"{"index":"/i.bin","top_k":-1}"#).contains("`top_k`"));
    assert!(err(r#"{"index":"/i.bin","mode":"popup"}"#).contains("popup"));
    // A floor outside 0..=1 would decline everything (5) or nothing in a way no one meant (-1).
    assert!(err(r#"{"index":"/i.bin","floor":5}"#).contains("`floor` must be a number from 0 to 1"));
    assert!(err(r#"{"index":"/i.bin","floor":-1}"#).contains("`floor`"));
    assert!(err(r#"{"index":"/i.bin","floor":"0.5"}"#).contains("`floor`"));
    assert!(err(r#"{"index":"/i.bin","starters":"a|b"}"#).contains("`starters`"));
    assert!(err(r#"{"index":"/i.bin","prompt":{"system":"x"}}"#).contains("prompt.system"));
    assert!(err("[1]").contains("JSON object"));
    assert!(err("{").contains("not JSON"));
    let c = WidgetConfig::from_json(
        r#"{"index":"/i.bin","mode":"inline","rewrite":"off","top_k":3,"floor":0.25,"limits":{"docs_cap":900,"answer_reserve":null},"prompt":{"user":"{question}"},"starters":["a","b"],"language":null,"persist":false}"#,
    )
    .unwrap();
    assert_eq!(c.mode, docent_widget::config::Mode::Inline);
    assert_eq!(c.rewrite, docent_widget::config::Rewrite::Off);
    assert_eq!(
        (c.top_k, c.floor, c.limits.docs_cap, c.limits.answer_reserve),
        (3, Some(0.25), Some(900), None)
    );
    assert_eq!(c.prompt.user.as_deref(), Some("{question}"));
    assert_eq!(c.starters, vec!["a".to_string(), "b".to_string()]);
    assert!(!c.persist && c.feedback);
    assert_eq!(c.title, "Ask the docs");
    assert_eq!(c.extractive_sentences, 4);
}

#[wasm_bindgen_test]
fn stream_errors_with_odd_shapes_still_give_a_message() {
    use docent_core::wire::parse_chat_chunk;
    let message = |data: &str| parse_chat_chunk(data).unwrap().error.unwrap().message;
    assert_eq!(message(r#"{"error":{"message":503}}"#), "503");
    assert_eq!(message(r#"{"error":"overloaded"}"#), "overloaded");
    assert_eq!(message(r#"{"error":{"code":"x"}}"#), "unknown error");
}

#[wasm_bindgen_test]
fn messages_are_capitalised_by_the_browser_including_non_ascii_letters() {
    use docent_widget::engine::capitalise;
    assert_eq!(capitalise("the question is too long"), "The question is too long");
    assert_eq!(capitalise("élan ß"), "Élan ß");
    assert_eq!(capitalise(""), "");
}

#[wasm_bindgen_test]
fn the_wasm_batch_dot_product_kernel_agrees_with_the_portable_loop() {
    // Runs whatever kernel this build has (SIMD128 in the shipped widget); dims with and without a tail.
    for dims in [1usize, 16, 31, 384, 385] {
        let q: Vec<i8> = (0..dims).map(|i| ((i * 37 % 255) as i32 - 127) as i8).collect();
        let all: Vec<i8> = (0..dims * 7).map(|i| ((i * 91 % 255) as i32 - 127) as i8).collect();
        let want: Vec<i32> =
            all.chunks_exact(dims).map(|v| docent_core::vector::dot_i8_scalar(&q, v)).collect();
        assert_eq!(docent_core::vector::dot_i8_many(&q, &all, dims), want, "dims {dims}");
    }
}

/// Packed vectors (format v3) unpack in wasm32 exactly as natively: every width finds each
/// chunk's own vector first, and the int4 levels of a known vector come out as written.
#[wasm_bindgen_test]
fn packed_vector_indexes_load_and_search_in_the_browser() {
    use docent_core::format::write_index;
    use docent_core::model::{Chunk, IndexHeader, Quantization};
    use docent_core::search::{Query, SearchOptions};
    use docent_core::Index;
    let chunks: Vec<Chunk> = (0..6)
        .map(|i| Chunk {
            url: format!("p{i}.html"),
            anchor: format!("a{i}"),
            title: format!("Page {i}"),
            text: format!("text {i}"),
            ..Default::default()
        })
        .collect();
    let vectors: Vec<Vec<f32>> = (0..6)
        .map(|k| (0..384).map(|d| (((d * (k + 3) * 7919) % 211) as f32 - 105.0) / 105.0).collect())
        .collect();
    for q in Quantization::ALL {
        let header = IndexHeader {
            provider: "local".into(),
            model: "m".into(),
            dims: 384,
            quantization: q,
            ..IndexHeader::default()
        };
        let index =
            Index::from_bytes(write_index(&header, &chunks, Some(&vectors)).unwrap()).unwrap();
        assert_eq!(index.header().quantization, q);
        for (i, v) in vectors.iter().enumerate() {
            let r = index.search(
                &Query { text: "", vector: Some(v), ..Default::default() },
                &SearchOptions { floor: Some(0.0), ..Default::default() },
            );
            assert_eq!(
                r.hits.first().map(|h| h.chunk as usize),
                Some(i),
                "{}: chunk {i}",
                q.name()
            );
        }
    }
    let header = IndexHeader {
        provider: "local".into(),
        model: "m".into(),
        dims: 4,
        quantization: Quantization::Int4,
        ..IndexHeader::default()
    };
    let index = Index::from_bytes(
        write_index(&header, &chunks[..1], Some(&[vec![-0.1, 0.2, -0.3, 0.4]])).unwrap(),
    )
    .unwrap();
    assert_eq!(index.quantized(0).unwrap().0, &[-2, 4, -5, 7]);
}

fn source(
    n: usize,
    url: &str,
    title: &str,
    breadcrumb: &str,
) -> docent_widget::conversation::SourceView {
    docent_widget::conversation::SourceView {
        n,
        url: url.into(),
        title: title.into(),
        breadcrumb: breadcrumb.into(),
        cited: false,
    }
}

#[wasm_bindgen_test]
fn source_list_escapes_text_and_never_links_to_script() {
    use docent_widget::conversation::AnswerKind;
    let sources = [
        source(1, "/guide/config.html#cache", "Config <b>\"cache\"</b>", "Guide › Config"),
        source(2, "javascript:alert(1)", "Evil", ""),
        source(3, "&#106;avascript:alert(1)", "Evil too", "Evil too"),
    ];
    let html = docent_widget::html::source_list(&sources, &[1], AnswerKind::Model, None);
    assert!(html.contains(r#"<a href="/guide/config.html#cache" data-testid="docent-source" data-n="1" title="Guide › Config">"#), "{html}");
    assert!(html.contains("<bdi>Config &lt;b&gt;&quot;cache&quot;&lt;/b&gt;</bdi>"), "{html}");
    assert!(!html.contains("javascript:") && !html.contains("&#106;avascript"), "{html}");
    assert_eq!(html.matches(r##"href="#""##).count(), 2, "{html}");
    assert_eq!(
        html.matches("docent-uncited").count(),
        2,
        "only the cited source is first-class: {html}"
    );
    assert_eq!(
        html.matches("docent-crumb").count(),
        1,
        "a breadcrumb equal to the title is not repeated: {html}"
    );
    assert!(html.starts_with(r#"<nav class="docent-sources" aria-label="Sources">"#), "{html}");
    let closest = docent_widget::html::source_list(&sources, &[], AnswerKind::NotCovered, None);
    assert!(
        closest.contains("Closest sections") && !closest.contains("docent-uncited"),
        "{closest}"
    );
    assert_eq!(docent_widget::html::source_list(&[], &[], AnswerKind::Model, None), "");
}

#[wasm_bindgen_test]
fn looked_at_lists_scores_and_the_rewritten_query_escaped() {
    use docent_widget::conversation::LookedAt;
    let rows = [LookedAt {
        url: "/a.html#x".into(),
        title: "A".into(),
        breadcrumb: "Book › <A>".into(),
        score: 0.5,
        cosine: Some(0.71234),
        bm25: None,
        retrievers: "vector".into(),
    }];
    let html = docent_widget::html::looked_at(
        &rows,
        Some("cache \"dir\""),
        0.25,
        None,
        docent_widget::ui::fixed,
    );
    assert!(html.contains("<summary>What I looked at</summary>"), "{html}");
    assert!(html.contains("Searched for: <q><bdi>cache &quot;dir&quot;</bdi></q>"), "{html}");
    assert!(html.contains("Search confidence 0.25"), "{html}");
    assert!(html.contains(r#"<a href="/a.html#x"><bdi>Book › &lt;A&gt;</bdi></a><span class="docent-score">score 0.500 · cosine 0.712 · vector</span>"#), "{html}");
    assert_eq!(docent_widget::html::looked_at(&[], None, 0.0, None, docent_widget::ui::fixed), "");
}

#[wasm_bindgen_test]
fn status_and_label_lines_follow_the_turn_and_escape_the_notice() {
    use docent_widget::conversation::{AnswerKind, Status};
    use docent_widget::html::{after_answer, labels, status_line};
    let loading =
        status_line(&Status::LoadingIndex { received: 512 * 1024, total: Some(1024 * 1024) });
    assert!(
        loading.contains("Loading the docs index… 50%")
            && loading.contains(r#"data-testid="docent-progress" max="100" value="50""#),
        "{loading}"
    );
    assert!(status_line(&Status::LoadingIndex { received: 2048, total: None }).contains("… 2 KB"));
    assert!(status_line(&Status::Searching).contains("Searching the docs…"));
    assert_eq!(status_line(&Status::Done), "");
    let l = labels(Some("The answer service is <unreachable>"), AnswerKind::Excerpts, false);
    assert!(l.contains("&lt;unreachable&gt;") && l.contains("docent-excerpt-label"), "{l}");
    assert!(
        !labels(None, AnswerKind::NotCovered, false).contains("docent-not-covered"),
        "only once done"
    );
    assert!(labels(None, AnswerKind::NotCovered, true).contains("docent-not-covered"));
    assert_eq!(after_answer(false, false), "");
    assert!(
        after_answer(true, true).contains("too long")
            && after_answer(true, true).contains("docent-stopped")
    );
}

#[wasm_bindgen_test]
fn an_excerpt_answer_has_one_label_that_gives_the_reason_once() {
    use docent_core::extractive::EXCERPTS_LABEL;
    use docent_widget::conversation::AnswerKind;
    use docent_widget::html::labels;
    let reason = "The answer service has no chat model.";
    let l = labels(Some(reason), AnswerKind::Excerpts, true);
    assert_eq!(l.matches("<p").count(), 1, "one line: {l}");
    assert_eq!(l.matches("docent-excerpt-label").count(), 2, "class and test id: {l}");
    assert!(l.contains(EXCERPTS_LABEL), "{l}");
    assert_eq!(l.matches("chat model").count(), 1, "the reason once: {l}");
    assert!(!l.contains("class=\"docent-notice\""), "no second notice line: {l}");
    // Without a reason the label stands alone; other answers keep their notice line.
    assert_eq!(labels(None, AnswerKind::Excerpts, true).matches("<p").count(), 1);
    assert!(labels(Some("Counting tokens"), AnswerKind::Model, false).contains("docent-notice"));
}

#[wasm_bindgen_test]
fn error_and_action_buttons_carry_their_action_and_state() {
    use docent_widget::html::{actions, error_block};
    let e = error_block("Too many questions <now>", Some(30));
    assert!(e.contains(r#"role="alert" data-testid="docent-error" data-retry-after="30""#), "{e}");
    assert!(
        e.contains("Too many questions &lt;now&gt;") && e.contains(r#"data-action="retry""#),
        "{e}"
    );
    assert!(!error_block("x", None).contains("data-retry-after"));
    let a = actions(Some(false));
    for action in ["copy", "retry", "up", "down"] {
        assert!(a.contains(&format!(r#"data-action="{action}""#)), "{action}: {a}");
    }
    assert!(
        a.contains(r#"data-testid="docent-feedback-up" data-action="up" aria-pressed="false""#),
        "{a}"
    );
    assert!(
        a.contains(r#"aria-pressed="true""#) && a.contains(r#"aria-label="Copy answer""#),
        "{a}"
    );
}

/// Source URLs a hostile page could have put in an index built before docent refused them: every
/// scheme and malformed-scheme shape a browser reads as another host.
const OFF_SITE: [&str; 12] = [
    "https:/attacker.example/p12-phish/index.html#a",
    "http:/attacker.example/x",
    "HTTPS:attacker.example/x",
    "https://attacker.example/x",
    "//attacker.example/x",
    "/\\attacker.example/x",
    "\\\\attacker.example\\x",
    "ht\ttps:/attacker.example/x",
    "ht\ntps://attacker.example/x",
    "https%3A%2F%2Fattacker.example/x",
    "&#104;ttps://attacker.example/x",
    "https://docs.example.com@attacker.example/x",
];

#[wasm_bindgen_test]
fn index_urls_off_the_site_are_never_links_in_the_source_lists() {
    use docent_widget::conversation::{AnswerKind, LookedAt};
    let origin = Some("https://docs.example.com");
    let mut sources = vec![
        source(1, "/docs/ok.html#a", "Ok", "Ok › A"),
        source(2, "https://docs.example.com/docs/abs.html", "Abs", ""),
    ];
    for (i, url) in OFF_SITE.iter().enumerate() {
        sources.push(source(i + 3, url, "Phish", ""));
    }
    let rows: Vec<LookedAt> = sources
        .iter()
        .map(|s| LookedAt {
            url: s.url.clone(),
            title: s.title.clone(),
            breadcrumb: String::new(),
            score: 0.5,
            cosine: None,
            bm25: None,
            retrievers: "lexical".into(),
        })
        .collect();
    for html in [
        docent_widget::html::source_list(&sources, &[1], AnswerKind::Model, origin),
        docent_widget::html::source_list(&sources, &[], AnswerKind::NotCovered, origin),
        docent_widget::html::looked_at(&rows, None, 0.5, origin, docent_widget::ui::fixed),
    ] {
        assert!(!html.contains("attacker"), "{html}");
        assert!(html.contains(r#"href="/docs/ok.html#a""#), "{html}");
        assert!(html.contains(r#"href="https://docs.example.com/docs/abs.html""#), "{html}");
        assert_eq!(html.matches(r##"href="#""##).count(), OFF_SITE.len(), "{html}");
    }
    // Without a docs origin only relative URLs are links.
    let html = docent_widget::html::source_list(&sources, &[], AnswerKind::Model, None);
    assert_eq!(html.matches(r##"href="#""##).count(), OFF_SITE.len() + 1, "{html}");
}

#[wasm_bindgen_test]
fn index_text_in_the_source_lists_is_bidi_isolated() {
    use docent_widget::conversation::{AnswerKind, LookedAt};
    let title = "Falcon token rotator \u{202e}txt.exe";
    let crumb = "Guide › Topaz \u{2067}lmx.pam";
    let sources = [source(1, "/docs/f.html", title, crumb)];
    let html = docent_widget::html::source_list(&sources, &[1], AnswerKind::Model, None);
    assert!(html.contains(&format!("<bdi>{title}</bdi></a>")), "{html}");
    assert!(
        html.contains(&format!(r#"<span class="docent-crumb"><bdi>{crumb}</bdi></span>"#)),
        "{html}"
    );
    // An attribute cannot be isolated: its bidi controls are dropped.
    assert!(html.contains(r#"title="Guide › Topaz lmx.pam""#), "{html}");
    let rows = [LookedAt {
        url: "/docs/f.html".into(),
        title: title.into(),
        breadcrumb: crumb.into(),
        score: 0.5,
        cosine: None,
        bm25: None,
        retrievers: "lexical".into(),
    }];
    let html = docent_widget::html::looked_at(
        &rows,
        Some("\u{202e}query"),
        0.5,
        None,
        docent_widget::ui::fixed,
    );
    assert!(html.contains(&format!("<bdi>{crumb}</bdi></a>")), "{html}");
    assert!(html.contains("<q><bdi>\u{202e}query</bdi></q>"), "{html}");
}

#[wasm_bindgen_test]
fn the_widgets_renderer_decodes_html4_entities_and_leaves_rarer_ones_as_text() {
    use docent_core::render::{render_markdown, RenderOptions};
    // The wasm build carries only the HTML 4 entities (vendor/README.md): the common ones decode,
    // an HTML5-only one stays literal, and nothing becomes markup.
    let r = render_markdown(
        "Caf&eacute; &amp; co &mdash; &copy; &rarr; &ApplyFunction; &lt;b&gt;",
        &RenderOptions::default(),
    );
    assert!(r.html.contains("Café &amp; co — © → &amp;ApplyFunction; &lt;b&gt;"), "{}", r.html);
}

#[wasm_bindgen_test]
fn the_widgets_renderer_matches_reference_labels_whatever_their_case() {
    use docent_core::render::{render_markdown, RenderOptions};
    // Labels fold with std's lowercasing in the wasm build (vendor/README.md), not unicase's.
    let r = render_markdown(
        "See [the guide][Install Guide] and [ÉTAPES][étapes].\n\n[install guide]: /docs/install.html\n[Étapes]: /docs/steps.html\n",
        &RenderOptions::default(),
    );
    assert!(r.html.contains("href=\"/docs/install.html\""), "{}", r.html);
    assert!(r.html.contains("href=\"/docs/steps.html\""), "{}", r.html);
}

#[wasm_bindgen_test]
fn a_finished_answer_is_checked_against_the_chunks_the_model_was_given() {
    use docent_core::cite::Source;
    use docent_core::model::Chunk;
    let chunk = |text: &str| Chunk {
        url: "guide/server.html".into(),
        anchor: "port".into(),
        title: "Server".into(),
        text: text.into(),
        ..Chunk::default()
    };
    let chunks = vec![
        chunk("The dev server listens on port 5173 by default."),
        chunk("Pass `--host` to expose it on the network."),
    ];
    let sources = vec![Source {
        n: 1,
        url: "guide/server.html#port".into(),
        title: "Server".into(),
        breadcrumb: String::new(),
        chunks: vec![0, 1],
    }];
    let answer = "The dev server listens on port 5173 by default [1]. Pass `--hostname` to expose it [1]. Uncited 42.";
    let marks = docent_widget::engine::check_citations(answer, &sources, &chunks);
    assert_eq!(marks.len(), 1, "{marks:?}");
    assert_eq!(marks[0].sources, [1]);
    assert_eq!(
        &answer[..marks[0].at],
        "The dev server listens on port 5173 by default [1]. Pass `--hostname` to expose it [1]."
    );
}

#[wasm_bindgen_test]
fn the_uncertain_note_names_sentences_not_found_in_their_sources() {
    use docent_widget::conversation::{AnswerKind, TurnData};
    use docent_widget::ui::uncertain_note;
    let mut t = TurnData { answer: "A [1].".into(), ..TurnData::default() };
    assert_eq!(uncertain_note(&t), None);
    t.unsupported = vec![docent_core::cite::Mark { at: 6, sources: vec![1] }];
    assert!(uncertain_note(&t).unwrap().contains("One sentence was not found"));
    t.unsupported.push(docent_core::cite::Mark { at: 6, sources: vec![2] });
    assert!(uncertain_note(&t).unwrap().contains("Some sentences were not found"));
    t.kind = AnswerKind::NotCovered;
    assert_eq!(uncertain_note(&t), None);
}

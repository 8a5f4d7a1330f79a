//! The widget's pure helpers (fusion, error messages, namespaces, live-region text), run in the
//! browser like the component tests.
#![cfg(target_arch = "wasm32")]

use docent_core::search::{Hit, Retriever, SearchResult};
use docent_widget::config::{derive_namespace, looks_non_english, WidgetConfig};
use docent_widget::engine::{describe, fuse, fuse_results, last_sentence_end, same_model, speakable};
use docent_widget::net::{parse_error_body, NetError};
use docent_widget::ui::add_code_copy_buttons;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn hit(chunk: u32, lexical: bool) -> Hit {
    Hit { chunk, score: 1.0, retrievers: Retriever { vector: !lexical, lexical }, cosine: None, bm25: None }
}

#[wasm_bindgen_test]
fn fusion_ranks_chunks_found_by_both_queries_first() {
    let a = vec![hit(1, true), hit(2, true), hit(3, true)];
    let b = vec![hit(3, false), hit(4, false)];
    let f = fuse(&a, &b, 10);
    assert_eq!(f[0].chunk, 3);
    assert!(f[0].retrievers.vector && f[0].retrievers.lexical);
    assert_eq!(f.len(), 4);
    assert_eq!(fuse(&a, &b, 2).len(), 2);
}

#[wasm_bindgen_test]
fn fused_results_abstain_only_when_both_abstain() {
    let yes = SearchResult { hits: vec![hit(1, true)], confidence: 0.7, abstained: false, closest: vec![hit(1, true)] };
    let no = SearchResult { hits: vec![], confidence: 0.1, abstained: true, closest: vec![hit(2, true)] };
    let f = fuse_results(yes.clone(), no.clone(), 5);
    assert!(!f.abstained);
    assert_eq!(f.hits.len(), 1);
    assert!((f.confidence - 0.7).abs() < 1e-6);
    let both = fuse_results(no.clone(), no, 5);
    assert!(both.abstained && both.hits.is_empty());
    assert_eq!(both.closest[0].chunk, 2);
}

#[wasm_bindgen_test]
fn rate_limit_errors_say_when_to_retry() {
    let e = parse_error_body(429, r#"{"error":{"message":"slow down","type":"rate_limit","code":"rate_limited"}}"#, Some(7));
    let (msg, after) = describe(&e);
    assert!(msg.contains("7 seconds"), "{msg}");
    assert_eq!(after, Some(7));
}

#[wasm_bindgen_test]
fn content_flags_and_upstream_errors_have_their_own_messages() {
    let flagged = parse_error_body(400, r#"{"error":{"message":"flagged","code":"content_flagged","categories":["violence"]}}"#, None);
    assert!(describe(&flagged).0.contains("content filter (violence)"));
    let up = parse_error_body(502, r#"{"error":{"message":"bad gateway","code":"upstream_error"}}"#, None);
    assert!(describe(&up).0.contains("language model"));
    let junk = parse_error_body(500, "<html>oops</html>", None);
    assert!(matches!(&junk, NetError::Http { code, .. } if code == "http_500"));
    assert!(describe(&NetError::Unreachable("Failed to fetch".into())).0.contains("Couldn't reach"));
}

#[wasm_bindgen_test]
fn namespace_comes_from_config_or_the_page_path() {
    let ns = vec!["v1".to_string(), "v2".to_string()];
    assert_eq!(derive_namespace(Some("v1"), &ns, "/v2/guide/"), Some("v1".into()));
    assert_eq!(derive_namespace(None, &ns, "/docs/v2/guide/"), Some("v2".into()));
    assert_eq!(derive_namespace(None, &ns, "/docs/guide/"), None);
    assert_eq!(derive_namespace(None, &ns, "/docs/v20/"), None);
}

#[wasm_bindgen_test]
fn non_english_questions_are_detected_for_rewriting() {
    assert!(looks_non_english("Как установить docent?"));
    assert!(looks_non_english("如何安装"));
    assert!(!looks_non_english("How do I install docent?"));
    assert!(!looks_non_english("Wie installiere ich docent?"));
}

#[wasm_bindgen_test]
fn live_region_text_has_no_markdown_or_citations() {
    assert_eq!(speakable("Use **cargo** `build` [1][2]. See [the guide](x)"), "Use cargo build . See the guide(x)");
    assert_eq!(last_sentence_end("One. Two"), Some(4));
    assert_eq!(last_sentence_end("v1.2 is out"), None);
    assert_eq!(last_sentence_end("line\nmore"), Some(5));
}

#[wasm_bindgen_test]
fn model_names_match_with_or_without_a_provider_prefix() {
    assert!(same_model("sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2"));
    assert!(!same_model("text-embedding-3-small", "all-MiniLM-L6-v2"));
}

#[wasm_bindgen_test]
fn config_trims_the_proxy_and_rejects_typos() {
    let c = WidgetConfig::from_json(r#"{"index":"/i.bin","proxy":"https://p.example/ ","namespace":""}"#).unwrap();
    assert_eq!(c.proxy.as_deref(), Some("https://p.example"));
    assert_eq!(c.namespace, None);
    assert!(WidgetConfig::from_json(r#"{"index":"/i.bin","limits":{"context":1}}"#).unwrap_err().contains("context"));
    assert!(WidgetConfig::from_json(r#"{"index":"/i.bin","proxy":""}"#).unwrap().proxy.is_none());
}

#[wasm_bindgen_test]
fn copy_buttons_go_only_into_renderer_code_wrappers() {
    let html = "<div class=\"docent-code\"><pre><code>x</code></pre></div><p>&lt;div class=&quot;docent-code&quot;&gt;</p>";
    let out = add_code_copy_buttons(html);
    assert_eq!(out.matches("<button").count(), 1, "{out}");
}

//! The widget component in headless Chromium (wasm-bindgen-test).
//!
//! Run: `cargo test -p docent-widget --target wasm32-unknown-unknown` with
//! `CHROMEDRIVER=/usr/bin/chromedriver` (the runner is set in .cargo/config.toml; Chromium flags in
//! webdriver.json).
#![cfg(target_arch = "wasm32")]

use docent_core::format::write_index;
use docent_core::model::{Chunk, IndexHeader};
use docent_widget::conversation::{self, AnswerKind, Saved, SourceView, Status, TurnData};
use docent_widget::mount;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;
use web_sys::{Element, HtmlElement, ShadowRoot, ShadowRootInit, ShadowRootMode};

wasm_bindgen_test_configure!(run_in_browser);

fn document() -> web_sys::Document {
    web_sys::window().unwrap().document().unwrap()
}

/// A host element with an open shadow root and a container inside, like the loader makes.
fn shadow_host() -> (HtmlElement, ShadowRoot, HtmlElement) {
    let host: HtmlElement = document().create_element("div").unwrap().dyn_into().unwrap();
    document().body().unwrap().append_child(&host).unwrap();
    let shadow = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Open)).unwrap();
    let root: HtmlElement = document().create_element("div").unwrap().dyn_into().unwrap();
    shadow.append_child(&root).unwrap();
    (host, shadow, root)
}

async fn sleep(ms: i32) {
    let p = js_sys::Promise::new(&mut |resolve, _| {
        web_sys::window()
            .unwrap()
            .set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms)
            .unwrap();
    });
    JsFuture::from(p).await.unwrap();
}

/// Poll until `f` is true (up to ~5 s).
async fn until(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..100 {
        if f() {
            return true;
        }
        sleep(50).await;
    }
    f()
}

fn q(shadow: &ShadowRoot, sel: &str) -> Option<Element> {
    shadow.query_selector(sel).unwrap()
}

fn q_all(shadow: &ShadowRoot, sel: &str) -> Vec<Element> {
    let list = shadow.query_selector_all(sel).unwrap();
    (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|n| n.dyn_into::<Element>().ok())
        .collect()
}

fn pwned() -> bool {
    let v =
        js_sys::Reflect::get(&web_sys::window().unwrap(), &JsValue::from_str("__pwned")).unwrap();
    !v.is_undefined()
}

fn unique_index_url(name: &str) -> String {
    format!("https://docs.example.test/{name}-{}.bin", js_sys::Math::random())
}

fn saved_turn(answer: &str, sources: Vec<SourceView>) -> TurnData {
    TurnData {
        question: "How do I install it?".into(),
        status: Status::Done,
        kind: AnswerKind::Model,
        answer: answer.into(),
        sources,
        ..TurnData::default()
    }
}

fn install_source() -> SourceView {
    SourceView {
        n: 1,
        url: "/docs/install.html#linux".into(),
        title: "Install".into(),
        breadcrumb: "Install › Linux".into(),
        cited: false,
    }
}

#[wasm_bindgen_test]
async fn mounting_renders_a_labelled_panel_inside_the_shadow_root() {
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": unique_index_url("mount"), "mode": "inline", "title": "Ask the test docs" });
    let _w = mount(root, &cfg.to_string()).expect("mounts");
    assert!(until(|| q(&shadow, "[data-testid=docent-dialog]").is_some()).await, "panel rendered");
    let panel = q(&shadow, "[data-testid=docent-dialog]").unwrap();
    assert_eq!(panel.get_attribute("aria-labelledby").as_deref(), Some("docent-title"));
    assert_eq!(
        q(&shadow, "#docent-title").unwrap().text_content().as_deref(),
        Some("Ask the test docs")
    );
    // The question box has a label and the live region is polite.
    assert!(q(&shadow, "label[for=docent-input]").is_some());
    assert_eq!(
        q(&shadow, "[data-testid=docent-live]").unwrap().get_attribute("aria-live").as_deref(),
        Some("polite")
    );
    // Nothing leaked into the light DOM.
    assert!(document().query_selector("[data-testid=docent-dialog]").unwrap().is_none());
}

#[wasm_bindgen_test]
fn a_missing_index_is_a_clear_configuration_error() {
    let (_host, _shadow, root) = shadow_host();
    let err = mount(root, "{}").err().expect("refused");
    let msg: String = err.dyn_into::<js_sys::Error>().unwrap().message().into();
    assert!(msg.contains("data-index"), "{msg}");
}

#[wasm_bindgen_test]
fn an_unknown_config_key_is_reported() {
    let (_host, _shadow, root) = shadow_host();
    let err = mount(root, r#"{"index":"/i.bin","tittle":"typo"}"#).err().expect("refused");
    let msg: String = err.dyn_into::<js_sys::Error>().unwrap().message().into();
    assert!(msg.contains("tittle"), "{msg}");
}

#[wasm_bindgen_test]
async fn a_restored_answer_links_citations_and_escapes_model_html() {
    let index = unique_index_url("restore");
    let answer = "Install it with the script [1].\n\n<img src=x onerror=\"window.__pwned=1\"> <script>window.__pwned=1</script>\n\n\
                  [click](javascript:window.__pwned=1) and an unknown source [9].\n\n```sh\ncurl example | sh\n```";
    conversation::save(
        &index,
        &Saved { id: "t".into(), turns: vec![saved_turn(answer, vec![install_source()])] },
    );
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": index, "mode": "inline" });
    let _w = mount(root, &cfg.to_string()).expect("mounts");
    assert!(until(|| q(&shadow, "a.docent-cite").is_some()).await, "citation rendered");
    let cite = q(&shadow, "a.docent-cite").unwrap();
    assert_eq!(cite.get_attribute("href").as_deref(), Some("/docs/install.html#linux"));
    let title = cite.get_attribute("title").unwrap_or_default();
    assert!(title.contains("Install"), "hover title names the source: {title}");
    assert_eq!(q_all(&shadow, "a.docent-cite").len(), 1, "[9] matches no source and is not linked");
    let answer_el = q(&shadow, "[data-testid=docent-answer]").unwrap();
    assert!(
        answer_el.query_selector("img, script").unwrap().is_none(),
        "no live img/script: {}",
        answer_el.inner_html()
    );
    assert!(answer_el.text_content().unwrap().contains("<img src=x"), "raw HTML shown as text");
    for a in q_all(&shadow, "[data-testid=docent-answer] a") {
        let href = a.get_attribute("href").unwrap_or_default();
        assert!(!href.to_ascii_lowercase().contains("javascript"), "dangerous link {href}");
    }
    // The code block got a copy button; the source list shows the cited source.
    assert!(q(&shadow, ".docent-code [data-testid=docent-copy-code]").is_some());
    let sources = q_all(&shadow, "[data-testid=docent-source]");
    assert_eq!(sources.len(), 1);
    assert_eq!(sources[0].get_attribute("href").as_deref(), Some("/docs/install.html#linux"));
    sleep(50).await;
    assert!(!pwned(), "model output executed code");
}

#[wasm_bindgen_test]
async fn restored_answers_keep_their_cached_and_fallback_notes() {
    let index = unique_index_url("cached");
    let cached = TurnData {
        cached: true,
        cache_key: Some("ab".repeat(32)),
        ..saved_turn("Install it with the script [1].", vec![install_source()])
    };
    let fresh = TurnData {
        fallback: Some("v1".into()),
        ..saved_turn("Run the installer [1].", vec![install_source()])
    };
    conversation::save(&index, &Saved { id: "c".into(), turns: vec![cached, fresh] });
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": index, "mode": "inline" });
    let _w = mount(root, &cfg.to_string()).expect("mounts");
    assert!(until(|| q_all(&shadow, "[data-testid=docent-turn]").len() == 2).await);
    let turns = q_all(&shadow, "[data-testid=docent-turn]");
    let note = turns[0].query_selector("[data-testid=docent-cached]").unwrap();
    assert!(note.is_some_and(|n| n.text_content().unwrap_or_default().contains("Cached answer")));
    assert!(turns[1].query_selector("[data-testid=docent-cached]").unwrap().is_none());
    // The second answer came from all docs: the note is saved with it.
    assert!(turns[0].query_selector("[data-testid=docent-fallback]").unwrap().is_none());
    let fell_back = turns[1].query_selector("[data-testid=docent-fallback]").unwrap();
    assert!(fell_back.is_some_and(|n| n.text_content().unwrap_or_default().contains("v1 docs")));
}

#[wasm_bindgen_test]
async fn a_restored_answer_marks_the_sentence_not_found_in_its_source() {
    let index = unique_index_url("unsupported");
    let answer = "Install it with the script [1]. It needs 64 GB of memory [1].";
    let turn = TurnData {
        unsupported: vec![docent_core::cite::Mark { at: answer.len(), sources: vec![1] }],
        ..saved_turn(answer, vec![install_source()])
    };
    conversation::save(&index, &Saved { id: "u".into(), turns: vec![turn] });
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": index, "mode": "inline" });
    let _w = mount(root, &cfg.to_string()).expect("mounts");
    assert!(until(|| q(&shadow, "[data-testid=docent-unsupported]").is_some()).await);
    let marks = q_all(&shadow, "[data-testid=docent-answer] [data-testid=docent-unsupported]");
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0].text_content().as_deref(), Some("not found in [1]"));
    // After the second sentence, inside its paragraph.
    let p = marks[0].parent_element().unwrap();
    assert_eq!(p.tag_name(), "P");
    assert!(p.text_content().unwrap_or_default().ends_with("memory [1].not found in [1]"));
    let note = q(&shadow, "[data-testid=docent-uncertain]").expect("uncertain note");
    assert!(note.text_content().unwrap_or_default().contains("not found in the sources cited"));
}

#[wasm_bindgen_test]
async fn escape_closes_the_floating_dialog_and_tells_the_loader() {
    let (_host, shadow, root) = shadow_host();
    let closed = std::rc::Rc::new(std::cell::Cell::new(false));
    let c2 = closed.clone();
    let on_close = wasm_bindgen::closure::Closure::<dyn FnMut()>::new(move || c2.set(true));
    root.add_event_listener_with_callback("docent:close", on_close.as_ref().unchecked_ref())
        .unwrap();
    on_close.forget();
    let cfg = serde_json::json!({ "index": unique_index_url("esc") });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    sleep(20).await;
    assert!(q(&shadow, "[data-testid=docent-dialog]").is_none(), "closed until opened");
    w.open();
    assert!(until(|| q(&shadow, "[role=dialog][aria-modal=true]").is_some()).await);
    let dialog = q(&shadow, "[data-testid=docent-dialog]").unwrap();
    let init = web_sys::KeyboardEventInit::new();
    init.set_key("Escape");
    init.set_bubbles(true);
    let ev = web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
    dialog.dispatch_event(&ev).unwrap();
    assert!(until(|| q(&shadow, "[data-testid=docent-dialog]").is_none()).await, "Esc closes");
    assert!(until(|| closed.get()).await, "docent:close dispatched");
    assert!(!w.is_open());
}

/// A chunk as `docent index` stores it: breadcrumb title › section, in `namespace`.
fn section(namespace: &str, url: &str, anchor: &str, title: &str, text: &str) -> Chunk {
    Chunk {
        url: url.into(),
        anchor: anchor.into(),
        title: title.into(),
        breadcrumb: vec![title.into(), anchor.into()],
        namespace: namespace.into(),
        text: text.into(),
        tokens: (text.len() / 4) as u32,
        hash: 0,
    }
}

fn tiny_index() -> Vec<u8> {
    let chunk = |url: &str, anchor: &str, title: &str, section_title: &str, text: &str| Chunk {
        breadcrumb: vec![title.into(), section_title.into()],
        ..section("", url, anchor, title, text)
    };
    let chunks = vec![
        chunk("/docs/install.html", "linux", "Install", "Linux", "To install docent on Linux, download the release archive and run the install script. The script puts the binary in ~/.local/bin."),
        chunk("/docs/config.html", "proxy", "Configuration", "Proxy", "The proxy reads docent.toml. Set the listen address with the listen key and the upstream URL with upstream."),
        chunk("/docs/widget.html", "theme", "Widget", "Theming", "The widget follows the site's dark mode. Override colours with CSS custom properties such as --docent-accent."),
    ];
    let header = IndexHeader {
        provider: "none".into(),
        tokenizer: "cl100k_base".into(),
        ..IndexHeader::default()
    };
    write_index(&header, &chunks, None).expect("index")
}

fn blob_url(bytes: &[u8]) -> String {
    let arr = js_sys::Uint8Array::from(bytes);
    let parts = js_sys::Array::of1(&arr);
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).unwrap();
    web_sys::Url::create_object_url_with_blob(&blob).unwrap()
}

#[wasm_bindgen_test]
async fn with_no_proxy_a_question_gets_cited_excerpts() {
    let url = blob_url(&tiny_index());
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": url, "mode": "inline", "persist": false });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    w.ask("How do I install docent on Linux?");
    let done = until(|| {
        q(&shadow, "[data-testid=docent-excerpt-label]").is_some()
            || q(&shadow, "[data-testid=docent-error]").is_some()
    })
    .await;
    assert!(done, "an answer or an error arrived");
    if let Some(e) = q(&shadow, "[data-testid=docent-error]") {
        panic!("offline answer failed: {}", e.text_content().unwrap_or_default());
    }
    let answer = q(&shadow, "[data-testid=docent-answer]").unwrap();
    assert!(answer.text_content().unwrap().contains("install"), "{}", answer.inner_html());
    let cites = q_all(&shadow, "[data-testid=docent-answer] a.docent-cite");
    assert!(!cites.is_empty(), "excerpts carry citations: {}", answer.inner_html());
    assert!(cites
        .iter()
        .any(|a| a.get_attribute("href").as_deref() == Some("/docs/install.html#linux")));
}

/// An index with a section whose text has code spans and a table, as `docent index` stores them.
fn providers_index() -> Vec<u8> {
    let text = "Each provider has a kind. `api_key_env` names the environment variable that holds \
                the key; assets load from `<baseUrl>docent/`.\n\n\
                kind | for | required keys |\n\n\
                `openai` | api.openai.com | `api_key_env` |\n\n\
                `azure-openai` | Azure OpenAI | `endpoint`, `api_version` |";
    let chunks = vec![Chunk {
        url: "/docs/configuration.html".into(),
        anchor: "providers".into(),
        title: "Configuration".into(),
        breadcrumb: vec!["Configuration".into(), "Providers".into()],
        namespace: String::new(),
        text: text.into(),
        tokens: (text.len() / 4) as u32,
        hash: 0,
    }];
    let header = IndexHeader {
        provider: "none".into(),
        tokenizer: "cl100k_base".into(),
        ..IndexHeader::default()
    };
    write_index(&header, &chunks, None).expect("index")
}

#[wasm_bindgen_test]
async fn an_excerpt_answer_reads_like_a_snippet_with_one_label() {
    let url = blob_url(&providers_index());
    let (_host, shadow, root) = shadow_host();
    // A one-section index: no floor, so the answer is about layout, not abstention.
    let cfg = serde_json::json!({ "index": url, "mode": "inline", "persist": false, "floor": 0 });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    w.ask("Which keys does the azure-openai kind need, and what is api_key_env?");
    let done = until(|| {
        q(&shadow, "[data-testid=docent-excerpt-label]").is_some()
            || q(&shadow, "[data-testid=docent-error]").is_some()
    })
    .await;
    assert!(done && q(&shadow, "[data-testid=docent-error]").is_none(), "{}", shadow.inner_html());
    // One label, with the reason in it, and no other notice line.
    assert_eq!(q_all(&shadow, "[data-testid=docent-excerpt-label]").len(), 1);
    assert!(q_all(&shadow, "p.docent-notice").is_empty(), "{}", shadow.inner_html());
    let label = q(&shadow, "[data-testid=docent-excerpt-label]").unwrap().text_content().unwrap();
    assert!(label.contains("no AI answer") && label.contains("Offline mode"), "{label}");
    // The answer leads with the section's title, keeps code spans and the table.
    let answer = q(&shadow, "[data-testid=docent-answer]").unwrap();
    let html = answer.inner_html();
    let text = answer.text_content().unwrap();
    assert!(!text.contains("no AI answer") && !text.contains("excerpts"), "label repeated: {html}");
    assert!(html.contains("<p><strong>Configuration › Providers</strong> <a"), "{html}");
    assert!(html.contains("<code>api_key_env</code>"), "{html}");
    assert!(html.contains("<code>&lt;baseUrl&gt;docent/</code>"), "{html}");
    assert!(!text.contains('\\'), "no backslashes: {html}");
    assert!(html.contains("<th>required keys</th>"), "{html}");
    assert!(html.contains("<td><code>azure-openai</code></td><td>Azure OpenAI</td>"), "{html}");
}

#[wasm_bindgen_test]
async fn a_question_outside_the_docs_offers_the_closest_sections_without_a_model_call() {
    let url = blob_url(&tiny_index());
    let (_host, shadow, root) = shadow_host();
    // A proxy that does not exist: if the widget called it, the turn would show an error or a notice.
    let cfg = serde_json::json!({ "index": url, "mode": "inline", "persist": false, "proxy": "http://127.0.0.1:9", "rewrite": "off" });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    w.ask("zebra migration patterns in the serengeti");
    let done = until(|| {
        q(&shadow, "[data-testid=docent-not-covered]").is_some()
            || q(&shadow, "[data-testid=docent-error]").is_some()
            || q(&shadow, "[data-testid=docent-excerpt-label]").is_some()
    })
    .await;
    assert!(done);
    assert!(
        q(&shadow, "[data-testid=docent-not-covered]").is_some(),
        "abstained: {}",
        shadow.inner_html()
    );
    assert!(q(&shadow, "[data-testid=docent-error]").is_none());
}

/// A bubbling, cancelable Enter keydown, as the question box gets it (with Shift: a new line).
fn enter(shift: bool) -> web_sys::KeyboardEvent {
    let init = web_sys::KeyboardEventInit::new();
    init.set_key("Enter");
    init.set_shift_key(shift);
    init.set_bubbles(true);
    init.set_cancelable(true);
    web_sys::KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap()
}

#[wasm_bindgen_test]
async fn enter_sends_and_shift_enter_does_not() {
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": unique_index_url("enter"), "mode": "inline", "persist": false });
    let _w = mount(root, &cfg.to_string()).expect("mounts");
    assert!(until(|| q(&shadow, "[data-testid=docent-input]").is_some()).await);
    let input: web_sys::HtmlTextAreaElement =
        q(&shadow, "[data-testid=docent-input]").unwrap().dyn_into().unwrap();
    input.set_value("first line");
    input.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
    input.dispatch_event(&enter(true)).unwrap();
    sleep(50).await;
    assert!(q(&shadow, "[data-testid=docent-turn]").is_none(), "Shift+Enter does not send");
    input.dispatch_event(&enter(false)).unwrap();
    assert!(until(|| q(&shadow, "[data-testid=docent-turn]").is_some()).await, "Enter sends");
    assert_eq!(
        q(&shadow, "[data-testid=docent-question]").unwrap().text_content().as_deref(),
        Some("first line")
    );
    // The index URL does not exist: a clear error with a retry button, question kept.
    assert!(until(|| q(&shadow, "[data-testid=docent-error]").is_some()).await);
    assert!(q(&shadow, "[data-testid=docent-retry]").is_some());
    assert!(q(&shadow, "[data-testid=docent-error]")
        .unwrap()
        .text_content()
        .unwrap()
        .contains("index"));
}

#[wasm_bindgen_test]
async fn a_question_asked_in_the_dialog_survives_closing_and_reopening_it() {
    let url = blob_url(&versions_index());
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": url, "mode": "floating", "persist": false });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    w.open();
    assert!(until(|| q(&shadow, "[data-testid=docent-input]").is_some()).await);
    // Asked from the question box, so the turn is created inside the dialog's view.
    let input: web_sys::HtmlTextAreaElement =
        q(&shadow, "[data-testid=docent-input]").unwrap().dyn_into().unwrap();
    input.set_value("How do I install docent on Linux?");
    input.dispatch_event(&web_sys::Event::new("input").unwrap()).unwrap();
    input.dispatch_event(&enter(false)).unwrap();
    let answered = || q(&shadow, "[data-testid=docent-excerpt-label]").is_some();
    assert!(until(answered).await, "{}", shadow.inner_html());
    w.close();
    assert!(until(|| q(&shadow, "[data-testid=docent-dialog]").is_none()).await);
    w.open();
    assert!(until(answered).await, "the answer is still there: {}", shadow.inner_html());
    assert_eq!(
        q(&shadow, "[data-testid=docent-question]").unwrap().text_content().as_deref(),
        Some("How do I install docent on Linux?")
    );
}

/// Two docs versions: installing is in both, "zanzibar mode" only in v2.
fn versions_index() -> Vec<u8> {
    let chunk = section;
    let chunks = vec![
        chunk("v1", "/v1/install.html", "linux", "Install", "To install docent 1 on Linux, use the Debian package: sudo apt install docent1. It puts the binary in /usr/bin."),
        chunk("v2", "/v2/install.html", "linux", "Install", "To install docent on Linux, download the release archive and run the install script. The script puts the binary in ~/.local/bin."),
        chunk("v2", "/v2/modes.html", "zanzibar", "Modes", "Zanzibar mode frobnicates quietly at night and writes its log to zanzibar.log."),
    ];
    let header = IndexHeader {
        provider: "none".into(),
        tokenizer: "cl100k_base".into(),
        namespaces: vec!["v1".into(), "v2".into()],
        ..IndexHeader::default()
    };
    write_index(&header, &chunks, None).expect("index")
}

#[wasm_bindgen_test]
async fn the_dialog_shows_the_page_scope_and_the_reader_can_switch_it() {
    let url = blob_url(&versions_index());
    let (_host, shadow, root) = shadow_host();
    let cfg =
        serde_json::json!({ "index": url, "mode": "inline", "persist": false, "namespace": "v1" });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    // The configured namespace wins over the page's own (a v2 page, with v2 in its path).
    let back = web_sys::window().unwrap().location().href().unwrap();
    navigate("/v2/install.html");
    let answers = |n: usize| {
        let shadow = shadow.clone();
        move || {
            q_all(&shadow, "[data-testid=docent-excerpt-label]").len()
                + q_all(&shadow, "[data-testid=docent-error]").len()
                >= n
        }
    };
    w.ask("How do I install docent on Linux?");
    assert!(until(answers(1)).await, "{}", shadow.inner_html());
    let scope = q(&shadow, "[data-testid=docent-scope]").expect("the scope line is shown");
    assert!(!scope.has_attribute("hidden"), "{}", shadow.inner_html());
    assert!(
        scope.text_content().unwrap().contains("Answering from v1 docs"),
        "{}",
        scope.inner_html()
    );
    let cites = q_all(&shadow, "[data-testid=docent-answer] a.docent-cite");
    assert!(!cites.is_empty(), "{}", shadow.inner_html());
    for a in &cites {
        assert!(
            a.get_attribute("href").unwrap().starts_with("/v1/"),
            "only v1: {}",
            a.outer_html()
        );
    }
    assert!(q(&shadow, "[data-testid=docent-fallback]").is_none(), "no fallback note");
    navigate(&back);

    // The reader switches to v2.
    let pick = q(&shadow, "[data-testid=docent-scope] select").unwrap();
    let value = js_sys::Reflect::get(&pick, &"value".into()).unwrap();
    assert_eq!(value.as_string().as_deref(), Some("v1"), "the picker shows the scope");
    js_sys::Reflect::set(&pick, &"value".into(), &"v2".into()).unwrap();
    pick.dispatch_event(&web_sys::Event::new("change").unwrap()).unwrap();
    assert!(
        until(|| q(&shadow, "[data-testid=docent-scope]")
            .and_then(|s| s.text_content())
            .is_some_and(|t| t.contains("Answering from v2 docs")))
        .await
    );
    // The next answer comes from v2 only.
    w.ask("How do I install docent on Linux?");
    assert!(until(answers(2)).await, "{}", shadow.inner_html());
    let turns = q_all(&shadow, "[data-testid=docent-turn]");
    let cites = turns[1].query_selector_all("[data-testid=docent-answer] a.docent-cite").unwrap();
    assert!(cites.length() > 0, "{}", turns[1].inner_html());
    for i in 0..cites.length() {
        let a: web_sys::Element = cites.get(i).unwrap().dyn_into().unwrap();
        assert!(
            a.get_attribute("href").unwrap().starts_with("/v2/"),
            "only v2: {}",
            a.outer_html()
        );
    }
    // "all docs" is the first option.
    let options = pick.query_selector_all("option").unwrap();
    let first: web_sys::Element = options.get(0).unwrap().dyn_into().unwrap();
    assert_eq!(first.text_content().as_deref(), Some("all docs"));
    assert_eq!(options.length(), 3, "all docs, v1, v2");
}

/// Client-side navigation, as VitePress and Docusaurus do it (the widget is not reloaded).
fn navigate(path: &str) {
    js_sys::Function::new_with_args("p", "history.pushState(null, '', p)")
        .call1(&JsValue::NULL, &path.into())
        .unwrap();
}

#[wasm_bindgen_test]
async fn the_scope_follows_client_side_navigation_and_a_pick_holds_on_its_page() {
    let url = blob_url(&versions_index());
    let back = web_sys::window().unwrap().location().href().unwrap();
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": url, "mode": "inline", "persist": false });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    let scope_says = |text: &'static str| {
        let shadow = shadow.clone();
        move || {
            q(&shadow, "[data-testid=docent-scope]")
                .and_then(|s| s.text_content())
                .is_some_and(|t| t.contains(text))
        }
    };
    let turns = |n: usize| {
        let shadow = shadow.clone();
        move || q_all(&shadow, "[data-testid=docent-excerpt-label]").len() >= n
    };
    navigate("/v1/install.html");
    w.ask("How do I install docent on Linux?");
    let v1 = until(turns(1)).await && until(scope_says("Answering from v1 docs")).await;
    // The reader reads a v2 page now, and asks again.
    navigate("/v2/install.html");
    w.ask("How do I install docent on Linux?");
    let v2 = until(turns(2)).await && until(scope_says("Answering from v2 docs")).await;
    // The reader goes back to a v1 page and, before asking, picks all docs: the next question
    // keeps the pick (made on this page) instead of following the page.
    navigate("/v1/install.html");
    let pick = q(&shadow, "[data-testid=docent-scope-pick]").unwrap();
    js_sys::Reflect::set(&pick, &"value".into(), &"".into()).unwrap();
    pick.dispatch_event(&web_sys::Event::new("change").unwrap()).unwrap();
    w.ask("How do I install docent on Linux?");
    let kept = until(turns(3)).await && until(scope_says("Answering from all docs")).await;
    navigate(&back);
    assert!(v1, "v1 page: {}", shadow.inner_html());
    assert!(v2, "v2 page: {}", shadow.inner_html());
    assert!(kept, "the pick holds: {}", shadow.inner_html());
}

#[wasm_bindgen_test]
async fn a_configured_namespace_the_index_lacks_is_ignored() {
    let url = blob_url(&versions_index());
    let (_host, shadow, root) = shadow_host();
    let cfg =
        serde_json::json!({ "index": url, "mode": "inline", "persist": false, "namespace": "v9" });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    w.ask("How do I install docent on Linux?");
    let answered = until(|| q(&shadow, "[data-testid=docent-excerpt-label]").is_some()).await;
    assert!(answered, "{}", shadow.inner_html());
    let scope = q(&shadow, "[data-testid=docent-scope]").unwrap().text_content().unwrap();
    assert!(scope.contains("Answering from all docs"), "{scope}");
    assert!(q(&shadow, "[data-testid=docent-fallback]").is_none(), "no fall-back from v9");
}

#[wasm_bindgen_test]
async fn an_index_without_namespaces_shows_no_scope_line() {
    let url = blob_url(
        &write_index(
            &IndexHeader::default(),
            &[section(
                "",
                "/install.html",
                "linux",
                "Install",
                "To install docent on Linux, download the release archive.",
            )],
            None,
        )
        .expect("index"),
    );
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": url, "mode": "inline", "persist": false });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    w.ask("How do I install docent on Linux?");
    let answered = until(|| {
        q(&shadow, "[data-testid=docent-excerpt-label]").is_some()
            || q(&shadow, "[data-testid=docent-error]").is_some()
    })
    .await;
    assert!(answered, "{}", shadow.inner_html());
    // An index without namespaces: the scope line is hidden.
    let scope = q(&shadow, "[data-testid=docent-scope]");
    assert!(scope.is_none_or(|s| s.has_attribute("hidden")), "{}", shadow.inner_html());
}

#[wasm_bindgen_test]
async fn a_question_the_scope_cannot_answer_is_answered_from_all_docs_and_says_so() {
    let url = blob_url(&versions_index());
    let (_host, shadow, root) = shadow_host();
    let cfg =
        serde_json::json!({ "index": url, "mode": "inline", "persist": false, "namespace": "v1" });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    // Only v2 has it: the answer comes from all docs, and says so.
    w.ask("What does zanzibar mode do?");
    let done = until(|| {
        q(&shadow, "[data-testid=docent-excerpt-label]").is_some()
            || q(&shadow, "[data-testid=docent-not-covered]").is_some()
            || q(&shadow, "[data-testid=docent-error]").is_some()
    })
    .await;
    assert!(done, "{}", shadow.inner_html());
    let note = q(&shadow, "[data-testid=docent-turn] [data-testid=docent-fallback]")
        .expect("the answer says it is from all docs");
    assert_eq!(
        note.text_content().as_deref(),
        Some("Nothing in the v1 docs answers this: this answer is from all docs.")
    );
    let scope = q(&shadow, "[data-testid=docent-scope]").unwrap().text_content().unwrap();
    assert!(scope.contains("Answering from v1 docs"), "the scope stays v1: {scope}");
    let answer = q(&shadow, "[data-testid=docent-answer]").unwrap();
    assert!(answer.inner_html().contains("/v2/modes.html#zanzibar"), "{}", answer.inner_html());
}

// ---------------------------------------------------------------- hostile docs pages

/// Page URLs a hostile `slug:` (or file path) could have put in an index built before docent
/// refused them: schemes and malformed-scheme shapes a browser reads as another host.
const OFF_SITE_URLS: [&str; 10] = [
    "https:/attacker.example/p12-phish/index.html",
    "http:/attacker.example/p13",
    "https://attacker.example/p14",
    "//attacker.example/p15",
    "/\\attacker.example/p16",
    "ht\ttps:/attacker.example/p17",
    "https%3A%2F%2Fattacker.example/p18",
    "&#104;ttps://attacker.example/p19",
    "javascript:window.__pwned=1",
    "https://docs.example.com@attacker.example/p21",
];

/// Every link in the widget goes to the site: a relative URL, a fragment, or the docs origin.
fn assert_links_stay_on_the_site(shadow: &ShadowRoot) {
    for a in q_all(shadow, "a[href]") {
        let href = a.get_attribute("href").unwrap_or_default();
        let ok = href == "#"
            || href.starts_with("/docs/")
            || href.starts_with("https://docs.example.com/docs/");
        assert!(
            ok && !href.contains("attacker"),
            "off-site link {href:?}: {}",
            shadow.inner_html()
        );
    }
}

/// Each paragraph and list item of the answer has its bidi controls in pairs, so none reorders
/// a citation or the text after it.
fn assert_answer_bidi_balanced(shadow: &ShadowRoot) {
    for el in q_all(shadow, "[data-testid=docent-answer] p, [data-testid=docent-answer] li") {
        let text = el.text_content().unwrap_or_default();
        assert_eq!(
            docent_core::source::safety::strip_unpaired_bidi(&text),
            text,
            "unpaired bidi control in {:?}",
            el.inner_html()
        );
    }
}

#[wasm_bindgen_test]
async fn a_restored_conversation_from_a_hostile_index_links_only_to_the_site() {
    let index = unique_index_url("hostile-restore");
    let mut sources = vec![
        SourceView {
            n: 1,
            url: "/docs/ok.html#a".into(),
            title: "Falcon token rotator \u{202e}txt.exe".into(),
            breadcrumb: "Guide › Falcon \u{2067}rotator".into(),
            cited: false,
        },
        SourceView {
            n: 2,
            url: "https://docs.example.com/docs/abs.html".into(),
            title: "Absolute".into(),
            breadcrumb: String::new(),
            cited: false,
        },
    ];
    for (i, url) in OFF_SITE_URLS.iter().enumerate() {
        sources.push(SourceView {
            n: i + 3,
            url: (*url).into(),
            title: format!("Phish {i}"),
            breadcrumb: String::new(),
            cited: false,
        });
    }
    let cites: String = (1..=sources.len()).map(|n| format!("[{n}]")).collect();
    let answer =
        format!("Rotate tokens \u{202e}with the tool {cites}.\n\n- then \u{2067}restart [1]");
    let looked_at = sources
        .iter()
        .map(|s| conversation::LookedAt {
            url: s.url.clone(),
            title: s.title.clone(),
            breadcrumb: s.breadcrumb.clone(),
            score: 0.5,
            cosine: None,
            bm25: Some(1.0),
            retrievers: "lexical".into(),
        })
        .collect();
    let turn = TurnData { looked_at, ..saved_turn(&answer, sources) };
    conversation::save(&index, &Saved { id: "h".into(), turns: vec![turn] });
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": index, "mode": "inline", "docs_origin": "https://docs.example.com" });
    let _w = mount(root, &cfg.to_string()).expect("mounts");
    assert!(until(|| q(&shadow, "[data-testid=docent-looked-at]").is_some()).await, "restored");
    assert_links_stay_on_the_site(&shadow);
    // Only the two sources on the site are cited as links; the others' numbers are dropped.
    let cited: Vec<String> = q_all(&shadow, "a.docent-cite")
        .iter()
        .map(|a| a.get_attribute("href").unwrap_or_default())
        .collect();
    assert_eq!(
        cited,
        ["/docs/ok.html#a", "https://docs.example.com/docs/abs.html", "/docs/ok.html#a"]
    );
    let sources = q_all(&shadow, "[data-testid=docent-source]");
    assert_eq!(sources.len(), 2 + OFF_SITE_URLS.len());
    assert!(sources.iter().skip(2).all(|a| a.get_attribute("href").as_deref() == Some("#")));
    let looked = q_all(&shadow, "[data-testid=docent-looked-at] li a");
    assert_eq!(looked.len(), 2 + OFF_SITE_URLS.len());
    assert!(looked.iter().skip(2).all(|a| a.get_attribute("href").as_deref() == Some("#")));
    // Index text is isolated wherever it is shown, and no bidi control reaches an attribute.
    let title = sources[0].query_selector("bdi").unwrap().expect("title in <bdi>");
    assert_eq!(title.text_content().unwrap(), "Falcon token rotator \u{202e}txt.exe");
    assert!(q(&shadow, ".docent-crumb bdi").is_some(), "{}", shadow.inner_html());
    assert!(looked[0].query_selector("bdi").unwrap().is_some());
    for a in q_all(&shadow, "a[title]") {
        let t = a.get_attribute("title").unwrap();
        assert!(!t.chars().any(docent_core::source::safety::is_bidi_control), "{t:?}");
    }
    assert_answer_bidi_balanced(&shadow);
    sleep(50).await;
    assert!(!pwned());
}

/// An index as an old docent wrote it from hostile pages: off-site URLs from `slug:`, bidi
/// overrides in front matter titles and built-HTML headings.
fn hostile_index() -> Vec<u8> {
    let chunk = |url: &str, anchor: &str, title: &str, heading: &str, text: &str| Chunk {
        breadcrumb: vec![title.into(), heading.into()],
        ..section("", url, anchor, title, text)
    };
    let mut chunks = vec![
        chunk("/docs/falcon.html", "usage", "Falcon token rotator \u{202e}txt.exe", "Usage \u{202d}abc", "The falcon rotator rotates grommet tokens \u{202e}every hour. Configure the grommet interval in falcon.toml."),
        chunk("/docs/topaz.html", "topaz", "Topaz sitemap builder \u{202e}lmx.pam", "Topaz \u{2067}builder", "The topaz builder writes grommet sitemaps \u{2066}for every page. Paired \u{2067}שלום\u{2069} text stays."),
    ];
    for (i, url) in OFF_SITE_URLS.iter().enumerate() {
        chunks.push(chunk(
            url,
            "x",
            &format!("Grommet phish {i}"),
            "Grommet",
            "Grommet tokens rotate here too, every grommet hour.",
        ));
    }
    let header = IndexHeader {
        provider: "none".into(),
        tokenizer: "cl100k_base".into(),
        ..IndexHeader::default()
    };
    write_index(&header, &chunks, None).expect("index")
}

#[wasm_bindgen_test]
async fn excerpts_and_closest_sections_from_a_hostile_index_stay_on_the_site_and_in_order() {
    let url = blob_url(&hostile_index());
    let (_host, shadow, root) = shadow_host();
    let cfg = serde_json::json!({ "index": url, "mode": "inline", "persist": false, "floor": 0, "docs_origin": "https://docs.example.com" });
    let w = mount(root, &cfg.to_string()).expect("mounts");
    w.ask("How do grommet tokens rotate every hour?");
    let done = until(|| {
        q(&shadow, "[data-testid=docent-excerpt-label]").is_some()
            || q(&shadow, "[data-testid=docent-error]").is_some()
    })
    .await;
    assert!(done && q(&shadow, "[data-testid=docent-error]").is_none(), "{}", shadow.inner_html());
    assert!(until(|| !q_all(&shadow, "[data-testid=docent-source]").is_empty()).await);
    assert_links_stay_on_the_site(&shadow);
    assert_answer_bidi_balanced(&shadow);
    for a in q_all(&shadow, "[data-testid=docent-source]") {
        assert!(a.query_selector("bdi").unwrap().is_some(), "{}", a.outer_html());
    }
    // The closest sections (a question the docs do not cover, through a proxy that is not there).
    let (_host2, shadow2, root2) = shadow_host();
    let cfg = serde_json::json!({ "index": url, "mode": "inline", "persist": false, "proxy": "http://127.0.0.1:9", "rewrite": "off", "floor": 0.99, "docs_origin": "https://docs.example.com" });
    let w2 = mount(root2, &cfg.to_string()).expect("mounts");
    w2.ask("grommet zebra migration");
    assert!(
        until(|| q(&shadow2, "[data-testid=docent-not-covered]").is_some()).await,
        "{}",
        shadow2.inner_html()
    );
    assert!(!q_all(&shadow2, "[data-testid=docent-source]").is_empty(), "{}", shadow2.inner_html());
    assert_links_stay_on_the_site(&shadow2);
    sleep(50).await;
    assert!(!pwned());
}

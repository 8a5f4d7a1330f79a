//! The Leptos components: the chat dialog (or inline panel), its turns, answers and sources.
//!
//! All state lives in signals owned by [`Chat`]; the pipeline in [`crate::engine`] writes into the
//! turn signals. Effects are used only to sync with the outside world (focus, sessionStorage,
//! scrolling, DOM events for the host page).

use std::rc::Rc;

use docent_core::render::{render_markdown, RenderOptions};
use leptos::html;
use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{HtmlElement, KeyboardEvent};

use crate::config::Mode;
use crate::conversation::{self, AnswerKind, Saved, Status, TurnData};
use crate::engine::{self, Engine, History};
use crate::html as strings;
use crate::json::{self, Obj};
use crate::scope::{fallback_note, ScopeBar};

/// Cap on rendered answer HTML (a small Markdown table can expand a lot).
pub(crate) const MAX_RENDERED_BYTES: usize = 256 * 1024;

/// One turn in the list: a stable id (for keyed rendering) and its data signal.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Stable key.
    pub id: u64,
    /// The turn's data.
    pub data: RwSignal<TurnData>,
}

/// Shared handles of one mounted widget. All fields are `Copy` arena handles.
#[derive(Clone, Copy)]
pub struct Ctx {
    /// The pipeline (not `Send`, so kept in local storage).
    pub engine: StoredValue<Rc<Engine>, LocalStorage>,
    /// The element the widget is mounted in (inside the loader's shadow root).
    pub root: StoredValue<HtmlElement, LocalStorage>,
    /// The turns, oldest first.
    pub turns: RwSignal<Vec<Entry>>,
    /// Dialog open (always true inline).
    pub open: RwSignal<bool>,
    /// Text for the polite live region.
    pub live: RwSignal<String>,
    /// Conversation id (feedback correlation).
    pub conversation_id: RwSignal<String>,
    /// Next turn id.
    pub next_id: StoredValue<u64>,
    /// The owner of the turns' signals: the widget's own, so closing the dialog (which disposes
    /// what its views own) leaves the conversation intact.
    owner: StoredValue<Owner, LocalStorage>,
}

impl Ctx {
    /// Create the handles for a widget, restoring a saved conversation.
    pub fn new(engine: Rc<Engine>, root: HtmlElement) -> Ctx {
        let inline = engine.cfg.mode == Mode::Inline;
        let saved = if engine.cfg.persist { conversation::load(&engine.cfg.index) } else { None };
        let saved =
            saved.unwrap_or_else(|| Saved { id: conversation::new_id(), turns: Vec::new() });
        let turns: Vec<Entry> = saved
            .turns
            .into_iter()
            .enumerate()
            .map(|(i, t)| Entry { id: i as u64, data: RwSignal::new(t) })
            .collect();
        let next = turns.len() as u64;
        Ctx {
            engine: StoredValue::new_local(engine),
            root: StoredValue::new_local(root),
            turns: RwSignal::new(turns),
            open: RwSignal::new(inline),
            live: RwSignal::new(String::new()),
            conversation_id: RwSignal::new(saved.id),
            next_id: StoredValue::new(next),
            owner: StoredValue::new_local(Owner::new()),
        }
    }

    fn cfg<T>(&self, f: impl FnOnce(&crate::config::WidgetConfig) -> T) -> T {
        self.engine.with_value(|e| f(&e.cfg))
    }

    /// True while a question is being answered.
    pub fn busy(&self) -> bool {
        self.turns.with(|v| v.iter().any(|e| e.data.with(|t| t.status.busy())))
    }

    /// Ask a question (ignored while another answer is running or when empty).
    pub fn ask(&self, question: &str) {
        let q = question.trim();
        if q.is_empty() || self.busy() {
            return;
        }
        let history = self.turns.with_untracked(|v| {
            History::from_turns(&v.iter().map(|e| e.data.get_untracked()).collect::<Vec<_>>())
        });
        let id = self.next_id.get_value();
        self.next_id.set_value(id + 1);
        // Not owned by the view that asked (the dialog's form): created under the widget's owner.
        let data = self.owner.with_value(|o| {
            o.with(|| RwSignal::new(TurnData { question: q.to_string(), ..TurnData::default() }))
        });
        self.turns.update(|v| v.push(Entry { id, data }));
        self.run(data, history);
    }

    /// Run the pipeline for an existing turn (ask or retry).
    fn run(&self, data: RwSignal<TurnData>, history: History) {
        crate::engine::mark("docent:ask");
        let engine = self.engine.get_value();
        let live = self.live;
        let ctx = *self;
        leptos::task::spawn_local(async move {
            engine.ask(data, history, live).await;
            ctx.answered(data).await;
        });
    }

    /// After a turn settles: a `docent:answer` DOM event (for sites' own analytics), and the
    /// same to the proxy's `/v1/events` when it records analytics (`[analytics]`). Not for
    /// failed or stopped turns.
    async fn answered(&self, data: RwSignal<TurnData>) {
        let t = data.get_untracked();
        if t.status != Status::Done {
            return;
        }
        let engine = self.engine.get_value();
        let sections = json::array(
            t.sources.iter().map(|s| Obj::new().str("url", &s.url).str("title", &s.title).build()),
        );
        let mode = if t.kind == AnswerKind::Model { "generated" } else { "extractive" };
        let event = Obj::new()
            .str("type", "question")
            .str("question", &t.question.chars().take(1000).collect::<String>())
            .str("outcome", t.outcome())
            .num("confidence", f64::from(t.confidence))
            .str("mode", mode)
            .val("sections", sections)
            .opt_str("index", engine.index_checksum().as_deref())
            .build();
        self.dispatch("docent:answer", &event);
        if engine.cfg.proxy.is_some() && engine.offers().await.analytics {
            if let Some(url) = engine.cfg.endpoint("/v1/events") {
                if let Err(e) = crate::net::post_json(&url, &event, None).await {
                    web_sys::console::warn_1(
                        &format!("docent: analytics event not sent: {e}").into(),
                    );
                }
            }
        }
    }

    /// Ask turn `id` again, with the turns before it as history.
    pub fn retry(&self, id: u64) {
        if self.busy() {
            return;
        }
        let (data, history) = self.turns.with_untracked(|v| {
            let pos = v.iter().position(|e| e.id == id);
            let data = pos.map(|p| v[p].data);
            let before: Vec<TurnData> =
                v.iter().take(pos.unwrap_or(0)).map(|e| e.data.get_untracked()).collect();
            (data, History::from_turns(&before))
        });
        if let Some(d) = data {
            self.run(d, history);
        }
    }

    /// Stop the running answer.
    pub fn stop(&self) {
        self.engine.with_value(|e| e.abort());
    }

    /// Forget the conversation.
    pub fn new_conversation(&self) {
        self.stop();
        self.turns.set(Vec::new());
        self.conversation_id.set(conversation::new_id());
        self.cfg(|c| conversation::clear(&c.index));
        self.live.set("New conversation.".into());
    }

    /// Dispatch a DOM CustomEvent from the widget's root (bubbles out of the shadow root).
    pub fn dispatch(&self, name: &str, detail: &JsValue) {
        let init = web_sys::CustomEventInit::new();
        init.set_bubbles(true);
        init.set_composed(true);
        init.set_detail(detail);
        if let Ok(ev) = web_sys::CustomEvent::new_with_event_init_dict(name, &init) {
            self.root.with_value(|r| {
                let _ = r.dispatch_event(&ev);
            });
        }
    }

    /// Record thumbs up/down: POST /v1/feedback (if enabled) and a `docent:feedback` DOM event.
    pub fn feedback(&self, data: RwSignal<TurnData>, up: bool) {
        data.update(|t| t.feedback = Some(up));
        let t = data.get_untracked();
        let page = web_sys::window().and_then(|w| w.location().href().ok()).unwrap_or_default();
        let urls: Vec<&str> = t.sources.iter().map(|s| s.url.as_str()).collect();
        let event = |question: &str, answer: &str, page: &str| {
            Obj::new()
                .str("rating", if up { "up" } else { "down" })
                .str("question", question)
                .str("answer", answer)
                .str("kind", t.kind.as_str())
                .val("sources", json::strings(&urls))
                .str("conversation_id", &self.conversation_id.get_untracked())
                .str("page", page)
                .opt_str("cache_key", if up { None } else { t.cache_key.as_deref() })
                .build()
        };
        self.dispatch("docent:feedback", &event(&t.question, &t.answer, &page));
        let url = self.cfg(|c| if c.feedback { c.endpoint("/v1/feedback") } else { None });
        if let Some(url) = url {
            // The proxy caps field lengths (question 4000, answer 20000, page 500 characters).
            let cap = |s: &str, n: usize| s.chars().take(n).collect::<String>();
            let body = event(&cap(&t.question, 4000), &cap(&t.answer, 20000), &cap(&page, 500));
            leptos::task::spawn_local(async move {
                if let Err(e) = crate::net::post_json(&url, &body, None).await {
                    web_sys::console::warn_1(&format!("docent: feedback not sent: {e}").into());
                }
            });
        }
    }

    fn save(&self) {
        if !self.cfg(|c| c.persist) {
            return;
        }
        // Streaming writes every few milliseconds; save once the answer settles (and copy the
        // turns only then: a copy per streamed piece made a long answer cost the square of its
        // length). Every turn is read, so each one's change runs this again.
        let busy =
            self.turns.with(|v| v.iter().filter(|e| e.data.with(|t| t.status.busy())).count());
        if busy > 0 {
            return;
        }
        let turns: Vec<TurnData> = self.turns.with(|v| v.iter().map(|e| e.data.get()).collect());
        let saved = Saved { id: self.conversation_id.get(), turns };
        self.cfg(|c| conversation::save(&c.index, &saved));
    }
}

/// The rendered answer: safe HTML plus which sources it cites.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RenderedAnswer {
    /// Safe HTML (from `docent_core::render`), with copy buttons on code blocks.
    pub html: String,
    /// Source numbers cited in the text.
    pub cited: Vec<usize>,
    /// The output hit the size cap.
    pub truncated: bool,
}

/// Render a turn's answer Markdown with its sources (safe by construction in docent-core).
pub fn render_answer(t: &TurnData, docs_origin: Option<String>) -> RenderedAnswer {
    if t.answer.is_empty() {
        return RenderedAnswer::default();
    }
    let opts = RenderOptions {
        sources: engine::core_sources(&t.sources),
        docs_origin,
        max_output_bytes: MAX_RENDERED_BYTES,
        marks: t.unsupported.clone(),
        ascii_host: Some(browser_host),
    };
    let r = render_markdown(&t.answer, &opts);
    RenderedAnswer { html: add_code_copy_buttons(&r.html), cited: r.cited, truncated: r.truncated }
}

/// A host as this browser reads it (`new URL(…).host`: IDNA, so Punycode for names outside
/// ASCII, zero-width characters gone), shown after a link in place of a look-alike name; None
/// when the browser reads no host in it (the link then leads nowhere).
fn browser_host(host: &str) -> Option<String> {
    // With a base: the widget calls that constructor already (one browser import fewer).
    web_sys::Url::new_with_base(&format!("http://{host}/"), "http://a/").ok().map(|u| u.host())
}

/// Insert a copy button into every code block wrapper the renderer produced, and make code
/// blocks and tables (which scroll sideways when wide) reachable by keyboard. The wrapper markup
/// can only come from the renderer: model-written HTML is escaped to text before it gets here.
pub fn add_code_copy_buttons(html: &str) -> String {
    html.replace(
        "<div class=\"docent-code\"><pre>",
        "<div class=\"docent-code\"><button type=\"button\" class=\"docent-copy-code\" data-testid=\"docent-copy-code\" aria-label=\"Copy code\">Copy</button><pre tabindex=\"0\">",
    )
    .replace("<div class=\"docent-table\">", "<div class=\"docent-table\" tabindex=\"0\">")
}

/// A copy button after its click: it says "Copied", and that is its name too (its label said
/// what it copies, which no longer contains the visible text).
fn copied(button: &web_sys::Element) {
    button.set_text_content(Some("Copied"));
    let _ = button.remove_attribute("aria-label");
}

fn clipboard_write(text: &str) {
    if let Some(w) = web_sys::window() {
        let _ = w.navigator().clipboard().write_text(text);
    }
}

fn page_origin() -> Option<String> {
    web_sys::window().and_then(|w| w.location().origin().ok())
}

/// Focusable elements inside `container`, in tab order (document order; no positive tabindex used).
fn focusables(container: &web_sys::Element) -> Vec<HtmlElement> {
    let Ok(list) = container.query_selector_all(
        "button:not([disabled]), [href], textarea:not([disabled]), input:not([disabled]), select:not([disabled]), summary, [tabindex]:not([tabindex='-1'])",
    ) else {
        return Vec::new();
    };
    (0..list.length())
        .filter_map(|i| list.item(i))
        .filter_map(|n| n.dyn_into::<HtmlElement>().ok())
        .filter(|e| e.offset_parent().is_some() || e.get_client_rects().length() > 0)
        // A closed <details> keeps its content laid out but out of the tab order.
        .filter(|e| {
            e.tag_name() == "SUMMARY" || e.closest("details:not([open])").ok().flatten().is_none()
        })
        .collect()
}

/// The focused element inside our shadow root (document.activeElement is the shadow host).
fn active_in(root: &HtmlElement) -> Option<web_sys::Element> {
    let node = root.get_root_node();
    if let Some(sr) = node.dyn_ref::<web_sys::ShadowRoot>() {
        sr.active_element()
    } else {
        web_sys::window()?.document()?.active_element()
    }
}

/// The whole widget: the dialog (floating) or panel (inline).
#[component]
pub fn Chat(
    /// Handles shared by every part of this widget instance.
    ctx: Ctx,
) -> impl IntoView {
    let inline = ctx.cfg(|c| c.mode == Mode::Inline);
    let title = ctx.cfg(|c| c.title.clone());
    let left = ctx.cfg(|c| c.position == "bottom-left");
    let textarea: NodeRef<html::Textarea> = NodeRef::new();
    let dialog: NodeRef<html::Div> = NodeRef::new();
    let log: NodeRef<html::Div> = NodeRef::new();
    let draft = RwSignal::new(String::new());
    let busy = Memo::new(move |_| ctx.busy());

    // Outside world: focus the question box whenever the dialog opens (not inline: no focus stealing).
    Effect::new(move |_| {
        if let Some(t) = textarea.get() {
            if !inline && ctx.open.get_untracked() {
                let _ = t.focus();
            }
        }
    });
    // Outside world: tell the loader / host page when the dialog opens or closes.
    // It also brings the docs scope up to date with the page (client-side navigation).
    Effect::new(move |prev: Option<bool>| {
        let open = ctx.open.get();
        if open {
            ctx.engine.with_value(|e| e.follow_page());
        }
        if !inline && prev.is_some_and(|p| p != open) {
            ctx.dispatch(
                if open { "docent:open" } else { "docent:close" },
                &json::Obj::new().build(),
            );
        }
        open
    });
    // Outside world: persist the conversation in sessionStorage.
    Effect::new(move |_| ctx.save());
    // Outside world: keep the newest text in view while streaming.
    Effect::new(move |_| {
        ctx.turns.with(|v| v.last().map(|e| e.data.track()));
        if let Some(l) = log.get() {
            let near_bottom = l.scroll_height() - l.scroll_top() - l.client_height() < 120;
            if near_bottom || busy.get_untracked() {
                l.set_scroll_top(l.scroll_height());
            }
        }
    });
    on_cleanup(move || ctx.stop());

    let send = move || {
        let q = draft.get_untracked();
        if q.trim().is_empty() || busy.get_untracked() {
            return;
        }
        ctx.ask(&q);
        draft.set(String::new());
        if let Some(t) = textarea.get_untracked() {
            t.set_value("");
        }
    };
    let close = move || {
        if !inline {
            ctx.open.set(false);
        }
    };
    let on_keydown = move |ev: KeyboardEvent| {
        if ev.key() == "Escape" && !inline {
            ev.prevent_default();
            ev.stop_propagation();
            close();
            return;
        }
        if ev.key() == "Tab" && !inline {
            let Some(d) = dialog.get_untracked() else { return };
            let items = focusables(&d);
            let (Some(first), Some(last)) = (items.first(), items.last()) else { return };
            let active = ctx.root.with_value(active_in);
            let at = |e: &HtmlElement| {
                active.as_ref().map(|a| a == e.unchecked_ref::<web_sys::Element>()).unwrap_or(false)
            };
            let inside = active.as_ref().map(|a| d.contains(Some(a.as_ref()))).unwrap_or(false);
            if ev.shift_key() && (at(first) || !inside) {
                ev.prevent_default();
                let _ = last.focus();
            } else if !ev.shift_key() && (at(last) || !inside) {
                ev.prevent_default();
                let _ = first.focus();
            }
        }
    };
    let on_textarea_key = move |ev: KeyboardEvent| {
        if ev.key() == "Enter" && !ev.shift_key() && !ev.is_composing() {
            ev.prevent_default();
            send();
        }
    };
    let placeholder = ctx.cfg(|c| c.placeholder.clone());
    let starters = ctx.cfg(|c| c.starters.clone());
    let offline = ctx.cfg(|c| c.proxy.is_none());
    let empty = Memo::new(move |_| {
        if ctx.turns.with(|v| v.is_empty()) {
            strings::empty_state(offline, &starters)
        } else {
            String::new()
        }
    });
    // Starter questions are buttons in the empty state's HTML (crate::html::empty_state).
    let on_log_click = move |ev: web_sys::MouseEvent| {
        let starter = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .and_then(|t| t.closest("[data-action=ask]").ok().flatten());
        if let Some(q) = starter.and_then(|b| b.get_attribute("data-q")) {
            ctx.ask(&q);
        }
    };

    view! {
        <div class="docent" class:docent-inline=inline class:docent-floating=!inline class:docent-left=left data-testid="docent-widget">
            <Show when=move || inline || ctx.open.get()>
                {(!inline).then(|| view! { <div class="docent-backdrop" on:click=move |_| close()></div> })}
                <div
                    class="docent-dialog"
                    role=if inline { "region" } else { "dialog" }
                    aria-modal=if inline { None } else { Some("true") }
                    aria-labelledby="docent-title"
                    data-testid="docent-dialog"
                    node_ref=dialog
                    on:keydown=on_keydown
                >
                    // A div, not <header>: a header outside sectioning content is a page `banner`
                    // landmark, and the host page has its own.
                    <div class="docent-header">
                        <h2 id="docent-title" class="docent-title">{title.clone()}</h2>
                        <button
                            type="button"
                            class="docent-icon-btn"
                            data-testid="docent-new"
                            aria-label="New conversation"
                            title="New conversation"
                            on:click=move |_| ctx.new_conversation()
                        >
                            "New"
                        </button>
                        {(!inline).then(|| view! {
                            <button type="button" class="docent-icon-btn" data-testid="docent-close" aria-label="Close" title="Close (Esc)" on:click=move |_| close()>
                                "✕"
                            </button>
                        })}
                    </div>
                    <ScopeBar scope=ctx.engine.with_value(|e| e.scope) />
                    <div class="docent-log" node_ref=log data-testid="docent-log" on:click=on_log_click>
                        {slot(empty)}
                        <For each=move || ctx.turns.get() key=|e| e.id let:entry>
                            <Turn ctx=ctx entry=entry />
                        </For>
                    </div>
                    <form class="docent-composer" on:submit=move |ev| { ev.prevent_default(); send(); }>
                        <label class="docent-sr" for="docent-input">"Your question"</label>
                        <textarea
                            id="docent-input"
                            class="docent-input"
                            data-testid="docent-input"
                            rows="2"
                            placeholder=placeholder.clone()
                            node_ref=textarea
                            aria-describedby="docent-hint"
                            on:input=move |ev| draft.set(event_target_value(&ev))
                            on:keydown=on_textarea_key
                        ></textarea>
                        // One of the two is shown: Stop while an answer is coming, else Send.
                        <button type="button" class="docent-btn docent-stop" data-testid="docent-stop" hidden=move || !busy.get() on:click=move |_| ctx.stop()>"Stop"</button>
                        <button type="submit" class="docent-btn docent-send" data-testid="docent-send" hidden=busy aria-label="Send question">"Send"</button>
                    </form>
                    <p id="docent-hint" class="docent-hint">
                        "Enter sends, Shift+Enter adds a line" {(!inline).then_some(", Esc closes")} ". Answers can be wrong: check the linked sections."
                    </p>
                    <div class="docent-sr" aria-live="polite" aria-atomic="true" data-testid="docent-live">{move || ctx.live.get()}</div>
                </div>
            </Show>
        </div>
    }
}

/// One question and its answer.
#[component]
pub fn Turn(
    /// The widget's handles.
    ctx: Ctx,
    /// The turn to show.
    entry: Entry,
) -> impl IntoView {
    let data = entry.data;
    let id = entry.id;
    let docs_origin = ctx.cfg(|c| c.docs_origin.clone()).or_else(page_origin);
    let support = ctx.cfg(|c| c.support.clone().map(|u| (u, c.support_label.clone())));
    let origin = docs_origin.clone();
    let looked_origin = docs_origin.clone();
    let rendered = Memo::new(move |_| data.with(|t| render_answer(t, docs_origin.clone())));
    let status = Memo::new(move |_| data.with(|t| t.status.clone()));
    let done = move || matches!(status.get(), Status::Done | Status::Stopped);
    // Everything around the answer's text is an HTML string from crate::html (here `strings`),
    // each in a memo, so its DOM is replaced only when its text changes (an open "what I looked
    // at" stays open while the answer streams).
    let sources = Memo::new(move |_| {
        data.with(|t| {
            if t.status.busy() && t.answer.is_empty() {
                return String::new();
            }
            rendered.with(|r| strings::source_list(&t.sources, &r.cited, t.kind, origin.as_deref()))
        })
    });
    let status_line = Memo::new(move |_| status.with(strings::status_line));
    let labels =
        Memo::new(move |_| data.with(|t| strings::labels(t.notice.as_deref(), t.kind, done())));
    let after = Memo::new(move |_| {
        strings::after_answer(rendered.with(|r| r.truncated), status.get() == Status::Stopped)
    });
    let looked_at = Memo::new(move |_| {
        data.with(|t| {
            let origin = looked_origin.as_deref();
            strings::looked_at(&t.looked_at, t.rewritten.as_deref(), t.confidence, origin, fixed)
        })
    });
    let error = Memo::new(move |_| {
        status.with(|s| match s {
            Status::Failed { message, retry_after } => strings::error_block(message, *retry_after),
            _ => String::new(),
        })
    });
    // Built once when the answer settles: the rating is read untracked, and a click updates the
    // pressed state in place, so the focused button is never replaced under the reader.
    let actions = Memo::new(move |_| {
        if done() {
            strings::actions(data.with_untracked(|t| t.feedback))
        } else {
            String::new()
        }
    });

    // One delegated click handler for the reply: the action buttons (`data-action`), code copy
    // buttons in the rendered answer, and same-page citations.
    let on_reply_click = move |ev: web_sys::MouseEvent| {
        let Some(target) = ev.target().and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else {
            return;
        };
        if let Ok(Some(button)) = target.closest("[data-action]") {
            match button.get_attribute("data-action").as_deref() {
                Some("retry") => ctx.retry(id),
                Some("copy") => {
                    // A model's Markdown as it wrote it; excerpts without the escapes docent
                    // added to show the docs' text as text.
                    clipboard_write(&data.with_untracked(|t| match t.kind {
                        AnswerKind::Model => t.answer.clone(),
                        _ => docent_core::extractive::copy_text(&t.answer),
                    }));
                    copied(&button);
                }
                Some(rating @ ("up" | "down")) => {
                    let up = rating == "up";
                    if let Some(group) = button.parent_element() {
                        for (testid, on) in
                            [("docent-feedback-up", up), ("docent-feedback-down", !up)]
                        {
                            if let Ok(Some(b)) =
                                group.query_selector(&format!("[data-testid={testid}]"))
                            {
                                let _ = b.set_attribute(
                                    "aria-pressed",
                                    if on { "true" } else { "false" },
                                );
                            }
                        }
                    }
                    ctx.feedback(data, up);
                }
                _ => {}
            }
            return;
        }
        if let Ok(Some(btn)) = target.closest(".docent-copy-code") {
            let code = btn
                .parent_element()
                .and_then(|p| p.query_selector("code").ok().flatten())
                .and_then(|c| c.text_content())
                .unwrap_or_default();
            clipboard_write(&code);
            copied(&btn);
            return;
        }
        if let Ok(Some(a)) = target.closest("a[href]") {
            let href = a.get_attribute("href").unwrap_or_default();
            let here =
                web_sys::window().and_then(|w| w.location().pathname().ok()).unwrap_or_default();
            let same_page = href.starts_with('#')
                || web_sys::Url::new_with_base(
                    &href,
                    &web_sys::window().and_then(|w| w.location().href().ok()).unwrap_or_default(),
                )
                .map(|u| u.pathname() == here)
                .unwrap_or(false);
            if same_page && ctx.cfg(|c| c.mode == Mode::Floating) {
                ctx.open.set(false);
            }
        }
    };

    view! {
        <article class="docent-turn" data-testid="docent-turn">
            <div class="docent-question" data-testid="docent-question">{move || data.with(|t| t.question.clone())}</div>
            <div class="docent-reply" on:click=on_reply_click>
                {slot(status_line)}
                <TurnNote data=data text=cached_note testid="docent-cached" />
                {slot(labels)}
                <TurnNote data=data text=fallback_note testid="docent-fallback" />
                <TurnNote data=data text=uncertain_note testid="docent-uncertain" />
                <TurnNote data=data text=declined_note testid="docent-declined" />
                <div
                    class="docent-answer"
                    class:docent-streaming=move || status.get() == Status::Streaming
                    data-testid="docent-answer"
                    inner_html=move || rendered.with(|r| r.html.clone())
                ></div>
                {slot(after)}
                {slot(error)}
                {slot(sources)}
                <SupportLink data=data link=support />
                {slot(actions)}
                {slot(looked_at)}
            </div>
        </article>
    }
}

/// A note above an answer, shown when `text` has one for the turn (one component for every
/// such note, so they share one view type).
#[component]
pub fn TurnNote(
    /// The turn.
    data: RwSignal<TurnData>,
    /// The note for the turn, if any.
    text: fn(&TurnData) -> Option<String>,
    /// The note's `data-testid`.
    testid: &'static str,
) -> impl IntoView {
    move || {
        data.with(text).map(|note| view! { <p class="docent-notice" data-testid=testid>{note}</p> })
    }
}

/// The site's support link ([`crate::config::WidgetConfig::support`]) under a finished turn the
/// docs did not answer or may not fully answer (declined or uncertain); hidden on answered
/// turns, absent on a site without one.
#[component]
pub fn SupportLink(
    /// The turn.
    data: RwSignal<TurnData>,
    /// The configured URL and the link's text.
    link: Option<(String, String)>,
) -> impl IntoView {
    link.map(|(url, label)| {
        // A turn's question never changes: the address is made once.
        let href = data.with_untracked(|t| crate::config::support_href(&url, &t.question));
        let hidden = move || data.with(|t| t.status != Status::Done || t.outcome() == "answered");
        view! {
            <a class="docent-support" data-testid="docent-support" href=href target="_blank" rel="noopener" hidden=hidden>
                {label}
            </a>
        }
    })
}

/// "This may not fully answer your question": on answers the search was not sure the docs
/// cover (core's `Outcome::Uncertain`), and on answers with sentences the citation check did
/// not find in their sources. Not on "not covered" or declined turns, which say so themselves.
pub fn uncertain_note(turn: &TurnData) -> Option<String> {
    if turn.kind == AnswerKind::NotCovered || turn.declined {
        return None;
    }
    if turn.uncertain {
        return Some(
            "This may not fully answer your question: the docs may not cover it. Check the sources."
                .into(),
        );
    }
    let n = turn.unsupported.len();
    (n > 0).then(|| {
        let which = if n == 1 { "One sentence was" } else { "Some sentences were" };
        format!("This may not be fully accurate: {which} not found in the sources cited. Check the sources.")
    })
}

/// On a model answer that says the docs don't cover the question: the turn counts as
/// declined, and the note says so above the model's own words.
fn declined_note(turn: &TurnData) -> Option<String> {
    (turn.declined && turn.kind == AnswerKind::Model)
        .then(|| "The docs don't seem to cover this. The closest sections are listed below.".into())
}

/// "Cached answer": on answers the proxy replayed from its answer cache.
fn cached_note(turn: &TurnData) -> Option<String> {
    turn.cached.then(|| "Cached answer: given before to the same question on these docs.".into())
}

/// An element showing a memo's HTML (from [`crate::html`]), replaced only when the text changes.
/// One function for every such part, so they share one view type (each `view!` with its own
/// closure would be its own copy of the build, update and drop code).
fn slot(html: Memo<String>) -> impl IntoView {
    view! { <div class="docent-slot" inner_html=move || html.get()></div> }
}

/// `x` with `digits` decimals, formatted by the browser (`Number.prototype.toFixed`): Rust's float
/// formatting (`{:.3}`) links core's flt2dec (dragon + grisu, ~10 KB of wasm) for these few labels.
pub fn fixed(x: f32, digits: u8) -> String {
    js_sys::Number::from(x as f64).to_fixed(digits).map(String::from).unwrap_or_default()
}

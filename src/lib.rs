//! docent-widget: the chat widget of docent, a Leptos component compiled to wasm.
//!
//! The tiny hand-written loader (`public/docent.js`) renders the launcher inside a Shadow DOM and,
//! on the reader's first sign of interest, imports this module and calls [`mount`] with a
//! container element inside that shadow root and the widget configuration as JSON
//! ([`config::WidgetConfig`]). Everything heavy (the index, the tokenizer ranks) is fetched by the
//! widget itself on the first question.
//!
//! - [`ui`]: the components. [`engine`]: the question pipeline (index, rewrite, embeddings, hybrid
//!   search, token budget, streaming, extractive fallback). [`index_store`]: index download,
//!   validation and Cache Storage. [`conversation`]: turns and sessionStorage. [`net`]: fetch.

// `--cfg docent_bench` (scripts/build-widget --bench) adds the search benchmark export. The
// features `tokenizer-module` and `cite-module` build the lazily loaded tokenizer or citation
// check (`cite_module`) instead of the widget: features, not cfgs, so that all three release
// builds share one target dir (a cfg in RUSTFLAGS changes every crate's fingerprint, std too).
#![allow(unexpected_cfgs)]

pub mod cite_module;
pub mod config;
pub mod conversation;
pub mod engine;
pub mod html;
pub mod index_store;
pub mod json;
pub mod net;
pub mod scope;
pub mod shards;
pub mod tokenizer;
pub mod ui;

#[cfg(docent_bench)]
pub mod bench;

#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
use std::rc::Rc;

#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
use leptos::prelude::*;
#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
use wasm_bindgen::prelude::*;
#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
use web_sys::HtmlElement;

#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
use crate::config::WidgetConfig;
#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
use crate::engine::Engine;
#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
use crate::ui::{Chat, Ctx};

/// A mounted widget, returned to the loader.
#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
#[wasm_bindgen]
pub struct Widget {
    ctx: Ctx,
    handle: Option<leptos::mount::UnmountHandle<leptos::tachys::view::any_view::AnyViewState>>,
}

#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
#[wasm_bindgen]
impl Widget {
    /// Open the dialog (no-op inline).
    pub fn open(&self) {
        self.ctx.open.set(true);
    }

    /// Close the dialog (no-op inline). A running answer keeps streaming into the conversation.
    pub fn close(&self) {
        if self.ctx.engine.with_value(|e| e.cfg.mode) == config::Mode::Floating {
            self.ctx.open.set(false);
        }
    }

    /// True when the dialog is open.
    pub fn is_open(&self) -> bool {
        self.ctx.open.get_untracked()
    }

    /// Ask a question programmatically (e.g. from a "Ask about this page" button).
    pub fn ask(&self, question: &str) {
        self.ctx.open.set(true);
        self.ctx.ask(question);
    }

    /// Stop a running answer.
    pub fn stop(&self) {
        self.ctx.stop();
    }

    /// Remove the widget from the page and abort any request.
    pub fn unmount(&mut self) {
        self.ctx.stop();
        self.handle.take();
    }
}

/// Mount the widget into `host` (an element inside the loader's shadow root).
///
/// `config_json` is the [`WidgetConfig`] as JSON. A bad configuration is reported as a thrown
/// error with a message saying what to fix.
#[cfg(not(any(feature = "tokenizer-module", feature = "cite-module")))]
#[wasm_bindgen]
pub fn mount(host: HtmlElement, config_json: &str) -> Result<Widget, JsValue> {
    let cfg =
        WidgetConfig::from_json(config_json).map_err(|e| JsValue::from(js_sys::Error::new(&e)))?;
    let engine = Rc::new(Engine::new(cfg));
    let ctx = Ctx::new(engine, host.clone());
    let handle = leptos::mount::mount_to(host, move || view! { <Chat ctx=ctx /> }.into_any());
    Ok(Widget { ctx, handle: Some(handle) })
}

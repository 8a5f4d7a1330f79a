//! The docs scope of the answers: which namespace (docs version, locale) questions are answered
//! from. The page being read picks it (its own namespace in the index), the reader can switch
//! it in the dialog, and the dialog says so when an answer had to come from all docs.

use docent_core::scope::page_namespace;
use docent_core::Index;
use leptos::prelude::*;

use crate::config::derive_namespace;

/// What the dialog shows and the engine searches. Two string signals, the type the widget's
/// other signals have, so no new reactive code is linked (the widget's size budget).
#[derive(Clone, Copy, Debug)]
pub struct Scope {
    /// The index's namespaces, one a line ("" until the index is loaded).
    pub names: RwSignal<String>,
    /// The namespace searched ("": all docs).
    pub current: RwSignal<String>,
    /// The namespace the last question found nothing in, so its answer is from all docs ("":
    /// it did not fall back).
    pub fell_back: RwSignal<String>,
}

impl Default for Scope {
    fn default() -> Self {
        let empty = || RwSignal::new(String::new());
        Scope { names: empty(), current: empty(), fell_back: empty() }
    }
}

impl Scope {
    /// Set up from the loaded index: the configured namespace (`data-namespace`), else the
    /// namespace of the page being read (`path`), else a namespace named in the path (`/v2/`).
    pub fn on_index(&self, configured: Option<&str>, index: &Index, path: &str) {
        let namespaces = &index.header().namespaces;
        let current = configured
            .map(str::to_string)
            .or_else(|| page_namespace(index, path).map(str::to_string))
            .or_else(|| derive_namespace(None, namespaces, path));
        self.current.set(current.unwrap_or_default());
        self.names.set(namespaces.join("\n"));
    }

    /// The namespace to search (None: all docs).
    pub fn namespace(&self) -> Option<String> {
        Some(self.current.get_untracked()).filter(|c| !c.is_empty())
    }
}

/// The dialog's scope line, "Answering from v2 docs", with a picker to switch (shown when the
/// index has namespaces), and after an answer that had to come from all docs, "(the last answer:
/// nothing in the v2 docs, so all docs)". Lean on purpose (the widget's 250 KB budget): one
/// element tree whatever the namespaces; the picker's options are added to the `<select>` when
/// the namespaces are known (an effect through its node), with the scope of that moment
/// selected; the browser keeps the reader's later picks.
#[component]
pub fn ScopeBar(
    /// The widget's scope (the engine's).
    scope: Scope,
) -> impl IntoView {
    let pick: NodeRef<leptos::html::Select> = NodeRef::new();
    Effect::new(move |_| {
        let names = scope.names.get();
        let (Some(select), Some(doc)) = (pick.get(), web_sys::window().and_then(|w| w.document()))
        else {
            return;
        };
        select.set_text_content(None);
        let current = scope.current.get_untracked();
        for (value, text) in std::iter::once(("", "all docs")).chain(names.lines().map(|n| (n, n))) {
            if let Ok(option) = doc.create_element("option") {
                let _ = option.set_attribute("value", value);
                if value == current {
                    let _ = option.set_attribute("selected", "");
                }
                option.set_text_content(Some(text));
                let _ = select.append_child(&option);
            }
        }
    });
    view! {
        <label class="docent-scope" data-testid="docent-scope" hidden=move || scope.names.with(String::is_empty)>
            {move || label(&scope.current.get(), &scope.fell_back.get())}
            <select node_ref=pick on:change=move |ev| scope.current.set(event_target_value(&ev))></select>
        </label>
    }
}

/// "Answering from v2 docs" ("" = all docs), then the last answer's fallback, if any.
pub fn label(current: &str, fell_back: &str) -> String {
    let scope = if current.is_empty() { "all" } else { current };
    let mut text = ["Answering from ", scope, " docs"].concat();
    if !fell_back.is_empty() {
        text += &[" (the last answer: nothing in the ", fell_back, " docs, so all docs)"].concat();
    }
    text
}

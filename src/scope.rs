//! The docs scope of the answers: which namespace (docs version, locale) questions are answered
//! from. The page being read picks it (its own namespace in the index), the reader can switch
//! it in the dialog, and an answer that had to come from all docs says so.

use docent_core::scope::page_namespace;
use docent_core::Index;
use leptos::prelude::*;

use crate::config::derive_namespace;
use crate::conversation::TurnData;

/// What the dialog shows and the engine searches. Two string signals, the type the widget's
/// other signals have, so no new reactive code is linked (the widget's size budget).
#[derive(Clone, Copy, Debug)]
pub struct Scope {
    /// The index's namespaces, one a line ("" until the index is loaded).
    pub names: RwSignal<String>,
    /// The namespace searched ("": all docs).
    pub current: RwSignal<String>,
}

impl Default for Scope {
    fn default() -> Self {
        Scope { names: RwSignal::new(String::new()), current: RwSignal::new(String::new()) }
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
/// index has two or more namespaces). The picker is built when the namespaces are known, with
/// the scope of that moment selected; the browser keeps the reader's later picks, and the
/// label's text follows the scope.
#[component]
pub fn ScopeBar(
    /// The widget's scope (the engine's).
    scope: Scope,
) -> impl IntoView {
    move || {
        let names = scope.names.get();
        let current = scope.current.get_untracked();
        names.contains('\n').then(|| {
            let options: Vec<_> = names
                .lines()
                .map(|ns| {
                    let (selected, value) = (ns == current, ns.to_string());
                    view! { <option selected=selected value=value>{ns.to_string()}</option> }
                })
                .collect();
            view! {
                <label class="docent-scope" data-testid="docent-scope">
                    "Answering from " {move || label(scope.current.get())} " docs"
                    <select on:change=move |ev| scope.current.set(event_target_value(&ev))>
                        <option value="" selected=current.is_empty()>"all docs"</option>
                        {options}
                    </select>
                </label>
            }
        })
    }
}

/// The scope's name in the label: the namespace, or "all" ("" = all docs).
fn label(current: String) -> String {
    if current.is_empty() {
        "all".into()
    } else {
        current
    }
}

/// Under a question: the scope had nothing on it, so the answer comes from all docs.
#[component]
pub fn FallbackNote(
    /// The turn.
    data: RwSignal<TurnData>,
) -> impl IntoView {
    move || {
        data.with(|t| t.fallback.clone()).map(|ns| {
            view! {
                <p class="docent-notice" data-testid="docent-fallback">
                    "Nothing in the " {ns} " docs answers this; this answer is from all docs."
                </p>
            }
        })
    }
}

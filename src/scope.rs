//! The docs scope of the answers: which namespace (docs version, locale) questions are answered
//! from. The page being read picks it (its own namespace in the index), the reader can switch
//! it in the dialog, and an answer that had to come from all docs says so (`fallback_note`).

use docent_core::scope::page_namespace;
use docent_core::Index;
use leptos::prelude::*;

use crate::config::path_namespace;
use crate::conversation::TurnData;

/// What the dialog shows and the engine searches.
#[derive(Clone, Copy, Debug)]
pub struct Scope {
    /// The index's namespaces (none: there is nothing to choose, and no scope line).
    pub namespaces: RwSignal<Vec<String>>,
    /// The namespace searched ("": all docs, which is also the picker's value for it).
    pub current: RwSignal<String>,
    /// The path of the page `current` was chosen for (None: not yet).
    page: StoredValue<Option<String>>,
}

impl Default for Scope {
    fn default() -> Self {
        Scope {
            namespaces: RwSignal::new(Vec::new()),
            current: RwSignal::new(String::new()),
            page: StoredValue::new(None),
        }
    }
}

impl Scope {
    /// Follow the page being read (`path`): on a page other than the last one (the first
    /// question, or a client-side navigation since), the scope is the configured namespace
    /// (`data-namespace`), else the page's own namespace in the index, else a namespace named
    /// in the path (`/v2/`), else all docs. On the same page a reader's pick holds.
    pub fn follow_page(&self, configured: Option<&str>, index: &Index, path: &str) {
        if self.page.with_value(|p| p.as_deref() == Some(path)) {
            return;
        }
        self.page.set_value(Some(path.to_string()));
        let namespaces = &index.header().namespaces;
        if self.namespaces.with_untracked(|n| n != namespaces) {
            self.namespaces.set(namespaces.clone());
        }
        // A configured namespace the index does not have would search nothing: ignored.
        let current = configured
            .filter(|c| namespaces.iter().any(|n| n == c))
            .map(str::to_string)
            .or_else(|| page_namespace(index, path).map(str::to_string))
            .or_else(|| path_namespace(namespaces, path));
        self.current.set(current.unwrap_or_default());
    }

    /// The reader's pick in the dialog ("": all docs); it holds while they stay on the page
    /// they picked it on (which may be newer than the one the scope was last set for).
    pub fn choose(&self, namespace: String) {
        let path = web_sys::window().and_then(|w| w.location().pathname().ok());
        self.page.set_value(path);
        self.current.set(namespace);
    }

    /// The namespace to search (None: all docs).
    pub fn namespace(&self) -> Option<String> {
        Some(self.current.get_untracked()).filter(|c| !c.is_empty())
    }
}

/// The dialog's scope line, "Answering from v2 docs", with a picker to switch to another
/// namespace or all docs. Shown when the index has namespaces.
#[component]
pub fn ScopeBar(
    /// The widget's scope (the engine's).
    scope: Scope,
) -> impl IntoView {
    let option = move |value: String, text: String| {
        let picked = value.clone();
        view! {
            <option value=value prop:selected=move || scope.current.with(|c| *c == picked)>
                {text}
            </option>
        }
    };
    view! {
        <div class="docent-scope" data-testid="docent-scope" hidden=move || scope.namespaces.with(Vec::is_empty)>
                <label for="docent-scope-pick">{move || scope.current.with(|c| label(c))}</label>
                <select
                    id="docent-scope-pick"
                    data-testid="docent-scope-pick"
                    aria-label="Docs to answer from"
                    on:change=move |ev| scope.choose(event_target_value(&ev))
                >
                    {option(String::new(), "all docs".into())}
                    {move || {
                        scope.namespaces.get().into_iter().map(|ns| option(ns.clone(), ns)).collect_view()
                    }}
                </select>
        </div>
    }
}

/// "Answering from v2 docs" ("": "Answering from all docs").
pub fn label(current: &str) -> String {
    let scope = if current.is_empty() { "all" } else { current };
    ["Answering from ", scope, " docs"].concat()
}

/// Above an answer whose scope had nothing on the question, so it comes from all docs:
/// "Nothing in the v1 docs answers this: this answer is from all docs."
pub fn fallback_note(turn: &TurnData) -> Option<String> {
    let namespace = turn.fallback.as_deref()?;
    Some(
        ["Nothing in the ", namespace, " docs answers this: this answer is from all docs."]
            .concat(),
    )
}

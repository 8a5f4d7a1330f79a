//! The docs scope of the answers: which namespace (docs version, locale) questions are answered
//! from. The page being read picks it (its own namespace in the index), the reader can switch
//! it in the dialog, and an answer that had to come from all docs says so.

use docent_core::scope::page_namespace;
use docent_core::Index;
use leptos::prelude::*;

use crate::config::derive_namespace;
use crate::conversation::TurnData;

/// What the dialog shows and the engine searches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scope {
    /// The index's namespaces; with fewer than two there is nothing to choose or show.
    pub namespaces: Vec<String>,
    /// Search only this namespace (None: all docs).
    pub current: Option<String>,
    /// The reader picked `current`: a later index load keeps it.
    pub chosen: bool,
}

impl Scope {
    /// Set up from a freshly loaded index: the configured namespace (`data-namespace`), else the
    /// namespace of the page being read (`path`), else a namespace named in the path (`/v2/`).
    pub fn on_index(&mut self, configured: Option<&str>, index: &Index, path: &str) {
        let namespaces = &index.header().namespaces;
        self.namespaces = namespaces.clone();
        if self.chosen {
            return;
        }
        self.current = configured
            .map(str::to_string)
            .or_else(|| page_namespace(index, path).map(str::to_string))
            .or_else(|| derive_namespace(None, namespaces, path));
    }

    /// The reader's choice from the picker (`""`: all docs).
    pub fn choose(&mut self, value: &str) {
        self.current = (!value.is_empty()).then(|| value.to_string());
        self.chosen = true;
    }
}

/// The dialog's scope line, "Answering from v2 docs", with a picker to switch (shown when the
/// index has two or more namespaces).
#[component]
pub fn ScopeBar(
    /// The widget's scope (the engine's).
    scope: RwSignal<Scope>,
) -> impl IntoView {
    let shown = move || scope.with(|s| s.namespaces.len() > 1);
    view! {
        <Show when=shown>
            <div class="docent-scope" data-testid="docent-scope">
                <label for="docent-scope-pick">
                    {move || scope.with(|s| label(s.current.as_deref()))}
                </label>
                <select
                    id="docent-scope-pick"
                    data-testid="docent-scope-pick"
                    on:change=move |ev| scope.update(|s| s.choose(&event_target_value(&ev)))
                >
                    <option value="" prop:selected=move || scope.with(|s| s.current.is_none())>"all docs"</option>
                    {move || scope.with(|s| s.namespaces.clone()).into_iter().map(|ns| {
                        let picked = ns.clone();
                        let selected = move || scope.with(|s| s.current.as_deref() == Some(picked.as_str()));
                        let text = ns.clone();
                        view! { <option value=ns prop:selected=selected>{text}</option> }
                    }).collect_view()}
                </select>
            </div>
        </Show>
    }
}

/// "Answering from v2 docs" / "Answering from all docs".
pub fn label(current: Option<&str>) -> String {
    format!("Answering from {} docs", current.unwrap_or("all"))
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
                    {format!("Nothing in the {ns} docs answers this; this answer is from all docs.")}
                </p>
            }
        })
    }
}

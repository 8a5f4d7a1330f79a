//! The widget configuration: the JSON the loader passes to [`crate::mount`], built from the site's
//! `data-config` JSON file and the script tag's / `<docent-chat>`'s attributes (attributes win).
//!
//! Unknown keys are rejected so a typo in a config file is reported instead of silently ignored.
//! Parsed with the browser's JSON.parse ([`crate::json`]), not serde: see docs/widget.md, "Size".

use wasm_bindgen::JsValue;

use crate::json;

/// Where the widget lives on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// A launcher button (rendered by the loader) opening a dialog.
    #[default]
    Floating,
    /// Inside a `<docent-chat>` element, always open.
    Inline,
}

/// When to ask the chat model for a standalone search query before searching.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rewrite {
    /// Follow-ups (there is history) and questions that look non-English.
    #[default]
    Auto,
    /// Every question.
    Always,
    /// Never.
    Off,
}

/// Optional overrides for the model's token limits (see `docent_core::budget::ModelLimits`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// The model's context window in tokens.
    pub context_window: Option<usize>,
    /// Tokens kept free for the answer.
    pub answer_reserve: Option<usize>,
    /// Cap on tokens spent on documentation sources.
    pub docs_cap: Option<usize>,
}

/// Prompt template overrides (the system prompt lives on the proxy).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prompt {
    /// The user message template; `{sources}` and `{question}` are filled in.
    pub user: Option<String>,
}

/// The widget's configuration. Every field is optional except `index`.
#[derive(Debug, Clone, PartialEq)]
pub struct WidgetConfig {
    /// URL of the index file built by `docent index`.
    pub index: String,
    /// Base URL of `docent serve` (no trailing slash). None = offline mode (extractive answers).
    pub proxy: Option<String>,
    /// Dialog title and launcher label.
    pub title: String,
    /// Only search this namespace (docs version). None = derive it from the page URL.
    pub namespace: Option<String>,
    /// Starter questions shown in an empty conversation.
    pub starters: Vec<String>,
    /// Placeholder of the question box.
    pub placeholder: String,
    /// Keyboard shortcut, e.g. "mod+k" (handled by the loader; shown in the UI).
    pub shortcut: String,
    /// "auto" | "light" | "dark" (handled by the loader).
    pub theme: String,
    /// "bottom-right" | "bottom-left".
    pub position: String,
    /// The reader's language hint for the answer (e.g. "de"); None = the question's language.
    pub language: Option<String>,
    /// Floating dialog or inline element.
    pub mode: Mode,
    /// Query rewriting policy.
    pub rewrite: Rewrite,
    /// Chat model name used for default token limits (the proxy picks the real model).
    pub model: String,
    /// Token limit overrides.
    pub limits: Limits,
    /// Prompt template overrides.
    pub prompt: Prompt,
    /// Number of sections retrieved per search.
    pub top_k: usize,
    /// Units (sentences; a table or code block counts as one) in an extractive (offline) answer.
    pub extractive_sentences: usize,
    /// Origin of the docs, so same-origin images in answers may load (default: the page's origin).
    pub docs_origin: Option<String>,
    /// Where the loader found its assets (for the lazily fetched tokenizer ranks).
    pub assets_base: Option<String>,
    /// Send thumbs up/down to the proxy's /v1/feedback (the DOM event fires regardless).
    pub feedback: bool,
    /// Keep the conversation in sessionStorage across page navigations.
    pub persist: bool,
    /// Relevance floor override (0..1); None = the index's calibrated floor.
    pub floor: Option<f32>,
    /// Where a reader goes when the docs don't answer: an `http(s):` or `mailto:` URL, or one
    /// relative to the page, shown under declined and uncertain answers ([`support_href`]).
    pub support: Option<String>,
    /// The text of that link.
    pub support_label: String,
}

/// The support link's text when the site names none (`support_label`).
const SUPPORT_LABEL: &str = "Contact support";

impl Default for WidgetConfig {
    fn default() -> Self {
        WidgetConfig {
            index: String::new(),
            proxy: None,
            title: "Ask the docs".into(),
            namespace: None,
            starters: Vec::new(),
            placeholder: "Ask a question about the docs…".into(),
            shortcut: "mod+k".into(),
            theme: "auto".into(),
            position: "bottom-right".into(),
            language: None,
            mode: Mode::Floating,
            rewrite: Rewrite::Auto,
            model: "gpt-4o-mini".into(),
            limits: Limits::default(),
            prompt: Prompt::default(),
            top_k: 8,
            extractive_sentences: 4,
            docs_origin: None,
            assets_base: None,
            feedback: true,
            persist: true,
            floor: None,
            support: None,
            support_label: SUPPORT_LABEL.into(),
        }
    }
}

impl WidgetConfig {
    /// Parse the loader's JSON. Errors say which key is wrong and what to do.
    pub fn from_json(json: &str) -> Result<WidgetConfig, String> {
        let mut cfg = WidgetConfig::from_value(&json::parse(json).map_err(|e| format!("not JSON: {e}")))
            .map_err(|e| format!("docent: invalid widget configuration ({e}); check the data-* attributes and the data-config JSON (see docs/widget.md)"))?;
        if cfg.index.trim().is_empty() {
            return Err("docent: no index configured; add data-index=\"/docent/index.bin\" to the script tag (see docs/widget.md)".into());
        }
        if let Some(p) = &cfg.proxy {
            let p = p.trim().trim_end_matches('/').to_string();
            cfg.proxy = if p.is_empty() { None } else { Some(p) };
        }
        if cfg.namespace.as_deref().map(str::trim) == Some("") {
            cfg.namespace = None;
        }
        if cfg.top_k == 0 {
            cfg.top_k = 8;
        }
        if cfg.extractive_sentences == 0 {
            cfg.extractive_sentences = 4;
        }
        if cfg.support_label.trim().is_empty() {
            cfg.support_label = SUPPORT_LABEL.into();
        }
        Ok(cfg)
    }

    /// Read the configuration object key by key: unknown keys and wrong types are errors naming
    /// the key (defaults fill the missing ones).
    fn from_value(v: &Result<JsValue, String>) -> Result<WidgetConfig, String> {
        let v = v.as_ref().map_err(Clone::clone)?;
        if !json::is_object(v) {
            return Err("expected a JSON object".into());
        }
        let mut c = WidgetConfig::default();
        for key in json::keys(v) {
            let x = json::get(v, &key);
            match key.as_str() {
                "index" => c.index = text(&key, &x)?,
                "proxy" => c.proxy = opt(&x, |x| text(&key, x))?,
                "title" => c.title = text(&key, &x)?,
                "namespace" => c.namespace = opt(&x, |x| text(&key, x))?,
                "starters" => {
                    if !js_sys::Array::is_array(&x) {
                        return Err(format!("`{key}` must be a list of strings"));
                    }
                    c.starters = json::items(&x).iter().map(|s| text(&key, s)).collect::<Result<_, _>>()?;
                }
                "placeholder" => c.placeholder = text(&key, &x)?,
                "shortcut" => c.shortcut = text(&key, &x)?,
                "theme" => c.theme = text(&key, &x)?,
                "position" => c.position = text(&key, &x)?,
                "language" => c.language = opt(&x, |x| text(&key, x))?,
                "mode" => {
                    c.mode = match text(&key, &x)?.as_str() {
                        "floating" => Mode::Floating,
                        "inline" => Mode::Inline,
                        other => return Err(format!("unknown `mode` \"{other}\", expected \"floating\" or \"inline\"")),
                    }
                }
                "rewrite" => {
                    c.rewrite = match text(&key, &x)?.as_str() {
                        "auto" => Rewrite::Auto,
                        "always" => Rewrite::Always,
                        "off" => Rewrite::Off,
                        other => return Err(format!("unknown `rewrite` \"{other}\", expected \"auto\", \"always\" or \"off\"")),
                    }
                }
                "model" => c.model = text(&key, &x)?,
                "limits" => {
                    c.limits = Limits::default();
                    for k in object_keys(&key, &x)? {
                        let y = json::get(&x, &k);
                        let slot = match k.as_str() {
                            "context_window" => &mut c.limits.context_window,
                            "answer_reserve" => &mut c.limits.answer_reserve,
                            "docs_cap" => &mut c.limits.docs_cap,
                            _ => return Err(unknown(&format!("limits.{k}"), "context_window, answer_reserve, docs_cap")),
                        };
                        *slot = opt(&y, |y| count(&k, y))?;
                    }
                }
                "prompt" => {
                    c.prompt = Prompt::default();
                    for k in object_keys(&key, &x)? {
                        match k.as_str() {
                            "user" => c.prompt.user = opt(&json::get(&x, &k), |y| text(&k, y))?,
                            _ => return Err(unknown(&format!("prompt.{k}"), "user")),
                        }
                    }
                }
                "top_k" => c.top_k = count(&key, &x)?,
                "extractive_sentences" => c.extractive_sentences = count(&key, &x)?,
                "docs_origin" => c.docs_origin = opt(&x, |x| text(&key, x))?,
                "assets_base" => c.assets_base = opt(&x, |x| text(&key, x))?,
                "feedback" => c.feedback = flag(&key, &x)?,
                "persist" => c.persist = flag(&key, &x)?,
                "support" => c.support = opt(&x, |x| support_url(&key, x))?.filter(|s| !s.is_empty()),
                "support_label" => c.support_label = text(&key, &x)?,
                "floor" => {
                    c.floor = opt(&x, |x| {
                        x.as_f64()
                            .filter(|f| (0.0..=1.0).contains(f))
                            .map(|f| f as f32)
                            .ok_or_else(|| format!("`{key}` must be a number from 0 to 1 (0 never declines)"))
                    })?
                }
                _ => {
                    return Err(unknown(
                        &key,
                        "index, proxy, title, namespace, starters, placeholder, shortcut, theme, position, language, mode, \
                         rewrite, model, limits, prompt, top_k, extractive_sentences, docs_origin, assets_base, feedback, persist, floor, support, \
                         support_label",
                    ))
                }
            }
        }
        Ok(c)
    }

    /// The chat endpoint, if there is a proxy.
    pub fn endpoint(&self, path: &str) -> Option<String> {
        self.proxy.as_ref().map(|p| format!("{p}{path}"))
    }
}

/// The support link's address for a turn: `{question}` in the configured URL becomes the
/// reader's question, URL-encoded (a help desk's form can start from it).
pub fn support_href(url: &str, question: &str) -> String {
    url.replace("{question}", &String::from(js_sys::encode_uri_component(question)))
}

/// The first namespace of the index that appears as a path segment of the page URL (docs versions
/// such as `/v2/guide/`), else none. The last resort of `scope.rs` after the configured
/// namespace and the page's own namespace in the index.
pub fn path_namespace(index_namespaces: &[String], page_path: &str) -> Option<String> {
    let segments: Vec<&str> = page_path.split('/').filter(|s| !s.is_empty()).collect();
    index_namespaces.iter().find(|ns| !ns.is_empty() && segments.iter().any(|s| s == ns)).cloned()
}

/// True when the question looks non-English, so a rewrite into the docs' language helps
/// retrieval (docent-core's guess, shared with search's relevance floor).
pub use docent_core::lang::looks_non_english;

fn unknown(key: &str, expected: &str) -> String {
    format!("unknown key `{key}`, expected one of: {expected}")
}

fn text(key: &str, v: &JsValue) -> Result<String, String> {
    v.as_string().ok_or_else(|| format!("`{key}` must be a string"))
}

/// A support link's address: an `http(s):` or `mailto:` URL, or one relative to the page (the
/// Markdown renderer's rules for links, `docent_core::render::classify_url`, and `mailto:`).
fn support_url(key: &str, v: &JsValue) -> Result<String, String> {
    let s = text(key, v)?.trim().to_string();
    if s.is_empty() || s.starts_with("mailto:") || docent_core::render::classify_url(&s).is_some() {
        Ok(s)
    } else {
        Err("`support` must be an http(s) or mailto: URL or a path".into())
    }
}

fn flag(key: &str, v: &JsValue) -> Result<bool, String> {
    v.as_bool().ok_or_else(|| format!("`{key}` must be true or false"))
}

fn count(key: &str, v: &JsValue) -> Result<usize, String> {
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.fract() == 0.0 && n <= u32::MAX as f64 => Ok(n as usize),
        _ => Err(format!("`{key}` must be a whole number ≥ 0")),
    }
}

/// `null` (or absent) → None, else `read`.
fn opt<T>(
    v: &JsValue,
    read: impl FnOnce(&JsValue) -> Result<T, String>,
) -> Result<Option<T>, String> {
    if v.is_null() || v.is_undefined() {
        Ok(None)
    } else {
        read(v).map(Some)
    }
}

fn object_keys(key: &str, v: &JsValue) -> Result<Vec<String>, String> {
    if json::is_object(v) {
        Ok(json::keys(v))
    } else {
        Err(format!("`{key}` must be an object"))
    }
}

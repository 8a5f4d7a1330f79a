//! The question pipeline: load the index, (rewrite,) embed, search, budget, stream, render —
//! or answer with excerpts when there is no chat model.
//!
//! Every step writes its progress into the turn's signal; the view only reads signals.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use docent_core::budget::{self, ModelLimits, Plan, PlanRequest};
use docent_core::cite::{ChunkSource, Mark, Source};
use docent_core::prompt::{Message, Template, DEFAULT_SYSTEM, DEFAULT_USER};
use docent_core::retrieve::{self, Ask};
use docent_core::search::{Hit, SearchOptions, SearchResult};
use docent_core::sse::SseParser;
use docent_core::tokens::{ByteBound, TokenCounter};
use docent_core::Index;
use leptos::prelude::*;
use web_sys::AbortController;

use crate::config::{looks_non_english, Rewrite, WidgetConfig};
use crate::conversation::{AnswerKind, LookedAt, SourceView, Status, TurnData};
use crate::index_store;
use crate::json::{self, Obj};
use crate::net::{self, BodyReader, NetError};
use crate::scope::Scope;
use crate::tokenizer::{self, JsCounter};

/// Hits offered as "closest sections" when the docs don't cover a question.
const CLOSEST: usize = 3;

/// One widget's long-lived state outside the reactive graph.
pub struct Engine {
    /// The configuration.
    pub cfg: WidgetConfig,
    index: RefCell<Option<Rc<Index>>>,
    /// The proxy answered 503 `no_chat_model`: answer with excerpts for the rest of the page.
    chat_unavailable: Cell<bool>,
    /// What the proxy offers, once asked.
    offers: Cell<Option<Offers>>,
    bpe: RefCell<Option<Rc<JsCounter>>>,
    ranks_loading: Cell<bool>,
    controller: RefCell<Option<AbortController>>,
    /// What the proxy said its system prompt costs (`x-docent-system-tokens`); None = not yet
    /// asked, so core's default prompt is counted.
    proxy_system_tokens: Cell<Option<usize>>,
    /// The context window the proxy fits requests to (`x-docent-context-window`).
    proxy_window: Cell<Option<usize>>,
    /// Which docs questions are answered from (the dialog shows and switches it).
    pub scope: Scope,
}

/// Earlier turns, for follow-ups.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// Earlier questions, oldest first.
    pub questions: Vec<String>,
    /// Earlier question/answer pairs, as chat messages, oldest first.
    pub messages: Vec<Message>,
}

impl History {
    /// Build from saved turns (only finished or stopped answers count).
    pub fn from_turns(turns: &[TurnData]) -> History {
        let mut h = History::default();
        for t in turns {
            h.questions.push(t.question.clone());
            if matches!(t.status, Status::Done | Status::Stopped)
                && !t.answer.is_empty()
                && t.kind == AnswerKind::Model
            {
                h.messages.push(Message::user(t.question.clone()));
                h.messages.push(Message::assistant(t.answer.clone()));
            }
        }
        h
    }
}

/// Outcome of the retrieval step.
struct Retrieved {
    result: SearchResult,
    rewritten: Option<String>,
    /// The proxy could not be reached: answer offline.
    offline_reason: Option<String>,
    /// The scope that had nothing on the question, so `result` searched all docs.
    fallback: Option<String>,
}

/// A failure that ends the turn with a message.
struct Fail {
    message: String,
    retry_after: Option<u32>,
}

impl Fail {
    fn new(message: impl Into<String>) -> Fail {
        Fail { message: message.into(), retry_after: None }
    }
}

/// The reader-facing message for a proxy error.
pub fn describe(err: &NetError) -> (String, Option<u32>) {
    match err {
        NetError::Unreachable(m) => (
            format!(
                "Couldn't reach the answer service ({m}). Check your connection and try again."
            ),
            None,
        ),
        NetError::Aborted => ("Stopped.".into(), None),
        NetError::BadResponse(m) => {
            (format!("The answer service sent something unexpected ({m}). Try again."), None)
        }
        NetError::Http { status, code, message, retry_after, categories } => {
            let msg = match code.as_str() {
                "rate_limited" => match retry_after {
                    Some(s) => format!("Too many questions right now. Try again in {s} seconds."),
                    None => "Too many questions right now. Try again in a minute.".into(),
                },
                "content_flagged" => {
                    if categories.is_empty() {
                        "The question was blocked by the content filter, so it was not sent. Rephrase it and try again.".into()
                    } else {
                        format!(
                            "The question was blocked by the content filter ({}), so it was not sent. Rephrase it and try again.",
                            categories.join(", ")
                        )
                    }
                }
                "upstream_error" => "The language model behind the answer service failed. Try again in a moment.".into(),
                "moderation_failed" => "The answer service could not check the question with its content filter, so it was not answered. Try again in a moment.".into(),
                "request_timeout" => "The question took too long to reach the answer service (a slow or interrupted connection). Try again.".into(),
                "server_shutting_down" => "The answer service is restarting. Ask again in a moment.".into(),
                "upstream_timeout" => "The language model took too long to answer. Try again in a moment.".into(),
                "body_too_large" | "too_many_messages" | "input_too_long"
                | "context_length_exceeded" => {
                    "The conversation is too long for the answer service. Start a new conversation and ask again.".into()
                }
                "origin_not_allowed" => {
                    "This site is not allowed to use the answer service (origin not allowed); the site owner must add it to the proxy's allow-origin list.".into()
                }
                "embedding_model_mismatch" => format!("The docs index and the answer service disagree on the embedding model ({message}). The site owner must rebuild the index or fix the proxy's embedding model."),
                _ if *status >= 500 => format!("The answer service had a problem (HTTP {status}: {message}). Try again in a moment."),
                _ => format!("The answer service refused the question (HTTP {status}: {message})."),
            };
            (msg, *retry_after)
        }
    }
}

/// A `performance.mark` on the page's timeline (cheap; a handful per question). Names:
/// `docent:ask` (the question was submitted), `docent:rewrite-start`/`docent:rewrite-end` (the
/// rewrite round trip), `docent:search` (retrieval inputs are ready, search starts). The
/// measurement harness (e2e/widget/measure.mjs) reads them to report the rewrite's latency; a
/// site can read them too.
pub fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(name);
    }
}

/// Remove every performance mark called `name` (per-chunk marks must not pile up over a session).
fn clear_marks(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        p.clear_marks_with_mark_name(name);
    }
}

fn location() -> (String, String) {
    let loc = web_sys::window().map(|w| w.location());
    let href = loc.as_ref().and_then(|l| l.href().ok()).unwrap_or_default();
    let path = loc.as_ref().and_then(|l| l.pathname().ok()).unwrap_or_default();
    (href, path)
}

/// Looked-at rows for a list of hits.
pub fn looked_at(index: &Index, hits: &[Hit]) -> Vec<LookedAt> {
    hits.iter()
        .filter(|h| (h.chunk as usize) < index.len())
        .map(|h| {
            let c = index.chunk(h.chunk as usize);
            LookedAt {
                url: c.link(),
                title: c.title.clone(),
                breadcrumb: c.breadcrumb_display(),
                score: h.score,
                cosine: h.cosine,
                bm25: h.bm25,
                retrievers: h.retrievers.label().to_string(),
            }
        })
        .collect()
}

/// Sources for display (no chunk lists).
pub fn source_views(sources: &[Source]) -> Vec<SourceView> {
    sources
        .iter()
        .map(|s| SourceView {
            n: s.n,
            url: s.url.clone(),
            title: s.title.clone(),
            breadcrumb: s.breadcrumb.clone(),
            cited: false,
        })
        .collect()
}

/// Back to core sources for rendering (the renderer only needs number, link and title).
pub fn core_sources(views: &[SourceView]) -> Vec<Source> {
    views
        .iter()
        .map(|s| Source {
            n: s.n,
            url: s.url.clone(),
            title: s.title.clone(),
            breadcrumb: s.breadcrumb.clone(),
            chunks: Vec::new(),
        })
        .collect()
}

/// The sentences of a complete answer not found in the sources they cite (core's
/// `cite::LexicalChecker` over the chunk texts of the prompt's `sources`), as marks for the
/// renderer: what the lazily loaded cite module returns ([`crate::cite_module`]), computed
/// here in one go.
pub fn check_citations(answer: &str, sources: &[Source], index: &dyn ChunkSource) -> Vec<Mark> {
    crate::cite_module::check_texts(answer, &crate::cite_module::source_texts(sources, index))
}

/// What the polite live region says once the answer has started to stream. The answer itself is
/// not announced piece by piece (a screen reader would read a sentence at a time, interrupted by
/// the next); the reader goes to it once it is complete.
pub const ANSWER_STARTED: &str = "Writing the answer…";

/// What the polite live region says when an answer is complete: what kind of answer it is and
/// how many sources it lists, e.g. "Answer complete, with 3 sources."
pub fn answer_complete(kind: AnswerKind, sources: usize) -> String {
    let count = match sources {
        0 => "no sources".to_string(),
        1 => "1 source".to_string(),
        n => format!("{n} sources"),
    };
    match kind {
        AnswerKind::Model => format!("Answer complete, with {count}."),
        AnswerKind::Excerpts => format!("Excerpts from the docs shown, with {count}."),
        AnswerKind::NotCovered => match sources {
            0 => "The docs don't seem to cover this.".to_string(),
            1 => "The docs don't seem to cover this. The closest section is listed.".to_string(),
            n => format!("The docs don't seem to cover this. The {n} closest sections are listed."),
        },
    }
}

impl Engine {
    /// A new engine for a config.
    pub fn new(cfg: WidgetConfig) -> Engine {
        Engine {
            cfg,
            index: RefCell::new(None),
            chat_unavailable: Cell::new(false),
            offers: Cell::new(None),
            bpe: RefCell::new(None),
            ranks_loading: Cell::new(false),
            controller: RefCell::new(None),
            proxy_system_tokens: Cell::new(None),
            proxy_window: Cell::new(None),
            scope: Scope::default(),
        }
    }

    /// Learn the proxy's budget from a chat answer's headers (docs/proxy.md, "Context window"):
    /// its system prompt's cost and its context window, used by every later plan. Returns how
    /// many of the oldest messages the proxy left out of this request to fit.
    pub fn learn_budget(&self, headers: &web_sys::Headers) -> usize {
        let num = |name: &str| {
            headers.get(name).ok().flatten().and_then(|v| v.trim().parse::<usize>().ok())
        };
        if let Some(n) = num("x-docent-system-tokens") {
            self.proxy_system_tokens.set(Some(n));
        }
        if let Some(w) = num("x-docent-context-window").filter(|w| *w > 0) {
            self.proxy_window.set(Some(w));
        }
        num("x-docent-dropped-messages").unwrap_or(0)
    }

    /// Tokens of the system prompt the proxy adds: what it reported, else core's default prompt.
    pub fn system_tokens(&self, counter: &dyn TokenCounter) -> usize {
        self.proxy_system_tokens.get().unwrap_or_else(|| counter.count(DEFAULT_SYSTEM))
    }

    /// Abort the running request, if any (Stop, new conversation, unmount).
    pub fn abort(&self) {
        if let Some(c) = self.controller.borrow_mut().take() {
            c.abort();
        }
    }

    /// The model's limits: the configured model's defaults, the site's overrides, and never a
    /// bigger context window than the proxy said it fits requests to.
    pub fn limits(&self) -> ModelLimits {
        let mut l = ModelLimits::for_model(&self.cfg.model);
        if let Some(v) = self.cfg.limits.context_window {
            l.context_window = v;
        }
        if let Some(v) = self.cfg.limits.answer_reserve {
            l.answer_reserve = v;
        }
        if let Some(v) = self.cfg.limits.docs_cap {
            l.docs_cap = v;
        }
        if let Some(w) = self.proxy_window.get() {
            l.context_window = l.context_window.min(w);
        }
        l
    }

    async fn index(&self, turn: RwSignal<TurnData>) -> Result<Rc<Index>, Fail> {
        if let Some(ix) = self.index.borrow().clone() {
            return Ok(ix);
        }
        let url = self.cfg.index.clone();
        let (ix, _origin) = index_store::load(&url, |received, total| {
            turn.update(|t| t.status = Status::LoadingIndex { received, total });
        })
        .await
        .map_err(|e| Fail::new(e.0))?;
        *self.index.borrow_mut() = Some(ix.clone());
        Ok(ix)
    }

    /// The docs scope follows the page being read: sites like VitePress and Docusaurus change
    /// pages without reloading the widget. Called with every question and when the dialog opens.
    pub fn follow_page(&self) {
        if let Some(ix) = self.index.borrow().as_ref() {
            let (_, path) = location();
            self.scope.follow_page(self.cfg.namespace.as_deref(), ix, &path);
        }
    }

    fn search_options(&self) -> SearchOptions {
        SearchOptions {
            top_k: self.cfg.top_k,
            namespace: self.scope.namespace(),
            floor: self.cfg.floor,
            ..SearchOptions::default()
        }
    }

    /// The `docent` field of chat requests (task, language hint, page) for the proxy; answers
    /// also name the index (its checksum) and namespace they were searched in, which the
    /// proxy's answer cache keys on.
    fn docent_field(&self, task: &str, page: &str, index: Option<&Index>) -> wasm_bindgen::JsValue {
        let namespace = index.and_then(|_| self.scope.namespace());
        Obj::new()
            .str("task", task)
            .opt_str("language", self.cfg.language.as_deref())
            .str("page", page)
            .opt_str("index", index.map(|ix| format!("{:016x}", ix.checksum())).as_deref())
            .opt_str("namespace", namespace.as_deref())
            .build()
    }

    fn wants_rewrite(&self, question: &str, history: &History) -> bool {
        match self.cfg.rewrite {
            Rewrite::Off => false,
            Rewrite::Always => true,
            Rewrite::Auto => !history.questions.is_empty() || looks_non_english(question),
        }
    }

    async fn rewrite(
        &self,
        question: &str,
        history: &History,
        signal: &web_sys::AbortSignal,
    ) -> Result<Option<String>, NetError> {
        let Some(url) = self.cfg.endpoint("/v1/chat/completions") else { return Ok(None) };
        let messages = retrieve::rewrite_messages(&history.messages, &history.questions, question);
        let (href, _) = location();
        let body = Obj::new()
            .val("messages", messages_js(&messages))
            .bool("stream", false)
            .num("temperature", 0.0)
            .num("max_tokens", 64.0)
            .val("docent", self.docent_field("rewrite", &href, None))
            .build();
        let v = net::post_json_value(&url, &body, Some(signal)).await?;
        let content =
            json::string(&json::get(&json::at(&json::get(&v, "choices"), 0), "message"), "content")
                .unwrap_or_default();
        Ok(retrieve::clean_rewrite(&content, question))
    }

    async fn embed(
        &self,
        index: &Index,
        inputs: &[String],
        signal: &web_sys::AbortSignal,
    ) -> Result<Vec<Vec<f32>>, NetError> {
        let Some(url) = self.cfg.endpoint("/v1/embeddings") else { return Ok(Vec::new()) };
        let header = index.header();
        // The query prompt the index expects goes along: a proxy that would embed questions
        // with another one refuses (embedding_model_mismatch) rather than rank wrong sections.
        let mut body = Obj::new()
            .str("model", &header.model)
            .val("input", json::strings(inputs))
            .str("encoding_format", "float")
            .str("input_type", "query")
            .str("query_prompt", &header.embedding.query_prompt);
        if header.dims > 0 {
            body = body.num("dimensions", header.dims as f64);
        }
        let v = net::post_json_value(&url, &body.build(), Some(signal)).await?;
        // The proxy must embed with the index's model, and with its query prompt: one that says
        // which prompt it used must have used the index's; one that says nothing (older docent,
        // another server) is trusted only when the index needs none.
        let model = json::string(&v, "model").unwrap_or_default();
        let prompt = json::string(&v, "query_prompt").unwrap_or_default();
        let wanted = &header.embedding.query_prompt;
        if !model.is_empty() && !same_model(&model, &header.model) || prompt != *wanted {
            return Err(NetError::Http {
                status: 400,
                code: "embedding_model_mismatch".into(),
                message: format!("index built with {} and prompt {wanted:?}", header.model),
                retry_after: None,
                categories: vec![],
            });
        }
        let mut out = vec![Vec::new(); inputs.len()];
        for (i, d) in json::items(&json::get(&v, "data")).iter().enumerate() {
            let at =
                json::number(d, "index").filter(|x| *x >= 0.0).map(|x| x as usize).unwrap_or(i);
            let embedding = json::get(d, "embedding");
            // A JSON array of numbers → f32s in one copy (Float32Array converts each element).
            let mut vec: Vec<f32> = if js_sys::Array::is_array(&embedding) {
                js_sys::Float32Array::new(&embedding).to_vec()
            } else {
                Vec::new()
            };
            if vec.iter().any(|x| !x.is_finite()) {
                vec.clear(); // not all numbers: reported as the wrong size below
            }
            if at < out.len() {
                out[at] = vec;
            }
        }
        if out.iter().any(|v| v.len() != header.dims as usize) {
            return Err(NetError::BadResponse(format!(
                "embeddings have the wrong size (expected {} dimensions for {})",
                header.dims, header.model
            )));
        }
        Ok(out)
    }

    async fn retrieve(
        &self,
        index: &Index,
        question: &str,
        history: &History,
        signal: &web_sys::AbortSignal,
    ) -> Result<Retrieved, Fail> {
        let mut opts = self.search_options();
        let mut offline_reason = None;
        let mut rewritten = None;
        let online = self.cfg.proxy.is_some();
        if online && !self.chat_unavailable.get() && self.wants_rewrite(question, history) {
            mark("docent:rewrite-start");
            let got = self.rewrite(question, history, signal).await;
            mark("docent:rewrite-end");
            match got {
                Ok(r) => rewritten = r,
                Err(NetError::Aborted) => return Err(Fail::new("Stopped.")),
                Err(e) if e.is_unreachable() => offline_reason = Some(describe(&e).0),
                Err(e) if e.code() == Some("no_chat_model") => self.chat_unavailable.set(true),
                Err(e @ NetError::Http { .. })
                    if matches!(
                        e.code(),
                        Some("rate_limited" | "content_flagged" | "origin_not_allowed")
                    ) =>
                {
                    let (message, retry_after) = describe(&e);
                    return Err(Fail { message, retry_after });
                }
                Err(e) => {
                    web_sys::console::warn_1(&format!("docent: query rewrite skipped: {e}").into())
                }
            }
        }
        let ask = Ask { question, history: &history.questions, rewritten: rewritten.as_deref() };
        let header = index.header();
        let mut vectors: Vec<Vec<f32>> = Vec::new();
        if online && offline_reason.is_none() && header.dims > 0 && header.provider != "none" {
            match self.embed(index, &ask.embedding_inputs(), signal).await {
                Ok(v) => vectors = v,
                Err(NetError::Aborted) => return Err(Fail::new("Stopped.")),
                Err(e) if e.is_unreachable() => offline_reason = Some(describe(&e).0),
                Err(e) => {
                    let (message, retry_after) = describe(&e);
                    return Err(Fail { message, retry_after });
                }
            }
        }
        // A split index fetches the postings of the question's terms first.
        let mut terms: Vec<&str> = vec![question];
        terms.extend(rewritten.as_deref());
        terms.extend(history.questions.iter().rev().take(2).map(String::as_str));
        crate::shards::ensure(index, &self.cfg.index, index.shards_for_query(&terms))
            .await
            .map_err(Fail::new)?;
        mark("docent:search");
        let scoped = retrieve::retrieve(index, &ask, &vectors, &opts);
        // The scope has nothing on the question: all docs, and the answer says so. When all
        // docs have nothing either, the "I don't know" lists the closest sections of the scope.
        if let Some(namespace) = opts.namespace.take().filter(|_| scoped.abstained) {
            let all = retrieve::retrieve(index, &ask, &vectors, &opts);
            if !all.abstained {
                return Ok(Retrieved {
                    result: all,
                    rewritten,
                    offline_reason,
                    fallback: Some(namespace),
                });
            }
        }
        Ok(Retrieved { result: scoped, rewritten, offline_reason, fallback: None })
    }

    fn excerpts(
        &self,
        index: &Index,
        result: &SearchResult,
        question: &str,
    ) -> (String, Vec<SourceView>) {
        let ex =
            docent_core::extractive::answer(index, result, question, self.cfg.extractive_sentences);
        (ex.markdown, source_views(&ex.sources))
    }

    async fn load_ranks(&self) -> Option<Rc<JsCounter>> {
        if let Some(b) = self.bpe.borrow().clone() {
            return Some(b);
        }
        self.ranks_loading.set(true);
        let got = tokenizer::load().await;
        self.ranks_loading.set(false);
        match got {
            Ok(c) => {
                let c = Rc::new(c);
                *self.bpe.borrow_mut() = Some(c.clone());
                Some(c)
            }
            Err(e) => {
                web_sys::console::warn_1(
                    &format!(
                        "docent: exact token counts unavailable ({e}); using the byte upper bound"
                    )
                    .into(),
                );
                None
            }
        }
    }

    /// Fetch the ranks in the background when the conversation is getting long, so the next
    /// plan can count exactly without waiting.
    fn maybe_prefetch_ranks(self: &Rc<Self>, prompt_tokens: usize) {
        if self.bpe.borrow().is_some() || self.ranks_loading.get() {
            return;
        }
        if prompt_tokens * 2 < self.limits().prompt_budget() {
            return;
        }
        let me = self.clone();
        leptos::task::spawn_local(async move {
            let _ = me.load_ranks().await;
        });
    }

    fn plan(
        &self,
        index: &Index,
        hits: &[Hit],
        history: &History,
        question: &str,
        counter: &dyn TokenCounter,
    ) -> Result<budget::Plan, budget::BudgetError> {
        let template =
            Template::new(self.cfg.prompt.user.clone().unwrap_or_else(|| DEFAULT_USER.to_string()));
        let system_tokens = self.system_tokens(counter);
        budget::plan(&PlanRequest {
            index,
            hits,
            history: &history.messages,
            question,
            user_template: &template,
            system_tokens,
            limits: self.limits(),
            counter,
        })
    }

    /// Answer `question` into `turn`. `live` receives what the live region announces: that the
    /// search and the answer started, and that the answer is complete with its number of sources.
    pub async fn ask(
        self: Rc<Self>,
        turn: RwSignal<TurnData>,
        history: History,
        live: RwSignal<String>,
    ) {
        self.abort();
        let controller = match AbortController::new() {
            Ok(c) => c,
            Err(_) => {
                turn.update(|t| {
                    t.status = Status::Failed {
                        message: "This browser cannot run the assistant (no AbortController)."
                            .into(),
                        retry_after: None,
                    }
                });
                return;
            }
        };
        let signal = controller.signal();
        *self.controller.borrow_mut() = Some(controller);
        let question = turn.with_untracked(|t| t.question.clone());
        turn.update(|t| {
            t.status = Status::Searching;
            t.answer.clear();
            t.sources.clear();
            t.looked_at.clear();
            t.notice = None;
            t.fallback = None;
            t.rewritten = None;
            t.feedback = None;
            t.cached = false;
            t.cache_key = None;
            t.unsupported.clear();
            t.declined = false;
        });
        live.set("Searching the docs…".into());
        let outcome = self.ask_inner(turn, &question, &history, &signal, live).await;
        if let Err(f) = outcome {
            let stopped = signal.aborted();
            turn.update(|t| {
                t.status = if stopped {
                    Status::Stopped
                } else {
                    Status::Failed { message: f.message.clone(), retry_after: f.retry_after }
                }
            });
            live.set(if stopped { "Stopped.".into() } else { f.message });
        }
        self.controller.borrow_mut().take();
    }

    async fn ask_inner(
        self: &Rc<Self>,
        turn: RwSignal<TurnData>,
        question: &str,
        history: &History,
        signal: &web_sys::AbortSignal,
        live: RwSignal<String>,
    ) -> Result<(), Fail> {
        let index = self.index(turn).await?;
        // A proxy without a chat model is asked no chat request (no 503 per question).
        if self.cfg.proxy.is_some() && !self.offers().await.chat {
            self.chat_unavailable.set(true);
        }
        self.follow_page();
        turn.update(|t| t.status = Status::Searching);
        let Retrieved { result, rewritten, offline_reason, fallback } =
            self.retrieve(&index, question, history, signal).await?;
        if signal.aborted() {
            return Err(Fail::new("Stopped."));
        }
        let shown = if result.abstained { &result.closest } else { &result.hits };
        // A split index fetches the texts of what is shown or sent to the model.
        let chunks: Vec<usize> =
            shown.iter().flat_map(|h| h.section_chunks().iter().map(|&c| c as usize)).collect();
        crate::shards::ensure(&index, &self.cfg.index, index.shards_for_chunks(&chunks))
            .await
            .map_err(Fail::new)?;
        // Search and every shard fetch are done (BENCHMARKS §4.5 times `docent:ask` → here).
        mark("docent:found");
        let looked = looked_at(&index, shown);
        turn.update(|t| {
            t.looked_at = looked;
            t.rewritten = rewritten.clone();
            t.confidence = result.confidence;
            t.uncertain = result.uncertain;
            t.fallback = fallback;
        });
        if let Some(note) = turn.with_untracked(crate::scope::fallback_note) {
            live.set(note);
        }
        if result.abstained || result.hits.is_empty() {
            let closest: Vec<Hit> = result.closest.iter().take(CLOSEST * 2).cloned().collect();
            let sources = budget::group_sources(index.as_ref(), &closest, CLOSEST);
            turn.update(|t| {
                t.kind = AnswerKind::NotCovered;
                t.sources = source_views(&sources);
                t.status = Status::Done;
            });
            live.set(answer_complete(
                AnswerKind::NotCovered,
                turn.with_untracked(|t| t.sources.len()),
            ));
            return Ok(());
        }
        let offline_reason = offline_reason.or_else(|| {
            if self.cfg.proxy.is_none() {
                Some("Offline mode: no answer service is configured.".to_string())
            } else if self.chat_unavailable.get() {
                Some("The answer service has no chat model.".to_string())
            } else {
                None
            }
        });
        if let Some(reason) = offline_reason {
            self.answer_with_excerpts(turn, &index, &result, question, reason, live);
            return Ok(());
        }
        // An unsure search tells the model so, after the question.
        let model_question = docent_core::prompt::question_for_model(question, result.uncertain);
        // Token budget: byte upper bound first, exact counts only when it matters.
        let plan = {
            let bpe = self.bpe.borrow().clone();
            let first = match &bpe {
                Some(b) => self.plan(&index, &result.hits, history, &model_question, b.as_ref()),
                None => self.plan(&index, &result.hits, history, &model_question, &ByteBound),
            };
            let needs_exact = match &first {
                Ok(p) => p.needs_exact_count,
                Err(e) => e.needs_exact_count(),
            };
            if needs_exact && bpe.is_none() {
                turn.update(|t| t.notice = Some("Counting tokens precisely…".into()));
                let exact = self.load_ranks().await;
                turn.update(|t| t.notice = None);
                match exact {
                    Some(b) => {
                        self.plan(&index, &result.hits, history, &model_question, b.as_ref())
                    }
                    None => first,
                }
            } else {
                first
            }
        };
        let plan = plan.map_err(|e| Fail::new(format!("{}.", capitalise(&e.to_string()))))?;
        let sources = source_views(&plan.sources);
        turn.update(|t| {
            t.kind = AnswerKind::Model;
            t.sources = sources;
            t.status = Status::Thinking;
            if plan.dropped_turns > 0 {
                t.notice = Some(left_out_notice(plan.dropped_turns));
            }
        });
        match self.stream(turn, &index, &plan, signal, live).await {
            Ok(()) => {
                self.maybe_prefetch_ranks(plan.prompt_tokens);
                Ok(())
            }
            Err(StreamFail::Fallback(reason)) => {
                self.answer_with_excerpts(turn, &index, &result, question, reason, live);
                Ok(())
            }
            Err(StreamFail::Fail(f)) => Err(f),
        }
    }

    fn answer_with_excerpts(
        &self,
        turn: RwSignal<TurnData>,
        index: &Index,
        result: &SearchResult,
        question: &str,
        reason: String,
        live: RwSignal<String>,
    ) {
        let (md, sources) = self.excerpts(index, result, question);
        turn.update(|t| {
            t.kind = AnswerKind::Excerpts;
            t.answer = md.clone();
            t.sources = sources;
            t.notice = Some(reason);
            t.status = Status::Done;
        });
        live.set(answer_complete(AnswerKind::Excerpts, turn.with_untracked(|t| t.sources.len())));
    }

    async fn stream(
        &self,
        turn: RwSignal<TurnData>,
        index: &Index,
        plan: &Plan,
        signal: &web_sys::AbortSignal,
        live: RwSignal<String>,
    ) -> Result<(), StreamFail> {
        let (messages, dropped_turns) = (&plan.messages, plan.dropped_turns);
        let url = self.cfg.endpoint("/v1/chat/completions").expect("online mode has a proxy");
        let (href, _) = location();
        let body = Obj::new()
            .val("messages", messages_js(messages))
            .bool("stream", true)
            .val("stream_options", Obj::new().bool("include_usage", true))
            .val("docent", self.docent_field("answer", &href, Some(index)))
            .build();
        let resp = match net::post_json(&url, &body, Some(signal)).await {
            Ok(r) => r,
            Err(NetError::Aborted) => return Err(StreamFail::Fail(Fail::new("Stopped."))),
            Err(e) if e.is_unreachable() => return Err(StreamFail::Fallback(describe(&e).0)),
            Err(e) if e.code() == Some("no_chat_model") => {
                self.chat_unavailable.set(true);
                return Err(StreamFail::Fallback("The answer service has no chat model.".into()));
            }
            Err(e) => {
                let (message, retry_after) = describe(&e);
                return Err(StreamFail::Fail(Fail { message, retry_after }));
            }
        };
        // The proxy fits requests to the model with its own system prompt counted; what it left
        // out is reported like the widget's own trimming.
        let headers = resp.headers();
        let dropped = dropped_turns + self.learn_budget(&headers);
        let (cached, cache_key) = cache_of(&headers);
        turn.update(|t| {
            t.cached = cached;
            t.cache_key = cache_key;
        });
        if dropped > dropped_turns {
            turn.update(|t| t.notice = Some(left_out_notice(dropped)));
        }
        let mut reader =
            BodyReader::new(&resp).map_err(|e| StreamFail::Fail(Fail::new(describe(&e).0)))?;
        let mut parser = SseParser::default();
        let mut answer = String::new();
        let mut announced = false;
        let mut ended = false;
        // `docent:chunk` marks when each piece of the stream arrives (the latest answer's only):
        // BENCHMARKS.md §4.4 times from it to the answer's DOM update and the next frame.
        clear_marks("docent:chunk");
        while !ended {
            let events = match reader.next().await {
                Ok(Some(c)) => {
                    mark("docent:chunk");
                    parser.push(&c)
                }
                // The body ended: an event without its closing blank line still counts.
                Ok(None) => {
                    ended = true;
                    parser.finish().into_iter().collect()
                }
                // The aborted request already ended the stream: cancelling it too would leave
                // cancel()'s rejected promise unhandled (an "uncaught AbortError" in the page).
                Err(NetError::Aborted) => return Err(StreamFail::Fail(Fail::new("Stopped."))),
                Err(e) => {
                    return Err(StreamFail::Fail(Fail::new(format!(
                        "The connection broke while answering ({}). The partial answer is kept; try again.",
                        describe(&e).0
                    ))))
                }
            };
            let mut finished = false;
            let mut failure = None;
            for ev in events {
                match parse_chat_chunk(&ev.data) {
                    Ok(delta) => {
                        if let Some(message) = delta.error {
                            failure = Some(describe_stream_error(
                                delta.error_code.as_deref().unwrap_or(""),
                                &message,
                            ));
                            break;
                        }
                        if let Some(c) = delta.content {
                            answer.push_str(&c);
                        }
                        if delta.done {
                            finished = true;
                        }
                    }
                    Err(e) => web_sys::console::warn_1(
                        &format!("docent: skipped an unreadable stream event: {e}").into(),
                    ),
                }
            }
            if !answer.is_empty() {
                let a = answer.clone();
                turn.update(|t| {
                    t.answer = a;
                    t.status = Status::Streaming;
                });
                if !announced {
                    live.set(ANSWER_STARTED.into());
                    announced = true;
                }
            }
            if let Some(message) = failure {
                reader.cancel();
                return Err(StreamFail::Fail(Fail::new(message)));
            }
            if finished {
                break;
            }
        }
        if answer.trim().is_empty() {
            return Err(StreamFail::Fail(Fail::new(
                "The language model sent an empty answer. Try again.",
            )));
        }
        if ended {
            // No [DONE]: the connection closed early, so the answer may be cut off.
            turn.update(|t| {
                t.notice =
                    Some("The answer stream ended early; the answer may be incomplete.".into())
            });
        }
        // The answer is complete: check its cited sentences against the text the model was
        // given (in the lazily loaded cite module: `cite_module`); and when the model says the
        // docs don't cover it, the turn is declined.
        let texts = crate::cite_module::source_texts(&plan.sources, index);
        let unsupported =
            crate::cite_module::check_lazily(&answer, &texts).await.unwrap_or_default();
        let declined = docent_core::prompt::says_not_covered(&answer);
        turn.update(|t| {
            t.unsupported = unsupported;
            t.declined = declined;
            t.status = Status::Done;
        });
        live.set(answer_complete(AnswerKind::Model, turn.with_untracked(|t| t.sources.len())));
        Ok(())
    }

    /// The loaded index's checksum (16 hex digits), once loaded.
    pub fn index_checksum(&self) -> Option<String> {
        self.index.borrow().as_ref().map(|ix| format!("{:016x}", ix.checksum()))
    }

    /// What the proxy offers (asked once, `GET /healthz`): whether it has a chat model, and
    /// whether it records analytics. Without an answer (an older proxy, a network error) it is
    /// taken to have a chat model and no analytics, and asked again next time.
    pub async fn offers(&self) -> Offers {
        if let Some(o) = self.offers.get() {
            return o;
        }
        let Some(url) = self.cfg.endpoint("/healthz") else {
            return Offers { chat: false, analytics: false };
        };
        match net::get_json(&url).await {
            Ok(v) => {
                let o = Offers {
                    chat: !json::get(&v, "chat").is_null(),
                    analytics: json::boolean(&v, "analytics").unwrap_or(false),
                };
                self.offers.set(Some(o));
                o
            }
            Err(_) => Offers { chat: true, analytics: false },
        }
    }
}

/// What the proxy offers ([`Engine::offers`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Offers {
    /// It has a chat model.
    pub chat: bool,
    /// It records questions' outcomes (`[analytics]`).
    pub analytics: bool,
}

/// What a chat answer's headers say about the proxy's answer cache: whether it was a hit, and
/// the answer's key (docs/proxy.md, "Answer cache").
pub fn cache_of(headers: &web_sys::Headers) -> (bool, Option<String>) {
    let get = |name: &str| headers.get(name).ok().flatten();
    let key = get("x-docent-cache-key").filter(|k| k.len() == 64);
    (get("x-docent-cache").as_deref() == Some("hit"), key)
}

fn left_out_notice(messages: usize) -> String {
    format!("Older parts of the conversation ({messages} messages) were left out to fit the model.")
}

/// Chat messages as OpenAI's `[{"role", "content"}]`.
fn messages_js(messages: &[Message]) -> wasm_bindgen::JsValue {
    json::array(
        messages
            .iter()
            .map(|m| Obj::new().str("role", m.role.as_str()).str("content", &m.content).build()),
    )
}

/// What one `data:` payload of a chat completion stream says (the parts the widget uses).
#[derive(Debug, Default, PartialEq)]
pub struct ChunkDelta {
    /// New answer text.
    pub content: Option<String>,
    /// `[DONE]`.
    pub done: bool,
    /// An `{"error": {...}}` event's message.
    pub error: Option<String>,
    /// An `{"error": {...}}` event's `code`, when it has one.
    pub error_code: Option<String>,
}

/// The reader-facing message for an error event that ended a stream after the answer began
/// (docs/proxy.md, "Errors"): the partial answer stays on screen.
pub fn describe_stream_error(code: &str, message: &str) -> String {
    match code {
        "server_shutting_down" => "The answer service restarted and stopped this answer. The partial answer is kept; ask again in a moment.".into(),
        "upstream_timeout" => "The language model went silent mid-answer. The partial answer is kept; try again.".into(),
        _ => format!("The language model failed mid-answer ({message}). The partial answer is kept; try again."),
    }
}

/// Decode one `data:` payload of an OpenAI chat completion stream with the browser's JSON.parse
/// (the same reading as `docent_core::sse::parse_chat_chunk`, without linking serde_json's `Value`
/// into the wasm): `[DONE]`, a `chat.completion.chunk` (`choices[0].delta.content`, or
/// `message.content` of a non-streamed body), a usage-only chunk, or `{"error": ...}`.
pub fn parse_chat_chunk(data: &str) -> Result<ChunkDelta, String> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(ChunkDelta { done: true, ..ChunkDelta::default() });
    }
    let snippet: String = data.chars().take(120).collect();
    let v = json::parse(data)
        .map_err(|e| format!("the chat stream sent invalid JSON ({e}): {snippet}"))?;
    if !json::is_object(&v) {
        return Err(format!(
            "the chat stream sent an unexpected payload (not a chat.completion.chunk): {snippet}"
        ));
    }
    let err = json::get(&v, "error");
    if !err.is_undefined() {
        // Numbers and booleans as their JSON text (the browser formats them, not Rust's f64 Display).
        let text = |x: &wasm_bindgen::JsValue| {
            x.as_string().or_else(|| {
                (x.as_f64().is_some() || x.as_bool().is_some()).then(|| json::stringify(x))
            })
        };
        let message = if json::is_object(&err) {
            text(&json::get(&err, "message"))
        } else {
            text(&err).or_else(|| Some(json::stringify(&err)))
        };
        let code = if json::is_object(&err) { json::string(&err, "code") } else { None };
        return Ok(ChunkDelta {
            error: Some(message.unwrap_or_else(|| "unknown error".into())),
            error_code: code,
            ..ChunkDelta::default()
        });
    }
    let choices = json::get(&v, "choices");
    let usage = json::get(&v, "usage");
    if choices.is_undefined() && (usage.is_undefined() || usage.is_null()) {
        return Err(format!(
            "the chat stream sent an unexpected payload (not a chat.completion.chunk): {snippet}"
        ));
    }
    let first = json::at(&choices, 0);
    let content = json::string(&json::get(&first, "delta"), "content")
        .or_else(|| json::string(&json::get(&first, "message"), "content"));
    Ok(ChunkDelta { content, ..ChunkDelta::default() })
}

enum StreamFail {
    /// Answer with excerpts instead (no chat model, proxy unreachable).
    Fallback(String),
    Fail(Fail),
}

/// First letter upper-cased (by the browser: `char::to_uppercase` would link Unicode's upper-case
/// table into the wasm for this one use).
pub fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => String::from(js_sys::JsString::from(f.to_string()).to_upper_case()) + c.as_str(),
        None => String::new(),
    }
}

/// Model ids match ignoring a provider prefix ("sentence-transformers/all-MiniLM-L6-v2" = "all-MiniLM-L6-v2").
pub fn same_model(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.rsplit('/').next().unwrap_or(s).to_ascii_lowercase();
    a.eq_ignore_ascii_case(b) || norm(a) == norm(b)
}

//! The question pipeline: load the index, (rewrite,) embed, search, budget, stream, check —
//! or answer with excerpts when there is no chat model, or list the closest sections when the
//! docs don't cover the question.
//!
//! The pipeline ([`Engine::ask`]) reports every step as an [`Event`] pushed into a [`Sink`]
//! ([`sink`]); the widget's sink folds them into the turn's signal, and the view only reads
//! signals. The requests to the proxy and the reading of its answers are [`client`]'s; what the
//! reader is told is [`wording`]'s (and [`client::describe`]'s for proxy errors).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use docent_core::budget::{self, ModelLimits, Plan, PlanRequest};
use docent_core::cite::{ChunkSource, Mark, Source};
use docent_core::model::IndexHeader;
use docent_core::prompt::{Message, Template, DEFAULT_SYSTEM_TOKENS, DEFAULT_USER};
use docent_core::retrieve::{self, Ask};
use docent_core::search::{Hit, SearchOptions, SearchResult};
use docent_core::tokens::{ByteBound, TokenCounter};
use docent_core::Index;
use leptos::prelude::*;
use web_sys::AbortController;

use crate::config::{looks_non_english, Rewrite, WidgetConfig};
use crate::conversation::{AnswerKind, LookedAt, SourceView, Status, TurnData};
use crate::index_store;
use crate::net::NetError;
use crate::scope::Scope;
use crate::tokenizer::{self, JsCounter};

pub mod client;
pub mod sink;
pub mod wording;

pub use client::{cache_of, describe, same_model, Offers};
pub use sink::{apply, Event, Sink, TurnSink};
pub use wording::{answer_complete, capitalise, describe_stream_error, ANSWER_STARTED};
use wording::{COUNTING_TOKENS, EMPTY_ANSWER, ENDED_EARLY, NO_CHAT_MODEL, OFFLINE_MODE, STOPPED};

/// Hits offered as "closest sections" when the docs don't cover a question.
const CLOSEST: usize = 3;

/// The most answer text kept, in bytes. The renderer reads no further than twice its output
/// cap ([`crate::ui::MAX_RENDERED_BYTES`]), so the rest could never be shown; the few bytes
/// over make it say the answer was cut. Past this the stream is left: an upstream that ignores
/// `max_tokens`, or never ends, would fill the tab's memory and slow every render.
pub const MAX_ANSWER_BYTES: usize = 2 * crate::ui::MAX_RENDERED_BYTES + 4;

/// The part of a streamed piece `text` that fits after `kept` bytes of answer
/// ([`MAX_ANSWER_BYTES`], cut at a character boundary), and whether any of it was left out.
pub fn fitting(kept: usize, text: &str) -> (&str, bool) {
    let room = MAX_ANSWER_BYTES.saturating_sub(kept);
    if text.len() <= room {
        return (text, false);
    }
    (&text[..docent_core::text::floor_char_boundary(text, room)], true)
}

/// One widget's long-lived state outside the reactive graph.
pub struct Engine {
    /// The configuration.
    pub cfg: WidgetConfig,
    index: RefCell<Option<Rc<Index>>>,
    /// The proxy answered 503 `no_chat_model`: answer with excerpts for the rest of the page.
    chat_unavailable: Cell<bool>,
    /// The proxy answered 503 `no_embedding_model`: search by words for the rest of the page.
    embeddings_unavailable: Cell<bool>,
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
pub(crate) struct Fail {
    message: String,
    retry_after: Option<u32>,
}

impl Fail {
    pub(crate) fn new(message: impl Into<String>) -> Fail {
        Fail { message: message.into(), retry_after: None }
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
pub(crate) fn clear_marks(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        p.clear_marks_with_mark_name(name);
    }
}

/// The page's URL and path.
pub(crate) fn location() -> (String, String) {
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

impl Engine {
    /// A new engine for a config.
    pub fn new(cfg: WidgetConfig) -> Engine {
        Engine {
            cfg,
            index: RefCell::new(None),
            chat_unavailable: Cell::new(false),
            embeddings_unavailable: Cell::new(false),
            offers: Cell::new(None),
            bpe: RefCell::new(None),
            ranks_loading: Cell::new(false),
            controller: RefCell::new(None),
            proxy_system_tokens: Cell::new(None),
            proxy_window: Cell::new(None),
            scope: Scope::default(),
        }
    }

    /// Tokens of the system prompt the proxy adds: what it reported, else core's default
    /// prompt's (counted with cl100k when core was built, so its text is not in the wasm).
    pub fn system_tokens(&self) -> usize {
        self.proxy_system_tokens.get().unwrap_or(DEFAULT_SYSTEM_TOKENS)
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

    async fn index(&self, sink: &dyn Sink) -> Result<Rc<Index>, Fail> {
        if let Some(ix) = self.index.borrow().clone() {
            return Ok(ix);
        }
        let url = self.cfg.index.clone();
        let (ix, _origin) = index_store::load(&url, |received, total| {
            sink.push(Event::Status(Status::LoadingIndex { received, total }));
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
            // A split index with vectors by cluster: its nearest clusters' vectors only.
            nprobe: Some(docent_core::split::vectors::DEFAULT_NPROBE),
            ..SearchOptions::default()
        }
    }

    /// Whether to ask the chat model for a standalone query first: a follow-up, or a question in
    /// a language the docs are not written in (the index records how much of them is not
    /// English: [`docent_core::model::IndexHeader::docs_speak`]).
    fn wants_rewrite(&self, question: &str, history: &History, header: &IndexHeader) -> bool {
        match self.cfg.rewrite {
            Rewrite::Off => false,
            Rewrite::Always => true,
            Rewrite::Auto => {
                !history.questions.is_empty() || !header.docs_speak(looks_non_english(question))
            }
        }
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
        if online
            && !self.chat_unavailable.get()
            && self.wants_rewrite(question, history, index.header())
        {
            mark("docent:rewrite-start");
            let got = self.rewrite(question, history, signal).await;
            mark("docent:rewrite-end");
            match got {
                Ok(r) => rewritten = r,
                Err(NetError::Aborted) => return Err(Fail::new(STOPPED)),
                Err(e) if e.is_unreachable() => offline_reason = Some(describe(&e).0),
                Err(e) if client::is_no_chat_model(&e) => self.chat_unavailable.set(true),
                Err(e) if client::ends_the_turn(&e) => {
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
        if online
            && offline_reason.is_none()
            && header.dims > 0
            && header.provider != "none"
            && !self.embeddings_unavailable.get()
        {
            match self.embed(index, &ask.embedding_inputs(), signal).await {
                Ok(v) => vectors = v,
                Err(NetError::Aborted) => return Err(Fail::new(STOPPED)),
                Err(e) if e.is_unreachable() => offline_reason = Some(describe(&e).0),
                // A proxy without `[serve.embeddings]` (its startup log says so): search by words,
                // as with no proxy, rather than fail every question.
                Err(e) if client::is_no_embedding_model(&e) => {
                    web_sys::console::warn_1(&"docent: the proxy embeds no questions ([serve.embeddings]); searching by words".into());
                    self.embeddings_unavailable.set(true);
                }
                Err(e) if client::ends_the_turn(&e) => {
                    let (message, retry_after) = describe(&e);
                    return Err(Fail { message, retry_after });
                }
                // The embedding provider failed (or sent something unusable): this question is
                // searched by its words, and the answer still comes.
                Err(e) => web_sys::console::warn_1(
                    &format!("docent: searching by words, the question was not embedded: {e}")
                        .into(),
                ),
            }
        }
        // A split index fetches the postings of the question's terms first, and at once the
        // vectors of the clusters nearest it.
        let mut terms: Vec<&str> = vec![question];
        terms.extend(rewritten.as_deref());
        terms.extend(history.questions.iter().rev().take(2).map(String::as_str));
        let mut refs = index.shards_for_query(&terms);
        refs.extend(retrieve::vector_shards(index, &ask, &vectors, &opts));
        crate::shards::ensure(index, &self.cfg.index, refs).await.map_err(Fail::new)?;
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
        let system_tokens = self.system_tokens();
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

    /// Answer the question of `turn` into it. `live` receives what the live region announces:
    /// that the search and the answer started, and that the answer is complete with its number
    /// of sources. The pipeline itself is [`Engine::run`]; this is the widget's [`TurnSink`].
    pub async fn ask(
        self: Rc<Self>,
        turn: RwSignal<TurnData>,
        history: History,
        live: RwSignal<String>,
    ) {
        let question = turn.with_untracked(|t| t.question.clone());
        self.run(&TurnSink { turn, live }, &question, &history).await;
    }

    /// Answer `question`, pushing the turn's events into `sink`: [`Event::Started`] first, and
    /// last one of the events that end a turn (unless the browser lacks `AbortController`, when
    /// the only event is a failed [`Event::Status`]). A running question is aborted first.
    pub async fn run(self: Rc<Self>, sink: &dyn Sink, question: &str, history: &History) {
        self.abort();
        let controller = match AbortController::new() {
            Ok(c) => c,
            Err(_) => {
                sink.push(Event::Status(Status::Failed {
                    message: wording::NO_ABORT_CONTROLLER.into(),
                    retry_after: None,
                }));
                return;
            }
        };
        let signal = controller.signal();
        *self.controller.borrow_mut() = Some(controller);
        sink.push(Event::Started);
        let outcome = self.ask_inner(sink, question, history, &signal).await;
        if let Err(f) = outcome {
            sink.push(if signal.aborted() {
                Event::Stopped
            } else {
                Event::Failed { message: f.message, retry_after: f.retry_after }
            });
        }
        self.controller.borrow_mut().take();
    }

    async fn ask_inner(
        self: &Rc<Self>,
        sink: &dyn Sink,
        question: &str,
        history: &History,
        signal: &web_sys::AbortSignal,
    ) -> Result<(), Fail> {
        let index = self.index(sink).await?;
        // A proxy without a chat model is asked no chat request (no 503 per question).
        if self.cfg.proxy.is_some() && !self.offers().await.chat {
            self.chat_unavailable.set(true);
        }
        self.follow_page();
        sink.push(Event::Status(Status::Searching));
        let Retrieved { result, rewritten, offline_reason, fallback } =
            self.retrieve(&index, question, history, signal).await?;
        if signal.aborted() {
            return Err(Fail::new(STOPPED));
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
        sink.push(Event::Found {
            looked_at: looked_at(&index, shown),
            rewritten,
            confidence: result.confidence,
            uncertain: result.uncertain,
            fallback,
        });
        if result.abstained || result.hits.is_empty() {
            let closest: Vec<Hit> = result.closest.iter().take(CLOSEST * 2).cloned().collect();
            let sources = budget::group_sources(index.as_ref(), &closest, CLOSEST);
            sink.push(Event::NotCovered { sources: source_views(&sources) });
            return Ok(());
        }
        let offline_reason = offline_reason.or_else(|| {
            if self.cfg.proxy.is_none() {
                Some(OFFLINE_MODE.to_string())
            } else if self.chat_unavailable.get() {
                Some(NO_CHAT_MODEL.to_string())
            } else {
                None
            }
        });
        if let Some(reason) = offline_reason {
            self.answer_with_excerpts(sink, &index, &result, question, reason);
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
                sink.push(Event::Notice(Some(COUNTING_TOKENS.into())));
                let exact = self.load_ranks().await;
                sink.push(Event::Notice(None));
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
        sink.push(Event::Asking {
            sources: source_views(&plan.sources),
            notice: (plan.dropped_turns > 0).then(|| wording::left_out_notice(plan.dropped_turns)),
        });
        match self.stream(sink, &index, &plan, signal).await {
            Ok(()) => {
                self.maybe_prefetch_ranks(plan.prompt_tokens);
                Ok(())
            }
            Err(StreamFail::Fallback(reason)) => {
                self.answer_with_excerpts(sink, &index, &result, question, reason);
                Ok(())
            }
            Err(StreamFail::Fail(f)) => Err(f),
        }
    }

    fn answer_with_excerpts(
        &self,
        sink: &dyn Sink,
        index: &Index,
        result: &SearchResult,
        question: &str,
        reason: String,
    ) {
        let (markdown, sources) = self.excerpts(index, result, question);
        sink.push(Event::Excerpts { markdown, sources, reason });
    }

    /// Stream the model's answer to `plan` into the sink, then check its citations.
    async fn stream(
        &self,
        sink: &dyn Sink,
        index: &Index,
        plan: &Plan,
        signal: &web_sys::AbortSignal,
    ) -> Result<(), StreamFail> {
        let client::Answer { mut stream, dropped, cached, cache_key } =
            self.start_answer(index, plan, signal).await?;
        sink.push(Event::Cache { hit: cached, key: cache_key });
        // What the proxy left out is reported like the widget's own trimming.
        if dropped > 0 {
            sink.push(Event::Notice(Some(wording::left_out_notice(plan.dropped_turns + dropped))));
        }
        let mut answer = String::new();
        while !stream.ended() {
            let batch = match stream.next().await {
                Ok(b) => b,
                // The aborted request already ended the stream: cancelling it too would leave
                // cancel()'s rejected promise unhandled (an "uncaught AbortError" in the page).
                Err(NetError::Aborted) => return Err(StreamFail::Fail(Fail::new(STOPPED))),
                Err(e) => {
                    return Err(StreamFail::Fail(Fail::new(wording::connection_broke(
                        &describe(&e).0,
                    ))))
                }
            };
            let (text, full) = fitting(answer.len(), &batch.text);
            if !text.is_empty() {
                answer.push_str(text);
                sink.push(Event::Delta(text.to_string()));
            }
            if full {
                // Long enough to show no more: the rest is not read (the answer says it was cut).
                stream.cancel();
                break;
            }
            if let Some(message) = batch.error {
                stream.cancel();
                return Err(StreamFail::Fail(Fail::new(message)));
            }
            if batch.done {
                break;
            }
        }
        if answer.trim().is_empty() {
            return Err(StreamFail::Fail(Fail::new(EMPTY_ANSWER)));
        }
        if stream.ended() {
            // No [DONE]: the connection closed early, so the answer may be cut off.
            sink.push(Event::Notice(Some(ENDED_EARLY.into())));
        }
        // The answer is complete: check its cited sentences against the text the model was
        // given (in the lazily loaded cite module: `cite_module`); and when the model says the
        // docs don't cover it, the turn is declined.
        let texts = crate::cite_module::source_texts(&plan.sources, index);
        let unsupported =
            crate::cite_module::check_lazily(&answer, &texts).await.unwrap_or_default();
        let declined = docent_core::prompt::says_not_covered(&answer);
        sink.push(Event::Answered { unsupported, declined });
        Ok(())
    }

    /// The loaded index's checksum (16 hex digits), once loaded.
    pub fn index_checksum(&self) -> Option<String> {
        self.index.borrow().as_ref().map(|ix| format!("{:016x}", ix.checksum()))
    }
}

/// Why a streamed answer did not happen.
pub(crate) enum StreamFail {
    /// Answer with excerpts instead (no chat model, proxy unreachable).
    Fallback(String),
    /// End the turn.
    Fail(Fail),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streamed_answer_is_kept_up_to_the_cap_cut_at_a_character() {
        assert_eq!(fitting(0, "abc"), ("abc", false));
        assert_eq!(fitting(MAX_ANSWER_BYTES - 3, "abc"), ("abc", false));
        // "a" 1 byte, "é" 2, "€" 3: three bytes of room hold "aé".
        assert_eq!(fitting(MAX_ANSWER_BYTES - 3, "aé€"), ("aé", true));
        assert_eq!(fitting(MAX_ANSWER_BYTES - 2, "€"), ("", true));
        assert_eq!(fitting(MAX_ANSWER_BYTES, "x"), ("", true));
        assert_eq!(fitting(MAX_ANSWER_BYTES, ""), ("", false));
    }

    #[test]
    fn what_is_kept_of_an_endless_answer_renders_as_cut() {
        // Even text that shows little (link definitions show nothing) says it was cut.
        let mut answer = String::from("Intro.\n\n");
        let mut full = false;
        while !full {
            let (text, cut) = fitting(answer.len(), "[a]: /b\n");
            answer.push_str(text);
            full = cut;
        }
        assert_eq!(answer.len(), MAX_ANSWER_BYTES);
        let turn = TurnData { answer, ..TurnData::default() };
        let r = crate::ui::render_answer(&turn, None);
        assert!(r.truncated && r.html == "<p>Intro.</p>", "{}", r.html);
    }
}

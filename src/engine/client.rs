//! The proxy client: the requests the turn pipeline makes (`/v1/chat/completions` for rewrites
//! and answers, `/v1/embeddings`, `/healthz`), what their answers' headers say, the streamed
//! answer's reading, and the reader-facing wording of proxy errors ([`describe`]).
//!
//! The contract with the proxy (header names, error codes, the `docent` field, the chunk
//! decoder) is `docent_core::wire`'s; this module only speaks it from the browser.

use docent_core::budget::Plan;
use docent_core::prompt::Message;
use docent_core::retrieve;
use docent_core::source::safety::is_unseen_control;
use docent_core::sse::SseParser;
use docent_core::wire::{self, DocentField, ErrorCode, Task};
use docent_core::Index;

use super::wording::{self, NO_CHAT_MODEL, STOPPED};
use super::{clear_marks, location, mark, Engine, Fail, History, StreamFail};
use crate::json::{self, Obj};
use crate::net::{self, BodyReader, NetError};

/// The reader-facing message for a proxy error, and the seconds to wait before retrying.
pub fn describe(err: &NetError) -> (String, Option<u32>) {
    match err {
        NetError::Unreachable(m) => (
            format!(
                "Couldn't reach the answer service ({m}). Check your connection and try again."
            ),
            None,
        ),
        NetError::Aborted => (STOPPED.into(), None),
        NetError::BadResponse(m) => {
            (format!("The answer service sent something unexpected ({m}). Try again."), None)
        }
        NetError::Http { status, code, message, retry_after, categories } => {
            use ErrorCode::*;
            let msg = match ErrorCode::parse(code) {
                Some(RateLimited) => match retry_after {
                    Some(s) => format!("Too many questions right now. Try again in {s} seconds."),
                    None => "Too many questions right now. Try again in a minute.".into(),
                },
                Some(ContentFlagged) => {
                    if categories.is_empty() {
                        "The question was blocked by the content filter, so it was not sent. Rephrase it and try again.".into()
                    } else {
                        format!(
                            "The question was blocked by the content filter ({}), so it was not sent. Rephrase it and try again.",
                            categories.join(", ")
                        )
                    }
                }
                Some(UpstreamError) => "The language model behind the answer service failed. Try again in a moment.".into(),
                Some(ModerationFailed) => "The answer service could not check the question with its content filter, so it was not answered. Try again in a moment.".into(),
                Some(RequestTimeout) => "The question took too long to reach the answer service (a slow or interrupted connection). Try again.".into(),
                Some(ServerShuttingDown) => "The answer service is restarting. Ask again in a moment.".into(),
                Some(UpstreamTimeout) => "The language model took too long to answer. Try again in a moment.".into(),
                Some(BodyTooLarge | TooManyMessages | InputTooLong | ContextLengthExceeded) => {
                    "The conversation is too long for the answer service. Start a new conversation and ask again.".into()
                }
                Some(OriginNotAllowed) => {
                    "This site is not allowed to use the answer service (origin not allowed); the site owner must add it to the proxy's allow-origin list.".into()
                }
                Some(EmbeddingModelMismatch) => format!("The docs index and the answer service disagree on the embedding model ({message}). The site owner must rebuild the index or fix the proxy's embedding model."),
                _ if *status >= 500 => format!("The answer service had a problem (HTTP {status}: {message}). Try again in a moment."),
                _ => format!("The answer service refused the question (HTTP {status}: {message})."),
            };
            (msg, *retry_after)
        }
    }
}

/// The error names one of these codes.
fn is(err: &NetError, codes: &[ErrorCode]) -> bool {
    err.code().and_then(ErrorCode::parse).is_some_and(|c| codes.contains(&c))
}

/// A failure of a step before the answer (the rewrite, the question's embedding) that ends the
/// turn: the reader must wait, rephrase, or cannot use the service from this site, or the proxy
/// embeds with another model than the index's. The rest only skip the step: no rewrite, or the
/// question searched by its words, as with no proxy.
pub(super) fn ends_the_turn(err: &NetError) -> bool {
    matches!(err, NetError::Http { .. })
        && is(
            err,
            &[
                ErrorCode::RateLimited,
                ErrorCode::ContentFlagged,
                ErrorCode::OriginNotAllowed,
                ErrorCode::EmbeddingModelMismatch,
            ],
        )
}

/// The proxy has no chat model (503 `no_chat_model`).
pub(super) fn is_no_chat_model(err: &NetError) -> bool {
    is(err, &[ErrorCode::NoChatModel])
}

/// The proxy embeds no questions (503 `no_embedding_model`: no `[serve.embeddings]`).
pub(super) fn is_no_embedding_model(err: &NetError) -> bool {
    is(err, &[ErrorCode::NoEmbeddingModel])
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
    let key = get(wire::CACHE_KEY_HEADER).filter(|k| wire::is_cache_key(k));
    (get(wire::CACHE_HEADER).as_deref() == Some(wire::CACHE_HIT), key)
}

/// Model ids match ignoring a provider prefix ("sentence-transformers/all-MiniLM-L6-v2" = "all-MiniLM-L6-v2").
pub fn same_model(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.rsplit('/').next().unwrap_or(s).to_ascii_lowercase();
    a.eq_ignore_ascii_case(b) || norm(a) == norm(b)
}

/// Chat messages as OpenAI's `[{"role", "content"}]`.
fn messages_js(messages: &[Message]) -> wasm_bindgen::JsValue {
    json::array(
        messages
            .iter()
            .map(|m| Obj::new().str("role", m.role.as_str()).str("content", &m.content).build()),
    )
}

/// A started answer: its stream and what its headers said.
pub(super) struct Answer {
    /// The body, decoded.
    pub stream: AnswerStream,
    /// Older messages the proxy left out to fit (its `x-docent-dropped-messages`).
    pub dropped: usize,
    /// Replayed from the proxy's answer cache.
    pub cached: bool,
    /// The answer's cache key.
    pub cache_key: Option<String>,
}

impl Engine {
    /// Learn the proxy's budget from a chat answer's headers (docs/proxy.md, "Context window"):
    /// its system prompt's cost and its context window, used by every later plan. Returns how
    /// many of the oldest messages the proxy left out of this request to fit.
    pub fn learn_budget(&self, headers: &web_sys::Headers) -> usize {
        let num = |name: &str| {
            headers.get(name).ok().flatten().and_then(|v| v.trim().parse::<usize>().ok())
        };
        if let Some(n) = num(wire::SYSTEM_TOKENS_HEADER) {
            self.proxy_system_tokens.set(Some(n));
        }
        if let Some(w) = num(wire::CONTEXT_WINDOW_HEADER).filter(|w| *w > 0) {
            self.proxy_window.set(Some(w));
        }
        num(wire::DROPPED_MESSAGES_HEADER).unwrap_or(0)
    }

    /// The `docent` field of chat requests ([`DocentField`]: task, language hint, page) for the
    /// proxy; answers also name the index (its checksum) and namespace they were searched in,
    /// which the proxy's answer cache keys on.
    fn docent_field(&self, task: Task, page: &str, index: Option<&Index>) -> wasm_bindgen::JsValue {
        let namespace = index.and_then(|_| self.scope.namespace());
        Obj::new()
            .str(DocentField::TASK, task.as_str())
            .opt_str(DocentField::LANGUAGE, self.cfg.language.as_deref())
            .str(DocentField::PAGE, page)
            .opt_str(
                DocentField::INDEX,
                index.map(|ix| format!("{:016x}", ix.checksum())).as_deref(),
            )
            .opt_str(DocentField::NAMESPACE, namespace.as_deref())
            .build()
    }

    /// Ask the proxy to rewrite a follow-up into a standalone search query (not streamed).
    pub(super) async fn rewrite(
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
            .val(wire::DOCENT_FIELD, self.docent_field(Task::Rewrite, &href, None))
            .build();
        let v = net::post_json_value(&url, &body, Some(signal)).await?;
        let content =
            json::string(&json::get(&json::at(&json::get(&v, "choices"), 0), "message"), "content")
                .unwrap_or_default();
        Ok(retrieve::clean_rewrite(&content, question))
    }

    /// Embed the queries with the proxy, which must use the index's model and query prompt.
    pub(super) async fn embed(
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
                code: ErrorCode::EmbeddingModelMismatch.as_str().into(),
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

    /// Ask the proxy for the streamed answer to `plan`. A proxy that cannot be reached or has
    /// no chat model means excerpts instead; any other error ends the turn.
    pub(super) async fn start_answer(
        &self,
        index: &Index,
        plan: &Plan,
        signal: &web_sys::AbortSignal,
    ) -> Result<Answer, StreamFail> {
        let url = self.cfg.endpoint("/v1/chat/completions").expect("online mode has a proxy");
        let (href, _) = location();
        let body = Obj::new()
            .val("messages", messages_js(&plan.messages))
            .bool("stream", true)
            .val("stream_options", Obj::new().bool("include_usage", true))
            .val(wire::DOCENT_FIELD, self.docent_field(Task::Answer, &href, Some(index)))
            .build();
        let resp = match net::post_json(&url, &body, Some(signal)).await {
            Ok(r) => r,
            Err(NetError::Aborted) => return Err(StreamFail::Fail(Fail::new(STOPPED))),
            Err(e) if e.is_unreachable() => return Err(StreamFail::Fallback(describe(&e).0)),
            Err(e) if is_no_chat_model(&e) => {
                self.chat_unavailable.set(true);
                return Err(StreamFail::Fallback(NO_CHAT_MODEL.into()));
            }
            Err(e) => {
                let (message, retry_after) = describe(&e);
                return Err(StreamFail::Fail(Fail { message, retry_after }));
            }
        };
        // The proxy fits requests to the model with its own system prompt counted; what it left
        // out is reported like the widget's own trimming.
        let headers = resp.headers();
        let dropped = self.learn_budget(&headers);
        let (cached, cache_key) = cache_of(&headers);
        let reader =
            BodyReader::new(&resp).map_err(|e| StreamFail::Fail(Fail::new(describe(&e).0)))?;
        Ok(Answer { stream: AnswerStream::new(reader), dropped, cached, cache_key })
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

/// What one read of a streamed answer brought.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Batch {
    /// New answer text (may be empty).
    pub text: String,
    /// `[DONE]` arrived.
    pub done: bool,
    /// An error event ended the answer: the reader-facing message.
    pub error: Option<String>,
}

impl Batch {
    /// Fold one event's `data:` into the batch (core's decoder, [`wire::parse_chat_chunk`]);
    /// after an error event the rest is ignored. Control characters other than tab and newline
    /// are left out of the text: the page never shows them (`render`), and the answer is also
    /// what "Copy" puts on the reader's clipboard (`ESC[201~` ends a terminal's bracketed paste).
    fn take(&mut self, data: &str) {
        if self.error.is_some() {
            return;
        }
        match wire::parse_chat_chunk(data) {
            Ok(delta) => {
                if let Some(e) = delta.error {
                    self.error = Some(wording::describe_stream_error(
                        e.code.as_deref().unwrap_or(""),
                        &e.message,
                    ));
                    return;
                }
                if let Some(c) = delta.content {
                    self.text.extend(c.chars().filter(|&c| !is_unseen_control(c)));
                }
                self.done |= delta.done;
            }
            Err(e) => web_sys::console::warn_1(
                &format!("docent: skipped an unreadable stream event: {e}").into(),
            ),
        }
    }
}

/// A streamed answer being read: the response body's server-sent events, decoded.
pub(super) struct AnswerStream {
    reader: BodyReader,
    parser: SseParser,
    ended: bool,
}

impl AnswerStream {
    fn new(reader: BodyReader) -> AnswerStream {
        // `docent:chunk` marks when each piece of the stream arrives (the latest answer's only):
        // BENCHMARKS.md §4.4 times from it to the answer's DOM update and the next frame.
        clear_marks("docent:chunk");
        AnswerStream { reader, parser: SseParser::default(), ended: false }
    }

    /// The body ended (with or without `[DONE]`).
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Read the next piece of the body.
    pub async fn next(&mut self) -> Result<Batch, NetError> {
        let events = match self.reader.next().await? {
            Some(c) => {
                mark("docent:chunk");
                self.parser.push(&c)
            }
            // The body ended: an event without its closing blank line still counts.
            None => {
                self.ended = true;
                self.parser.finish().into_iter().collect()
            }
        };
        let mut batch = Batch::default();
        for ev in events {
            batch.take(&ev.data);
        }
        Ok(batch)
    }

    /// Stop reading (after an error event).
    pub fn cancel(&self) {
        self.reader.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http_with(status: u16, code: &str, retry_after: Option<u32>, cat: &[&str]) -> NetError {
        NetError::Http {
            status,
            code: code.into(),
            message: "internal words".into(),
            retry_after,
            categories: cat.iter().map(|c| c.to_string()).collect(),
        }
    }

    fn http(status: u16, code: &str) -> NetError {
        http_with(status, code, None, &[])
    }

    #[test]
    fn proxy_errors_are_worded_for_the_reader() {
        let said = |status, code| describe(&http(status, code)).0;
        assert!(said(429, "rate_limited").contains("in a minute"));
        let limited = http_with(429, "rate_limited", Some(7), &[]);
        assert_eq!(
            describe(&limited),
            ("Too many questions right now. Try again in 7 seconds.".into(), Some(7))
        );
        assert!(said(400, "context_length_exceeded").contains("Start a new conversation"));
        assert!(said(413, "body_too_large").contains("Start a new conversation"));
        assert!(said(403, "origin_not_allowed").contains("allow-origin"));
        assert!(said(400, "embedding_model_mismatch").contains("(internal words)"));
        for code in
            ["moderation_failed", "request_timeout", "server_shutting_down", "upstream_error"]
        {
            let m = said(502, code);
            assert!(!m.contains("internal words") && !m.contains("HTTP"), "{code}: {m}");
        }
        assert!(said(500, "http_500").contains("HTTP 500: internal words"));
        assert!(said(404, "not_found").contains("refused the question (HTTP 404"));
        let flagged = http_with(400, "content_flagged", None, &["violence"]);
        assert!(describe(&flagged).0.contains("content filter (violence)"));
        assert_eq!(describe(&NetError::Aborted).0, "Stopped.");
        assert!(describe(&NetError::Unreachable("offline".into())).0.contains("Couldn't reach"));
    }

    #[test]
    fn only_some_errors_before_the_answer_end_the_turn() {
        assert!(ends_the_turn(&http(429, "rate_limited")));
        assert!(ends_the_turn(&http(400, "content_flagged")));
        assert!(ends_the_turn(&http(403, "origin_not_allowed")));
        assert!(ends_the_turn(&http(400, "embedding_model_mismatch")));
        // The rest skip the step: a failing embedding provider leaves the words to search by.
        assert!(!ends_the_turn(&http(502, "upstream_error")));
        assert!(!ends_the_turn(&http(504, "upstream_timeout")));
        assert!(!ends_the_turn(&http(500, "http_500")));
        assert!(!ends_the_turn(&NetError::BadResponse("x".into())));
        // The proxy's own queue is full (the in-process model): not the asker's limit.
        assert!(!ends_the_turn(&http(503, "server_busy")));
        assert!(is_no_chat_model(&http(503, "no_chat_model")));
        assert!(!is_no_chat_model(&http(503, "limits_unavailable")));
    }

    #[test]
    fn model_ids_match_without_their_provider_prefix() {
        assert!(same_model("sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2"));
        assert!(!same_model("text-embedding-3-small", "text-embedding-3-large"));
    }

    #[test]
    fn a_batch_collects_text_until_done_or_an_error_event() {
        let mut b = Batch::default();
        b.take(r#"{"choices":[{"delta":{"content":"Hi "}}]}"#);
        b.take(r#"{"choices":[{"delta":{"content":"[1]"}}]}"#);
        b.take(r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#);
        b.take("[DONE]");
        assert_eq!(b, Batch { text: "Hi [1]".into(), done: true, error: None });
        let mut b = Batch::default();
        b.take(r#"{"choices":[{"delta":{"content":"Par"}}]}"#);
        b.take(r#"{"error":{"message":"restarting","code":"server_shutting_down"}}"#);
        b.take(r#"{"choices":[{"delta":{"content":"tial"}}]}"#);
        assert_eq!(b.text, "Par");
        assert!(b.error.unwrap().contains("restarted and stopped this answer"));
    }

    #[test]
    fn control_characters_never_reach_the_answer_a_reader_copies() {
        let mut b = Batch::default();
        b.take(r#"{"choices":[{"delta":{"content":"echo hi\u001b[201~\r\n\u009b2J\u0000"}}]}"#);
        b.take(r#"{"choices":[{"delta":{"content":"rm\tx\u0007\u007f"}}]}"#);
        assert_eq!(b.text, "echo hi[201~\n2Jrm\tx");
    }
}

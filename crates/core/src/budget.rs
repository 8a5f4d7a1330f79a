//! Token budgeting: which retrieved chunks and which conversation turns go into the request.
//!
//! Budget = the model's context window − the answer reserve. The docs context gets its own cap
//! ([`ModelLimits::docs_cap`]) and is filled first: the hits are sections, and the best chunk of
//! every section goes in (in rank order) before any section's second-best ([`chunks_in_order`]),
//! grouped per page into numbered [`Source`]s (from [`crate::cite`]); then the conversation history, newest turns first, dropping the
//! oldest; the current question is always kept, and a question that alone does not fit is a
//! [`BudgetError::QuestionTooLong`]. Message overhead is counted as OpenAI's cookbook does
//! ([`crate::tokens::count_message_tokens`]).
//!
//! Chunk sizes come precomputed in the index (`Chunk::tokens`, cl100k), so the browser normally
//! plans with the free [`crate::tokens::ByteBound`] for the rest; when that upper bound comes near
//! the budget, [`Plan::needs_exact_count`] asks the caller to load the ranks and re-plan with
//! [`crate::tokens::Bpe`].

use crate::cite::{ChunkSource, Source};
use crate::prompt::{format_sources, source_header, Message, PromptError, Role, Template};
use crate::search::Hit;
use crate::tokens::{message_tokens, TokenCounter, REPLY_PRIMING_TOKENS, TOKENS_PER_MESSAGE};
use serde::{Deserialize, Serialize};

/// A model's limits, in tokens. Every field can be overridden (it is plain data, and
/// deserialises from `{"context_window": .., "answer_reserve": .., "docs_cap": ..}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelLimits {
    /// The model's context window (prompt + answer).
    pub context_window: usize,
    /// Tokens kept free for the answer.
    pub answer_reserve: usize,
    /// At most this many tokens of documentation per request (cost and focus).
    pub docs_cap: usize,
}

impl ModelLimits {
    /// Conservative limits for a model we don't know: an 8k context.
    pub const UNKNOWN: ModelLimits =
        ModelLimits { context_window: 8_192, answer_reserve: 1_024, docs_cap: 3_000 };

    /// Defaults for a model name (case-insensitive; provider prefixes such as `openai/` and
    /// Ollama tags such as `:8b` are ignored): gpt-4o, gpt-4o-mini (128k), gpt-4.1* (1M),
    /// gpt-3.5-turbo (16k), llama3 (8k; llama3.1+ 128k); anything else gets [`Self::UNKNOWN`].
    pub fn for_model(name: &str) -> ModelLimits {
        let lower = name.trim().to_ascii_lowercase();
        let base = lower.rsplit('/').next().unwrap_or(&lower);
        let base = base.split(':').next().unwrap_or(base);
        let m = |context_window, answer_reserve, docs_cap| ModelLimits {
            context_window,
            answer_reserve,
            docs_cap,
        };
        if base.starts_with("gpt-4.1") {
            m(1_047_576, 4_096, 6_000)
        } else if base.starts_with("gpt-4o") || base.starts_with("chatgpt-4o") {
            m(128_000, 4_096, 6_000)
        } else if base.starts_with("gpt-3.5-turbo") {
            m(16_385, 1_024, 4_000)
        } else if ["llama3.1", "llama3.2", "llama3.3", "llama-3.1", "llama-3.2", "llama-3.3"]
            .iter()
            .any(|p| base.starts_with(p))
        {
            m(131_072, 2_048, 6_000)
        } else if base.starts_with("llama3")
            || base.starts_with("llama-3")
            || base.starts_with("meta-llama-3")
        {
            m(8_192, 1_024, 3_000)
        } else {
            ModelLimits::UNKNOWN
        }
    }

    /// Tokens available for the prompt: context window − answer reserve.
    pub fn prompt_budget(&self) -> usize {
        self.context_window.saturating_sub(self.answer_reserve)
    }
}

impl Default for ModelLimits {
    fn default() -> Self {
        ModelLimits::UNKNOWN
    }
}

/// Everything [`plan`] needs.
pub struct PlanRequest<'a> {
    /// Where hit chunks come from (normally the [`crate::Index`]).
    pub index: &'a dyn ChunkSource,
    /// Search hits, best first.
    pub hits: &'a [Hit],
    /// Earlier turns (user/assistant), oldest first. System messages are not allowed here and
    /// are left out.
    pub history: &'a [Message],
    /// The current question.
    pub question: &'a str,
    /// The user message template, with `{sources}` and `{question}` (e.g. [`crate::prompt::DEFAULT_USER`]).
    pub user_template: &'a Template,
    /// Tokens of the system prompt's content that the proxy adds (0 for none); its per-message
    /// overhead is added by the planner.
    pub system_tokens: usize,
    /// The model's limits.
    pub limits: ModelLimits,
    /// Token counter for texts (history, question, template): [`crate::tokens::ByteBound`] or
    /// [`crate::tokens::Bpe`]. Chunk sizes come from `Chunk::tokens`.
    pub counter: &'a dyn TokenCounter,
}

/// The planned request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Kept history + the final user message (sources + question). No system message.
    pub messages: Vec<Message>,
    /// The numbered sources in the final user message.
    pub sources: Vec<Source>,
    /// Estimated prompt tokens including the system prompt and message overhead (an upper bound
    /// when the counter is [`crate::tokens::ByteBound`]).
    pub prompt_tokens: usize,
    /// History messages left out (oldest first) to fit the budget.
    pub dropped_turns: usize,
    /// True when the counter was only an upper bound and the plan came near the budget (turns or
    /// docs were cut, or within the margin): load the ranks and plan again with an exact counter.
    pub needs_exact_count: bool,
}

/// Why no plan could be made.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BudgetError {
    /// The question alone (with the prompt's fixed parts) does not fit.
    #[error("the question is too long for this model: it needs {question_tokens} tokens{approx} but only {available} are available; shorten the question{hint}",
        approx = if *estimated { " (estimated)" } else { "" },
        hint = if *estimated { " (or count exactly: this was an upper-bound estimate)" } else { "" })]
    QuestionTooLong {
        /// Tokens of the question.
        question_tokens: usize,
        /// Tokens available for it.
        available: usize,
        /// True when the count was an upper bound: an exact count may still fit.
        estimated: bool,
    },
    /// Nothing to ask.
    #[error("the question is empty; type a question")]
    EmptyQuestion,
    /// The answer reserve leaves no room for a prompt.
    #[error("model limits leave no room for a prompt (context window {context_window}, answer reserve {answer_reserve}); raise the context window or lower the answer reserve")]
    InvalidLimits {
        /// The configured context window.
        context_window: usize,
        /// The configured answer reserve.
        answer_reserve: usize,
    },
    /// The user template is malformed or uses an unknown placeholder.
    #[error("user prompt template: {0}")]
    Template(#[from] PromptError),
}

impl BudgetError {
    /// True when the error came from an upper-bound estimate, so an exact count may succeed.
    pub fn needs_exact_count(&self) -> bool {
        matches!(self, BudgetError::QuestionTooLong { estimated: true, .. })
    }
}

/// Tokens allowed for joining pieces ("\n\n" separators, BPE merges across boundaries).
const JOIN_TOKENS: usize = 2;

/// The chunks of section hits (best first) in the order they are offered to the prompt: the
/// best chunk of every section in rank order, then every section's second chunk, and so on, so
/// a tight budget holds the best text of as many sections as it can.
pub fn chunks_in_order(hits: &[Hit]) -> Vec<u32> {
    let deepest = hits.iter().map(|h| h.section_chunks().len()).max().unwrap_or(0);
    let mut out: Vec<u32> = Vec::new();
    for depth in 0..deepest {
        for hit in hits {
            if let Some(&c) = hit.section_chunks().get(depth) {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// Group the chunks of section hits into numbered per-page sources, taking them in
/// [`chunks_in_order`] while they fit in `room` tokens (chunk tokens + a new source's header).
/// Returns the sources, the tokens used, and whether a chunk was left out.
fn select_sources(
    index: &dyn ChunkSource,
    hits: &[Hit],
    counter: &dyn TokenCounter,
    mut room: usize,
    max_sources: usize,
) -> (Vec<Source>, usize, bool) {
    let mut sources: Vec<Source> = Vec::new();
    let mut pages: Vec<String> = Vec::new();
    let mut used = 0usize;
    let mut skipped = false;
    for id in chunks_in_order(hits) {
        let Some(chunk) = index.chunk_at(id) else { continue };
        let text_tokens = if chunk.tokens > 0 || chunk.text.is_empty() {
            chunk.tokens as usize
        } else {
            counter.count(&chunk.text)
        };
        let mut cost = text_tokens + JOIN_TOKENS;
        let existing = pages.iter().position(|p| *p == chunk.url);
        let new_source = if existing.is_none() {
            if sources.len() >= max_sources {
                skipped = true;
                continue;
            }
            let s = Source {
                n: sources.len() + 1,
                url: chunk.link(),
                title: chunk.title.clone(),
                breadcrumb: chunk.breadcrumb_display(),
                chunks: vec![id],
            };
            cost += counter.count(&source_header(&s)) + JOIN_TOKENS;
            Some(s)
        } else {
            None
        };
        if cost > room {
            skipped = true;
            continue;
        }
        room -= cost;
        used += cost;
        match (existing, new_source) {
            (Some(i), _) => {
                let list = &mut sources[i].chunks;
                let at = list.partition_point(|&c| c < id);
                list.insert(at, id);
            }
            (None, Some(s)) => {
                pages.push(chunk.url.clone());
                sources.push(s);
            }
            (None, None) => unreachable!("a new page always makes a source"),
        }
    }
    (sources, used, skipped)
}

/// Group section hits (best first) into at most `max_sources` numbered per-page sources, with
/// no token limit (extractive answers, "what I looked at").
pub fn group_sources(index: &dyn ChunkSource, hits: &[Hit], max_sources: usize) -> Vec<Source> {
    struct Zero;
    impl TokenCounter for Zero {
        fn count(&self, _: &str) -> usize {
            0
        }
    }
    select_sources(index, hits, &Zero, usize::MAX, max_sources).0
}

/// Plan one request: see the module docs.
pub fn plan(req: &PlanRequest<'_>) -> Result<Plan, BudgetError> {
    let counter = req.counter;
    let limits = req.limits;
    let budget = limits.prompt_budget();
    if budget == 0 {
        return Err(BudgetError::InvalidLimits {
            context_window: limits.context_window,
            answer_reserve: limits.answer_reserve,
        });
    }
    let question = req.question.trim();
    if question.is_empty() {
        return Err(BudgetError::EmptyQuestion);
    }
    let skeleton = req.user_template.render(&[("sources", ""), ("question", "")])?;
    let system = if req.system_tokens > 0 {
        TOKENS_PER_MESSAGE + counter.count(Role::System.as_str()) + req.system_tokens
    } else {
        0
    };
    let fixed = REPLY_PRIMING_TOKENS
        + system
        + TOKENS_PER_MESSAGE
        + counter.count(Role::User.as_str())
        + counter.count(&skeleton)
        + JOIN_TOKENS;
    let q = counter.count(question);
    if fixed + q > budget {
        return Err(BudgetError::QuestionTooLong {
            question_tokens: q,
            available: budget.saturating_sub(fixed),
            estimated: !counter.exact(),
        });
    }
    let after_question = budget - fixed - q;
    let docs_room = limits.docs_cap.min(after_question);
    let (sources, docs_tokens, skipped) =
        select_sources(req.index, req.hits, counter, docs_room, usize::MAX);
    let docs_limited_by_budget = skipped && after_question < limits.docs_cap;

    // History: newest first while it fits; system messages are never taken from the client.
    let mut room = after_question - docs_tokens;
    let mut keep_from = req.history.len();
    let mut history_tokens = 0;
    for (i, m) in req.history.iter().enumerate().rev() {
        if m.role == Role::System {
            continue;
        }
        let cost = message_tokens(counter, m);
        if cost > room {
            break;
        }
        room -= cost;
        history_tokens += cost;
        keep_from = i;
    }
    let mut kept: Vec<Message> =
        req.history[keep_from..].iter().filter(|m| m.role != Role::System).cloned().collect();
    // Don't start the conversation with an orphaned answer.
    while kept.first().is_some_and(|m| m.role == Role::Assistant) {
        let m = kept.remove(0);
        history_tokens -= message_tokens(counter, &m);
    }
    let dropped_turns = req.history.len() - kept.len();

    let sources_text = format_sources(&sources, req.index);
    let content =
        req.user_template.render(&[("sources", &sources_text), ("question", question)])?;
    kept.push(Message::user(content));

    let prompt_tokens = fixed + q + docs_tokens + history_tokens;
    let margin = (budget / 20).max(64);
    let needs_exact_count = !counter.exact()
        && (dropped_turns > 0 || docs_limited_by_budget || prompt_tokens + margin > budget);
    Ok(Plan { messages: kept, sources, prompt_tokens, dropped_turns, needs_exact_count })
}

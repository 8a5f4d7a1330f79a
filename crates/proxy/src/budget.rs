//! The context-window budget, enforced by the proxy: the server's system prompt + the client's
//! conversation + the answer's `max_tokens` must fit the chat model's context window.
//!
//! The widget plans its requests with docent-core's budget, but it cannot see the server's
//! system prompt (a custom `[prompt] system` may be far longer than core's default), so the
//! proxy has the last word: when a request would overflow the window, the oldest turns are left
//! out (never the question, and never so that the conversation starts with an answer); when the
//! question alone does not fit, the request is refused with `context_length_exceeded`. Every
//! answer tells the client what the system prompt cost and which window applies (response
//! headers [`SYSTEM_TOKENS_HEADER`], [`CONTEXT_WINDOW_HEADER`], [`DROPPED_MESSAGES_HEADER`]), so the
//! widget's next plan counts the real prompt.
//!
//! Counting is cl100k with OpenAI's cookbook overhead (the widget's accounting,
//! [`crate::tokens`]); the byte upper bound decides first so that requests far from the window
//! are never counted exactly.

use docent_core::budget::ModelLimits;
use docent_core::tokens::{REPLY_PRIMING_TOKENS, TOKENS_PER_MESSAGE};

use crate::config::Config;
use crate::error::ApiError;

// The response headers: cl100k tokens of the system prompt's content the server added, the
// context window (tokens, prompt + answer) the request was fitted to, and how many of the oldest
// client messages were left out to fit it (the contract with the widget: docent_core::wire).
pub use docent_core::wire::{CONTEXT_WINDOW_HEADER, DROPPED_MESSAGES_HEADER, SYSTEM_TOKENS_HEADER};

/// Overhead of one message: separators plus a one-token role (`system`, `user`, `assistant`).
const PER_MESSAGE: usize = TOKENS_PER_MESSAGE + 1;

/// The context window for `model`: `[limits] context_window` when set, else docent-core's
/// default for the model's name ([`ModelLimits::for_model`]; 8192 for a name it doesn't know).
pub fn context_window(cfg: &Config, model: &str) -> usize {
    cfg.limits.context_window.unwrap_or_else(|| ModelLimits::for_model(model).context_window)
}

/// The configured chat models (default, allowed, rewrite) that get the 8192-token guess because
/// docent-core doesn't know their window and `[limits] context_window` is unset: `docent serve`
/// warns about each at start.
pub fn models_with_unknown_window(cfg: &Config) -> Vec<String> {
    let Some(chat) = cfg.serve.chat.as_ref().filter(|_| cfg.limits.context_window.is_none()) else {
        return Vec::new();
    };
    let mut out: Vec<String> = Vec::new();
    let all = std::iter::once(&chat.model).chain(&chat.allowed_models).chain(&chat.rewrite_model);
    for m in all {
        if ModelLimits::for_model(m) == ModelLimits::UNKNOWN && !out.contains(m) {
            out.push(m.clone());
        }
    }
    out
}

/// What fitting a request did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// Tokens of the system prompt's content.
    pub system_tokens: usize,
    /// The window the request was fitted to.
    pub window: usize,
    /// Oldest messages left out.
    pub dropped: usize,
}

/// Fit `messages` (role, content; oldest first, the last one the user's question) with the
/// system prompt `system` and `max_out` answer tokens into `window`, leaving out the oldest
/// messages when needed. `Err(ContextTooLong)` when the question alone does not fit.
pub fn fit(
    system: &str,
    messages: &mut Vec<(String, String)>,
    max_out: usize,
    window: usize,
) -> Result<Fit, ApiError> {
    let system_tokens = crate::tokens::count(system);
    let fixed = REPLY_PRIMING_TOKENS + PER_MESSAGE + system_tokens + max_out;
    let bound: usize = messages.iter().map(|(_, c)| c.len() + PER_MESSAGE).sum();
    if fixed + bound <= window {
        return Ok(Fit { system_tokens, window, dropped: 0 });
    }
    let costs: Vec<usize> =
        messages.iter().map(|(_, c)| crate::tokens::count(c) + PER_MESSAGE).collect();
    let mut total = fixed + costs.iter().sum::<usize>();
    let mut from = 0;
    while from + 1 < messages.len()
        && (total > window || (from > 0 && messages[from].0 == "assistant"))
    {
        total -= costs[from];
        from += 1;
    }
    if total > window {
        return Err(ApiError::ContextTooLong { needed: total, window, system: system_tokens });
    }
    messages.drain(..from);
    Ok(Fit { system_tokens, window, dropped: from })
}

/// Leave out the oldest `messages` (never the question, never so that the conversation starts
/// with an answer) until the client's conversation costs at most `limit` prompt tokens
/// (`[limits] max_input_tokens`, counted as [`crate::tokens::count_messages`]); returns how
/// many went. A question that alone costs more is `InputTooLong`.
pub fn fit_input(messages: &mut Vec<(String, String)>, limit: usize) -> Result<usize, ApiError> {
    // With no system prompt and no answer, `fit`'s window is the conversation's own count
    // plus the (empty) system message's overhead, which `needed` then holds too.
    match fit("", messages, 0, limit.saturating_add(PER_MESSAGE)) {
        Ok(f) => Ok(f.dropped),
        Err(ApiError::ContextTooLong { needed, .. }) => {
            Err(ApiError::InputTooLong { got: needed - PER_MESSAGE, limit })
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(turns: &[(&str, &str)]) -> Vec<(String, String)> {
        turns.iter().map(|(r, c)| (r.to_string(), c.to_string())).collect()
    }

    #[test]
    fn chat_models_without_a_known_window_are_named_unless_the_window_is_configured() {
        let toml = |limits: &str| {
            format!(
                "[serve.chat]\nprovider = \"p\"\nmodel = \"gpt-4o-mini\"\n\
                 allowed_models = [\"my-finetune\", \"gpt-4o\", \"my-finetune\"]\n\
                 rewrite_model = \"tiny-local\"\n\
                 [providers.p]\nkind = \"openai-compatible\"\nbase_url = \"http://127.0.0.1:9\"\n{limits}"
            )
        };
        let cfg = Config::from_toml_str(&toml("")).unwrap();
        assert_eq!(models_with_unknown_window(&cfg), ["my-finetune", "tiny-local"]);
        let cfg = Config::from_toml_str(&toml("[limits]\ncontext_window = 32000\n")).unwrap();
        assert!(
            models_with_unknown_window(&cfg).is_empty(),
            "the configured window applies to all"
        );
        assert!(models_with_unknown_window(&Config::from_toml_str("").unwrap()).is_empty());
    }

    #[test]
    fn a_request_far_from_the_window_is_left_alone() {
        let mut m = conv(&[("assistant", "hello"), ("user", "q")]);
        let f = fit("Answer from the sources.", &mut m, 256, 8_192).unwrap();
        assert_eq!((f.dropped, f.window), (0, 8_192));
        assert_eq!(f.system_tokens, crate::tokens::count("Answer from the sources."));
        assert_eq!(m.len(), 2, "nothing is trimmed, not even a leading answer");
    }

    #[test]
    fn the_oldest_turns_go_first_and_the_conversation_never_starts_with_an_answer() {
        let long = "word ".repeat(300);
        let system = "rules ".repeat(200);
        let cost = |t: &str| crate::tokens::count(t) + PER_MESSAGE;
        let fixed = REPLY_PRIMING_TOKENS + cost(&system) + 256;
        let conversation = conv(&[
            ("user", &long),
            ("assistant", &long),
            ("user", &long),
            ("assistant", "short"),
            ("user", "the question"),
        ]);
        // Room for the last three messages exactly: the two oldest go.
        let mut m = conversation.clone();
        let room = fixed + cost(&long) + cost("short") + cost("the question");
        let f = fit(&system, &mut m, 256, room).unwrap();
        assert_eq!(f.dropped, 2);
        assert_eq!(m, conversation[2..]);
        // Room for the last two only: the answer would lead, so it goes too.
        let mut m = conversation.clone();
        let f = fit(&system, &mut m, 256, fixed + cost("short") + cost("the question")).unwrap();
        assert_eq!(f.dropped, 4);
        assert_eq!(m, conversation[4..]);
    }

    #[test]
    fn a_question_that_alone_does_not_fit_is_context_too_long() {
        let mut m = conv(&[("user", &"word ".repeat(500))]);
        let rules = "rules ".repeat(200);
        let e = fit(&rules, &mut m, 256, 600).unwrap_err();
        let ApiError::ContextTooLong { needed, window, system } = e else { panic!("{e:?}") };
        assert_eq!((window, system), (600, crate::tokens::count(&rules)));
        assert!(needed > 600 + 256, "{needed}");
        assert_eq!(m.len(), 1, "nothing is dropped from a refused request");
    }
}

//! Token counting (exact cl100k_base), with a cheap byte bound first.
//!
//! cl100k never produces more tokens than UTF-8 bytes, so when the byte length is under the
//! limit the exact count is skipped (keeps the hot path well under a millisecond).

/// The most tokens an upstream's `usage` may count on either side of one answer: more than any
/// model's context window today (10M). A count past it (an upstream bug, `u64::MAX`) is
/// treated as no count at all, so it neither charges a reader's rate limit for ever nor
/// takes `docent_tokens_total` out of any sane range.
pub const MAX_USAGE_TOKENS: u64 = 1 << 24;

/// Whether an upstream's `(prompt, completion)` usage counts are believable.
pub fn plausible_usage((pin, pout): (u64, u64)) -> bool {
    pin <= MAX_USAGE_TOKENS && pout <= MAX_USAGE_TOKENS
}

/// Exact cl100k token count of `text` (docent-core's fast counter: the same pieces and BPE as
/// tiktoken-rs, without its backtracking regex, with per-piece memoisation).
pub fn count(text: &str) -> usize {
    docent_core::tokens::cl100k_count(text)
}

/// Per-message overhead in OpenAI's chat format: the separators plus the role, which is one
/// cl100k token for every role a client may send (`user`, `assistant`); and the reply priming.
/// The same accounting as docent-core's `count_message_tokens`, which the widget budgets with.
const PER_MESSAGE: usize = docent_core::tokens::TOKENS_PER_MESSAGE + 1;
const PRIMING: usize = docent_core::tokens::REPLY_PRIMING_TOKENS;

/// Upper bound of a conversation's prompt tokens (bytes, plus format overhead).
pub fn upper_bound<'a>(contents: impl Iterator<Item = &'a str>) -> usize {
    contents.map(|c| c.len() + PER_MESSAGE).sum::<usize>() + PRIMING
}

/// Prompt tokens of a conversation (`conversation`, as counted by [`upper_bound`] or
/// [`count_messages`]) once the server's system prompt (`system_tokens` of content) leads it.
pub fn with_system(conversation: usize, system_tokens: usize) -> usize {
    conversation + system_tokens + PER_MESSAGE
}

/// Exact prompt tokens of a conversation (OpenAI cookbook accounting).
pub fn count_messages<'a>(contents: impl Iterator<Item = &'a str>) -> usize {
    contents.map(|c| count(c) + PER_MESSAGE).sum::<usize>() + PRIMING
}

/// A sound upper bound of a conversation's prompt tokens when it is within `limit`
/// (`Ok(bound)`: the byte bound when that is under the limit, else the exact count), or
/// `Err(exact)` when it is over the limit.
///
/// The bound is what the token rate limit reserves: text that cl100k splits near one token per
/// byte (rare CJK, private-use characters) costs that much upstream, so anything smaller (a
/// bytes/4 guess) would let such text spend several times its budget.
pub fn check_limit(contents: &[&str], limit: usize) -> Result<usize, usize> {
    let bound = upper_bound(contents.iter().copied());
    if bound <= limit {
        return Ok(bound);
    }
    let exact = count_messages(contents.iter().copied());
    if exact > limit {
        Err(exact)
    } else {
        Ok(exact)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversations_cost_what_the_widget_budgets_for_them() {
        use docent_core::prompt::{Message, Role};
        let msgs = [
            Message { role: Role::User, content: "How do I build?".into() },
            Message { role: Role::Assistant, content: "Run `cargo build` [1].".into() },
        ];
        let core =
            docent_core::tokens::count_message_tokens(&docent_core::tokens::Bpe::cl100k(), &msgs);
        assert_eq!(count_messages(msgs.iter().map(|m| m.content.as_str())), core);
    }

    #[test]
    fn exact_counting_matches_cl100k() {
        assert_eq!(count("hello world"), 2);
    }

    #[test]
    fn the_byte_bound_short_circuits_and_the_exact_count_decides_near_the_limit() {
        // Under the limit, the byte bound (never less than the real count) is the answer.
        let bound = upper_bound(["hello world"].into_iter());
        assert_eq!(check_limit(&["hello world"], 100), Ok(bound));
        assert!(bound >= count_messages(["hello world"].into_iter()));
        // 400 bytes of repeated words: bound over 50 but the exact count decides.
        let text = "hello ".repeat(60);
        let exact = count_messages([text.as_str()].into_iter());
        assert!(check_limit(&[text.as_str()], exact).is_ok());
        assert_eq!(check_limit(&[text.as_str()], exact - 1), Err(exact));
    }
}

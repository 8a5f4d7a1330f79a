//! What the widget says to the reader while a question is answered: the live region's
//! announcements, the notices above answers, and the messages of turns that end early. Proxy
//! errors are worded by [`super::client::describe`].
//!
//! Everything here but [`capitalise`] is plain Rust, tested natively (`cargo test -p
//! docent-widget`).

use crate::conversation::AnswerKind;

/// What the polite live region says when a question is submitted.
pub const SEARCHING: &str = "Searching the docs…";

/// What the polite live region says once the answer has started to stream. The answer itself is
/// not announced piece by piece (a screen reader would read a sentence at a time, interrupted by
/// the next); the reader goes to it once it is complete.
pub const ANSWER_STARTED: &str = "Writing the answer…";

/// A turn the reader stopped (Stop, a new conversation), and what the live region says then.
pub const STOPPED: &str = "Stopped.";

/// The notice while the exact tokenizer loads because the byte bound does not settle the plan.
pub const COUNTING_TOKENS: &str = "Counting tokens precisely…";

/// Why a question is answered with excerpts: no proxy is configured.
pub const OFFLINE_MODE: &str = "Offline mode: no answer service is configured.";

/// Why a question is answered with excerpts: the proxy has no chat model.
pub const NO_CHAT_MODEL: &str = "The answer service has no chat model.";

/// The notice of an answer whose stream closed without `[DONE]`.
pub const ENDED_EARLY: &str = "The answer stream ended early; the answer may be incomplete.";

/// The failure of a stream that carried no answer text.
pub const EMPTY_ANSWER: &str = "The language model sent an empty answer. Try again.";

/// The failure of a browser without `AbortController`.
pub const NO_ABORT_CONTROLLER: &str = "This browser cannot run the assistant (no AbortController).";

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

/// The notice of an answer for which older messages were left out (by the widget's plan or the
/// proxy's fit).
pub fn left_out_notice(messages: usize) -> String {
    format!("Older parts of the conversation ({messages} messages) were left out to fit the model.")
}

/// The failure of a stream that broke after it began (`why`: [`super::client::describe`]).
pub fn connection_broke(why: &str) -> String {
    format!("The connection broke while answering ({why}). The partial answer is kept; try again.")
}

/// The reader-facing message for an error event that ended a stream after the answer began
/// (docs/proxy.md, "Errors"): the partial answer stays on screen.
pub fn describe_stream_error(code: &str, message: &str) -> String {
    use docent_core::wire::ErrorCode;
    match ErrorCode::parse(code) {
        Some(ErrorCode::ServerShuttingDown) => "The answer service restarted and stopped this answer. The partial answer is kept; ask again in a moment.".into(),
        Some(ErrorCode::UpstreamTimeout) => "The language model went silent mid-answer. The partial answer is kept; try again.".into(),
        _ => {
            // The server's words, but not a page of them (any OpenAI-compatible endpoint can
            // send an error event).
            let short: String = message.chars().take(MAX_ERROR_CHARS).collect();
            let cut = if short.len() < message.len() { "…" } else { "" };
            format!("The language model failed mid-answer ({short}{cut}). The partial answer is kept; try again.")
        }
    }
}

/// The most characters of a server's error message [`describe_stream_error`] shows.
const MAX_ERROR_CHARS: usize = 200;

/// First letter upper-cased (by the browser: `char::to_uppercase` would link Unicode's upper-case
/// table into the wasm for this one use). Tested in the browser (tests/logic.rs).
pub fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => String::from(js_sys::JsString::from(f.to_string()).to_upper_case()) + c.as_str(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_error_message_is_cut() {
        let long = "x".repeat(100_000);
        let shown = describe_stream_error("upstream_error", &long);
        assert!(shown.len() < 400 && shown.contains("x…)"), "{}", shown.len());
        let short = describe_stream_error("upstream_error", "bad gateway");
        assert!(short.contains("(bad gateway)"), "{short}");
    }

    #[test]
    fn completion_announcements_count_sources_and_say_the_kind() {
        assert_eq!(answer_complete(AnswerKind::Model, 3), "Answer complete, with 3 sources.");
        assert_eq!(answer_complete(AnswerKind::Model, 1), "Answer complete, with 1 source.");
        assert_eq!(
            answer_complete(AnswerKind::Excerpts, 0),
            "Excerpts from the docs shown, with no sources."
        );
        assert_eq!(
            answer_complete(AnswerKind::NotCovered, 0),
            "The docs don't seem to cover this."
        );
        assert!(answer_complete(AnswerKind::NotCovered, 1).ends_with("closest section is listed."));
        assert!(answer_complete(AnswerKind::NotCovered, 2).contains("The 2 closest sections"));
    }

    #[test]
    fn stream_errors_are_worded_by_their_code_and_keep_the_partial_answer() {
        let shutdown = describe_stream_error("server_shutting_down", "restarting");
        assert!(shutdown.contains("restarted") && !shutdown.contains("language model"));
        assert!(describe_stream_error("upstream_timeout", "x").contains("went silent"));
        let other = describe_stream_error("upstream_error", "boom");
        assert!(other.contains("failed mid-answer (boom)"));
        assert!(describe_stream_error("", "boom").contains("(boom)"));
        for m in [shutdown, other, connection_broke("offline")] {
            assert!(m.contains("partial answer is kept"), "{m}");
        }
        assert!(left_out_notice(4).contains("(4 messages)"));
    }
}

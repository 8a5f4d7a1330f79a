//! Where the turn pipeline ([`super::Engine::ask`]) reports to: it pushes [`Event`]s into a
//! [`Sink`], in order, and never touches the view. The widget's sink ([`TurnSink`]) folds each
//! event into the turn's signal with [`apply`] (plain Rust, tested natively) and sets the live
//! region to what `apply` says is worth announcing. Modelled on ripgrep's `Sink`: the searcher
//! finds, the sink decides what that looks like.

use docent_core::cite::Mark;
use leptos::prelude::*;

use super::wording::{self, ANSWER_STARTED, SEARCHING, STOPPED};
use crate::conversation::{AnswerKind, LookedAt, SourceView, Status, TurnData};

/// What happened in a turn, in the order it happens. Events that end the turn: [`Event::NotCovered`],
/// [`Event::Excerpts`], [`Event::Answered`], [`Event::Failed`], [`Event::Stopped`].
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The question was submitted: the turn's previous answer, if any, is cleared.
    Started,
    /// Where the turn is (loading the index, searching); no announcement.
    Status(Status),
    /// The note above the answer (`None` clears it).
    Notice(Option<String>),
    /// What the search found and how sure it is.
    Found {
        /// The sections shown under "what I looked at".
        looked_at: Vec<LookedAt>,
        /// The standalone query the question was rewritten into.
        rewritten: Option<String>,
        /// Search confidence 0..1.
        confidence: f32,
        /// Between the decline and the hedge thresholds.
        uncertain: bool,
        /// The scope that had nothing, so all docs were searched.
        fallback: Option<String>,
    },
    /// The docs don't cover the question: the closest sections are listed.
    NotCovered {
        /// The closest sections.
        sources: Vec<SourceView>,
    },
    /// The question is answered with excerpts from the docs.
    Excerpts {
        /// The excerpts, as Markdown with [n] citations.
        markdown: String,
        /// Their sources.
        sources: Vec<SourceView>,
        /// Why there is no model answer (the notice).
        reason: String,
    },
    /// The model is asked, with these numbered sources.
    Asking {
        /// The sources in the prompt.
        sources: Vec<SourceView>,
        /// A notice, when older messages were left out.
        notice: Option<String>,
    },
    /// The proxy's answer cache: a hit or not, and the answer's key.
    Cache {
        /// Replayed from the cache.
        hit: bool,
        /// The key, sent back with "not helpful".
        key: Option<String>,
    },
    /// More answer text (never empty).
    Delta(String),
    /// The model's answer is complete and checked.
    Answered {
        /// Cited sentences not found in their sources.
        unsupported: Vec<Mark>,
        /// The answer says the docs don't cover the question.
        declined: bool,
    },
    /// The turn failed.
    Failed {
        /// What to tell the reader.
        message: String,
        /// Seconds until a retry may work (429).
        retry_after: Option<u32>,
    },
    /// The reader stopped the turn.
    Stopped,
}

/// Receives a turn's events.
pub trait Sink {
    /// Take one event.
    fn push(&self, event: Event);
}

/// Fold `event` into the turn; returns what the polite live region should say, if anything.
pub fn apply(t: &mut TurnData, event: Event) -> Option<String> {
    match event {
        Event::Started => {
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
            return Some(SEARCHING.into());
        }
        Event::Status(s) => t.status = s,
        Event::Notice(n) => t.notice = n,
        Event::Found { looked_at, rewritten, confidence, uncertain, fallback } => {
            t.looked_at = looked_at;
            t.rewritten = rewritten;
            t.confidence = confidence;
            t.uncertain = uncertain;
            t.fallback = fallback;
            return crate::scope::fallback_note(t);
        }
        Event::NotCovered { sources } => {
            t.kind = AnswerKind::NotCovered;
            t.sources = sources;
            t.status = Status::Done;
            return Some(wording::answer_complete(t.kind, t.sources.len()));
        }
        Event::Excerpts { markdown, sources, reason } => {
            t.kind = AnswerKind::Excerpts;
            t.answer = markdown;
            t.sources = sources;
            t.notice = Some(reason);
            t.status = Status::Done;
            return Some(wording::answer_complete(t.kind, t.sources.len()));
        }
        Event::Asking { sources, notice } => {
            t.kind = AnswerKind::Model;
            t.sources = sources;
            t.status = Status::Thinking;
            if notice.is_some() {
                t.notice = notice;
            }
        }
        Event::Cache { hit, key } => {
            t.cached = hit;
            t.cache_key = key;
        }
        Event::Delta(text) => {
            t.answer.push_str(&text);
            if t.status != Status::Streaming && !t.answer.is_empty() {
                t.status = Status::Streaming;
                return Some(ANSWER_STARTED.into());
            }
        }
        Event::Answered { unsupported, declined } => {
            t.unsupported = unsupported;
            t.declined = declined;
            t.status = Status::Done;
            return Some(wording::answer_complete(AnswerKind::Model, t.sources.len()));
        }
        Event::Failed { message, retry_after } => {
            t.status = Status::Failed { message: message.clone(), retry_after };
            return Some(message);
        }
        Event::Stopped => {
            t.status = Status::Stopped;
            return Some(STOPPED.into());
        }
    }
    None
}

/// The widget's sink: a turn's signal and the dialog's live region.
#[derive(Clone, Copy)]
pub struct TurnSink {
    /// The turn being answered.
    pub turn: RwSignal<TurnData>,
    /// What the polite live region announces.
    pub live: RwSignal<String>,
}

impl Sink for TurnSink {
    fn push(&self, event: Event) {
        if let Some(said) = self.turn.try_update(|t| apply(t, event)).flatten() {
            self.live.set(said);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(n: usize) -> SourceView {
        SourceView {
            n,
            url: format!("/p{n}"),
            title: format!("P{n}"),
            breadcrumb: String::new(),
            cited: false,
        }
    }

    /// Fold events into a fresh turn; the announcements, in order.
    fn run(t: &mut TurnData, events: Vec<Event>) -> Vec<String> {
        events.into_iter().filter_map(|e| apply(t, e)).collect()
    }

    #[test]
    fn a_streamed_answer_is_announced_when_it_starts_and_when_it_is_complete() {
        let mut t = TurnData { question: "q".into(), ..TurnData::default() };
        let said = run(
            &mut t,
            vec![
                Event::Started,
                Event::Status(Status::Searching),
                Event::Found {
                    looked_at: vec![],
                    rewritten: Some("q2".into()),
                    confidence: 0.8,
                    uncertain: false,
                    fallback: None,
                },
                Event::Asking { sources: vec![source(1), source(2)], notice: None },
                Event::Cache { hit: true, key: Some("k".into()) },
                Event::Delta("Hello ".into()),
                Event::Delta("[1].".into()),
                Event::Answered { unsupported: vec![], declined: false },
            ],
        );
        assert_eq!(
            said,
            ["Searching the docs…", "Writing the answer…", "Answer complete, with 2 sources."]
        );
        assert_eq!(
            (t.answer.as_str(), t.kind, &t.status),
            ("Hello [1].", AnswerKind::Model, &Status::Done)
        );
        assert_eq!(
            (t.cached, t.cache_key.as_deref(), t.rewritten.as_deref()),
            (true, Some("k"), Some("q2"))
        );
        assert_eq!(t.outcome(), "answered");
    }

    #[test]
    fn a_new_question_clears_the_last_answer_but_keeps_the_question() {
        let mut t = TurnData {
            question: "q".into(),
            answer: "old".into(),
            sources: vec![source(1)],
            notice: Some("n".into()),
            feedback: Some(true),
            cached: true,
            declined: true,
            status: Status::Failed { message: "x".into(), retry_after: Some(3) },
            ..TurnData::default()
        };
        apply(&mut t, Event::Started);
        let fresh = TurnData { question: "q".into(), ..TurnData::default() };
        assert_eq!(t, fresh);
    }

    #[test]
    fn answers_without_the_model_end_the_turn_with_their_announcement() {
        let mut t = TurnData::default();
        let said = apply(
            &mut t,
            Event::Excerpts {
                markdown: "> x [1]".into(),
                sources: vec![source(1)],
                reason: "Offline.".into(),
            },
        );
        assert_eq!(said.as_deref(), Some("Excerpts from the docs shown, with 1 source."));
        assert_eq!(
            (t.kind, t.notice.as_deref(), &t.status),
            (AnswerKind::Excerpts, Some("Offline."), &Status::Done)
        );
        let mut t = TurnData::default();
        let said =
            apply(&mut t, Event::NotCovered { sources: vec![source(1), source(2), source(3)] });
        assert_eq!(
            said.as_deref(),
            Some("The docs don't seem to cover this. The 3 closest sections are listed.")
        );
        assert_eq!(t.outcome(), "declined");
    }

    #[test]
    fn the_scope_fallback_and_failures_are_announced_and_notices_kept() {
        let mut t = TurnData::default();
        let found = Event::Found {
            looked_at: vec![],
            rewritten: None,
            confidence: 0.2,
            uncertain: true,
            fallback: Some("v1".into()),
        };
        assert!(apply(&mut t, found).unwrap().contains("Nothing in the v1 docs"));
        apply(&mut t, Event::Notice(Some("left out".into())));
        apply(&mut t, Event::Asking { sources: vec![], notice: None });
        assert_eq!(t.notice.as_deref(), Some("left out"), "no notice keeps the one shown");
        assert_eq!(apply(&mut t, Event::Delta(String::new())), None, "nothing to announce yet");
        let said =
            apply(&mut t, Event::Failed { message: "Try again.".into(), retry_after: Some(5) });
        assert_eq!(said.as_deref(), Some("Try again."));
        assert_eq!(t.status, Status::Failed { message: "Try again.".into(), retry_after: Some(5) });
        assert_eq!(apply(&mut t, Event::Stopped).as_deref(), Some("Stopped."));
        assert_eq!(t.status, Status::Stopped);
    }
}

//! SSE parsing: split bytes, CRLF, comments, multi-line data, events; OpenAI chunk decoding.

use docent_core::sse::{parse_chat_chunk, SseEvent, SseParser, Usage};
use proptest::prelude::*;

fn ev(event: Option<&str>, data: &str) -> SseEvent {
    SseEvent { event: event.map(str::to_string), data: data.to_string() }
}

fn parse_all(chunks: &[&[u8]]) -> Vec<SseEvent> {
    let mut p = SseParser::new();
    let mut out = Vec::new();
    for c in chunks {
        out.extend(p.push(c));
    }
    out.extend(p.finish());
    out
}

const STREAM: &str = "\u{feff}: keep-alive comment\r\n\
data: {\"choices\":[{\"delta\":{\"content\":\"Grüße 🦀\"}}]}\r\n\r\n\
event: error\n\
data: line one\n\
data:line two\n\
data\n\
\n\
id: 7\r\
retry: 1000\r\
data: cr only\r\
\r\
: comment only, then a blank line that dispatches nothing\n\n\
data: [DONE]\n\n";

fn expected() -> Vec<SseEvent> {
    vec![
        ev(None, "{\"choices\":[{\"delta\":{\"content\":\"Grüße 🦀\"}}]}"),
        ev(Some("error"), "line one\nline two\n"),
        ev(None, "cr only"),
        ev(None, "[DONE]"),
    ]
}

#[test]
fn a_whole_stream_parses_into_its_events() {
    assert_eq!(parse_all(&[STREAM.as_bytes()]), expected());
}

#[test]
fn bytes_split_one_at_a_time_give_the_same_events_even_inside_utf8_and_crlf() {
    let bytes = STREAM.as_bytes();
    let singles: Vec<&[u8]> = bytes.chunks(1).collect();
    assert_eq!(parse_all(&singles), expected());
}

#[test]
fn a_last_event_without_its_blank_line_is_delivered_by_finish() {
    let mut p = SseParser::new();
    assert!(p.push(b"data: tail").is_empty());
    assert_eq!(p.finish(), Some(ev(None, "tail")));
    assert_eq!(p.finish(), None);
}

#[test]
fn data_with_an_empty_value_is_still_an_event() {
    assert_eq!(parse_all(&[b"data:\n\n"]), vec![ev(None, "")]);
    assert_eq!(parse_all(&[b"event: x\n\n"]), vec![]);
}

proptest! {
    #[test]
    fn any_split_of_the_stream_gives_the_same_events(cuts in proptest::collection::vec(0usize..STREAM.len(), 0..12)) {
        let bytes = STREAM.as_bytes();
        let mut cuts = cuts;
        cuts.sort();
        cuts.dedup();
        let mut pieces = Vec::new();
        let mut last = 0;
        for c in cuts {
            pieces.push(&bytes[last..c]);
            last = c;
        }
        pieces.push(&bytes[last..]);
        prop_assert_eq!(parse_all(&pieces), expected());
    }
}

#[test]
fn content_deltas_and_finish_reasons_are_decoded() {
    let d = parse_chat_chunk(r#"{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi [1]"},"finish_reason":null}]}"#).unwrap();
    assert_eq!(d.content.as_deref(), Some("Hi [1]"));
    assert_eq!(d.finish_reason, None);
    assert!(!d.done);
    let d =
        parse_chat_chunk(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#).unwrap();
    assert_eq!(d.content, None);
    assert_eq!(d.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn the_usage_chunk_is_decoded() {
    let d = parse_chat_chunk(r#"{"object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}"#).unwrap();
    assert_eq!(
        d.usage,
        Some(Usage { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150 })
    );
    assert_eq!(d.content, None);
    let d = parse_chat_chunk(r#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#).unwrap();
    assert_eq!(d.usage, None);
}

#[test]
fn done_sentinel_is_recognised() {
    assert!(parse_chat_chunk("[DONE]").unwrap().done);
    assert!(parse_chat_chunk(" [DONE]\n").unwrap().done);
}

#[test]
fn error_events_carry_message_code_and_type() {
    let d = parse_chat_chunk(
        r#"{"error":{"message":"upstream broke","type":"upstream_error","code":"upstream_error"}}"#,
    )
    .unwrap();
    let e = d.error.unwrap();
    assert_eq!(e.message, "upstream broke");
    assert_eq!(e.code.as_deref(), Some("upstream_error"));
    assert_eq!(e.kind.as_deref(), Some("upstream_error"));
    let d = parse_chat_chunk(r#"{"error":{"message":"slow down","code":429}}"#).unwrap();
    assert_eq!(d.error.unwrap().code.as_deref(), Some("429"));
    let d = parse_chat_chunk(r#"{"error":"plain text"}"#).unwrap();
    assert_eq!(d.error.unwrap().message, "plain text");
}

#[test]
fn a_non_streamed_completion_body_also_decodes() {
    let d = parse_chat_chunk(r#"{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}"#).unwrap();
    assert_eq!(d.content.as_deref(), Some("whole"));
    assert_eq!(d.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn garbage_payloads_give_clear_errors_not_panics() {
    let e = parse_chat_chunk("{not json").unwrap_err();
    assert!(e.to_string().contains("invalid JSON"), "{e}");
    let e = parse_chat_chunk("[1,2]").unwrap_err();
    assert!(e.to_string().contains("unexpected payload"), "{e}");
    let e = parse_chat_chunk(r#"{"hello":1}"#).unwrap_err();
    assert!(e.to_string().contains("unexpected"), "{e}");
    let long = format!("{{\"x\": \"{}", "é".repeat(500));
    assert!(parse_chat_chunk(&long).is_err());
}

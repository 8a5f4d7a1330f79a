//! SSE parsing: split bytes, CRLF, comments, multi-line data, events (chunk decoding: wire.rs).

use docent_core::sse::{SseEvent, SseParser};
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

//! Splitting an upstream `text/event-stream` into events, without re-chunking their payloads,
//! and telling chunks from errors and garbage.

use docent_core::wire::parse_chat_chunk;

/// The largest upstream event (or line) the proxy holds in memory. OpenAI's chunks are a few
/// hundred bytes; anything near this is an upstream fault, and buffering it without bound would
/// let one upstream line take the server's memory.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// One upstream event's `data` (multi-line data joined with '\n').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The data payload (`[DONE]`, a JSON chunk, or an error object).
    pub data: String,
}

impl Event {
    /// `data: {payload}\n\n`, OpenAI's exact framing.
    pub fn frame(&self) -> String {
        let mut s = String::with_capacity(self.data.len() + 8);
        if memchr::memchr(b'\n', self.data.as_bytes()).is_none() {
            // one line: the common case
            s.push_str("data: ");
            s.push_str(&self.data);
            s.push_str("\n\n");
            return s;
        }
        for line in self.data.split('\n') {
            s.push_str("data: ");
            s.push_str(line);
            s.push('\n');
        }
        s.push('\n');
        s
    }
}

/// Incremental SSE splitter: handles events split across reads, lines ended by LF, CRLF or a lone
/// CR (all three are SSE line ends), comments, multi-line data.
///
/// It runs for every chunk of every stream, so it works on bytes: `memchr` finds line ends, a
/// `data` line's value is appended to the pending event as bytes, and the event's UTF-8 is
/// checked once when its blank line arrives (invalid bytes become U+FFFD, never an error).
#[derive(Debug)]
pub struct Splitter {
    buf: Vec<u8>,
    /// How much of `buf` (an unfinished line) is known to hold no line end: a line that
    /// arrives a byte at a time is searched once, not once per byte.
    scanned: usize,
    /// The pending event's data lines, joined with '\n'.
    data: Vec<u8>,
    /// At least one `data` line is pending (an empty `data:` line still makes an event).
    has_data: bool,
    /// Most bytes of one event (or of one unfinished line).
    max: usize,
    /// An event grew past `max`: everything from then on is dropped.
    overflowed: bool,
    /// The last read ended with a CR: an LF starting the next read belongs to it.
    after_cr: bool,
    /// No byte of the stream has been looked at yet: a UTF-8 byte order mark there is skipped
    /// (the SSE rules say so; an upstream that sends one would otherwise lose its first event).
    at_start: bool,
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter::with_limit(MAX_EVENT_BYTES)
    }
}

impl Splitter {
    /// A splitter that gives up on events (or lines) longer than `max` bytes.
    pub fn with_limit(max: usize) -> Self {
        Splitter {
            buf: Vec::new(),
            scanned: 0,
            data: Vec::new(),
            has_data: false,
            max,
            overflowed: false,
            after_cr: false,
            at_start: true,
        }
    }

    /// Part of an event has arrived (a data line, or a line not ended yet): the upstream is
    /// sending, not silent. A comment line (`: ping`) leaves nothing pending.
    pub fn pending(&self) -> bool {
        self.has_data || !self.buf.is_empty()
    }

    /// An event or line was longer than the limit: the stream must end (with an error).
    pub fn overflowed(&self) -> bool {
        self.overflowed
    }

    fn overflow(&mut self) {
        self.overflowed = true;
        self.buf = Vec::new();
        self.scanned = 0;
        self.data = Vec::new();
        self.has_data = false;
    }

    /// Feed bytes; returns the events completed by them (none once [`Self::overflowed`]).
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        if self.overflowed {
            return Vec::new();
        }
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        if self.at_start {
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if self.buf.len() < BOM.len() && BOM.starts_with(&self.buf) {
                return out; // maybe a BOM: wait for the rest of it
            }
            self.at_start = false;
            if self.buf.starts_with(BOM) {
                self.buf.drain(..BOM.len());
            }
        }
        let mut start = 0;
        if self.after_cr && !self.buf.is_empty() {
            // Decided by the first byte that arrives (an empty read decides nothing): the LF of
            // a CRLF split between two reads belongs to a line that has ended already.
            self.after_cr = false;
            if self.buf[0] == b'\n' {
                start = 1;
            }
        }
        let mut from = self.scanned.max(start);
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', &self.buf[from..]) {
            let end = from + pos;
            let next = match (self.buf[end], self.buf.get(end + 1)) {
                (b'\r', Some(b'\n')) => end + 2,
                (b'\r', None) => {
                    // Ends the line now (no wait for the next read); an LF first in the next
                    // read is this CR's.
                    self.after_cr = true;
                    end + 1
                }
                _ => end + 1,
            };
            let line = &self.buf[start..end];
            if line.is_empty() {
                if self.has_data {
                    out.push(Event { data: lossy_string(std::mem::take(&mut self.data)) });
                    self.has_data = false;
                }
            } else if line[0] != b':' {
                let (field, value) = match memchr::memchr(b':', line) {
                    Some(i) => {
                        (&line[..i], line[i + 1..].strip_prefix(b" ").unwrap_or(&line[i + 1..]))
                    }
                    None => (line, &b""[..]),
                };
                if field == b"data" {
                    if self.has_data {
                        self.data.push(b'\n');
                    }
                    self.data.extend_from_slice(value);
                    self.has_data = true;
                    if self.data.len() > self.max {
                        self.overflow();
                        return out;
                    }
                }
            }
            start = next;
            from = start;
        }
        self.buf.drain(..start);
        self.scanned = self.buf.len();
        if self.buf.len() + self.data.len() > self.max {
            self.overflow();
        }
        out
    }

    /// At end of stream: an event whose blank line never came.
    pub fn finish(&mut self) -> Option<Event> {
        if self.overflowed {
            return None;
        }
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            self.scanned = 0;
            let mut ev = self.push(&rest);
            ev.extend(self.push(b"\n\n"));
            return ev.into_iter().next();
        }
        if !self.has_data {
            return None;
        }
        self.has_data = false;
        Some(Event { data: lossy_string(std::mem::take(&mut self.data)) })
    }
}

/// What an upstream event is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `[DONE]`.
    Done,
    /// A completion chunk: forwarded.
    Chunk {
        /// `usage` (prompt, completion), when the chunk carries it.
        usage: Option<(u64, u64)>,
        /// `choices` is empty: the usage-only chunk (forwarded only when the client asked).
        only_usage: bool,
        /// `finish_reason` is set and is not `stop` (`length`, `content_filter`, …): the model
        /// did not finish its answer.
        cut_short: bool,
    },
    /// `{"error": …}` (not `null`) or `{"type": "error", …}`: never forwarded, only logged
    /// (redacted).
    Error,
    /// Not a JSON object with `choices` (empty `data:`, `{not json`, …).
    Malformed,
}

impl Event {
    /// Classify the event.
    pub fn kind(&self) -> Kind {
        self.decode().0
    }

    /// Classify the event and take its answer text, with core's one decoder of streamed answers
    /// ([`docent_core::wire::parse_chat_chunk`], the widget's too). A chunk must have a
    /// `choices` array (`[]` on the usage chunk).
    pub fn decode(&self) -> (Kind, Option<String>) {
        let Ok(d) = parse_chat_chunk(&self.data) else { return (Kind::Malformed, None) };
        if d.done {
            return (Kind::Done, None);
        }
        if d.error.is_some() {
            return (Kind::Error, None);
        }
        let Some(choices) = d.choices else { return (Kind::Malformed, None) };
        let usage = d.usage.map(|u| (u.prompt_tokens, u.completion_tokens));
        let cut_short = d.finish_reason.as_deref().is_some_and(|r| r != "stop");
        (Kind::Chunk { usage, only_usage: choices == 0 && usage.is_some(), cut_short }, d.content)
    }
}

/// The bytes as a String, invalid UTF-8 replaced by U+FFFD (valid input is not copied).
fn lossy_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_fed_a_byte_at_a_time_is_scanned_once() {
        // Every push searched the whole unfinished line again for its end: an upstream sending
        // a line just under the 1 MiB limit in 1-byte chunks (chunked encoding) cost ~5e11
        // byte comparisons, seconds of CPU per stream.
        // After every push the whole unfinished line is marked as searched, so the next push
        // searches only its own bytes: linear in the line, whatever the chunking.
        let mut s = Splitter::default();
        let n = MAX_EVENT_BYTES - 16;
        assert!(s.push(b"data: ").is_empty());
        for i in 0..n {
            assert!(s.push(b"a").is_empty());
            assert_eq!((s.scanned, s.buf.len()), (7 + i, 7 + i));
        }
        let e = s.push(b"\n\n");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].data.len(), n);
        assert_eq!((s.scanned, s.buf.len()), (0, 0));
    }

    #[test]
    fn a_byte_order_mark_opening_the_stream_is_skipped_even_split_across_reads() {
        let mut s = Splitter::default();
        let e = s.push(b"\xEF\xBB\xBFdata: {\"a\":1}\n\n");
        assert_eq!(e, vec![Event { data: "{\"a\":1}".into() }]);
        let mut s = Splitter::default();
        assert!(s.push(b"\xEF").is_empty());
        assert!(s.push(b"\xBB").is_empty());
        assert_eq!(s.push(b"\xBFdata: x\n\n"), vec![Event { data: "x".into() }]);
        // Only at the start: later the bytes are data, as any other.
        let e = s.push(b"data: \xEF\xBB\xBFy\n\n");
        assert_eq!(e, vec![Event { data: "\u{feff}y".into() }]);
    }

    #[test]
    fn comments_leave_nothing_pending_and_part_of_an_event_does() {
        let mut s = Splitter::default();
        assert!(s.push(b": ping\n\n").is_empty());
        assert!(!s.pending(), "a comment is silence");
        assert!(s.push(b"data: {\"a\"").is_empty());
        assert!(s.pending());
        assert_eq!(s.push(b"}\n\n").len(), 1);
        assert!(!s.pending());
    }

    #[test]
    fn events_split_across_reads_with_crlf_and_comments_are_reassembled() {
        let mut s = Splitter::default();
        assert!(s.push(b"data: {\"a\"").is_empty());
        let e = s.push(b":1}\r\n\r\n: keep-alive\n\ndata: [DONE]\n\n");
        assert_eq!(e, vec![Event { data: "{\"a\":1}".into() }, Event { data: "[DONE]".into() }]);
        assert_eq!(e[0].frame(), "data: {\"a\":1}\n\n");
    }

    #[test]
    fn multi_line_data_and_an_unterminated_last_event_are_kept() {
        let mut s = Splitter::default();
        let e = s.push(b"data: a\ndata: b\n\ndata: tail");
        assert_eq!(e, vec![Event { data: "a\nb".into() }]);
        assert_eq!(s.finish(), Some(Event { data: "tail".into() }));
    }

    #[test]
    fn empty_data_lines_make_events_and_invalid_utf8_becomes_replacement_characters() {
        let mut s = Splitter::default();
        let e = s.push(b"data:\n\nevent: x\nid: 1\n\ndata: caf\xc3\xa9 \xff\n\n");
        assert_eq!(e, vec![Event { data: String::new() }, Event { data: "café \u{fffd}".into() }]);
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn a_line_longer_than_the_limit_overflows_instead_of_growing_without_bound() {
        let mut s = Splitter::with_limit(64);
        assert_eq!(s.push(b"data: ok\n\n").len(), 1);
        for _ in 0..100 {
            assert!(s.push(&[b'a'; 16]).is_empty());
        }
        assert!(s.overflowed());
        assert!(s.buf.capacity() < 1024, "nothing is kept after the overflow");
        assert!(s.push(b"\n\ndata: late\n\n").is_empty());
        assert_eq!(s.finish(), None);
        let mut s = Splitter::with_limit(64);
        s.push(format!("data: {}\ndata: {}\n", "b".repeat(40), "c".repeat(40)).as_bytes());
        assert!(s.overflowed(), "many short data lines of one event count together");
    }

    #[test]
    fn events_are_told_apart_from_errors_and_garbage() {
        let ev = |d: &str| Event { data: d.into() }.kind();
        assert_eq!(ev("[DONE]"), Kind::Done);
        assert_eq!(
            ev(r#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#),
            Kind::Chunk { usage: None, only_usage: false, cut_short: false }
        );
        assert_eq!(
            ev(r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#),
            Kind::Chunk { usage: Some((5, 7)), only_usage: true, cut_short: false }
        );
        assert_eq!(
            ev(r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#),
            Kind::Chunk { usage: None, only_usage: false, cut_short: true }
        );
        assert_eq!(
            ev(r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#),
            Kind::Chunk { usage: None, only_usage: false, cut_short: false }
        );
        assert_eq!(ev(r#"{"error":{"message":"boom"}}"#), Kind::Error);
        assert_eq!(ev(r#"{"type":"error","message":"boom"}"#), Kind::Error);
        assert_eq!(
            Event { data: r#"{"error":null,"choices":[{"delta":{"content":"x"}}]}"#.into() }
                .decode(),
            (Kind::Chunk { usage: None, only_usage: false, cut_short: false }, Some("x".into()))
        );
        for bad in ["", "{not json", "[1,2]", "\"text\"", r#"{"id":"x"}"#, r#"{"choices":"x"}"#] {
            assert_eq!(ev(bad), Kind::Malformed, "{bad:?}");
        }
    }

    #[test]
    fn any_split_of_a_stream_into_reads_gives_the_same_events() {
        let stream: &[u8] = b"data: {\"id\":\"1\",\"x\":\"\xc3\xa9\"}\r\n\r\n: ping\n\ndata: a\ndata: b\n\ndata: [DONE]\n\n";
        let whole = Splitter::default().push(stream);
        assert_eq!(whole.len(), 3);
        // The same events with lone CRs as line ends, and with the three kinds mixed.
        let cr: Vec<u8> = stream.iter().map(|&b| if b == b'\n' { b'\r' } else { b }).collect();
        let cr = String::from_utf8_lossy(&cr).replace("\r\r\r\r", "\r\r").into_bytes();
        let mixed = b"data: {\"id\":\"1\",\"x\":\"\xc3\xa9\"}\r\r: ping\r\n\ndata: a\rdata: b\n\r\ndata: [DONE]\r\r";
        for other in [&cr[..], &mixed[..]] {
            assert_eq!(
                Splitter::default().push(other),
                whole,
                "{:?}",
                String::from_utf8_lossy(other)
            );
            check_splits(other, &whole);
        }
        check_splits(stream, &whole);
        // CRLF between two data lines of one event, split by an empty read or not.
        let two = b"data: a\r\ndata: b\r\n\r\n";
        check_splits(two, &[Event { data: "a\nb".into() }]);
    }

    /// Every split of `stream` into three reads gives `whole`, and so does feeding it to the end
    /// without its last line end (`finish`).
    fn check_splits(stream: &[u8], whole: &[Event]) {
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let mut s = Splitter::default();
                let mut got = s.push(&stream[..cut]);
                got.extend(s.push(&stream[cut..cut2]));
                got.extend(s.push(&stream[cut2..]));
                assert_eq!(got, whole, "cut at {cut} and {cut2}");
            }
        }
        // An empty read between any two bytes changes nothing (a CR's LF may follow it).
        for cut in 0..stream.len() {
            let mut s = Splitter::default();
            let mut got = s.push(&stream[..cut]);
            got.extend(s.push(b""));
            got.extend(s.push(&stream[cut..]));
            assert_eq!(got, whole, "an empty read at {cut}");
        }
        let mut s = Splitter::default();
        let mut got = s.push(&stream[..stream.len() - 1]);
        got.extend(s.finish());
        assert_eq!(got, whole, "the last line end missing");
    }
}

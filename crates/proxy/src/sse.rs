//! Splitting an upstream `text/event-stream` into events, without re-chunking their payloads.

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

/// Incremental SSE splitter: handles events split across reads, CRLF, comments, multi-line data.
///
/// It runs for every chunk of every stream, so it works on bytes: `memchr` finds line ends, a
/// `data` line's value is appended to the pending event as bytes, and the event's UTF-8 is
/// checked once when its blank line arrives (invalid bytes become U+FFFD, never an error).
#[derive(Debug, Default)]
pub struct Splitter {
    buf: Vec<u8>,
    /// The pending event's data lines, joined with '\n'.
    data: Vec<u8>,
    /// At least one `data` line is pending (an empty `data:` line still makes an event).
    has_data: bool,
}

impl Splitter {
    /// Feed bytes; returns the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(pos) = memchr::memchr(b'\n', &self.buf[start..]) {
            let end = start + pos;
            let line = &self.buf[start..end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
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
                }
            }
            start = end + 1;
        }
        self.buf.drain(..start);
        out
    }

    /// At end of stream: an event whose blank line never came.
    pub fn finish(&mut self) -> Option<Event> {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
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

/// The bytes as a String, invalid UTF-8 replaced by U+FFFD (valid input is not copied).
fn lossy_string(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn any_split_of_a_stream_into_reads_gives_the_same_events() {
        let stream: &[u8] = b"data: {\"id\":\"1\",\"x\":\"\xc3\xa9\"}\r\n\r\n: ping\n\ndata: a\ndata: b\n\ndata: [DONE]\n\n";
        let whole = Splitter::default().push(stream);
        assert_eq!(whole.len(), 3);
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let mut s = Splitter::default();
                let mut got = s.push(&stream[..cut]);
                got.extend(s.push(&stream[cut..cut2]));
                got.extend(s.push(&stream[cut2..]));
                assert_eq!(got, whole, "cut at {cut} and {cut2}");
            }
        }
    }
}

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
#[derive(Debug, Default)]
pub struct Splitter {
    buf: Vec<u8>,
    data: Vec<String>,
}

impl Splitter {
    /// Feed bytes; returns the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|b| *b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            if line.is_empty() {
                if !self.data.is_empty() {
                    out.push(Event { data: self.data.join("\n") });
                    self.data.clear();
                }
            } else if line[0] != b':' {
                let text = String::from_utf8_lossy(line);
                let (field, value) = match text.find(':') {
                    Some(i) => (&text[..i], text[i + 1..].strip_prefix(' ').unwrap_or(&text[i + 1..])),
                    None => (&text[..], ""),
                };
                if field == "data" {
                    self.data.push(value.to_string());
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
        if self.data.is_empty() {
            None
        } else {
            let d = self.data.join("\n");
            self.data.clear();
            Some(Event { data: d })
        }
    }
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
}

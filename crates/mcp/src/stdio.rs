//! `docent mcp`'s stdin/stdout: one JSON-RPC message per line, framed here in front of rmcp's
//! transport so that every line a client sends gets an answer. rmcp drops a line over its bound
//! and a line that is not JSON without a word (only a log line), and a client then waits for
//! ever for the response to its request. Here:
//!
//! - a line over [`MAX_STDIO_MESSAGE_BYTES`] is read and dropped without being kept (the memory
//!   stays bounded) and answered with an Invalid Request error ([`INVALID_REQUEST`]) carrying the
//!   request's id when it comes before the cut (`{"jsonrpc":"2.0","id":7,...`), else id null;
//! - a line that is not JSON (or not UTF-8) is answered with a Parse error ([`PARSE_ERROR`]), id
//!   null, as JSON-RPC 2.0 asks;
//! - every other line goes to rmcp as it came.
//!
//! rmcp's answers and these errors share stdout through one writer, a whole line at a time.

use std::sync::Arc;

use rmcp::ServiceExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::{DocsServer, McpError, MAX_STDIO_MESSAGE_BYTES};

/// JSON-RPC 2.0's "Parse error": the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0's "Invalid Request": here, a line over [`MAX_STDIO_MESSAGE_BYTES`].
pub const INVALID_REQUEST: i64 = -32600;

/// How much of an oversized line is kept, to look for its id.
const ID_SCAN_BYTES: usize = 4096;

/// Serve `docs` over `read` / `write` (stdin / stdout for `docent mcp`) until `read` ends.
pub async fn serve_io<R, W>(docs: Arc<crate::Docs>, read: R, write: W) -> Result<(), McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (to_rmcp, rmcp_in) = tokio::io::duplex(1 << 16);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 16);
    let (out, mut lines_out) = mpsc::channel::<Vec<u8>>(64);
    let writer = tokio::spawn(async move {
        let mut write = write;
        while let Some(line) = lines_out.recv().await {
            if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                break;
            }
        }
    });
    let pump_out = out.clone();
    let pump = tokio::spawn(async move {
        // rmcp's own output: whole messages, each ending in a newline.
        let mut from_rmcp = BufReader::new(from_rmcp);
        loop {
            let mut line = Vec::new();
            match from_rmcp.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if pump_out.send(line).await.is_err() {
                        break;
                    }
                }
            }
        }
    });
    let reader = tokio::spawn(frame_input(read, to_rmcp, out, MAX_STDIO_MESSAGE_BYTES));
    let transport = rmcp::transport::async_rw::AsyncRwTransport::new_server(rmcp_in, rmcp_out);
    let served = async {
        let service = DocsServer::new(docs)
            .serve(transport)
            .await
            .map_err(|e| McpError::Handshake(e.to_string()))?;
        service.waiting().await.map_err(|e| McpError::Connection(e.to_string()))?;
        Ok(())
    }
    .await;
    // rmcp is done (the input ended, or the connection failed): stop reading, let the answers
    // already written reach the client, then return.
    reader.abort();
    let _ = pump.await;
    let _ = writer.await;
    served
}

/// What [`LineReader::next`] found.
#[derive(Debug, PartialEq)]
enum Line {
    /// A whole line is in the buffer, without its `\n`.
    Whole,
    /// The line was longer than the bound: its first [`ID_SCAN_BYTES`] are in the buffer, the
    /// rest was read and dropped.
    TooLong,
    /// The input ended (a last line without `\n` is dropped, as rmcp does).
    End,
}

/// Reads lines without ever holding more than `max` bytes of one.
struct LineReader<R> {
    read: BufReader<R>,
    buf: Vec<u8>,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    async fn next(&mut self) -> std::io::Result<Line> {
        self.buf.clear();
        let mut too_long = false;
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(Line::End);
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let part = &available[..newline.unwrap_or(available.len())];
            if !too_long && self.buf.len() + part.len() > self.max {
                too_long = true;
                self.buf.truncate(ID_SCAN_BYTES);
            }
            if too_long {
                let room = ID_SCAN_BYTES.saturating_sub(self.buf.len()).min(part.len());
                self.buf.extend_from_slice(&part[..room]);
            } else {
                self.buf.extend_from_slice(part);
            }
            let taken = newline.map_or(available.len(), |i| i + 1);
            self.read.consume(taken);
            if newline.is_some() {
                return Ok(if too_long { Line::TooLong } else { Line::Whole });
            }
        }
    }
}

/// Read `read` line by line: lines that are JSON go to rmcp (`to_rmcp`), the others are
/// answered on `out`. Closes `to_rmcp` when `read` ends, so rmcp ends too.
async fn frame_input<R, T>(read: R, mut to_rmcp: T, out: mpsc::Sender<Vec<u8>>, max: usize)
where
    R: AsyncRead + Unpin,
    T: AsyncWrite + Unpin,
{
    let mut lines = LineReader { read: BufReader::new(read), buf: Vec::new(), max };
    loop {
        let answer = match lines.next().await {
            Ok(Line::End) => break,
            Err(e) => {
                tracing::error!("cannot read stdin: {e}");
                break;
            }
            Ok(Line::TooLong) => {
                let id = leading_id(&lines.buf);
                tracing::warn!(%id, max_bytes = max, "a message over the stdin bound was answered with an error, not read");
                error_line(
                    id,
                    INVALID_REQUEST,
                    format!(
                        "the message is over {}, the most `docent mcp` reads in one line; send \
                         a shorter query or url (the tools need no more)",
                        size(max)
                    ),
                )
            }
            Ok(Line::Whole) => {
                let line = lines.buf.strip_suffix(b"\r").unwrap_or(&lines.buf);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match not_json(line) {
                    None => {
                        let sent = to_rmcp.write_all(line).await;
                        if sent.is_err() || to_rmcp.write_all(b"\n").await.is_err() {
                            break;
                        }
                        continue;
                    }
                    Some(why) => {
                        tracing::warn!(
                            "a line that is not JSON was answered with a parse error: {why}"
                        );
                        error_line(
                            Value::Null,
                            PARSE_ERROR,
                            format!(
                                "parse error: the line is not JSON ({why}); send one JSON-RPC \
                                 message per line, as UTF-8 JSON"
                            ),
                        )
                    }
                }
            }
        };
        if out.send(answer).await.is_err() {
            break;
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Why `line` is not JSON, or None when it is (rmcp then judges whether it is a message).
fn not_json(line: &[u8]) -> Option<String> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let text = match std::str::from_utf8(line) {
        Ok(t) => t,
        Err(e) => return Some(format!("not UTF-8: {e}")),
    };
    serde_json::from_str::<serde::de::IgnoredAny>(text).err().map(|e| e.to_string())
}

/// `bytes` for people: "1 MiB (1048576 bytes)", or "100 bytes".
fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB ({bytes} bytes)", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// One JSON-RPC error response, as a line.
fn error_line(id: Value, code: i64, message: String) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

/// The `id` of the request whose line starts with `head`, when it stands at the top level of
/// the object before the cut (`{"jsonrpc":"2.0","id":7,"method":...`) and is a number or a
/// string; else null.
fn leading_id(head: &[u8]) -> Value {
    let mut depth = 0usize;
    let mut i = 0;
    while i < head.len() {
        match head[i] {
            b'"' => {
                let Some(end) = string_end(head, i) else { return Value::Null };
                let after = skip_space(head, end);
                if depth == 1 && &head[i + 1..end - 1] == b"id" && head.get(after) == Some(&b':') {
                    let value = &head[skip_space(head, after + 1)..];
                    let mut values = serde_json::Deserializer::from_slice(value).into_iter();
                    return match values.next() {
                        // Something follows it: a number at the cut may be cut short.
                        Some(Ok(v @ (Value::Number(_) | Value::String(_))))
                            if values.byte_offset() < value.len() =>
                        {
                            v
                        }
                        _ => Value::Null,
                    };
                }
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Value::Null
}

/// The index just past the string that opens at `head[start]` (a `"`), if it closes.
fn string_end(head: &[u8], start: usize) -> Option<usize> {
    let mut j = start + 1;
    while j < head.len() {
        match head[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

fn skip_space(head: &[u8], mut i: usize) -> usize {
    while head.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_of_a_cut_request_is_read_when_it_comes_first() {
        let id = |s: &str| leading_id(s.as_bytes());
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"#), json!(7));
        assert_eq!(id(r#"{ "id" : "a\"b", "method""#), json!("a\"b"));
        assert_eq!(id(r#"{"params":{"id":3},"id":4,"#), json!(4), "the top level's");
        assert_eq!(id(r#"{"method":"id","params":{"arguments":{"query":"yyyy"#), Value::Null);
        assert_eq!(id(r#"{"method":"x","params":{"id":3}"#), Value::Null);
        assert_eq!(id(r#"{"id":{"x":1},"#), Value::Null, "ids are numbers or strings");
        assert_eq!(id(r#"{"id":12"#), Value::Null, "cut inside the id: not trusted");
        assert_eq!(id("not json"), Value::Null);
        assert_eq!(id(""), Value::Null);
    }

    /// What [`frame_input`] passes to rmcp and what it answers itself, for `input`.
    async fn framed(input: &[u8], max: usize) -> (String, Vec<Value>) {
        let (tx, mut rx) = mpsc::channel(64);
        let mut to_rmcp = Vec::new();
        frame_input(input, &mut to_rmcp, tx, max).await;
        let mut answers = Vec::new();
        while let Ok(line) = rx.try_recv() {
            assert_eq!(line.last(), Some(&b'\n'));
            answers.push(serde_json::from_slice(&line).unwrap());
        }
        (String::from_utf8(to_rmcp).unwrap(), answers)
    }

    #[tokio::test]
    async fn every_line_is_passed_on_or_answered() {
        let long = format!(r#"{{"jsonrpc":"2.0","id":9,"params":"{}"}}"#, "y".repeat(300));
        let input = [
            "{\"jsonrpc\":\"2.0\",\"id\":1}\r\n\nnot json\n".as_bytes(),
            long.as_bytes(),
            b"\n  \n[1,2]\n{\"id\":2}\n{\"cut\":",
        ]
        .concat();
        let (passed, answers) = framed(&input, 100).await;
        assert_eq!(passed, "{\"jsonrpc\":\"2.0\",\"id\":1}\n[1,2]\n{\"id\":2}\n");
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert_eq!(answers[0]["error"]["code"], json!(PARSE_ERROR));
        assert_eq!(answers[0]["id"], Value::Null);
        let m = answers[0]["error"]["message"].as_str().unwrap();
        assert!(m.contains("not JSON") && m.contains("one JSON-RPC message per line"), "{m}");
        assert_eq!(answers[1]["error"]["code"], json!(INVALID_REQUEST));
        assert_eq!(answers[1]["id"], json!(9));
        let m = answers[1]["error"]["message"].as_str().unwrap();
        assert!(m.contains("over 100 bytes") && m.contains("send a shorter"), "{m}");
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_gets_a_parse_error() {
        let (passed, answers) = framed(b"{\"id\":1,\"q\":\"\xff\"}\n", 100).await;
        assert_eq!(passed, "");
        assert_eq!(answers[0]["error"]["code"], json!(PARSE_ERROR), "{answers:?}");
    }

    #[tokio::test]
    async fn a_line_over_the_bound_is_never_held_whole() {
        let input = [&vec![b'x'; 10 << 20][..], b"\n{}\n"].concat();
        let mut reader =
            LineReader { read: BufReader::new(&input[..]), buf: Vec::new(), max: 1 << 20 };
        assert_eq!(reader.next().await.unwrap(), Line::TooLong);
        assert!(reader.buf.len() <= ID_SCAN_BYTES && reader.buf.capacity() <= 2 << 20);
        assert_eq!(reader.next().await.unwrap(), Line::Whole);
        assert_eq!(reader.buf, b"{}");
        assert_eq!(reader.next().await.unwrap(), Line::End);
    }
}

//! `docent mcp` end to end: the binary on an index of docs/ (the project's own docs), driven
//! over stdin/stdout with raw JSON-RPC lines as an MCP client sends them.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{json, Value};

fn docs_index(dir: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let out = dir.join("docs.idx");
    let st = Command::new(env!("CARGO_BIN_EXE_docent"))
        .args(["index", root.to_str().unwrap(), "--out", out.to_str().unwrap(), "--embed", "none"])
        .output()
        .unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    out.to_str().unwrap().to_string()
}

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn start(index: &str) -> Server {
        Server::start_with(index, &[])
    }

    fn start_with(index: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_docent"))
            .args(["mcp", index, "--name", "the docent docs"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = Server { child, stdin, stdout, next_id: 1 };
        let init = s.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "0"}}),
        );
        assert!(
            init["result"]["instructions"].as_str().unwrap().contains("the docent docs"),
            "{init}"
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s
    }

    fn send(&mut self, v: &Value) {
        writeln!(self.stdin, "{v}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send a request and read lines until its response.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the server closed stdout");
            let v: Value = serde_json::from_str(&line).expect("every stdout line is JSON-RPC");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// The next line the server writes, which must come within 20 s.
    fn response(&mut self) -> Value {
        let (tx, rx) = std::sync::mpsc::channel();
        let pid = self.child.id();
        let watchdog = std::thread::spawn(move || {
            if rx.recv_timeout(std::time::Duration::from_secs(20)).is_err() {
                // No answer: end the server so that the read below fails instead of hanging.
                let _ = Command::new("kill").arg(pid.to_string()).status();
            }
        });
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        let _ = tx.send(());
        watchdog.join().unwrap();
        assert!(n > 0, "no answer within 20 s (or the server closed stdout)");
        serde_json::from_str(&line).expect("every stdout line is JSON-RPC")
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn mcp_over_stdio_lists_the_tools_and_finds_the_expected_sections() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(&docs_index(dir.path()));
    let tools = s.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for t in ["search_docs", "read_section", "read_page", "list_namespaces"] {
        assert!(names.contains(&t), "{t} missing from {names:?}");
    }

    let r = s.call("search_docs", json!({"query": "what is the default max_body_bytes", "top": 5}));
    let sc = &r["result"]["structuredContent"];
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    let urls: Vec<&str> =
        sc["results"].as_array().unwrap().iter().map(|h| h["url"].as_str().unwrap()).collect();
    assert!(urls.contains(&"configuration.html#limits"), "{urls:?}");
    assert!(urls.len() <= 5 && !urls.is_empty());
    let mut dedup = urls.clone();
    dedup.dedup();
    assert_eq!(dedup.len(), urls.len(), "one result per section: {urls:?}");
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("url: configuration.html#limits"));

    let r = s.call("read_section", json!({"url": "configuration.html#limits"}));
    let sec = &r["result"]["structuredContent"];
    assert_eq!(sec["heading_path"], json!(["Configuration", "[limits]"]), "{r}");
    assert!(sec["text"].as_str().unwrap().contains("requests_per_minute_per_ip"));

    let r = s.call("read_page", json!({"url": "configuration.html#limits"}));
    let page = &r["result"]["structuredContent"];
    assert_eq!(page["title"], json!("Configuration"));
    assert!(page["sections"].as_array().unwrap().len() > 3);

    let r = s.call("list_namespaces", json!({}));
    assert_eq!(r["result"]["structuredContent"]["namespaces"], json!([]));
}

#[test]
fn mcp_bad_input_gets_mcp_errors_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Server::start(&docs_index(dir.path()));
    let error_text = |r: &Value| -> String {
        assert_eq!(r["result"]["isError"], json!(true), "{r}");
        r["result"]["content"][0]["text"].as_str().unwrap().to_string()
    };

    let r = s.call("no_such_tool", json!({}));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");

    let r = s.call("search_docs", json!({}));
    assert!(error_text(&r).contains("query"));
    let r = s.call("search_docs", json!({"query": "x ".repeat(100_000)}));
    assert!(error_text(&r).contains("the limit is 1000"));
    let r = s.call("search_docs", json!({"query": "limits", "top": 0}));
    assert!(error_text(&r).contains("1 to 20"));
    let r = s.call("search_docs", json!({"query": "limits", "namespace": "v9"}));
    assert!(error_text(&r).contains("no namespaces"));
    let r = s.call("read_section", json!({"url": "configuration.html#limit"}));
    let t = error_text(&r);
    assert!(t.contains("did you mean") && t.contains("configuration.html#limits"), "{t}");
    let r = s.call("read_page", json!({"url": "https://nowhere.example/x"}));
    assert!(error_text(&r).contains("search_docs first"));

    // A line that is not JSON gets a parse error, id null.
    writeln!(s.stdin, "this is not JSON-RPC").unwrap();
    let r = s.response();
    assert_eq!((&r["id"], &r["error"]["code"]), (&json!(null), &json!(-32700)), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("one JSON-RPC message per line"));
    // A message over the 1 MiB stdin bound is answered, under its id when that comes first.
    let huge = json!({"jsonrpc": "2.0", "id": 999, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": "y".repeat(2 << 20)}}});
    writeln!(s.stdin, "{huge}").unwrap();
    let r = s.response();
    assert_eq!((&r["id"], &r["error"]["code"]), (&json!(999), &json!(-32600)), "{r}");
    let m = r["error"]["message"].as_str().unwrap();
    assert!(m.contains("over 1 MiB") && m.contains("send a shorter query"), "{m}");
    let late_id = format!(r#"{{"params":{{"q":"{}"}},"id":1000}}"#, "z".repeat(2 << 20));
    writeln!(s.stdin, "{late_id}").unwrap();
    let r = s.response();
    assert_eq!((&r["id"], &r["error"]["code"]), (&json!(null), &json!(-32600)), "{r}");

    // Still answering.
    let r = s.call("search_docs", json!({"query": "trusted proxies"}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
}

#[test]
fn mcp_refuses_a_missing_index_with_a_clear_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_docent"))
        .args(["mcp", "/nonexistent/docs.idx"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("build one with `docent index`") && !err.contains("panicked"), "{err}");
}

#[test]
fn mcp_embeds_queries_in_process_when_the_index_was_built_with_the_local_model() {
    if docent_embed::find_local_model(&docent_embed::default_local_model()).is_none() {
        eprintln!(
            "SKIPPED: no local embedding model on this machine (scripts/setup installs them)"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("site");
    std::fs::create_dir_all(&src).unwrap();
    for (name, text) in [
        ("install.md", "# Installing\n\n## On Linux\n\nDownload the release archive, unpack it and run the setup script: it puts the binary on your PATH.\n"),
        ("cache.md", "# Caching\n\n## Headers\n\nServe the index file with Cache-Control max-age and an ETag so browsers revalidate it.\n"),
        ("limits.md", "# Limits\n\n## Requests\n\nEach client address may send sixty requests per minute; more get status 429.\n"),
    ] {
        std::fs::write(src.join(name), text).unwrap();
    }
    let idx = dir.path().join("local.idx");
    let out = Command::new(env!("CARGO_BIN_EXE_docent"))
        .args([
            "index",
            src.to_str().unwrap(),
            "--out",
            idx.to_str().unwrap(),
            "--embed",
            "local",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // No word in common with any section: only the embedding can find one (even when the floor
    // then abstains, the closest sections are listed).
    let q = json!({"query": "setting up the software on a new machine", "top": 1});

    let mut s = Server::start(idx.to_str().unwrap());
    let r = s.call("search_docs", q.clone());
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["retrieval"], json!("hybrid"), "{r}");
    assert_eq!(sc["results"][0]["url"], json!("install.html#on-linux"), "{r}");

    let mut s = Server::start_with(idx.to_str().unwrap(), &["--lexical"]);
    let r = s.call("search_docs", q);
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["retrieval"], json!("lexical"), "{r}");
    assert_eq!(sc["results"], json!([]), "BM25 alone finds nothing: {r}");
}

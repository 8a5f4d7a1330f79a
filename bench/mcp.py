#!/usr/bin/env python3
"""MCP `search_docs` latency, client-observed, over stdio (`docent mcp`) and Streamable HTTP
(`docent serve` with `[mcp]`, POST /mcp on a keep-alive connection).

    python3 bench/mcp.py [--calls 300] [--index FILE] [--bin target/release-native/docent]

Without --index it indexes docs/ with --embed local (hybrid search, queries embedded in-process
by all-MiniLM-L6-v2) into target/tmp/bench-mcp/docs.idx. The client speaks raw JSON-RPC (one
line per message on stdio; one POST per call over HTTP) so that the client's own cost stays
small beside the server's. Questions rotate over a fixed list; prints p50/p90/p99/mean per
transport. Needs only the Python standard library.
"""

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = [
    "how do I set the per-IP rate limits",
    "which caching headers should the index file be served with",
    "X-Forwarded-For behind a reverse proxy",
    "how do I add the widget to a VitePress site",
    "what does the relevance floor do",
    "can I use Ollama instead of OpenAI",
    "how big is the index file for a large site",
    "does the widget work without an API key",
    "how do I run docent serve behind nginx",
    "which embedding model does --embed local use",
]


def percentile(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100
    f = int(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def report(name, ms):
    print(
        f"{name:6} n={len(ms)}  p50 {percentile(ms, 50):7.2f} ms  p90 {percentile(ms, 90):7.2f} ms  "
        f"p99 {percentile(ms, 99):7.2f} ms  mean {statistics.mean(ms):7.2f} ms"
    )


def call(i):
    q = QUESTIONS[i % len(QUESTIONS)]
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": q, "top": 5}}}


def check(resp):
    r = resp.get("result") or {}
    if r.get("isError") or "structuredContent" not in r:
        sys.exit(f"search_docs failed: {json.dumps(resp)[:500]}")


def bench_stdio(binary, index, calls, warmup):
    p = subprocess.Popen([binary, "mcp", str(index)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def rpc(msg):
        p.stdin.write(json.dumps(msg) + "\n")
        p.stdin.flush()
        if "id" not in msg:
            return None
        while True:
            v = json.loads(p.stdout.readline())
            if v.get("id") == msg["id"]:
                return v

    rpc({"jsonrpc": "2.0", "id": -1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
    ms = []
    for i in range(warmup + calls):
        t = time.perf_counter()
        resp = rpc(call(i))
        dt = (time.perf_counter() - t) * 1000
        check(resp)
        if i >= warmup:
            ms.append(dt)
    p.stdin.close()
    p.wait(timeout=10)
    return ms


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_http(binary, index, calls, warmup, workdir):
    port = free_port()
    cfg = Path(workdir) / "bench-mcp.toml"
    cfg.write_text(
        f'[serve]\nlisten = "127.0.0.1:{port}"\n\n[mcp]\nindex = "{index}"\n\n'
        "[limits]\nrequests_per_minute_per_ip = 1000000\nrequests_per_minute = 1000000\n"
    )
    p = subprocess.Popen([binary, "serve", "--config", str(cfg)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                c.request("GET", "/healthz")
                c.getresponse().read()
                break
            except OSError:
                if time.time() > deadline or p.poll() is not None:
                    sys.exit("docent serve did not start")
                time.sleep(0.2)
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
        ms = []
        for i in range(warmup + calls):
            body = json.dumps(call(i))
            t = time.perf_counter()
            c.request("POST", "/mcp", body=body, headers=headers)
            r = c.getresponse()
            data = r.read()
            dt = (time.perf_counter() - t) * 1000
            if r.status != 200:
                sys.exit(f"/mcp answered {r.status}: {data[:300]!r}")
            check(json.loads(data))
            if i >= warmup:
                ms.append(dt)
        return ms
    finally:
        p.terminate()
        p.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--index", type=Path)
    ap.add_argument("--bin", default=str(ROOT / "target" / os.environ.get("PROFILE", "release-native") / "docent"))
    a = ap.parse_args()
    if not Path(a.bin).exists():
        sys.exit(f"{a.bin} not found: cargo build --profile release-native -p docent-cli (or pass --bin)")
    work = ROOT / "target" / "tmp" / "bench-mcp"
    work.mkdir(parents=True, exist_ok=True)
    index = a.index
    if index is None:
        index = work / "docs.idx"
        if not index.exists():
            print("indexing docs/ with --embed local ...", flush=True)
            subprocess.run([a.bin, "index", str(ROOT / "docs"), "--out", str(index), "--embed", "local", "--quiet"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        report("stdio", bench_stdio(a.bin, index, a.calls, a.warmup))
        report("http", bench_http(a.bin, index, a.calls, a.warmup, tmp))


if __name__ == "__main__":
    main()

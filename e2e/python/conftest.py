"""Fixtures: start the upstream double, `docent serve` and LiteLLM proxy on loopback.

Binaries come from the cargo target dir (run.sh builds them):
- DOCENT_BIN: a `docent` binary with the `serve` subcommand, else target/debug/docent-proxy;
- DOCENT_DOUBLE_BIN: default target/debug/docent-upstream-double.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def docent_cli() -> str:
    """The `docent` CLI binary (DOCENT_CLI_BIN, else target/debug/docent)."""
    binary = os.environ.get("DOCENT_CLI_BIN", str(TARGET / "debug" / "docent"))
    if not os.path.exists(binary):
        pytest.exit(f"{binary} not found: run `cargo build -p docent-cli` (e2e/python/run.sh does)", 2)
    return binary


def serve_command() -> list:
    """`docent serve` if the CLI has it, else the standalone docent-proxy binary."""
    explicit = os.environ.get("DOCENT_BIN")
    if explicit:
        return [explicit, "serve"]
    docent = TARGET / "debug" / "docent"
    if docent.exists():
        ok = subprocess.run([str(docent), "serve", "--help"], capture_output=True, timeout=20)
        if ok.returncode == 0 and b"--upstream" in ok.stdout:
            return [str(docent), "serve"]
    proxy = TARGET / "debug" / "docent-proxy"
    if not proxy.exists():
        pytest.exit(f"{proxy} not found: run `cargo build -p docent-proxy --bin docent-proxy` (e2e/python/run.sh does)", 2)
    return [str(proxy)]


class Proc:
    def __init__(self, name, cmd, health_url, env=None, timeout=30.0, log_dir=None):
        self.name = name
        self.log = open(Path(log_dir or tempfile.gettempdir()) / f"{name}.log", "w+")
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        deadline = time.time() + timeout
        while True:
            if self.p.poll() is not None:
                raise RuntimeError(f"{name} exited early ({self.p.returncode}):\n{self.output()}")
            try:
                if httpx.get(health_url, timeout=1.0).status_code < 500:
                    return
            except httpx.HTTPError:
                pass
            if time.time() > deadline:
                self.stop()
                raise RuntimeError(f"{name} did not come up within {timeout}s:\n{self.output()}")
            time.sleep(0.2)

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-4000:]

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait(timeout=5)
        self.log.close()


@pytest.fixture(scope="session")
def workdir():
    d = tempfile.mkdtemp(prefix="docent-e2e-")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def double(workdir):
    port = free_port()
    binary = os.environ.get("DOCENT_DOUBLE_BIN", str(TARGET / "debug" / "docent-upstream-double"))
    if not Path(binary).exists():
        pytest.exit(f"{binary} not found: run `cargo build -p docent-bench --bin docent-upstream-double`", 2)
    p = Proc("double", [binary, "--listen", f"127.0.0.1:{port}"], f"http://127.0.0.1:{port}/healthz", log_dir=workdir)
    yield f"http://127.0.0.1:{port}"
    p.stop()


def start_docent(workdir, name, config_text, env=None):
    port = free_port()
    cfg = workdir / f"{name}.toml"
    cfg.write_text(config_text.replace("@PORT@", str(port)))
    p = Proc(name, serve_command() + ["--config", str(cfg)], f"http://127.0.0.1:{port}/healthz", env=env, log_dir=workdir)
    return p, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="session")
def docent(double, workdir):
    text = f"""
[serve]
listen = "127.0.0.1:@PORT@"
site = "E2E Docs"

[serve.chat]
provider = "double"
model = "e2e-chat"

[serve.embeddings]
provider = "double"
model = "e2e-embed"

[providers.double]
kind = "openai-compatible"
base_url = "{double}/v1"
retry_backoff_ms = 10
first_byte_timeout_ms = 3000

[moderation]
enabled = true
provider = "double"

[limits]
requests_per_minute_per_ip = 10000
"""
    p, url = start_docent(workdir, "docent-double", text)
    yield url
    p.stop()


@pytest.fixture(scope="session")
def docent_offline(workdir):
    p, url = start_docent(workdir, "docent-offline", '[serve]\nlisten = "127.0.0.1:@PORT@"\n')
    yield url
    p.stop()


MOCK_ANSWER = "According to the docs, LiteLLM answered this [1]. See also [2]."
# What LiteLLM's `mock-rewrite` model answers to every request: a standalone English query, as a
# chat model rewriting a German question for `docent eval --rewrite-url` would.
MOCK_REWRITE = "Which caching headers should the static index file be served with?"


@pytest.fixture(scope="session")
def litellm(workdir):
    if shutil.which("litellm") is None:
        pytest.skip("litellm is not installed (pip install 'litellm[proxy]')")
    port = free_port()
    cfg = workdir / "litellm.yaml"
    cfg.write_text(
        f"""model_list:
  - model_name: mock-chat
    litellm_params:
      model: openai/mock-chat
      api_key: sk-not-used
      mock_response: "{MOCK_ANSWER}"
  - model_name: mock-rewrite
    litellm_params:
      model: openai/mock-rewrite
      api_key: sk-not-used
      mock_response: "{MOCK_REWRITE}"
general_settings:
  master_key: sk-e2e-litellm-master
"""
    )
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR", "LITELLM_TELEMETRY": "False", "NO_DOCS": "True", "DISABLE_ADMIN_UI": "True"}
    p = Proc(
        "litellm",
        ["litellm", "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"],
        f"http://127.0.0.1:{port}/health/liveliness",
        env=env,
        timeout=120.0,
        log_dir=workdir,
    )
    yield f"http://127.0.0.1:{port}"
    p.stop()


@pytest.fixture(scope="session")
def docent_litellm(litellm, workdir):
    text = f"""
[serve]
listen = "127.0.0.1:@PORT@"
site = "E2E Docs"

[serve.chat]
provider = "litellm"
model = "mock-chat"

[providers.litellm]
kind = "openai-compatible"
base_url = "{litellm}/v1"
api_key_env = "DOCENT_E2E_LITELLM_KEY"
first_byte_timeout_ms = 20000

[limits]
requests_per_minute_per_ip = 10000
"""
    p, url = start_docent(workdir, "docent-litellm", text, env={"DOCENT_E2E_LITELLM_KEY": "sk-e2e-litellm-master"})
    yield url
    p.stop()

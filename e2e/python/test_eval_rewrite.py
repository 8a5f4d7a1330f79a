"""`docent eval --rewrite-url` scores the query-rewrite path through a real OpenAI-compatible
chat endpoint: LiteLLM proxy, whose `mock-rewrite` model answers every request with
conftest.MOCK_REWRITE."""

import json
import os
import subprocess

import pytest

from conftest import MOCK_REWRITE, ROOT, docent_cli

# German, and sharing no word with the section it asks about (docs/deployment.md).
QUESTION = "Wie lange dürfen Browser die Dateien zwischenspeichern?"
GOLD = "deployment.html#caching-headers"



@pytest.fixture(scope="module")
def eval_inputs(workdir):
    idx = workdir / "docs.idx"
    subprocess.run([docent_cli(), "index", str(ROOT / "docs"), "--out", str(idx), "--quiet"], check=True, timeout=120)
    questions = workdir / "rewrite.jsonl"
    questions.write_text(json.dumps({"question": QUESTION, "gold": [GOLD], "kind": "non-english"}) + "\n")
    return idx, questions


def run_eval(idx, questions, *extra, env=None):
    out = subprocess.run(
        [docent_cli(), "eval", str(idx), str(questions), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_eval_scores_the_rewritten_query_from_an_openai_compatible_endpoint(litellm, eval_inputs):
    idx, questions = eval_inputs
    plain = run_eval(idx, questions)["questions"][0]
    assert plain.get("rewritten") is None
    assert plain["rank_without_floor"] != 1, "the German question alone should not find the section"

    report = run_eval(
        idx,
        questions,
        "--rewrite-url", f"{litellm}/v1",
        "--rewrite-model", "mock-rewrite",
        "--rewrite-key-env", "DOCENT_E2E_REWRITE_KEY",
        env={"DOCENT_E2E_REWRITE_KEY": "sk-e2e-litellm-master"},
    )
    q = report["questions"][0]
    assert q["rewritten"] == MOCK_REWRITE
    assert q["rank"] == 1, q
    assert not q["abstained"]


def test_a_rewrite_endpoint_that_refuses_the_request_is_a_clear_error(litellm, eval_inputs):
    # LiteLLM refuses a key it does not know (with 400 "No connected db" when it has no key
    # database, 401 otherwise): docent eval stops with the endpoint and its answer, not a panic.
    idx, questions = eval_inputs
    out = subprocess.run(
        [docent_cli(), "eval", str(idx), str(questions), "--rewrite-url", f"{litellm}/v1",
         "--rewrite-model", "mock-rewrite", "--rewrite-key-env", "DOCENT_E2E_BAD_KEY"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DOCENT_E2E_BAD_KEY": "sk-wrong"},
    )
    assert out.returncode == 1, out.stderr
    assert "the rewrite endpoint" in out.stderr and "answered HTTP 4" in out.stderr, out.stderr
    assert "panicked" not in out.stderr

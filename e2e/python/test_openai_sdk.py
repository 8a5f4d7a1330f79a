"""The official openai SDK as a client of `docent serve` (upstream: docent-upstream-double)."""

import base64
import math
import struct

import httpx
import openai
import pytest

DEFAULT_ANSWER = (
    "According to the docs, the setting lives in the configuration file [1]. "
    "You can override it per project, as the reference explains [2]."
)


@pytest.fixture()
def client(docent):
    return openai.OpenAI(base_url=f"{docent}/v1", api_key="not-needed-the-proxy-holds-the-key", max_retries=0, timeout=30)


def test_streaming_chat_yields_the_upstream_answer_chunk_by_chunk(client):
    stream = client.chat.completions.create(
        model="anything", stream=True, messages=[{"role": "user", "content": "How do I configure it?"}]
    )
    parts = [c.choices[0].delta.content or "" for c in stream if c.choices]
    assert "".join(parts) == DEFAULT_ANSWER
    assert len(parts) > 10


def test_streaming_with_include_usage_ends_with_a_usage_chunk(client):
    chunks = list(
        client.chat.completions.create(
            model="anything",
            stream=True,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "hello"}],
        )
    )
    assert chunks[-1].choices == []
    assert chunks[-1].usage.completion_tokens > 0
    assert all(c.usage is None for c in chunks[:-1])


def test_non_streamed_chat_returns_a_completion_with_usage(client):
    r = client.chat.completions.create(model="anything", messages=[{"role": "user", "content": "hello"}])
    assert r.choices[0].message.content == DEFAULT_ANSWER
    assert r.usage.total_tokens > 0


def test_embeddings_as_floats_and_base64_agree(client):
    floats = client.embeddings.create(model="e2e-embed", input=["alpha", "beta"], encoding_format="float")
    assert floats.model == "e2e-embed"
    assert len(floats.data) == 2
    v = floats.data[0].embedding
    assert len(v) == 384
    assert abs(math.sqrt(sum(x * x for x in v)) - 1.0) < 1e-3
    # The SDK's default asks for base64 and decodes it.
    default = client.embeddings.create(model="e2e-embed", input=["alpha"])
    assert default.data[0].embedding == pytest.approx(v, abs=1e-6)
    raw = client.embeddings.create(model="e2e-embed", input="alpha", encoding_format="base64").data[0].embedding
    decoded = list(struct.unpack(f"<{len(v)}f", base64.b64decode(raw)))
    assert decoded == pytest.approx(v, abs=1e-6)


def test_moderation_flags_through_the_proxy(client):
    r = client.moderations.create(input=["a friendly question", "FLAGME please"])
    assert [x.flagged for x in r.results] == [False, True]
    assert r.results[1].categories.harassment is True


def test_upstream_500_surfaces_as_a_502_status_error(client):
    with pytest.raises(openai.InternalServerError) as e:
        client.chat.completions.create(model="m", stream=True, messages=[{"role": "user", "content": "ERROR500"}])
    assert e.value.status_code == 502
    assert e.value.code == "upstream_error"


def test_upstream_429_surfaces_as_rate_limit_error_with_retry_after(client):
    with pytest.raises(openai.RateLimitError) as e:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "RATE429"}])
    assert e.value.status_code == 429
    assert e.value.response.headers["retry-after"] == "7"
    assert e.value.code == "rate_limited"


def test_a_system_message_is_refused_as_invalid_role(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="m",
            messages=[{"role": "system", "content": "You are a pirate."}, {"role": "user", "content": "hi"}],
        )
    assert e.value.code == "invalid_role"


def test_flagged_old_history_is_refused_with_categories(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "FLAGME an old hateful message"},
                {"role": "assistant", "content": "no"},
                {"role": "user", "content": "What is a workspace?"},
            ],
        )
    assert e.value.code == "content_flagged"
    assert "harassment" in e.value.body["categories"]


def test_a_foreign_origin_is_permission_denied(docent):
    c = openai.OpenAI(base_url=f"{docent}/v1", api_key="x", max_retries=0, default_headers={"Origin": "https://evil.example"})
    with pytest.raises(openai.PermissionDeniedError) as e:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert e.value.code == "origin_not_allowed"


def test_another_embedding_model_is_a_bad_request(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.embeddings.create(model="text-embedding-3-large", input="x")
    assert e.value.code == "embedding_model_mismatch"


def test_without_a_chat_model_the_proxy_answers_503_no_chat_model(docent_offline):
    c = openai.OpenAI(base_url=f"{docent_offline}/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.APIStatusError) as e:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert e.value.status_code == 503
    assert e.value.code == "no_chat_model"


def test_metrics_are_prometheus_text(docent):
    text = httpx.get(f"{docent}/metrics").text
    assert "# TYPE docent_requests_total counter" in text
    assert "docent_open_streams" in text

"""LiteLLM proxy (mock_response) as a REAL third-party OpenAI-compatible upstream of docent serve."""

import openai
import pytest

from conftest import MOCK_ANSWER


@pytest.fixture()
def client(docent_litellm):
    return openai.OpenAI(base_url=f"{docent_litellm}/v1", api_key="x", max_retries=0, timeout=60)


def test_streaming_through_litellm_delivers_the_mock_answer(client):
    stream = client.chat.completions.create(model="ignored", stream=True, messages=[{"role": "user", "content": "hi"}])
    text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == MOCK_ANSWER


def test_streaming_usage_through_litellm(client):
    chunks = list(
        client.chat.completions.create(
            model="ignored",
            stream=True,
            stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "hi"}],
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == MOCK_ANSWER
    usage = [c.usage for c in chunks if c.usage is not None]
    assert usage, "a usage chunk arrives when asked for"
    assert usage[-1].total_tokens > 0


def test_streaming_without_usage_request_has_no_usage_only_chunk(client):
    chunks = list(client.chat.completions.create(model="ignored", stream=True, messages=[{"role": "user", "content": "hi"}]))
    assert all(c.choices for c in chunks), "the proxy strips the usage-only chunk it asked for itself"


def test_non_streamed_completion_through_litellm(client):
    r = client.chat.completions.create(model="ignored", messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == MOCK_ANSWER


def test_litellm_errors_surface_as_docent_errors(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="m", messages=[{"role": "tool", "content": "x"}, {"role": "user", "content": "hi"}])
    assert e.value.code == "invalid_role"

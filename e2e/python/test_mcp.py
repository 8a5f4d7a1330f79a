"""A real MCP client (the `mcp` Python SDK) drives docent's docs tools over stdio (`docent mcp`)
and over Streamable HTTP (`docent serve` with `[mcp]`, at /mcp), on an index of docs/."""

import subprocess

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from conftest import ROOT, docent_cli, start_docent

# The SDK is async; anyio's pytest plugin (anyio comes with mcp) runs the tests on asyncio.
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


# Known questions and the section that answers them (docs/*.md).
KNOWN = [
    ("what is the default max_body_bytes", "configuration.html#limits"),
    ("which caching headers should the index file be served with", "deployment.html#caching-headers"),
    ("X-Forwarded-For behind a reverse proxy", "deployment.html#trusted-proxies"),
]



@pytest.fixture(scope="module")
def docs_index(workdir):
    idx = workdir / "mcp-docs.idx"
    subprocess.run(
        [docent_cli(), "index", str(ROOT / "docs"), "--out", str(idx), "--embed", "none", "--quiet"],
        check=True,
        timeout=120,
    )
    return idx


@pytest.fixture(scope="module")
def mcp_url(docs_index, workdir):
    text = f'[serve]\nlisten = "127.0.0.1:@PORT@"\n\n[mcp]\nindex = "{docs_index}"\n\n[limits]\nrequests_per_minute_per_ip = 100000\nrequests_per_minute = 100000\n'
    p, url = start_docent(workdir, "docent-mcp", text)
    yield f"{url}/mcp"
    p.stop()


def stdio_server(docs_index):
    return StdioServerParameters(command=docent_cli(), args=["mcp", str(docs_index), "--name", "the docent docs"])


@pytest.fixture(params=["stdio", "http"])
def server(request, docs_index):
    if request.param == "stdio":
        return stdio_server(docs_index)
    return request.getfixturevalue("mcp_url")


async def test_the_tools_are_listed_with_their_arguments(server):
    async with Client(server) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert {"search_docs", "read_section", "read_page", "list_namespaces"} <= set(tools)
        search = tools["search_docs"]
        assert search.input_schema["required"] == ["query"]
        assert {"query", "top", "namespace"} <= set(search.input_schema["properties"])
        assert "cite" in search.description and "read_section" in search.description
        assert tools["read_section"].input_schema["required"] == ["url"]


@pytest.mark.parametrize("question,gold", KNOWN)
async def test_search_docs_finds_the_section_that_answers_a_known_question(server, question, gold):
    async with Client(server) as c:
        r = await c.call_tool("search_docs", {"query": question, "top": 3})
        assert not r.is_error, r.content
        found = r.structured_content
        assert not found["abstained"]
        urls = [h["url"] for h in found["results"]]
        assert gold in urls, urls
        hit = found["results"][urls.index(gold)]
        assert hit["text"] and hit["heading_path"] and hit["title"] and hit["score"] > 0
        assert hit["tokens"] <= 1000
        assert f"url: {gold}" in r.content[0].text


async def test_read_section_gives_the_whole_section(server):
    async with Client(server) as c:
        r = await c.call_tool("read_section", {"url": "configuration.html#limits"})
        assert not r.is_error, r.content
        s = r.structured_content
        assert s["heading_path"] == ["Configuration", "[limits]"]
        assert "requests_per_minute_per_ip" in s["text"] and not s["truncated"]
        page = await c.call_tool("read_page", {"url": "deployment.html"})
        titles = [sec["url"] for sec in page.structured_content["sections"]]
        assert "deployment.html#caching-headers" in titles


async def test_a_question_the_docs_do_not_cover_abstains(server):
    async with Client(server) as c:
        r = await c.call_tool("search_docs", {"query": "recipe for sourdough bread with rye flour"})
        assert not r.is_error
        assert r.structured_content["abstained"], r.structured_content
        assert "don't seem to cover" in r.content[0].text


async def test_bad_input_gets_mcp_errors_and_never_a_crash(server):
    async with Client(server) as c:
        with pytest.raises(MCPError) as e:
            await c.call_tool("no_such_tool", {})
        assert e.value.error.code == -32602
        r = await c.call_tool("search_docs", {})
        assert r.is_error and "query" in r.content[0].text
        r = await c.call_tool("search_docs", {"query": "rate limits " * 5000})
        assert r.is_error and "the limit is 1000" in r.content[0].text
        r = await c.call_tool("read_section", {"url": "nowhere.html#nothing"})
        assert r.is_error and "search_docs" in r.content[0].text
        r = await c.call_tool("read_section", {"url": "configuration.html#limit"})
        assert r.is_error and "configuration.html#limits" in r.content[0].text
        # The server is still up and answering.
        r = await c.call_tool("search_docs", {"query": "trusted proxies"})
        assert not r.is_error

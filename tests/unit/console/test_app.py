"""The console app's pages, JSON errors and write refusals, over aiohttp's test client.

The cluster here is an address nothing listens on, so every page takes the error path;
the pages showing a real cluster are tested against real brokers in
tests/integration/test_console_api.py and, in a browser, test_console_browser.py.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp.test_utils import TestClient, TestServer

from kafpy.console.app import create_app
from kafpy.console.cluster_service import ClusterService


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _client(allow_writes: bool) -> TestClient:  # type: ignore[type-arg]
    service = ClusterService(f"127.0.0.1:{_closed_port()}", timeout_s=10)
    client: TestClient = TestClient(TestServer(create_app(service, allow_writes=allow_writes)))  # type: ignore[type-arg]
    await client.start_server()
    return client


@pytest_asyncio.fixture
async def read_only() -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    client = await _client(False)
    yield client
    await client.close()


@pytest_asyncio.fixture
async def writable() -> AsyncIterator[TestClient]:  # type: ignore[type-arg]
    client = await _client(True)
    yield client
    await client.close()


@pytest.mark.asyncio
async def test_unreachable_cluster_is_an_error_page_not_a_traceback(read_only: TestClient) -> None:  # type: ignore[type-arg]
    response = await read_only.get("/topics")
    html = await response.text()
    assert response.status == 503
    assert "<h1>Cannot reach the cluster</h1>" in html
    assert "Tried: Listing the topics (bootstrap servers: 127.0.0.1:" in html
    assert "Traceback" not in html


@pytest.mark.asyncio
async def test_api_errors_are_json(read_only: TestClient) -> None:  # type: ignore[type-arg]
    response = await read_only.get("/api/brokers")
    assert response.status == 503
    error = (await response.json())["error"]
    assert error["title"] == "Cannot reach the cluster"
    assert error["tried"].startswith("Describing the brokers")


@pytest.mark.asyncio
async def test_bad_parameters_are_400_with_a_sentence(read_only: TestClient) -> None:  # type: ignore[type-arg]
    base = "/api/topics/t/partitions"
    cases = {
        f"{base}/x/messages": "Partition 'x' is not a number.",
        f"{base}/0/messages?offset=ten": "offset='ten' is not a whole number.",
        f"{base}/0/messages?format=xml": "Unknown format 'xml'",
        f"{base}/0/messages?timestamp=soon": "Timestamp 'soon' is neither",
    }
    for url, sentence in cases.items():
        response = await read_only.get(url)
        assert response.status == 400, url
        assert sentence in (await response.json())["error"]["detail"]


@pytest.mark.asyncio
async def test_unknown_pages_are_404_pages(read_only: TestClient) -> None:  # type: ignore[type-arg]
    response = await read_only.get("/nowhere")
    assert response.status == 404
    assert "/nowhere: Not Found." in await response.text()


@pytest.mark.asyncio
async def test_writes_are_refused_without_allow_writes(read_only: TestClient) -> None:  # type: ignore[type-arg]
    posts = {
        "/topics": {"name": "t"},
        "/topics/t/delete": {},
        "/groups/g/offsets": {"topic": "t", "strategy": "earliest"},
    }
    for url, form in posts.items():
        response = await read_only.post(url, data=form)
        html = await response.text()
        assert response.status == 403, url
        assert "Restart it with --allow-writes" in html


@pytest.mark.asyncio
async def test_read_only_pages_have_no_write_forms_and_writable_ones_say_so(
    read_only: TestClient,  # type: ignore[type-arg]
    writable: TestClient,  # type: ignore[type-arg]
) -> None:
    assert "read-only" in await (await read_only.get("/topics")).text()
    assert "writes allowed" in await (await writable.get("/topics")).text()


@pytest.mark.asyncio
async def test_cross_site_posts_are_refused(writable: TestClient) -> None:  # type: ignore[type-arg]
    response = await writable.post(
        "/topics/t/delete", headers={"Origin": "http://evil.example"}, data={}
    )
    assert response.status == 403
    assert "posted from http://evil.example" in await response.text()


@pytest.mark.asyncio
async def test_a_write_form_with_bad_values_is_400(writable: TestClient) -> None:  # type: ignore[type-arg]
    response = await writable.post("/topics", data={"name": "t", "partitions": "many"})
    assert response.status == 400
    assert "partitions=&#39;many&#39; is not a whole number." in await response.text()
    response = await writable.post("/topics", data={"name": "t", "configs": "retention.ms"})
    assert "is not key=value" in await response.text()

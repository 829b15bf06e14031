"""The REST application over registries kept in memory: the answers' shapes and codes
Confluent gives, and a follower forwarding writes to its leader. Real processes and
clients are in tests/integration/test_schema_registry.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from kafpy.schema_registry.kafka_schema_registry import KafkaSchemaRegistry
from kafpy.schema_registry.leader_elector import SchemaRegistryIdentity
from kafpy.schema_registry.schema_registry_rest_application import CONTENT_TYPE, create_app
from tests.unit.schema_registry.fixtures import InMemoryStore, new_registry

STRING = json.dumps({"schema": '"string"'})


def with_client(
    test: Callable[[TestClient[Any, Any], KafkaSchemaRegistry], Awaitable[None]],
) -> None:
    async def run() -> None:
        registry = new_registry()
        async with TestClient(TestServer(create_app(registry))) as client:
            await test(client, registry)

    asyncio.run(run())


async def answer(response: Any) -> tuple[int, Any]:
    assert response.headers["Content-Type"].startswith(CONTENT_TYPE)
    return response.status, await response.json(content_type=None)


def test_register_then_read_every_way() -> None:
    async def test(client: TestClient[Any, Any], _: KafkaSchemaRegistry) -> None:
        assert await answer(await client.post("/subjects/s/versions", data=STRING)) == (
            200,
            {"id": 1},
        )
        version = {"subject": "s", "version": 1, "id": 1, "schema": '"string"'}
        assert await answer(await client.get("/subjects/s/versions/latest")) == (200, version)
        assert await answer(await client.get("/subjects/s/versions/1/schema")) == (200, "string")
        assert await answer(await client.post("/subjects/s", data=STRING)) == (200, version)
        assert await answer(await client.get("/schemas/ids/1")) == (200, {"schema": '"string"'})
        assert await answer(await client.get("/schemas/ids/1/versions")) == (
            200,
            [{"subject": "s", "version": 1}],
        )
        assert await answer(await client.get("/schemas/ids/1/subjects")) == (200, ["s"])
        assert await answer(await client.get("/subjects")) == (200, ["s"])
        assert await answer(await client.get("/")) == (200, {})

    with_client(test)


def test_compatibility_verbose_and_config_endpoints() -> None:
    async def test(client: TestClient[Any, Any], _: KafkaSchemaRegistry) -> None:
        await client.post("/subjects/s/versions", data=STRING)
        path = "/compatibility/subjects/s/versions/latest"
        assert await answer(await client.post(path, data=json.dumps({"schema": '"int"'}))) == (
            200,
            {"is_compatible": False},
        )
        status, body = await answer(
            await client.post(path + "?verbose=true", data=json.dumps({"schema": '"int"'}))
        )
        assert status == 200 and body["is_compatible"] is False and body["messages"]
        status, body = await answer(
            await client.post(path + "?verbose=True", data=json.dumps({"schema": "{"}))
        )
        assert body["is_compatible"] is False and "Invalid schema" in body["messages"][0]
        assert (
            await answer(await client.post("/compatibility/subjects/s/versions/7", data=STRING))
        )[1]["error_code"] == 40402
        assert await answer(await client.get("/config/s")) == (
            404,
            {"error_code": 40401, "message": "Subject 's' not found."},
        )
        assert await answer(await client.get("/config/s?defaultToGlobal=true")) == (
            200,
            {"compatibilityLevel": "BACKWARD"},
        )
        put = await client.put("/config/s", data=json.dumps({"compatibility": "none"}))
        assert await answer(put) == (200, {"compatibility": "NONE"})
        assert await answer(await client.delete("/config/s")) == (
            200,
            {"compatibilityLevel": "NONE"},
        )

    with_client(test)


def test_malformed_requests() -> None:
    async def test(client: TestClient[Any, Any], _: KafkaSchemaRegistry) -> None:
        status, body = await answer(await client.post("/subjects/s/versions", data="{oops"))
        assert (status, body["error_code"]) == (400, 400)
        status, body = await answer(await client.post("/subjects/s/versions", data="[1]"))
        assert (status, body["error_code"]) == (400, 400)
        status, body = await answer(await client.post("/subjects/s/versions", data="{}"))
        assert (status, body) == (422, {"error_code": 42201, "message": "Empty schema"})
        status, body = await answer(await client.put("/subjects"))
        assert (status, body["error_code"]) == (405, 405)
        status, body = await answer(await client.get("/schemas/ids/x"))
        assert (status, body["error_code"]) == (404, 404)

    with_client(test)


def test_a_follower_forwards_writes_to_its_leader_and_serves_reads_itself() -> None:
    async def run() -> None:
        topic: list[tuple[bytes, bytes | None]] = []
        leader, follower = new_registry(InMemoryStore(topic)), new_registry(InMemoryStore(topic))
        async with TestServer(create_app(leader)) as leader_server:
            async with TestClient(TestServer(create_app(follower))) as client:
                follower.identity = SchemaRegistryIdentity("127.0.0.1", 1)
                status, body = await answer(await client.post("/subjects/s/versions", data=STRING))
                assert (status, body["error_code"]) == (500, 50004)  # no leader known yet
                follower.leader = SchemaRegistryIdentity("127.0.0.1", leader_server.port or 0)
                assert await answer(await client.post("/subjects/s/versions", data=STRING)) == (
                    200,
                    {"id": 1},
                )
                # the leader wrote it, and the follower had read it when it answered
                assert leader.list_versions("s") == [1] and follower.list_versions("s") == [1]
                status, body = await answer(
                    await client.put("/mode", data=json.dumps({"mode": "BAD"}))
                )
                assert (status, body["error_code"]) == (422, 42204)  # the leader's answer
                assert await answer(await client.get("/subjects")) == (200, ["s"])
                # a request already forwarded once is never forwarded again
                headers = {"X-Kafpy-Forwarded": "1"}
                forwarded = await client.post("/subjects/t/versions", data=STRING, headers=headers)
                assert (await answer(forwarded))[1]["error_code"] == 50004

    asyncio.run(run())


def test_the_listing_the_max_id_and_the_metadata() -> None:
    async def test(client: TestClient[Any, Any], _: KafkaSchemaRegistry) -> None:
        for subject, schema in [("a", '"string"'), ("a", '"int"'), ("b", '"long"')]:
            await client.put("/config", data=json.dumps({"compatibility": "NONE"}))
            await client.post(f"/subjects/{subject}/versions", data=json.dumps({"schema": schema}))
        status, listed = await answer(await client.get("/schemas"))
        assert [(s["subject"], s["version"], s["id"]) for s in listed] == [
            ("a", 1, 1),
            ("a", 2, 2),
            ("b", 1, 3),
        ]
        _, latest = await answer(await client.get("/schemas?latestOnly=true&subjectPrefix=a"))
        assert [(s["subject"], s["version"]) for s in latest] == [("a", 2)]
        _, page = await answer(await client.get("/schemas?offset=1&limit=1"))
        assert [s["id"] for s in page] == [2]
        assert await answer(await client.get("/schemas/ids/1?fetchMaxId=true")) == (
            200,
            {"schema": '"string"', "maxId": 3},
        )
        assert await answer(await client.get("/v1/metadata/id")) == (
            200,
            {"scope": {"path": [], "clusters": {"kafka-cluster": "in-memory-cluster",
                                                 "schema-registry-cluster": "schema-registry"}}},
        )  # fmt: skip
        assert await answer(await client.post("/", data="{}")) == (200, {})

    with_client(test)

"""KafkaClient against FakeBrokers: bootstrap, metadata, routing, retries with backoff."""

from __future__ import annotations

import asyncio
import gc
import socket
from typing import Any

import pytest

from kafpy.client.kafka_client import (
    BOOTSTRAP_NODE_ID,
    KafkaClient,
    error_codes,
    parse_bootstrap_servers,
)
from kafpy.common.errors import (
    InvalidTopicError,
    KafkaConnectionError,
    NotControllerError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from kafpy.common.topic_partition import TopicPartition
from kafpy.protocol.api_keys import ApiKey
from tests.unit.client.fake_broker import CLOSE, FakeBroker, metadata_body


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


class Sleeps:
    """Records the backoffs instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_parse_bootstrap_servers() -> None:
    assert parse_bootstrap_servers("a:1, b:2") == [("a", 1), ("b", 2)]
    assert parse_bootstrap_servers(["[::1]:9092"]) == [("::1", 9092)]
    for bad in ("localhost", "a:x", ":9092", "a:0", ""):
        with pytest.raises(ValueError, match="HOST:PORT"):
            parse_bootstrap_servers(bad)


def test_error_codes_found_at_any_depth() -> None:
    body = {
        "error_code": 0,
        "topics": [
            {"name": "a", "error_code": 41, "error_message": "not me"},
            {"name": "b", "error_code": 0, "partitions": [{"error_code": 6}]},
        ],
    }
    assert error_codes(body) == [(41, "not me"), (6, None)]


def test_error_codes_leaves_no_garbage_for_the_collector() -> None:
    """Every response kafpy's client reads goes through it; a reference cycle per call (a
    closure calling itself) is garbage only the collector frees, and its pauses stop the
    caller's event loop (the console's, the Spark source's, a test broker's)."""
    body = {"error_code": 0, "topics": [{"name": "a", "error_code": 41}]}
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(10):
            assert error_codes(body) == [(41, None)]
        gc.collect()
        # only kafpy's: another test's client thread (kafka-python's) may leave its own meanwhile
        ours = [o for o in gc.garbage if str(getattr(o, "__module__", "")).startswith("kafpy")]
        assert ours == []
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


class Cluster2:
    """Two fake brokers, 0 and 1, both answering Metadata from shared state."""

    def __init__(self) -> None:
        self.b0 = FakeBroker(node_id=0)
        self.b1 = FakeBroker(node_id=1)
        self.controller = 1
        self.leaders: dict[str, dict[int, int]] = {"t": {0: 0, 1: 1}}

    async def __aenter__(self) -> Cluster2:
        await self.b0.start()
        await self.b1.start()
        for b in (self.b0, self.b1):
            b.handlers[ApiKey.METADATA] = self.metadata
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.b0.stop()
        await self.b1.stop()

    def metadata(self, header: Any, body: dict[str, Any]) -> dict[str, Any]:
        names = None if body["topics"] is None else [t["name"] for t in body["topics"]]
        topics = {n: ls for n, ls in self.leaders.items() if names is None or n in names}
        return metadata_body([self.b0, self.b1], controller_id=self.controller, topics=topics)

    def client(self, **kwargs: Any) -> KafkaClient:
        kwargs.setdefault("retry_backoff_ms", 100)
        return KafkaClient(f"127.0.0.1:{free_port()},{self.b0.address}", **kwargs)


def test_start_skips_dead_bootstrap_servers_and_learns_the_cluster() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:
            async with c.client() as client:
                assert sorted(client.cluster.brokers) == [0, 1]
                assert client.cluster.controller_id == 1
                # the bootstrap connection is filed under node 0, whose address it is
                assert BOOTSTRAP_NODE_ID not in client._connections
                assert client._connections[0].node_id == 0
                body = await client.refresh_metadata(["t"])
                assert [t["name"] for t in body["topics"]] == ["t"]
                assert client.cluster.leader_for(TopicPartition("t", 1)) == 1
                assert c.b0.connections == 1

    run(scenario())


def test_no_bootstrap_server_reachable() -> None:
    async def scenario() -> None:
        sleeps = Sleeps()
        client = KafkaClient(f"127.0.0.1:{free_port()}", retries=2, sleep=sleeps)
        with pytest.raises(KafkaConnectionError, match="Could not connect to bootstrap broker"):
            await client.start()
        two = KafkaClient([f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"], retries=0)
        with pytest.raises(KafkaConnectionError, match="Could not reach any bootstrap server"):
            await two.start()
        assert sleeps.calls == [0.1, 0.1]
        await client.close()

    run(scenario())


def test_send_to_controller_follows_not_controller() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:

            def refuse(header: Any, body: Any) -> dict[str, Any]:
                c.controller = 0  # the controller moved meanwhile
                return {"topics": [{"name": "x", "error_code": 41, "error_message": "moved"}]}

            def accept(header: Any, body: Any) -> dict[str, Any]:
                return {"topics": [{"name": "x", "error_code": 0, "error_message": None}]}

            c.b1.handlers[ApiKey.CREATE_TOPICS] = refuse
            c.b0.handlers[ApiKey.CREATE_TOPICS] = accept
            sleeps = Sleeps()
            async with c.client(sleep=sleeps) as client:
                body = await client.send_to_controller(
                    ApiKey.CREATE_TOPICS, {"topics": [{"name": "x"}], "timeout_ms": 1000}
                )
                assert body["topics"][0]["error_code"] == 0
                assert len(c.b1.requests_of(ApiKey.CREATE_TOPICS)) == 1
                assert len(c.b0.requests_of(ApiKey.CREATE_TOPICS)) == 1
                assert client.cluster.controller_id == 0
                assert sleeps.calls == [0.1]

    run(scenario())


def test_retries_run_out() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:
            c.b1.handlers[ApiKey.CREATE_TOPICS] = lambda h, b: {
                "topics": [{"name": "x", "error_code": 41, "error_message": "not me"}]
            }
            sleeps = Sleeps()
            async with c.client(sleep=sleeps, retries=3) as client:
                with pytest.raises(NotControllerError, match="not me"):
                    await client.send_to_controller(ApiKey.CREATE_TOPICS, {"topics": []})
            assert len(c.b1.requests_of(ApiKey.CREATE_TOPICS)) == 4
            assert sleeps.calls == [0.1, 0.1, 0.1]

    run(scenario())


def test_non_retriable_errors_are_returned_not_retried() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:
            c.b1.handlers[ApiKey.CREATE_TOPICS] = lambda h, b: {
                "topics": [{"name": "x", "error_code": 36, "error_message": "exists"}]
            }
            sleeps = Sleeps()
            async with c.client(sleep=sleeps) as client:
                body = await client.send_to_controller(ApiKey.CREATE_TOPICS, {"topics": []})
                assert body["topics"][0]["error_code"] == 36
            assert sleeps.calls == []

    run(scenario())


def test_send_to_leader_follows_leadership() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:
            tp = TopicPartition("t", 0)

            def not_leader(header: Any, body: Any) -> dict[str, Any]:
                c.leaders["t"][0] = 1  # leadership moved to broker 1
                return list_offsets_body(tp, error_code=6)

            c.b0.handlers[ApiKey.LIST_OFFSETS] = not_leader
            c.b1.handlers[ApiKey.LIST_OFFSETS] = lambda h, b: list_offsets_body(tp, offset=42)
            sleeps = Sleeps()
            async with c.client(sleep=sleeps) as client:
                body = await client.send_to_leader(
                    tp, ApiKey.LIST_OFFSETS, list_offsets_request(tp)
                )
                assert body["topics"][0]["partitions"][0]["offset"] == 42
                assert client.cluster.leader_for(tp) == 1
            assert len(c.b0.requests_of(ApiKey.LIST_OFFSETS)) == 1
            assert sleeps.calls == [0.1]

    run(scenario())


def test_send_to_leader_gives_up_with_the_error() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:
            tp = TopicPartition("t", 0)
            c.b0.handlers[ApiKey.LIST_OFFSETS] = lambda h, b: list_offsets_body(tp, error_code=6)
            async with c.client(sleep=Sleeps(), retries=1) as client:
                with pytest.raises(NotLeaderOrFollowerError):
                    await client.send_to_leader(tp, ApiKey.LIST_OFFSETS, list_offsets_request(tp))
            assert len(c.b0.requests_of(ApiKey.LIST_OFFSETS)) == 2

    run(scenario())


def test_leader_of_unknown_partition() -> None:
    async def scenario() -> None:
        async with Cluster2() as c, c.client(sleep=Sleeps(), retries=0) as client:
            with pytest.raises(UnknownTopicOrPartitionError, match="t-5 does not exist"):
                await client.leader_for(TopicPartition("t", 5))

    run(scenario())


def test_lost_connection_is_reopened_and_the_request_retried() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:
            answers = iter([CLOSE, list_offsets_body(TopicPartition("t", 0), offset=7)])
            c.b0.handlers[ApiKey.LIST_OFFSETS] = lambda h, b: next(answers)
            async with c.client(sleep=Sleeps()) as client:
                body = await client.send_to_node(
                    0, ApiKey.LIST_OFFSETS, list_offsets_request(TopicPartition("t", 0))
                )
                assert body["topics"][0]["partitions"][0]["offset"] == 7
            assert c.b0.connections == 2

    run(scenario())


def test_metadata_on_a_lost_connection_is_asked_again() -> None:
    """A broker restarted since the connection opened: the Metadata request is sent again
    on a new connection instead of failing (the Spark source's latestOffset needs it)."""

    async def scenario() -> None:
        async with Cluster2() as c:
            async with c.client(sleep=Sleeps()) as client:
                answers = iter([CLOSE])
                c.b0.handlers[ApiKey.METADATA] = lambda h, b: (
                    next(answers, None) or c.metadata(h, b)
                )
                body = await client.refresh_metadata(["t"])
                assert [t["name"] for t in body["topics"]] == ["t"]
            assert c.b0.connections == 2

    run(scenario())


def test_check_can_fail_a_response() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:
            c.b1.handlers[ApiKey.LIST_OFFSETS] = lambda h, b: list_offsets_body(
                TopicPartition("t", 1), offset=1
            )

            def check(body: dict[str, Any]) -> None:
                raise InvalidTopicError("refused by check")

            async with c.client(sleep=Sleeps()) as client:
                with pytest.raises(InvalidTopicError, match="refused by check"):
                    await client.send_to_any(ApiKey.METADATA, {"topics": []}, check=check)

    run(scenario())


def test_closed_client_refuses_requests() -> None:
    async def scenario() -> None:
        async with Cluster2() as c:
            client = c.client(sleep=Sleeps())
            await client.start()
            await client.close()
            with pytest.raises(KafkaConnectionError, match="closed"):
                await client.send_to_node(0, ApiKey.METADATA, {"topics": []})

    run(scenario())


def list_offsets_request(tp: TopicPartition) -> dict[str, Any]:
    return {
        "replica_id": -1,
        "topics": [
            {"name": tp.topic, "partitions": [{"partition_index": tp.partition, "timestamp": -1}]}
        ],
    }


def list_offsets_body(
    tp: TopicPartition, *, offset: int = -1, error_code: int = 0
) -> dict[str, Any]:
    return {
        "topics": [
            {
                "name": tp.topic,
                "partitions": [
                    {
                        "partition_index": tp.partition,
                        "error_code": error_code,
                        "timestamp": -1,
                        "offset": offset,
                    }
                ],
            }
        ]
    }

"""AlterIsrManager: batching, one request in flight, retries, answers, against a real
controller over a real metadata store (the request and answer go through the wire codec)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kafpy.common.logger import PrefixAdapter
from kafpy.common.topic_partition import TopicPartition
from kafpy.controller.alter_isr import alter_isr_request_items, alter_isr_response
from kafpy.controller.kafka_controller import KafkaController
from kafpy.metadata.zk_data import LeaderAndIsr
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors
from kafpy.protocol.messages import REQUESTS, RESPONSES
from kafpy.server.alter_isr_manager import (
    AlterIsrItem,
    AlterIsrManager,
    AlterIsrResult,
    BrokerToControllerChannel,
    is_alter_isr_supported,
)
from kafpy.server.metadata_cache import MetadataCache
from tests.unit.controller.fixtures import ControllerCluster, run, state_json
from tests.unit.server.fixtures import update_metadata

LOG = PrefixAdapter(logging.getLogger("test"), "")
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


class WireChannel:
    """Sends AlterIsr to a controller through the protocol codec; fails the first
    `failures` sends as a dropped connection would."""

    def __init__(self, controller: KafkaController, failures: int = 0) -> None:
        self.controller = controller
        self.failures = failures
        self.requests: list[dict[str, Any]] = []
        self.gate: asyncio.Event | None = None

    async def send(self, api_key: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
        request = REQUESTS[api_key].decode(0, REQUESTS[api_key].encode(0, body))
        self.requests.append(request)
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection to the controller lost")
        result = await self.controller.alter_isr(
            request["broker_id"], request["broker_epoch"], alter_isr_request_items(request)
        )
        response = alter_isr_response(result)
        return RESPONSES[api_key].decode(0, RESPONSES[api_key].encode(0, response))


async def _setup(cluster: ControllerCluster) -> KafkaController:
    await cluster.start(0, 1, 2)
    await cluster.admin.create_topic_with_config("t", {0: [1, 2, 0], 1: [1, 0, 2]}, {})
    await cluster.settle()
    return cluster.controller()


def _item(
    tp: TopicPartition, isr: tuple[int, ...], answers: dict[TopicPartition, AlterIsrResult]
) -> AlterIsrItem:
    return AlterIsrItem(tp, LeaderAndIsr(1, 0, isr, 0), lambda r: answers.__setitem__(tp, r))


async def _until(predicate: Any, rounds: int = 2000) -> None:
    for _ in range(rounds):
        if predicate():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("condition not met")


def test_changes_submitted_during_a_request_go_in_the_next_one() -> None:
    async def body(cluster: ControllerCluster) -> None:
        ctl = await _setup(cluster)
        channel = WireChannel(ctl)
        channel.gate = asyncio.Event()
        epoch = ctl.context.live_broker_epoch(1)
        manager = AlterIsrManager(1, lambda: epoch, channel, LOG)
        answers: dict[TopicPartition, AlterIsrResult] = {}
        assert manager.submit(_item(T0, (1, 2), answers))
        await _until(lambda: len(channel.requests) == 1)
        # in flight: the next change waits, a second one for the same partition is refused
        assert manager.submit(_item(T1, (1, 0), answers))
        assert not manager.submit(_item(T1, (1,), answers))
        assert len(channel.requests) == 1
        channel.gate.set()
        await _until(lambda: len(answers) == 2)
        assert [len(r["topics"][0]["partitions"]) for r in channel.requests] == [1, 1]
        assert channel.requests[0]["broker_epoch"] == epoch
        assert answers == {T0: LeaderAndIsr(1, 0, (1, 2), 1), T1: LeaderAndIsr(1, 0, (1, 0), 1)}
        assert manager.unsent_isr_updates == {} and not manager.inflight
        assert (await state_json(cluster, "t", 1))["isr"] == [1, 0]  # type: ignore[index]
        await manager.shutdown()

    run(body)


def test_pending_changes_are_batched_into_one_request() -> None:
    async def body(cluster: ControllerCluster) -> None:
        ctl = await _setup(cluster)
        channel = WireChannel(ctl)
        manager = AlterIsrManager(1, lambda: ctl.context.live_broker_epoch(1), channel, LOG)
        answers: dict[TopicPartition, AlterIsrResult] = {}
        manager.submit(_item(T0, (1, 2), answers))
        manager.submit(_item(T1, (1,), answers))  # both before the loop runs the send
        await _until(lambda: len(answers) == 2)
        assert len(channel.requests) == 1
        parts = channel.requests[0]["topics"][0]["partitions"]
        assert [p["new_isr"] for p in parts] == [[1, 2], [1]]
        await manager.shutdown()

    run(body)


def test_top_level_errors_and_lost_connections_are_retried_after_the_backoff() -> None:
    async def body(cluster: ControllerCluster) -> None:
        ctl = await _setup(cluster)
        channel = WireChannel(ctl, failures=2)
        epochs = iter([ctl.context.live_broker_epoch(1) - 1])  # first a stale epoch

        def broker_epoch() -> int:
            return next(epochs, ctl.context.live_broker_epoch(1))

        manager = AlterIsrManager(1, broker_epoch, channel, LOG, retry_backoff_ms=5)
        answers: dict[TopicPartition, AlterIsrResult] = {}
        manager.submit(_item(T0, (1, 2), answers))
        await _until(lambda: T0 in answers)
        # two lost connections (the first carrying the stale epoch), then accepted
        assert len(channel.requests) == 3
        assert answers[T0] == LeaderAndIsr(1, 0, (1, 2), 1)
        # a stale broker epoch is a top-level error: kept and sent again
        channel2 = WireChannel(ctl)
        stale = AlterIsrManager(1, lambda: 1, channel2, LOG, retry_backoff_ms=5)
        stale.submit(_item(T1, (1,), answers))
        await _until(lambda: len(channel2.requests) >= 3)
        assert T1 not in answers and T1 in stale.unsent_isr_updates
        await stale.shutdown()
        await manager.shutdown()

    run(body)


def test_partition_errors_reach_the_callback() -> None:
    async def body(cluster: ControllerCluster) -> None:
        ctl = await _setup(cluster)
        manager = AlterIsrManager(
            1, lambda: ctl.context.live_broker_epoch(1), WireChannel(ctl), LOG
        )
        answers: dict[TopicPartition, AlterIsrResult] = {}
        manager.submit(
            AlterIsrItem(T0, LeaderAndIsr(1, 0, (1,), 5), lambda r: answers.__setitem__(T0, r))
        )
        await _until(lambda: T0 in answers)
        assert answers[T0] == Errors.INVALID_UPDATE_VERSION
        assert manager.unsent_isr_updates == {}
        await manager.shutdown()

    run(body)


def test_alter_isr_from_2_7_iv2() -> None:
    assert is_alter_isr_supported("2.8") and is_alter_isr_supported("2.7-IV2")
    assert not is_alter_isr_supported("2.7-IV1") and not is_alter_isr_supported("2.6")


def test_a_request_to_a_replaced_controller_is_given_up() -> None:
    # a frozen controller accepts the connection and never answers; once UpdateMetadata
    # names another controller, the channel leaves it instead of waiting out the timeout
    async def body() -> None:
        async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read()
            writer.close()

        server = await asyncio.start_server(silent, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        cache = MetadataCache(0)
        cache.update_metadata(update_metadata([], (1, 2), controller_id=1, base_port=port - 1))
        channel = BrokerToControllerChannel(0, cache, "PLAINTEXT", "alter-isr", 30000)
        send = asyncio.ensure_future(channel.send(ApiKey.ALTER_ISR, ALTER_ISR_BODY))
        await asyncio.sleep(0.3)
        assert not send.done()  # the frozen controller holds it
        cache.update_metadata(update_metadata([], (1, 2), controller_id=2, base_port=port - 1))
        try:
            await asyncio.wait_for(send, 5)
            raise AssertionError("the request to the replaced controller returned")
        except ConnectionError as e:
            assert "controller 1 was replaced by 2" in str(e)
        finally:
            await channel.close()
            server.close()
            await server.wait_closed()

    asyncio.run(body())


ALTER_ISR_BODY = {"broker_id": 0, "broker_epoch": 1, "topics": []}

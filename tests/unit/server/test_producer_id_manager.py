"""ProducerIdManager on the embedded store: blocks of ids, contention between brokers,
InitProducerId answers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from kafpy.common.errors import KafkaError
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import ProducerIdBlock, ProducerIdBlockZNode
from kafpy.server.producer_id_manager import ProducerIdManager, ProducerIdsExhaustedError

PATH = "/latest_producer_id_block"


def run(
    body: Callable[[KafkaZkClient, KafkaZkClient], Awaitable[None]], persistent_paths: bool = True
) -> None:
    """Run `body` with two sessions (two brokers) on one in-memory store."""

    async def main() -> None:
        first = EmbeddedStore(None)
        second = first.new_session()
        await first.start()
        await second.start()
        try:
            zk1, zk2 = KafkaZkClient(first), KafkaZkClient(second)
            if persistent_paths:
                await zk1.make_sure_persistent_paths_exist()
            await body(zk1, zk2)
        finally:
            await second.close()
            await first.close()

    asyncio.run(main())


async def stored_block(zk: KafkaZkClient) -> tuple[dict[str, object], int]:
    data, stat = await zk.store.get(PATH)
    return json.loads(data), stat.version


def test_first_block_comes_from_the_empty_persistent_node() -> None:
    async def body(zk: KafkaZkClient, _: KafkaZkClient) -> None:
        manager = ProducerIdManager(0, zk)
        assert [await manager.generate_producer_id() for _ in range(3)] == [0, 1, 2]
        block, version = await stored_block(zk)
        assert block == {"version": 1, "broker": 0, "block_start": "0", "block_end": "999"}
        assert version == 1  # one set on the node created empty at start-up

    run(body)


def test_the_node_is_created_when_missing() -> None:
    async def body(zk: KafkaZkClient, _: KafkaZkClient) -> None:
        manager = ProducerIdManager(3, zk)
        await manager.startup()
        assert await manager.generate_producer_id() == 0
        block, version = await stored_block(zk)
        assert (block["broker"], block["block_end"], version) == (3, "999", 0)

    run(body, persistent_paths=False)


def test_a_used_up_block_is_followed_by_the_next_one() -> None:
    async def body(zk: KafkaZkClient, _: KafkaZkClient) -> None:
        manager = ProducerIdManager(0, zk, block_size=3)
        ids = [await manager.generate_producer_id() for _ in range(7)]
        assert ids == list(range(7))
        assert manager.current_block == ProducerIdBlock(0, 6, 8)
        # a restarted broker never reuses ids: it claims a fresh block
        restarted = ProducerIdManager(0, zk, block_size=3)
        assert await restarted.generate_producer_id() == 9

    run(body)


def test_two_brokers_never_hand_out_the_same_id() -> None:
    async def body(zk1: KafkaZkClient, zk2: KafkaZkClient) -> None:
        a = ProducerIdManager(1, zk1, block_size=5)
        b = ProducerIdManager(2, zk2, block_size=5)
        ids = await asyncio.gather(*[m.generate_producer_id() for _ in range(23) for m in (a, b)])
        assert len(set(ids)) == len(ids) == 46
        block, _ = await stored_block(zk1)
        assert int(block["block_end"]) == max(a.current_block.block_end, b.current_block.block_end)

    run(body)


def test_a_conflicting_claim_is_retried_with_the_next_block() -> None:
    async def body(zk1: KafkaZkClient, zk2: KafkaZkClient) -> None:
        a = ProducerIdManager(1, zk1)
        b = ProducerIdManager(2, zk2)
        real_get = zk1.store.get
        interfered = False

        async def get_then_lose_the_race(path: str, watch: object = None):  # type: ignore[no-untyped-def]
            nonlocal interfered
            result = await real_get(path)
            if not interfered:
                interfered = True
                await b.startup()  # broker 2 claims between broker 1's read and write
            return result

        zk1.store.get = get_then_lose_the_race  # type: ignore[method-assign]
        assert await a.generate_producer_id() == 1000
        assert b.current_block == ProducerIdBlock(2, 0, 999)
        assert a.current_block == ProducerIdBlock(1, 1000, 1999)
        assert await b.generate_producer_id() == 0

    run(body)


def test_exhausted_ids_are_an_error() -> None:
    async def body(zk: KafkaZkClient, _: KafkaZkClient) -> None:
        await zk.store.set(PATH, ProducerIdBlockZNode.encode(ProducerIdBlock(0, 0, 2**63 - 500)))
        with pytest.raises(ProducerIdsExhaustedError, match="exhausted"):
            await ProducerIdManager(0, zk).generate_producer_id()

    run(body)


def test_a_malformed_node_is_a_clear_error() -> None:
    async def body(zk: KafkaZkClient, _: KafkaZkClient) -> None:
        await zk.store.set(PATH, b'{"version":1}')
        with pytest.raises(KafkaError, match="/latest_producer_id_block"):
            await ProducerIdManager(0, zk).generate_producer_id()

    run(body)


def test_init_producer_id_for_an_idempotent_producer() -> None:
    async def body(zk: KafkaZkClient, _: KafkaZkClient) -> None:
        manager = ProducerIdManager(0, zk)
        request = {"transactional_id": None, "transaction_timeout_ms": 60000}
        assert await manager.handle_init_producer_id(request, 1) == {
            "throttle_time_ms": 0, "error_code": 0, "producer_id": 0, "producer_epoch": 0,
        }  # fmt: skip
        second = await manager.handle_init_producer_id(request, 0)
        assert (second["producer_id"], second["producer_epoch"]) == (1, 0)

    run(body)


def test_init_producer_id_with_a_transactional_id_is_refused() -> None:
    async def body(zk: KafkaZkClient, _: KafkaZkClient) -> None:
        manager = ProducerIdManager(0, zk)
        response = await manager.handle_init_producer_id(
            {"transactional_id": "tx-1", "transaction_timeout_ms": 1}, 1
        )
        assert response["error_code"] == 42  # INVALID_REQUEST
        assert response["producer_id"] == -1
        assert manager.current_block.block_end == -1  # no block claimed for it

    run(body)

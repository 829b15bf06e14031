"""Helpers for admin tests: an in-memory metadata store with registered brokers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable

from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import Broker, BrokerInfo, EndPoint


def broker_info(broker_id: int, rack: str | None = None) -> BrokerInfo:
    endpoint = EndPoint("localhost", 9092 + broker_id, "PLAINTEXT", "PLAINTEXT")
    return BrokerInfo(Broker(broker_id, (endpoint,), rack), 4, -1, 1600000000000)


async def register_brokers(
    zk: KafkaZkClient, ids: Iterable[int], racks: dict[int, str] | None = None
) -> None:
    for broker_id in ids:
        await zk.register_broker(broker_info(broker_id, (racks or {}).get(broker_id)))


def run_with_zk(body: Callable[[KafkaZkClient], Awaitable[None]]) -> None:
    """Run `body` on a fresh in-memory store (closed afterwards)."""

    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        try:
            zk = KafkaZkClient(store)
            await zk.make_sure_persistent_paths_exist()
            await body(zk)
        finally:
            await store.close()

    asyncio.run(main())

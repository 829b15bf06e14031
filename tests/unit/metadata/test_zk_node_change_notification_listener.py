"""ZkNodeChangeNotificationListener on a real ZooKeeper: notifications handed over once and in
order, malformed names skipped, old ones purged, and the watch kept across an expired session
(a notification made after the new session, or while it was being made, still arrives)."""

from __future__ import annotations

import asyncio
import time as wall_clock

from kafpy.common.time import MockTime
from kafpy.metadata.zk_node_change_notification_listener import ZkNodeChangeNotificationListener
from kafpy.metadata.zookeeper_store import ZooKeeperStore
from kafpy.testing.wait import async_wait_until
from tests.fixtures.zookeeper import expire_session

ROOT = "/config/changes"
PREFIX = "config_change_"
WAIT_S = 20.0


async def notify(store: ZooKeeperStore, data: bytes) -> None:
    await store.create(f"{ROOT}/{PREFIX}", data, sequential=True, make_parents=True)


def test_notifications_are_handled_once_in_order_and_purged_when_old(
    zookeeper_connect: str,
) -> None:
    async def scenario() -> None:
        writer = ZooKeeperStore(zookeeper_connect)
        store = ZooKeeperStore(zookeeper_connect)
        await writer.start()
        await store.start()
        seen: list[bytes] = []

        async def handler(path: str, data: bytes) -> None:
            assert path.startswith(f"{ROOT}/{PREFIX}")
            seen.append(data)

        time = MockTime(int(wall_clock.time() * 1000))  # compared with the znodes' ctime
        listener = ZkNodeChangeNotificationListener(
            store, ROOT, PREFIX, handler, time=time, change_expiration_ms=60_000
        )
        try:
            await notify(writer, b"before")
            await writer.create(f"{ROOT}/not-a-notification", b"x")
            await listener.start()
            assert seen == [b"before"]
            await notify(writer, b"a")
            await notify(writer, b"b")
            await async_wait_until(
                lambda: seen == [b"before", b"a", b"b"], WAIT_S, "a and b handled", interval_s=0.02
            )
            await listener.process_notifications()  # nothing new: nothing handled again
            assert seen == [b"before", b"a", b"b"]
            newest = max(c for c in await writer.get_children(ROOT) if c.startswith(PREFIX))
            assert listener.last_executed_change == int(newest[len(PREFIX) :])
            # an hour later every notification is old: the next pass deletes them
            time.sleep(3_600_000)
            await listener.process_notifications()
            assert await writer.get_children(ROOT) == ["not-a-notification"]
        finally:
            await listener.close()
            await store.close()
            await writer.close()

    asyncio.run(scenario())


def test_a_new_session_keeps_the_notifications_coming(zookeeper_connect: str) -> None:
    async def scenario() -> None:
        writer = ZooKeeperStore(zookeeper_connect)
        store = ZooKeeperStore(zookeeper_connect, session_timeout_ms=4000)
        await writer.start()
        await store.start()
        seen: list[bytes] = []

        async def handler(path: str, data: bytes) -> None:
            seen.append(data)

        listener = ZkNodeChangeNotificationListener(store, ROOT, PREFIX, handler)
        new_session = asyncio.Event()
        store.on_session_expired(new_session.set)
        try:
            await listener.start()
            await notify(writer, b"first")
            await async_wait_until(
                lambda: seen == [b"first"],
                WAIT_S,
                "the first notification handled",
                interval_s=0.02,
            )
            old_session = store.session_id
            await expire_session(store, zookeeper_connect, WAIT_S)
            # made while the store is between sessions: its watch went with the old one
            await notify(writer, b"between")
            await asyncio.wait_for(new_session.wait(), WAIT_S)
            assert store.session_id not in (0, old_session)
            await async_wait_until(
                lambda: seen == [b"first", b"between"],
                WAIT_S,
                "the notification made meanwhile",
                interval_s=0.02,
            )
            await notify(writer, b"after")
            await async_wait_until(
                lambda: seen == [b"first", b"between", b"after"],
                WAIT_S,
                "the watch set again",
                interval_s=0.02,
            )
        finally:
            await listener.close()
            await store.close()
            await writer.close()

    asyncio.run(scenario())

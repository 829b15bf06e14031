"""ZkNodeChangeNotificationListener: follows the change notifications under one znode, as Kafka's
class of that name does for `/config/changes`, `/kafka-acl-changes` and
`/kafka-acl-extended-changes`.

A writer changes an entity's data, then creates a sequential node `<root>/<prefix><seq>` whose
data names the entity. Every broker watches the root's children and hands each notification
newer than the last one it processed to its handler, then deletes the notifications older than
`change_expiration_ms` (15 minutes in Kafka). The children watch is one-shot and set again on
every pass. A ZooKeeper session that expires takes its watches with it, so on the new session
the notifications are processed again from the last one seen: a change made while the session
was replaced is not missed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from kafpy.common.logger import component_logger
from kafpy.common.time import SYSTEM_TIME, Time
from kafpy.metadata.errors import NoNodeError
from kafpy.metadata.store import MetadataStore, WatchedEvent

CHANGE_EXPIRATION_MS = 15 * 60 * 1000

NotificationHandler = Callable[[str, bytes], Awaitable[None]]
"""Called with a notification's path and data, in sequence order, once per notification."""


class ZkNodeChangeNotificationListener:
    """Hands the notifications under `root` (children named `prefix` + sequence number) to
    `handler`, each once, in order.

    `await start(process_existing)` sets the watch and processes what is there (or, with
    `process_existing=False`, only remembers the newest notification, for an owner that loads
    everything itself afterwards); `await close()` stops it.
    """

    def __init__(
        self,
        store: MetadataStore,
        root: str,
        prefix: str,
        handler: NotificationHandler,
        *,
        time: Time = SYSTEM_TIME,
        change_expiration_ms: int = CHANGE_EXPIRATION_MS,
    ) -> None:
        self.store = store
        self.root = root
        self.prefix = prefix
        self.handler = handler
        self.time = time
        self.change_expiration_ms = change_expiration_ms
        self.last_executed_change = -1
        self._lock = asyncio.Lock()
        self._running = False
        self._tasks: set[asyncio.Task[None]] = set()
        self.log = component_logger(
            "kafpy.common.ZkNodeChangeNotificationListener", "ZkNodeChangeNotificationListener"
        )

    async def start(self, process_existing: bool = True) -> None:
        await self.store.ensure_path(self.root)
        self._running = True
        self.store.on_session_expired(self._on_new_session)
        await self._process(apply=process_existing)

    async def close(self) -> None:
        self._running = False
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def process_notifications(self) -> None:
        """Process the notifications not processed yet (setting the watch again), then purge
        the expired ones."""
        await self._process(apply=True)

    def _on_change(self, event: WatchedEvent) -> None:
        self._spawn(self.process_notifications())

    def _on_new_session(self) -> None:
        self.log.info("Processing notification(s) to %s after a new ZooKeeper session", self.root)
        self._spawn(self.process_notifications())

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        if not self._running:
            work.close()
            return
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _process(self, apply: bool) -> None:
        if not self._running:
            return
        async with self._lock:
            try:
                children = await self.store.get_children(self.root, self._on_change)
            except NoNodeError:
                return
            numbered = sorted(
                (number, name)
                for name in children
                if (number := self._change_number(name)) is not None
            )
            if not numbered:
                return
            if apply:
                self.log.info("Processing notification(s) to %s", self.root)
            now = self.time.milliseconds()
            for number, name in numbered:
                if number <= self.last_executed_change:
                    continue
                if apply:
                    path = f"{self.root}/{name}"
                    data = await self.store.get_data_or_none(path)
                    if data is not None:  # else purged meanwhile
                        await self.handler(path, data)
                self.last_executed_change = number
            await self._purge_obsolete([name for _, name in numbered], now)

    def _change_number(self, name: str) -> int | None:
        digits = name[len(self.prefix) :]
        return int(digits) if name.startswith(self.prefix) and digits.isdigit() else None

    async def _purge_obsolete(self, names: list[str], now: int) -> None:
        for name in names:
            path = f"{self.root}/{name}"
            stat = await self.store.exists(path)
            if stat is not None and now - stat.ctime > self.change_expiration_ms:
                self.log.debug("Purging change notification %s", path)
                try:
                    await self.store.delete(path)
                except NoNodeError:
                    pass

"""DynamicConfigManager on the embedded store: stored and changed topic configs reach the
LogManager; notifications are processed once and purged when old."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from kafpy.admin.admin_zk_client import AdminZkClient
from kafpy.common.time import MockTime
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.server.dynamic_config_manager import DynamicConfigManager
from kafpy.storage.log_config import LogConfig

T0 = 1_600_000_000_000


class FakeLogManager:
    """Records the configs the manager hands to LogManager.update_topic_config."""

    def __init__(self) -> None:
        self.current_default_config = LogConfig(retention_ms=1000, segment_bytes=4096)
        self.updates: list[tuple[str, LogConfig]] = []

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        self.updates.append((topic, config))


def run(body: Callable[[KafkaZkClient, MockTime], Awaitable[None]]) -> None:
    async def main() -> None:
        time = MockTime(T0)
        store = EmbeddedStore(None, time=time)
        await store.start()
        try:
            zk = KafkaZkClient(store)
            await zk.make_sure_persistent_paths_exist()
            await zk.create_topic_assignment("t", {0: [0]})
            await zk.create_topic_assignment("u", {0: [0]})
            await body(zk, time)
        finally:
            await store.close()

    asyncio.run(main())


async def settle(condition: Callable[[], bool]) -> None:
    """Let the watch callbacks run (no clock involved) until `condition` holds."""
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("the config change was not applied")


def test_startup_applies_every_stored_topic_config() -> None:
    async def body(zk: KafkaZkClient, time: MockTime) -> None:
        await zk.set_or_create_entity_configs("topics", "t", {"retention.ms": "5000"})
        lm = FakeLogManager()
        manager = DynamicConfigManager.for_log_manager(zk, lm, time)
        await manager.startup()
        [(topic, config)] = lm.updates
        assert topic == "t"
        assert (config.retention_ms, config.segment_bytes) == (5000, 4096)  # broker default kept
        assert config.originals == {"retention.ms": "5000"}
        await manager.shutdown()

    run(body)


def test_a_config_change_reaches_the_log_manager_through_the_watch() -> None:
    async def body(zk: KafkaZkClient, time: MockTime) -> None:
        lm = FakeLogManager()
        manager = DynamicConfigManager.for_log_manager(zk, lm, time)
        await manager.startup()
        admin = AdminZkClient(zk)
        await admin.change_topic_config("t", {"cleanup.policy": "compact"})
        await settle(lambda: len(lm.updates) == 1)
        assert lm.updates[0][0] == "t" and lm.updates[0][1].compact
        await admin.change_topic_config("u", {"retention.ms": "7"})
        await settle(lambda: len(lm.updates) == 2)
        assert lm.updates[1][0] == "u" and lm.updates[1][1].retention_ms == 7
        # each notification is applied once, even when processed again
        await manager.process_notifications()
        assert len(lm.updates) == 2
        assert manager.last_executed_change == 1
        await manager.shutdown()
        await admin.change_topic_config("t", {})
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(lm.updates) == 2  # stopped

    run(body)


def test_old_notifications_are_purged() -> None:
    async def body(zk: KafkaZkClient, time: MockTime) -> None:
        lm = FakeLogManager()
        manager = DynamicConfigManager.for_log_manager(zk, lm, time)
        await manager.startup()
        admin = AdminZkClient(zk)
        await admin.change_topic_config("t", {"retention.ms": "1"})
        await settle(lambda: len(lm.updates) == 1)
        time.advance(15 * 60 * 1000 + 1)
        await admin.change_topic_config("t", {"retention.ms": "2"})
        await settle(lambda: len(lm.updates) == 2)
        assert await zk.store.get_children("/config/changes") == ["config_change_0000000001"]
        await manager.shutdown()

    run(body)


def test_bad_notifications_and_configs_are_skipped() -> None:
    async def body(zk: KafkaZkClient, time: MockTime) -> None:
        lm = FakeLogManager()
        manager = DynamicConfigManager.for_log_manager(zk, lm, time)
        await manager.startup()
        await zk.store.create("/config/changes/config_change_", b"not json", sequential=True)
        await zk.create_config_change_notification("brokers/0")  # no handler: ignored
        await zk.set_or_create_entity_configs("topics", "u", {"retention.ms": "soon"})
        await zk.create_config_change_notification("topics/u")  # invalid stored value: ignored
        await zk.set_or_create_entity_configs("topics", "t", {"retention.ms": "9"})
        await zk.create_config_change_notification("topics/t")
        await settle(lambda: manager.last_executed_change == 3)
        assert [(t, c.retention_ms) for t, c in lm.updates] == [("t", 9)]
        await manager.shutdown()

    run(body)


def test_broker_config_changes_reach_dynamic_broker_config() -> None:
    from kafpy.server.dynamic_broker_config import DynamicBrokerConfig
    from kafpy.server.kafka_config import KafkaConfig

    async def body(zk: KafkaZkClient, time: MockTime) -> None:
        admin = AdminZkClient(zk)
        await admin.change_broker_config(None, {"log.retention.ms": "3000"})  # before start-up
        dynamic = DynamicBrokerConfig(KafkaConfig({"broker.id": "0", "log.dirs": "/tmp/x"}))
        manager = DynamicConfigManager.for_log_manager(zk, FakeLogManager(), time, dynamic)
        await manager.startup()
        assert dynamic.current.log_default_config().retention_ms == 3000
        await admin.change_broker_config(1, {"log.retention.ms": "1"})  # another broker's
        await admin.change_broker_config(0, {"log.retention.ms": "2000"})
        await settle(lambda: dynamic.dynamic_broker_configs == {"log.retention.ms": "2000"})
        assert dynamic.current.log_default_config().retention_ms == 2000


class RecordingController:
    """Records the topics whose unclean leader election the handler reports enabled."""

    def __init__(self) -> None:
        self.enabled: list[str] = []

    def enable_topic_unclean_leader_election(self, topic: str) -> None:
        self.enabled.append(topic)


def test_enabling_unclean_leader_election_is_passed_to_the_controller() -> None:
    """As Kafka's TopicConfigHandler: the controller elects the topic's offline partitions
    as soon as the topic allows unclean election, not at the next broker change."""

    async def body(zk: KafkaZkClient, time: MockTime) -> None:
        lm, controller = FakeLogManager(), RecordingController()
        manager = DynamicConfigManager.for_log_manager(zk, lm, time, controller=controller)
        await manager.startup()
        admin = AdminZkClient(zk)
        await admin.change_topic_config("u", {"unclean.leader.election.enable": "false"})
        await admin.change_topic_config("t", {"unclean.leader.election.enable": "true"})
        await settle(lambda: len(lm.updates) == 2)
        assert controller.enabled == ["t"]
        await manager.shutdown()

    run(body)

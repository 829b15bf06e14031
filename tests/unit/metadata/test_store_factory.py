"""The backend follows zookeeper.connect: ZooKeeper when set, the embedded store otherwise."""

from __future__ import annotations

from pathlib import Path

from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.metadata.store_factory import create_store
from kafpy.metadata.zookeeper_store import ZooKeeperStore
from kafpy.server.kafka_config import KafkaConfig


def test_zookeeper_when_a_connect_string_is_given(tmp_path: Path) -> None:
    store = create_store("127.0.0.1:2181/kafka", tmp_path, session_timeout_ms=6000)
    assert isinstance(store, ZooKeeperStore)
    assert (store.hosts, store.chroot) == ("127.0.0.1:2181", "/kafka")
    assert store.session_timeout_ms == 6000


def test_embedded_otherwise(tmp_path: Path) -> None:
    for connect in (None, ""):
        store = create_store(connect, tmp_path)
        assert isinstance(store, EmbeddedStore)
        assert store.data_dir == tmp_path
    memory = create_store(None, None)
    assert isinstance(memory, EmbeddedStore) and memory.data_dir is None


def test_default_session_timeout_is_the_broker_config_default(tmp_path: Path) -> None:
    store = create_store("127.0.0.1:2181", tmp_path)
    assert isinstance(store, ZooKeeperStore)
    assert (
        store.session_timeout_ms
        == KafkaConfig({"log.dirs": str(tmp_path)}).zookeeper_session_timeout_ms
    )

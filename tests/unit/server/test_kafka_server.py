"""Tests of the broker lifecycle: start-up order, registration, clean shutdown, restart."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.embedded_store import EmbeddedStore
from kafpy.records.builder import build_batch
from kafpy.records.memory_records import MemoryRecords
from kafpy.server.kafka_config import KafkaConfig
from kafpy.server.kafka_server import KafkaServer


def _config(tmp_path: Path, **extra: str) -> KafkaConfig:
    return KafkaConfig(
        {
            "broker.id": "1",
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": f"{tmp_path}/d1,{tmp_path}/d2",
            "metadata.store.dir": str(tmp_path / "meta"),
            **extra,
        }
    )


def test_startup_registers_broker_and_shutdown_leaves_clean_marker(tmp_path: Path) -> None:
    async def scenario() -> None:
        server = KafkaServer(_config(tmp_path, **{"broker.rack": "r1"}))
        await server.startup()
        assert server.log_manager is not None
        log = server.log_manager.create_log(TopicPartition("t", 0))
        log.append_as_leader(MemoryRecords(bytearray(build_batch([b"a", b"b"]))), leader_epoch=0)

        # another session on the same metadata store sees the registration
        other = EmbeddedStore(tmp_path / "meta")
        await other.start()
        data, _ = await other.get("/brokers/ids/1")
        reg = json.loads(data)
        assert server.socket_server is not None
        port = server.socket_server.bound_port("PLAINTEXT")
        assert port > 0
        assert reg["endpoints"] == [f"PLAINTEXT://127.0.0.1:{port}"]
        assert reg["rack"] == "r1" and reg["port"] == port and reg["version"] == 4
        await server.shutdown()
        assert await other.exists("/brokers/ids/1") is None  # ephemeral gone with the session
        await other.close()

    asyncio.run(scenario())
    for d in ("d1", "d2"):
        assert (tmp_path / d / ".kafka_cleanshutdown").exists()
        assert "broker.id=1" in (tmp_path / d / "meta.properties").read_text()

    async def restart() -> None:
        server = KafkaServer(_config(tmp_path))
        await server.startup()
        assert server.log_manager is not None
        log = server.log_manager.get_log(TopicPartition("t", 0))
        assert log is not None and log.log_end_offset == 2
        await server.shutdown()

    asyncio.run(restart())


def test_meta_properties_of_another_broker_refuses_start(tmp_path: Path) -> None:
    async def scenario() -> None:
        first = KafkaServer(_config(tmp_path))
        await first.startup()
        await first.shutdown()
        other = KafkaServer(_config(tmp_path, **{"broker.id": "2"}))
        with pytest.raises(Exception, match="doesn't match stored broker.id 1"):
            await other.startup()

    asyncio.run(scenario())


def test_kafpy_server_command_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafpy",
            "server",
            "--override",
            f"log.dirs={tmp_path}/data",
            "--override",
            "listeners=PLAINTEXT://127.0.0.1:0",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LOG_DIR": str(tmp_path / "logs")},
    )
    try:
        deadline = time.monotonic() + 30
        lines = []
        assert proc.stderr is not None
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            lines.append(line)
            if "started (kafpy.server.KafkaServer)" in line or not line:
                break
        assert any("started" in x for x in lines), "".join(lines)
        os.kill(proc.pid, signal.SIGTERM)
        rest = proc.stderr.read()
        assert proc.wait(30) == 0, rest
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "shut down completed" in rest
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()
    # LOG_DIR: Kafka's three log files, in Kafka's line format
    server_log = (tmp_path / "logs" / "server.log").read_text()
    assert "INFO [KafkaServer id=0] started (kafpy.server.KafkaServer)" in server_log
    controller_log = (tmp_path / "logs" / "controller.log").read_text()
    assert "(kafpy.controller" in controller_log
    assert (tmp_path / "logs" / "state-change.log").exists()


def test_kafpy_server_rejects_bad_config_with_one_line(tmp_path: Path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "kafpy",
            "server",
            "--override",
            "num.partitions=zero",
            "--override",
            f"log.dirs={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1
    assert res.stderr.strip().splitlines() == [
        "Invalid broker configuration: Invalid value zero for configuration num.partitions: Not a number of type INT"
    ]


def test_in_process_broker_serves_on_a_bound_port_and_brings_topics_online(tmp_path: Path) -> None:
    from kafpy.client.connection import BrokerConnection
    from kafpy.protocol.api_keys import ApiKey

    async def scenario() -> None:
        server = KafkaServer(_config(tmp_path, listeners="PLAINTEXT://127.0.0.1:0"))
        await server.startup()
        try:
            assert server.socket_server is not None
            port = server.socket_server.bound_port("PLAINTEXT")
            assert port != 0
            async with BrokerConnection("127.0.0.1", port) as conn:
                # auto-creation: LEADER_NOT_AVAILABLE first, then the controller brings it online
                first = await conn.send(ApiKey.METADATA, {"topics": [{"name": "auto"}]})
                assert first["topics"][0]["error_code"] in (0, 5)
                for _ in range(200):
                    meta = await conn.send(ApiKey.METADATA, {"topics": [{"name": "auto"}]})
                    if meta["topics"][0]["error_code"] == 0:
                        break
                    await asyncio.sleep(0.05)
                assert meta["brokers"] == [
                    {"node_id": 1, "host": "127.0.0.1", "port": port, "rack": None}
                ]
                assert meta["controller_id"] == 1
                assert [p["leader_id"] for p in meta["topics"][0]["partitions"]] == [1]
            assert server.log_manager is not None
            assert server.log_manager.get_log(TopicPartition("auto", 0)) is not None
        finally:
            await server.shutdown()

    asyncio.run(asyncio.wait_for(scenario(), 60))
    assert (tmp_path / "d1" / ".kafka_cleanshutdown").exists()
    assert (tmp_path / "d1" / "replication-offset-checkpoint").exists()

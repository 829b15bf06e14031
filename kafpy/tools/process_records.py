"""The records of a local cluster's processes: what `kafpy cluster` keeps in
`<dir>/cluster.json` about its ZooKeeper and each broker (pid and start time, ports,
directories), and the file itself, written whole through a temporary file.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafpy.storage.log_manager import LOCK_FILE_NAME
from kafpy.tools.processes import lock_holder, process_alive, process_start_time, tail

CLUSTER_FILE = "cluster.json"
CLUSTER_FILE_VERSION = 1
HOST = "127.0.0.1"


class LocalClusterError(Exception):
    """The local cluster could not be started, found or stopped; the message says why."""


@dataclass
class BrokerProcess:
    """One broker of the local cluster: its id, listener, directories and process.

    `port` is its first listener's port: 0 until its first start binds one (the broker
    reports the ports it bound in `bound_ports_path`, kafpy.network.bound_ports), then
    kept, so it restarts on the same port. `ports` holds every listener's bound port.
    """

    broker_id: int
    port: int
    dir: Path
    host: str = HOST
    pid: int | None = None
    start_time: int | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    ports: dict[str, int] = field(default_factory=dict, compare=False)

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def properties_path(self) -> Path:
        return self.dir / "server.properties"

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    @property
    def logs_dir(self) -> Path:
        return self.dir / "logs"

    @property
    def output_path(self) -> Path:
        return self.logs_dir / "server.out"

    @property
    def bound_ports_path(self) -> Path:
        return self.dir / "bound-ports.json"

    @property
    def alive(self) -> bool:
        return process_alive(self.pid, self.start_time)

    def find_process(self) -> bool:
        """When the recorded process is gone, take the one holding this broker's log dir
        lock as the broker (it was restarted by hand); True if the record changed."""
        if self.alive:
            return False
        pid = lock_holder(self.data_dir / LOCK_FILE_NAME)
        if pid is None or not process_alive(pid):
            return False
        self.pid, self.start_time, self.process = pid, process_start_time(pid), None
        return True

    def log_tail(self, lines: int = 40) -> str:
        """The last `lines` lines of the broker's output."""
        return tail(self.output_path, lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.broker_id,
            "host": self.host,
            "port": self.port,
            "ports": self.ports,
            "dir": str(self.dir),
            "pid": self.pid,
            "start_time": self.start_time,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> BrokerProcess:
        return cls(
            broker_id=int(value["id"]),
            port=int(value["port"]),
            ports={str(k): int(v) for k, v in value.get("ports", {}).items()},
            dir=Path(value["dir"]),
            host=str(value.get("host", HOST)),
            pid=value.get("pid"),
            start_time=value.get("start_time"),
        )


@dataclass
class ZooKeeperProcess:
    """The cluster's ZooKeeper: managed (a `kafpy zookeeper` process in `dir`, whose JVM is
    `jvm_pid`) or external (only its connect string is known)."""

    connect: str
    dir: Path | None = None
    port: int | None = None
    pid: int | None = None
    start_time: int | None = None
    jvm_pid: int | None = None
    jvm_start_time: int | None = None

    @property
    def managed(self) -> bool:
        return self.dir is not None

    @property
    def output_path(self) -> Path | None:
        return None if self.dir is None else self.dir / "kafpy-zookeeper.out"

    @property
    def alive(self) -> bool:
        return process_alive(self.pid, self.start_time)

    def to_json(self) -> dict[str, Any]:
        return {
            "connect": self.connect,
            "dir": None if self.dir is None else str(self.dir),
            "port": self.port,
            "pid": self.pid,
            "start_time": self.start_time,
            "jvm_pid": self.jvm_pid,
            "jvm_start_time": self.jvm_start_time,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ZooKeeperProcess:
        directory = value.get("dir")
        return cls(
            connect=str(value["connect"]),
            dir=None if directory is None else Path(directory),
            port=value.get("port"),
            pid=value.get("pid"),
            start_time=value.get("start_time"),
            jvm_pid=value.get("jvm_pid"),
            jvm_start_time=value.get("jvm_start_time"),
        )


def write_cluster_file(base_dir: Path, value: Mapping[str, Any]) -> None:
    """Write `base_dir/cluster.json` (through a temporary file, so a reader never sees half)."""
    base_dir.mkdir(parents=True, exist_ok=True)
    path = base_dir / CLUSTER_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(value, indent=2) + "\n", "utf-8")
    tmp.replace(path)


def read_cluster_file(base_dir: Path) -> dict[str, Any]:
    """The contents of `base_dir/cluster.json`; LocalClusterError when there is none or it
    is not of this version."""
    path = base_dir / CLUSTER_FILE
    try:
        value = json.loads(path.read_text("utf-8"))
    except FileNotFoundError as e:
        raise LocalClusterError(
            f"No local cluster in {path.parent}: {CLUSTER_FILE} not found "
            "(start one with `kafpy cluster up`, or pass its --dir)."
        ) from e
    except (OSError, ValueError) as e:
        raise LocalClusterError(f"Cannot read {path}: {e}") from e
    if not isinstance(value, dict) or value.get("version") != CLUSTER_FILE_VERSION:
        raise LocalClusterError(
            f"{path} is not a cluster file of version {CLUSTER_FILE_VERSION}; "
            "remove it if no cluster of it is running."
        )
    return value

"""Helpers the benchmarks share: a free loopback port, a `kafpy server` of one listener,
a local SparkSession with kafpy's data source and the best times of Spark queries,
waiting until a server listens, ending a benchmark when what it waits for does not come
(`exit_with`), producing N records through confluent-kafka, and the CPU time a process
has used."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, NoReturn

from kafpy.common.wait import wait_until
from kafpy.server.broker_launcher import server_command


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_broker(
    workdir: Path, port: int, log: IO[bytes], overrides: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """A `kafpy server` (embedded metadata store) listening on 127.0.0.1:`port`, its data
    under `workdir`, with `overrides`, its output (unbuffered) to `log`."""
    command = server_command({
        "listeners": f"PLAINTEXT://127.0.0.1:{port}", "log.dirs": str(workdir / "data"),
        **(overrides or {}),
    })  # fmt: skip
    return subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )


def local_spark() -> Any:
    """A local[2] SparkSession (no UI, Python workers reused, errors only in its log) with
    kafpy's data source registered."""
    from pyspark.sql import SparkSession

    from kafpy.spark.data_source import KafpyDataSource

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.python.worker.reuse", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(KafpyDataSource)
    return spark


def best_times(
    dfs: Mapping[str, Any], expected: int, rounds: int, aggregate: str
) -> dict[str, float]:
    """Best wall time of each DataFrame's `count(*) AS n` and `aggregate` over `rounds`
    rounds, run alternately (so that JVM warm-up and background load hit all alike); each
    must count `expected` rows."""
    best = dict.fromkeys(dfs, float("inf"))
    for _ in range(rounds):
        for name, df in dfs.items():
            start = time.perf_counter()
            row = df.selectExpr("count(*) AS n", aggregate).collect()[0]
            best[name] = min(best[name], time.perf_counter() - start)
            assert row.n == expected, (name, row.n, expected)
    return best


def read_exact(sock: socket.socket, n: int) -> bytes:
    """`n` bytes from `sock`; exits if the broker closes the connection first."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise SystemExit("the broker closed the connection")
        buf += chunk
    return bytes(buf)


def exit_with(message: str) -> Callable[[], NoReturn]:
    """An `on_timeout` for `wait_until` that ends the benchmark with `message`."""

    def give_up() -> NoReturn:
        raise SystemExit(message)

    return give_up


def wait_port(port: int, timeout: float = 60) -> None:
    """Return once something accepts connections on 127.0.0.1:`port`; exit after `timeout`."""

    def listening() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    wait_until(
        listening,
        timeout,
        interval_s=0.1,
        on_timeout=exit_with(f"nothing listens on port {port} after {timeout} s"),
    )


def produce_all(producer: Any, topic: str, n: int, value: bytes) -> float:
    """Seconds to hand `n` records of `value` to a confluent-kafka `producer` (waiting
    whenever its queue is full) and have them all acknowledged."""
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(300) != 0:
        raise SystemExit("produce did not finish")
    return time.perf_counter() - start


def cpu_seconds(pid: int) -> float:
    """CPU time of a process's threads so far, in ns resolution (Linux schedstat; /proc/PID/stat
    counts 10 ms ticks, too coarse for a run of a second)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass  # a thread that ended meanwhile
    return total / 1e9

"""`kafpy zookeeper` runs a real ZooKeeper in the foreground and stops it on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from kafpy.common.wait import wait_until
from kafpy.metadata.zookeeper_server import four_letter_word, free_port, port_in_use

KAFPY = [sys.executable, "-c", "from kafpy.cli.main import main; main()"]


def test_runs_until_interrupted(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [*KAFPY, "zookeeper", "--data-dir", str(tmp_path), "--port", str(port)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def serving() -> bool:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            try:
                return "Mode: standalone" in four_letter_word("127.0.0.1", port, "srvr")
            except OSError:
                return False

        wait_until(serving, 60, "ZooKeeper to start")
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0, process.stderr.read() if process.stderr else ""
        assert not port_in_use("127.0.0.1", port)
        assert (tmp_path / "zoo.cfg").exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

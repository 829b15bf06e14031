"""`kafpy zookeeper` runs a real ZooKeeper in the foreground and stops it on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

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
        deadline = time.monotonic() + 60
        answer = ""
        while "Mode: standalone" not in answer:
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            assert time.monotonic() < deadline, "ZooKeeper did not start"
            try:
                answer = four_letter_word("127.0.0.1", port, "srvr")
            except OSError:
                time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0, process.stderr.read() if process.stderr else ""
        assert not port_in_use("127.0.0.1", port)
        assert (tmp_path / "zoo.cfg").exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

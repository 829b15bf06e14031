"""`kafpy server-stop` against a real broker, as kafka-server-stop.sh is used.

The command stops every kafpy broker on the machine, so the test runs it in a PID namespace
of its own (`unshare --pid --mount-proc`): it sees only the broker this test starts, and
everything in the namespace ends with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures.broker import free_port

DRIVER = r"""
import json, socket, subprocess, sys, time
port, data = int(sys.argv[1]), sys.argv[2]
out = open(data + ".out", "wb")
broker = subprocess.Popen(
    [sys.executable, "-m", "kafpy", "server", "--override", "broker.id=0",
     "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={data}"],
    stdout=out, stderr=subprocess.STDOUT,
)
deadline = time.monotonic() + 60
while b"started (kafpy.server.KafkaServer)" not in open(data + ".out", "rb").read():
    if broker.poll() is not None or time.monotonic() > deadline:
        broker.kill()
        print(json.dumps({"error": open(data + ".out").read()}))
        sys.exit(0)
    time.sleep(0.05)
cmd = [sys.executable, "-m", "kafpy", "server-stop"]
first = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
try:
    broker_rc = broker.wait(60)
except subprocess.TimeoutExpired:
    broker.kill()
    broker_rc = None
second = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
print(json.dumps({
    "first": [first.returncode, first.stdout, first.stderr],
    "broker_rc": broker_rc,
    "second": [second.returncode, second.stdout, second.stderr],
    "log": open(data + ".out").read(),
}))
"""


def test_server_stop_stops_the_broker_then_finds_none(tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    result = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, str(driver),
         str(free_port()), str(tmp_path / "data")],
        capture_output=True, text=True, timeout=180, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert "error" not in report, report.get("error")
    assert report["first"] == [0, "", ""]
    assert report["broker_rc"] == 0, report["log"]
    assert "shut down completed (kafpy.server.KafkaServer)" in report["log"]
    assert report["second"] == [1, "No kafka server to stop\n", ""]

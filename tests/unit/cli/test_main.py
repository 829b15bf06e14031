"""The `kafpy` entry point: ending quietly when the output is closed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafpy.cli.main import OUTPUT_CLOSED_EXIT_STATUS
from kafpy.records import build_batch


def test_closed_output_ends_quietly(tmp_path: Path) -> None:
    """`kafpy dump-log ... | head -1`: the reader closes the pipe after one line."""
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(build_batch([b"value %d" % i for i in range(20_000)], timestamp=0))
    process = subprocess.Popen(
        [sys.executable, "-m", "kafpy", "dump-log", "--files", str(segment), "--print-data-log"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline().startswith(b"Dumping ")
    process.stdout.close()  # what head does once it has its lines
    stderr = process.stderr.read()
    process.stderr.close()
    assert process.wait(60) == OUTPUT_CLOSED_EXIT_STATUS == 141
    assert stderr == b""

"""examples/test_with_kafpy.py runs green with the kafpy pytest plugin, so it cannot rot."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).parents[2] / "examples" / "test_with_kafpy.py"


def test_the_example_test_suite_passes(tmp_path: Path) -> None:
    env = {
        **os.environ,
        # the plugin by name only: an installed kafpy's entry point would load it twice
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTHONPATH": str(EXAMPLE.parents[1]),
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-p", "kafpy.testing.pytest_plugin", f"--basetemp={tmp_path / 'run'}", str(EXAMPLE)],
        capture_output=True, text=True, env=env, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout

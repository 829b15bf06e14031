"""examples/spark_pipeline.py end to end against a real broker, on the shared session."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any

from tests.fixtures.broker import KafpyBroker
from tests.spark.fixtures import consume_all

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "spark_pipeline.py"


def test_spark_pipeline_example(spark: Any, kafpy_broker: KafpyBroker, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("spark_pipeline", EXAMPLE)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    boot = kafpy_broker.bootstrap
    asyncio.run(example.produce_events(boot, 300))
    example.run_pipeline(boot, str(tmp_path / "cp"), follow=False, stop_spark=False)
    counts = [json.loads(m.value) for m in consume_all(boot, example.COUNTS, 1)]
    assert counts, "no window was closed by the watermark"
    assert all(set(c) == {"window_start", "window_end", "user", "count"} for c in counts)
    assert {c["user"] for c in counts} <= set(example.USERS)
    assert 0 < sum(c["count"] for c in counts) < 300  # the newest windows are still open
    events = consume_all(boot, example.EVENTS, 3)
    assert len(events) == 300

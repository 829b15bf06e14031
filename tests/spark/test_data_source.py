"""KafpyDataSource and its registration: Spark finds `pyspark_kafpy.DefaultSource` by itself
(pyspark.sql.worker.lookup_data_sources imports the `pyspark_*` modules on its Python
worker's path), so `spark.read.format("kafpy")` needs no `spark.dataSource.register`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource

from kafpy.spark.data_source import KafpyDataSource


def test_default_source_is_the_kafpy_data_source() -> None:
    import pyspark_kafpy

    assert pyspark_kafpy.DefaultSource is KafpyDataSource
    assert issubclass(pyspark_kafpy.DefaultSource, DataSource)
    assert pyspark_kafpy.DefaultSource.name() == "kafpy"


def test_spark_registers_kafpy_by_itself(spark: Any) -> None:
    # Spark's own lookup, in a fresh Python worker, as it runs on a session's first use of a
    # Python data source
    jvm = spark._jvm.org.apache.spark.sql.execution.datasources.v2.python
    found = jvm.UserDefinedPythonDataSource.lookupAllDataSourcesInPython()
    assert "kafpy" in list(found.names())
    # the shared session registers nothing itself (tests/spark/fixtures.py)
    df = (
        spark.read.format("kafpy")
        .option("kafka.bootstrap.servers", "127.0.0.1:9")
        .option("subscribe", "t")
        .option("includeHeaders", "true")
        .load()
    )
    assert df.columns == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"
    ]  # fmt: skip


def test_loading_kafpy_spark_points_spark_workers_at_this_interpreter(tmp_path: Path) -> None:
    probe = "import os, kafpy.spark; print(os.environ.get('PYSPARK_PYTHON'))"
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == sys.executable
    env["PYSPARK_PYTHON"] = "/opt/python-of-my-choice"
    out = subprocess.run([sys.executable, "-c", probe], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "/opt/python-of-my-choice"

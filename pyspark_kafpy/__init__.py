"""Spark finds installed modules named `pyspark_*` and registers their `DefaultSource`:
with kafpy installed, `spark.read.format("kafpy")` works without registering anything."""

from kafpy.spark.data_source import KafpyDataSource as DefaultSource

__all__ = ["DefaultSource"]

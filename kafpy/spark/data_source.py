"""KafpyDataSource: the PySpark Python Data Source registered as "kafpy".

    spark.dataSource.register(KafpyDataSource)        # or: pip install kafpy, and Spark
    df = (spark.read.format("kafpy")                  # finds pyspark_kafpy.DefaultSource
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "events").load())

Reads have the schema of Spark's Kafka source (key, value, topic, partition, offset,
timestamp, timestampType, and headers with includeHeaders=true); writes take its sink's
columns. Options are Spark's Kafka connector's (see kafpy.spark.options).

Batch writes need `.mode("append")`: Spark lets a Python data source take only append
or overwrite (its default, ErrorIfExists, is refused by Spark itself), and overwrite
is refused here because a topic is an append-only log.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from kafpy.spark.arrow import spark_schema
from kafpy.spark.errors import OptionError
from kafpy.spark.options import ReadOptions, WriteOptions, include_headers
from kafpy.spark.reader import KafkaBatchReader, KafkaStreamReader
from kafpy.spark.writer import KafkaBatchWriter, KafkaStreamWriter, validate_write_schema

_OVERWRITE = (
    "The kafpy data source cannot overwrite a topic: Kafka topics are append-only logs. "
    "Use .mode('append')."
)


class KafpyDataSource(DataSource):
    """Kafka topics as a Spark table, batch and streaming, read and write."""

    @classmethod
    def name(cls) -> str:
        return "kafpy"

    def schema(self) -> str:
        return spark_schema(include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        return KafkaBatchReader(ReadOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(ReadOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise OptionError(_OVERWRITE)
        options = WriteOptions.parse(self.options)
        validate_write_schema(schema, options)
        return KafkaBatchWriter(options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        if overwrite:
            raise OptionError(_OVERWRITE)
        options = WriteOptions.parse(self.options)
        validate_write_schema(schema, options)
        return KafkaStreamWriter(options, schema)

"""KafpyDataSource: the PySpark Python Data Source registered as "kafpy".

    spark.dataSource.register(KafpyDataSource)        # or: pip install kafpy, and Spark
    df = (spark.read.format("kafpy")                  # finds pyspark_kafpy.DefaultSource
          .option("kafka.bootstrap.servers", "localhost:9092")
          .option("subscribe", "events").load())

Reads have the schema of Spark's Kafka source (key, value, topic, partition, offset,
timestamp, timestampType, and headers with includeHeaders=true), the value a typed column
with valueFormat=confluent-avro (kafpy.spark.confluent_avro); writes take its sink's
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
from kafpy.spark.confluent_avro import reader_schema, spark_schema_with_value, value_type
from kafpy.spark.errors import OptionError
from kafpy.spark.options import ReadOptions, WriteOptions, include_headers, value_decoding
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
        base = spark_schema(include_headers(self.options))
        decoding = value_decoding(self.options)
        if decoding is None:
            return base
        # Spark pickles this object after schema(), so reader() finds the same version
        self._value_schema: str | None = reader_schema(decoding)
        return spark_schema_with_value(base, value_type(self._value_schema))

    def _reader_schema(self, options: ReadOptions) -> str | None:
        if options.value_decoding is None:
            return None
        known = getattr(self, "_value_schema", None)
        return known if known is not None else reader_schema(options.value_decoding)

    def reader(self, schema: StructType) -> DataSourceReader:
        options = ReadOptions.parse(self.options, streaming=False)
        return KafkaBatchReader(options, self._reader_schema(options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = ReadOptions.parse(self.options, streaming=True)
        return KafkaStreamReader(options, self._reader_schema(options))

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

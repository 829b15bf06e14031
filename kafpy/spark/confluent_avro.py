"""`valueFormat=confluent-avro`: values in Confluent's Avro framing read into a typed
value column, with no JVM jar (what Spark's from_avro with a schema registry does).

The reader schema is the subject's latest version when the query is planned; its Spark
type replaces `value binary` in the source's schema. Each value is decoded with its own
writer schema (the id in its framing, fetched from the registry once per executor
process) and resolved to the reader schema as Avro's schema resolution says, so records
written with older or newer compatible schemas read alike.

Avro types become Spark types as from_avro maps them: boolean, int, long (bigint),
float, double, bytes and fixed (binary), string and enum (string), record (struct),
array, map (map<string, T>), a union of null and one type (that type, nullable), and
the logical types date, timestamp-millis and timestamp-micros (timestamp) and decimal.
Other unions and logical types are refused when the query is planned.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafpy.common.extras import MissingExtraError, require_extra
from kafpy.spark.errors import OptionError
from kafpy.spark.options import ValueDecoding

if TYPE_CHECKING:
    from kafpy.client.schema_registry_client import SchemaRegistryClient

PRIMITIVES: dict[str, tuple[str, pa.DataType]] = {
    "boolean": ("boolean", pa.bool_()),
    "int": ("int", pa.int32()),
    "long": ("bigint", pa.int64()),
    "float": ("float", pa.float32()),
    "double": ("double", pa.float64()),
    "bytes": ("binary", pa.binary()),
    "string": ("string", pa.string()),
}
TIMESTAMP = ("timestamp", pa.timestamp("us", tz="UTC"))


def require_schema_registry_extra() -> None:
    """valueFormat=confluent-avro needs fastavro and jsonschema as well as the spark extra."""
    try:
        require_extra("schema-registry", "The option valueFormat=confluent-avro")
    except MissingExtraError as e:
        raise OptionError(str(e)) from None


class SparkType:
    """An Avro schema as a Spark column type: its DDL and its Arrow type. Every field is
    nullable, as a DDL string makes them."""

    def __init__(self, ddl: str, arrow: pa.DataType) -> None:
        self.ddl = ddl
        self.arrow = arrow


def spark_type(schema: Any, named: dict[str, Any], path: str = "value") -> SparkType:
    """The Spark type of a parsed (fastavro) Avro schema; `named` holds the named types
    (fastavro's `__named_schemas`). An Avro type Spark cannot hold is an OptionError
    naming where it is."""
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return SparkType(*PRIMITIVES[schema])
        if schema in named:
            return spark_type(named[schema], named, path)
        raise OptionError(f"The Avro type {schema!r} at {path} cannot be read into Spark.")
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) != 1:
            raise OptionError(
                f"The Avro union {json.dumps(schema)} at {path} is not supported: only a union "
                "of null and one type is read (as a nullable column)."
            )
        return spark_type(branches[0], named, path)
    kind = schema.get("type")
    logical = schema.get("logicalType")
    if logical == "date" and kind == "int":
        return SparkType("date", pa.date32())
    if logical in ("timestamp-millis", "timestamp-micros") and kind == "long":
        return SparkType(*TIMESTAMP)
    if logical == "decimal" and kind in ("bytes", "fixed"):
        precision, scale = int(schema["precision"]), int(schema.get("scale", 0))
        if precision > 38:
            raise OptionError(
                f"The Avro decimal at {path} has precision {precision}, more than Spark's 38."
            )
        return SparkType(f"decimal({precision},{scale})", pa.decimal128(precision, scale))
    if logical is not None and kind in (*PRIMITIVES, "fixed"):
        raise OptionError(
            f"The Avro logical type {logical!r} at {path} is not supported (date, "
            "timestamp-millis, timestamp-micros and decimal are)."
        )
    if kind in PRIMITIVES:
        return SparkType(*PRIMITIVES[kind])
    if kind == "enum":
        return SparkType("string", pa.string())
    if kind == "fixed":
        return SparkType("binary", pa.binary())
    if kind == "array":
        item = spark_type(schema["items"], named, f"{path}[]")
        return SparkType(f"array<{item.ddl}>", pa.list_(pa.field("element", item.arrow)))
    if kind == "map":
        value = spark_type(schema["values"], named, f"{path}{{}}")
        arrow = pa.map_(pa.string(), pa.field("value", value.arrow))
        return SparkType(f"map<string,{value.ddl}>", arrow)
    if kind == "record":
        fields = []
        ddl = []
        for f in schema["fields"]:
            t = spark_type(f["type"], named, f"{path}.{f['name']}")
            fields.append(pa.field(f["name"], t.arrow))
            ddl.append(f"`{f['name'].replace('`', '``')}`:{t.ddl}")
        return SparkType(f"struct<{','.join(ddl)}>", pa.struct(fields))
    if isinstance(kind, str | list | dict):
        return spark_type(kind, named, path)
    raise OptionError(f"The Avro schema at {path} cannot be read into Spark: {schema!r}")


def reader_schema(decoding: ValueDecoding) -> str:
    """The text of the subject's latest schema; an OptionError when the registry cannot
    give it or Spark cannot hold it."""
    require_schema_registry_extra()
    from kafpy.client.schema_registry_client import SchemaRegistryClientError

    try:
        latest = registry_client(decoding.registry_url).latest_version(decoding.subject)
    except SchemaRegistryClientError as e:
        raise OptionError(
            f"Option valueFormat=confluent-avro: the reader schema of subject "
            f"{decoding.subject} could not be read: {e}"
        ) from None
    if latest.schema_type != "AVRO":
        raise OptionError(
            f"Option valueFormat=confluent-avro: subject {decoding.subject} holds a "
            f"{latest.schema_type} schema, not AVRO."
        )
    value_type(latest.schema)  # refused now, not in a task
    return latest.schema


def value_type(schema_text: str) -> SparkType:
    """The Spark type of the value column for this reader schema."""
    from fastavro.schema import parse_schema

    parsed = parse_schema(json.loads(schema_text))
    named = parsed.get("__named_schemas", {}) if isinstance(parsed, dict) else {}
    return spark_type(parsed, named)


def registry_client(url: str) -> SchemaRegistryClient:
    """One client per registry in a process, so that the tasks a Python worker runs share
    its cache of schemas by id."""
    from kafpy.client.schema_registry_client import SchemaRegistryClient

    client = _CLIENTS.get(url)
    if client is None:
        client = _CLIENTS[url] = SchemaRegistryClient(url)
    return client


_CLIENTS: dict[str, SchemaRegistryClient] = {}


def spark_schema_with_value(base: str, value: SparkType) -> str:
    """The source's Spark schema (DDL) with `value binary` replaced by the value's type."""
    return base.replace("value binary", f"value {value.ddl}", 1)


class ConfluentAvroValues:
    """Decodes the value column of the reader's Arrow batches (on an executor): each value
    with its writer schema, resolved to `schema_text`; a value that cannot be decoded fails
    the task (FAILFAST) or is null (PERMISSIVE)."""

    def __init__(self, decoding: ValueDecoding, schema_text: str) -> None:
        require_schema_registry_extra()
        from kafpy.client.schema_serde import SchemaDeserializer, SchemaFormat

        self.decoding = decoding
        self.value_type = value_type(schema_text).arrow
        self.deserializer = SchemaDeserializer(
            registry_client(decoding.registry_url), SchemaFormat.AVRO, schema_text
        )

    def decode(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        from kafpy.client.schema_serde import SerializationError

        index = batch.schema.get_field_index("value")
        raw = batch.column(index).to_pylist()
        decoded: list[Any] = []
        # Avro's binary encoding has no fixed layout to vectorize: fastavro (in C) reads
        # each value in turn.
        for i, data in enumerate(raw):
            if data is None:
                decoded.append(None)
                continue
            try:
                decoded.append(self.deserializer.decode(data))
            except SerializationError as e:
                if self.decoding.mode == "PERMISSIVE":
                    decoded.append(None)
                    continue
                topic = batch.column(batch.schema.get_field_index("topic"))[i].as_py()
                partition = batch.column(batch.schema.get_field_index("partition"))[i].as_py()
                offset = batch.column(batch.schema.get_field_index("offset"))[i].as_py()
                raise SerializationError(
                    f"Malformed record at {topic}-{partition} offset {offset}: {e} "
                    "(mode FAILFAST; set the option mode=PERMISSIVE to read such values as "
                    "null)"
                ) from None
        column = pa.array(decoded, type=self.value_type)
        return batch.set_column(index, pa.field("value", self.value_type), column)

"""Confluent-framed records through kafpy's serializers: encode and decode rates.

    python bench/schema_serde.py [--records 100000]

Starts one broker and one `kafpy schema-registry` (separate processes), registers a
6-field AVRO record schema and a JSON schema through kafpy.client.schema_serde, then, in
this process, for --records records: encodes them from JSON lines (what
`console-producer --value-format` does per line), decodes them to JSON lines (what
`console-consumer --value-format` prints), and decodes them into an Arrow struct column
in batches of 10,000 (what the Spark source does per task with valueFormat=confluent-avro).
Prints records/s and µs per record of each; the schemas are fetched once, so the figures
are the codec's cost, not the registry's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
from bench_support import free_port, start_broker, wait_port  # noqa: E402

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))

from kafpy.client.schema_registry_client import SchemaRegistryClient  # noqa: E402
from kafpy.client.schema_serde import (  # noqa: E402
    SchemaDeserializer,
    SchemaFormat,
    SchemaSerializer,
)
from kafpy.spark.confluent_avro import ConfluentAvroValues  # noqa: E402
from kafpy.spark.options import ValueDecoding  # noqa: E402

sys.path.insert(0, str(HERE.parent))
from schema_registry import start_registry, stop  # noqa: E402

AVRO = {
    "type": "record",
    "name": "Event",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "user", "type": "string"},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["VIEW", "BUY"]}},
        {"name": "amount", "type": "double"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
JSON_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "user": {"type": "string"}},
    "required": ["id", "user"],
}


def rate(what: str, n: int, seconds: float) -> None:
    print(f"{what:<52} {n / seconds:>10,.0f} records/s  {seconds / n * 1e6:6.1f} µs/record")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    n = parser.parse_args().records
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-serde-bench-"))
    broker_port, registry_port = free_port(), free_port()
    broker = start_broker(workdir, broker_port, open(workdir / "broker.log", "ab"))  # noqa: SIM115
    registry: subprocess.Popen[bytes] | None = None
    try:
        wait_port(broker_port)
        registry = start_registry(workdir, broker_port, registry_port)
        wait_port(registry_port, timeout=120)
        url = f"http://127.0.0.1:{registry_port}"
        client = SchemaRegistryClient(url)

        avro = SchemaSerializer(client, SchemaFormat.AVRO, "events", schema=json.dumps(AVRO))
        avro.prepare()
        lines = [
            json.dumps({"id": i, "user": f"u{i % 977}", "kind": "BUY" if i % 3 else "VIEW",
                        "amount": i * 0.5, "note": {"string": "n"} if i % 2 else None,
                        "tags": ["a", "b"]})
            for i in range(n)
        ]  # fmt: skip
        start = time.perf_counter()
        framed = [avro.from_json(line) for line in lines]
        rate("avro: encode JSON lines (console-producer)", n, time.perf_counter() - start)

        deserializer = SchemaDeserializer(client, SchemaFormat.AVRO)
        deserializer.fetch(deserializer.unknown_ids(framed[:1]))
        start = time.perf_counter()
        for data in framed:
            deserializer.to_json(data)
        rate("avro: decode to JSON lines (console-consumer)", n, time.perf_counter() - start)

        values = ConfluentAvroValues(
            ValueDecoding(url, "events-value"), client.latest_version("events-value").schema
        )
        batch_size = 10_000
        batches = [
            pa.RecordBatch.from_pydict(
                {"value": framed[i : i + batch_size], "topic": ["events"] * len(framed[i : i + batch_size]),
                 "partition": [0] * len(framed[i : i + batch_size]),
                 "offset": list(range(i, i + len(framed[i : i + batch_size])))},
                schema=pa.schema([("value", pa.binary()), ("topic", pa.string()),
                                  ("partition", pa.int32()), ("offset", pa.int64())]),
            )
            for i in range(0, n, batch_size)
        ]  # fmt: skip
        start = time.perf_counter()
        for batch in batches:
            values.decode(batch)
        rate("avro: decode into an Arrow struct column (Spark)", n, time.perf_counter() - start)

        js = SchemaSerializer(
            client, SchemaFormat.JSON_SCHEMA, "people", schema=json.dumps(JSON_SCHEMA)
        )
        js.prepare()
        json_lines = [json.dumps({"id": i, "user": f"u{i}"}) for i in range(n)]
        start = time.perf_counter()
        framed_json = [js.from_json(line) for line in json_lines]
        rate("json-schema: encode and validate JSON lines", n, time.perf_counter() - start)
        json_deserializer = SchemaDeserializer(client, SchemaFormat.JSON_SCHEMA)
        start = time.perf_counter()
        for data in framed_json:
            json_deserializer.to_json(data)
        rate("json-schema: decode to JSON lines", n, time.perf_counter() - start)
    finally:
        if registry is not None:
            stop(registry)
        stop(broker)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()

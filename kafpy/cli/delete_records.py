"""`kafpy delete-records`: delete the records of partitions below given offsets
(kafka-delete-records.sh).

As Kafka 2.8's DeleteRecordsCommand: `--bootstrap-server B --offset-json-file F
[--command-config F]`, where F holds `{"partitions": [{"topic": "foo", "partition": 1,
"offset": 1}], "version": 1}` (offset -1: up to the high watermark). It prints "Executing
records delete operation", "Records delete operation completed:" and one line per
partition: `partition: foo-1<TAB>low_watermark: 1` or `partition: foo-1<TAB>error: ...`
(then exit status 1). A file that is not such JSON, or names a partition twice, is refused
before anything is sent.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    run_command,
)
from kafpy.client.admin_client import AdminClient
from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition

EARLIEST_VERSION = 1
_FORMAT = '{"partitions":\n  [{"topic": "foo", "partition": 1, "offset": 1}],\n "version":1\n}'


def parse_offset_json(text: str, source: str) -> list[tuple[TopicPartition, int]]:
    """The (partition, offset) pairs of an offset JSON file, in file order; a OneLineError
    naming what is wrong otherwise."""
    try:
        data: Any = json.loads(text)
    except ValueError:
        raise OneLineError(f"{source}: the input string is not a valid JSON") from None
    if not isinstance(data, dict):
        raise OneLineError(f"{source}: expected a JSON object of the form {_FORMAT}")
    version = data.get("version", EARLIEST_VERSION)
    if version != EARLIEST_VERSION:
        raise OneLineError(f"{source}: not supported version field value {version}")
    partitions = data.get("partitions")
    if not isinstance(partitions, list):
        raise OneLineError(f"{source}: missing partitions field (expected {_FORMAT})")
    out = []
    for i, entry in enumerate(partitions):
        if not isinstance(entry, dict):
            raise OneLineError(f"{source}: partitions[{i}] is not an object")
        topic, partition, offset = entry.get("topic"), entry.get("partition"), entry.get("offset")
        if not isinstance(topic, str) or not topic:
            raise OneLineError(f"{source}: partitions[{i}] has no topic name")
        for name, value in (("partition", partition), ("offset", offset)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise OneLineError(f"{source}: partitions[{i}].{name} is not an integer: {value!r}")
        assert isinstance(partition, int) and isinstance(offset, int)
        if partition < 0 or offset < -1:
            raise OneLineError(
                f"{source}: partitions[{i}] has partition {partition} and offset {offset}; "
                "the partition must be 0 or more and the offset -1 (high watermark) or more"
            )
        out.append((TopicPartition(topic, partition), offset))
    duplicates = [str(tp) for tp, n in Counter(tp for tp, _ in out).items() if n > 1]
    if duplicates:
        raise OneLineError(
            f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}"
        )
    return out


@click.command(
    "delete-records",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: The server to connect to.")
@click.option(
    "--offset-json-file",
    metavar="FILE",
    help=f"REQUIRED: The JSON file with offset per partition. The format to use is:\n{_FORMAT}",
)
@click.option(
    "--command-config",
    metavar="FILE",
    help="A property file containing configs to be passed to Admin Client.",
)
def command(
    bootstrap_server: str | None, offset_json_file: str | None, command_config: str | None
) -> None:
    """This tool helps to delete records of the given partitions down to the specified offset."""
    missing = [n for n, v in (("bootstrap-server", bootstrap_server),
                              ("offset-json-file", offset_json_file)) if not v]  # fmt: skip
    if missing:
        raise OneLineError(
            f"Missing required option(s): {', '.join(missing)} (see 'kafpy delete-records --help')"
        )
    assert bootstrap_server is not None and offset_json_file is not None
    try:
        with open(offset_json_file, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise OneLineError(
            f"Cannot read the offset JSON file {offset_json_file}: {e.strerror}"
        ) from None
    offsets = parse_offset_json(text, offset_json_file)
    options = load_command_config(command_config, lambda m: click.echo(m, err=True))
    failed = False

    async def main() -> None:
        nonlocal failed
        click.echo("Executing records delete operation")
        async with AdminClient.connect(bootstrap_server, **options) as admin:
            results = await admin.delete_records(dict(offsets))
        click.echo("Records delete operation completed:")
        for tp, result in results.items():
            if isinstance(result, KafkaError):
                failed = True
                click.echo(f"partition: {tp}\terror: {result}")
            else:
                click.echo(f"partition: {tp}\tlow_watermark: {result}")

    run_command(main, "Error while deleting records: ")
    if failed:
        raise SystemExit(1)

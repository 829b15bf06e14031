"""`kafpy log-dirs`: the log dirs of brokers and the replicas in them (kafka-log-dirs.sh).

As Kafka 2.8's LogDirsCommand: `--describe --bootstrap-server B [--broker-list 0,1]
[--topic-list t1,t2] [--command-config F]` prints "Querying brokers for log directories
information", "Received log directory information from brokers 0,1" and one line of JSON:
`{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/d","error":null,
"partitions":[{"partition":"t-0","size":0,"offsetLag":0,"isFuture":false}]}]}]}` (an offline
dir has the Java class name of its error, e.g. org.apache.kafka.common.errors.KafkaStorageException).
Unlike Kafka 2.8, which ignores them, a broker id or topic that does not exist is refused
with a one-line error before anything is printed.
"""

from __future__ import annotations

import json
from typing import Any

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    run_command,
)
from kafpy.client.admin_client import AdminClient, LogDirDescription
from kafpy.common.errors import KafkaError

_JAVA_ERRORS = "org.apache.kafka.common.errors."


def parse_broker_list(text: str) -> list[int]:
    """`0,1,2` as broker ids; a OneLineError naming the bad entry otherwise."""
    ids = []
    for item in text.split(","):
        item = item.strip()
        if not item.isdigit():
            raise OneLineError(
                f"--broker-list {text!r}: {item!r} is not a broker id; give a comma-separated "
                "list of broker ids such as 0,1,2"
            )
        ids.append(int(item))
    return ids


def parse_topic_list(text: str) -> list[str]:
    """`t1,t2` as topic names (empty entries dropped, as Kafka does)."""
    return [t for t in (t.strip() for t in text.split(",")) if t]


def error_class_name(error: KafkaError) -> str:
    """The Java exception class Kafka's tool prints for a log dir's error."""
    name = type(error).__name__
    if name.endswith("Error"):
        name = name[: -len("Error")] + "Exception"
    return _JAVA_ERRORS + name


def format_as_json(log_dirs: dict[int, list[LogDirDescription]], topics: list[str]) -> str:
    """The JSON line of kafka-log-dirs.sh for the described brokers, the partitions kept
    to `topics` unless it is empty."""
    wanted = set(topics)
    brokers: list[dict[str, Any]] = []
    for broker, dirs in log_dirs.items():
        brokers.append({"broker": broker, "logDirs": [{
            "logDir": d.path,
            "error": None if d.error is None else error_class_name(d.error),
            "partitions": [
                {"partition": str(tp), "size": r.size, "offsetLag": r.offset_lag,
                 "isFuture": r.is_future}
                for tp, r in d.replicas.items() if not wanted or tp.topic in wanted
            ],
        } for d in dirs]})  # fmt: skip
    return json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":"))


@click.command(
    "log-dirs",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--bootstrap-server", metavar="HOST:PORT",
              help="REQUIRED: the server(s) to use for bootstrapping")  # fmt: skip
@click.option(
    "--describe",
    is_flag=True,
    help="Describe the specified log directories on the specified brokers.",
)
@click.option(
    "--broker-list",
    metavar="BROKERS",
    help='The list of brokers to be queried in the form "0,1,2". All brokers in the cluster '
    "will be queried if no broker list is specified",
)
@click.option(
    "--topic-list",
    metavar="TOPICS",
    help='The list of topics to be queried in the form "topic1,topic2,topic3". All topics '
    "will be queried if no topic list is specified",
)
@click.option("--command-config", metavar="FILE",
              help="Property file containing configs to be passed to Admin Client.")  # fmt: skip
def command(
    bootstrap_server: str | None,
    describe: bool,
    broker_list: str | None,
    topic_list: str | None,
    command_config: str | None,
) -> None:
    """Query the log directories of brokers and the replicas in them."""
    if not bootstrap_server:
        raise OneLineError(
            "Missing required option(s): bootstrap-server (see 'kafpy log-dirs --help')"
        )
    if not describe:
        raise OneLineError("Give --describe: it is the only action (see 'kafpy log-dirs --help')")
    brokers = parse_broker_list(broker_list) if broker_list is not None else None
    topics = parse_topic_list(topic_list or "")
    options = load_command_config(command_config, lambda m: click.echo(m, err=True))

    async def main() -> None:
        async with AdminClient.connect(bootstrap_server, **options) as admin:
            nodes, _controller = await admin.describe_cluster()
            live = [n.node_id for n in nodes]
            ids = live if brokers is None else brokers
            unknown = [b for b in ids if b not in live]
            if unknown:
                raise OneLineError(
                    f"Broker(s) {','.join(map(str, unknown))} are not in the cluster (its "
                    f"brokers are {','.join(map(str, live))}); fix --broker-list"
                )
            if topics:
                existing = set(await admin.list_topics())
                missing = [t for t in topics if t not in existing]
                if missing:
                    raise OneLineError(
                        f"Topic(s) {','.join(missing)} do not exist; fix --topic-list"
                    )
            click.echo("Querying brokers for log directories information")
            described = await admin.describe_log_dirs(ids)
            click.echo(f"Received log directory information from brokers {','.join(map(str, ids))}")
            click.echo(format_as_json(described, topics))

    run_command(main, "Error while describing log dirs: ")

"""`kafpy leader-election`: elect new leaders for partitions (kafka-leader-election.sh).

As Kafka 2.8's LeaderElectionCommand: `--bootstrap-server B --election-type
preferred|unclean` with one of `--topic T --partition P`, `--all-topic-partitions` or
`--path-to-json-file F` sends ElectLeaders to the controller and prints Kafka's lines:
"Successfully completed leader election (PREFERRED) for partitions t-0", "Valid replica
already elected for partitions ...", and one "Error completing leader election ..." line
per failed partition (then exit status 1). A preferred election moves the leadership to
the first assigned replica when it is alive and in sync; an unclean one elects any live
replica of a partition that has no live leader, and may lose records.

`--zookeeper` is kept for the older way (kafka-preferred-replica-election.sh): preferred
elections only, written to /admin/preferred_replica_election for the controller to pick up.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    client_security,
    quiet_logging,
    run_on_store,
)
from kafpy.client.admin_client import AdminClient
from kafpy.common.election_type import ElectionType
from kafpy.common.errors import KafkaError
from kafpy.common.properties import load_properties
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.errors import NodeExistsError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import PreferredReplicaElectionZNode
from kafpy.protocol.errors import Errors
from kafpy.security.ssl_configs import SSL_CONFIG_DEF

# Kafka's LeaderElectionCommand: default.api.timeout.ms 30 s, request.timeout.ms half of it
DEFAULT_API_TIMEOUT_MS = 30000
# --admin.config keys kafpy's admin client honours; anything else is refused
_ADMIN_CONFIG_KEYS = {
    "bootstrap.servers",
    "client.id",
    "default.api.timeout.ms",
    "request.timeout.ms",
    "retries",
    "retry.backoff.ms",
}
# Kafka's exception classes whose names are not the error's name in CamelCase
_EXCEPTION_NAMES = {
    Errors.REQUEST_TIMED_OUT: "TimeoutException",
    Errors.INVALID_TOPIC_EXCEPTION: "InvalidTopicException",
    Errors.CLUSTER_AUTHORIZATION_FAILED: "ClusterAuthorizationException",
}
_JSON_EXAMPLE = (
    '{"partitions": [{"topic": "foo", "partition": 1}, {"topic": "foobar", "partition": 2}]}'
)


@click.command(
    "leader-election",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--bootstrap-server",
    metavar="HOST:PORT",
    help="A hostname and port for the broker to connect to, in the form host:port. Multiple "
    "comma separated URLs can be given. REQUIRED.",
)
@click.option(
    "--admin.config",
    "admin_config",
    metavar="FILE",
    help="Configuration properties files to pass to the admin client.",
)
@click.option(
    "--path-to-json-file",
    metavar="FILE",
    help="The JSON file with the list of partitions for which leader elections should be "
    f"performed, e.g. {_JSON_EXAMPLE}. Not allowed if --all-topic-partitions or --topic "
    "flags are specified.",
)
@click.option(
    "--topic",
    metavar="TOPIC",
    help="Name of topic for which to perform an election. Not allowed if --path-to-json-file "
    "or --all-topic-partitions is specified.",
)
@click.option(
    "--partition",
    type=int,
    metavar="ID",
    help="Partition id for which to perform an election. REQUIRED if --topic is specified.",
)
@click.option(
    "--all-topic-partitions",
    is_flag=True,
    help="Perform election on all of the eligible topic partitions based on the type of "
    "election (see the --election-type flag). Not allowed if --topic or --path-to-json-file "
    "is specified.",
)
@click.option(
    "--election-type",
    metavar="TYPE",
    help="Type of election to attempt. Possible values are 'preferred' for preferred leader "
    "election or 'unclean' for unclean leader election. If preferred election is selected, "
    "the election is only performed if the current leader is not the preferred leader for "
    "the topic partition. If unclean election is selected, the election is only performed if "
    "there is no leader for the topic partition. REQUIRED.",
)
@click.option(
    "--zookeeper",
    metavar="HOSTS",
    help="Instead of --bootstrap-server (deprecated, as kafka-preferred-replica-election.sh): "
    "preferred elections through the metadata store at host:port[/chroot].",
)
def command(
    bootstrap_server: str | None,
    admin_config: str | None,
    path_to_json_file: str | None,
    topic: str | None,
    partition: int | None,
    all_topic_partitions: bool,
    election_type: str | None,
    zookeeper: str | None,
) -> None:
    """This tool attempts to elect a new leader for a set of topic partitions. The type of
    elections supported are preferred replicas and unclean replicas."""
    missing = [
        name
        for name, given in (
            ("bootstrap-server", bootstrap_server or zookeeper),
            ("election-type", election_type),
        )
        if not given
    ]
    if missing:
        _usage(f"Missing required option(s): {', '.join(missing)}")
    assert election_type is not None
    chosen = [topic is not None, all_topic_partitions, path_to_json_file is not None]
    if sum(chosen) != 1:
        _usage(
            "One and only one of the following options is required: topic, "
            "all-topic-partitions, path-to-json-file"
        )
    if topic is not None and partition is None:
        _usage("Missing required option(s): partition")
    if topic is None and partition is not None:
        _usage("Option partition is only allowed if topic is used")
    if bootstrap_server and zookeeper:
        _usage("Give --bootstrap-server or --zookeeper, not both")
    kind = _election_type(election_type)
    partitions: list[TopicPartition] | None = None
    if path_to_json_file is not None:
        partitions = parse_replica_election_data(path_to_json_file)
    elif topic is not None:
        assert partition is not None
        partitions = [TopicPartition(topic, partition)]
    if zookeeper:
        if kind is not ElectionType.PREFERRED:
            _usage("--zookeeper runs preferred elections only; use --bootstrap-server for unclean")
        _preferred_election_through_zookeeper(zookeeper, partitions)
        return
    assert bootstrap_server is not None
    elect_leaders(bootstrap_server, kind, partitions, _admin_options(admin_config))


def _usage(message: str) -> None:
    raise OneLineError(f"{message} (see 'kafpy leader-election --help')")


def _election_type(value: str) -> ElectionType:
    try:
        return ElectionType[value.strip().upper()]
    except KeyError:
        _usage(f"Invalid election type '{value}': use preferred or unclean")
        raise AssertionError("unreachable") from None


def parse_replica_election_data(path: str) -> list[TopicPartition]:
    """The partitions of a `--path-to-json-file` ({"partitions": [{"topic": .., "partition":
    ..}, ..]}), in file order; duplicates and malformed entries are refused by name."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise OneLineError(f"Cannot read {path}: {e.strerror}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise OneLineError(f"{path} is not valid JSON: {e}") from None
    if not isinstance(data, dict) or "partitions" not in data:
        raise OneLineError(f'Replica election data is missing "partitions" field in {path}')
    entries = data["partitions"]
    if not isinstance(entries, list):
        raise OneLineError(f'"partitions" in {path} must be a list, e.g. {_JSON_EXAMPLE}')
    partitions: list[TopicPartition] = []
    for entry in entries:
        if (
            not isinstance(entry, dict)
            or not isinstance(entry.get("topic"), str)
            or not isinstance(entry.get("partition"), int)
            or isinstance(entry.get("partition"), bool)
        ):
            raise OneLineError(
                f'Each entry of "partitions" in {path} needs a string "topic" and an integer '
                f'"partition", e.g. {_JSON_EXAMPLE}; found {json.dumps(entry)}'
            )
        partitions.append(TopicPartition(entry["topic"], entry["partition"]))
    duplicates = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise OneLineError(
            "Replica election data contains duplicate partitions: " + ",".join(map(str, duplicates))
        )
    return partitions


def _admin_options(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        props = load_properties(path)
    except OSError as e:
        raise OneLineError(f"Cannot read --admin.config {path}: {e.strerror}") from None
    security = client_security(props, path)
    props = {k: v for k, v in props.items() if k != "security.protocol" and k not in SSL_CONFIG_DEF}
    unknown = sorted(set(props) - _ADMIN_CONFIG_KEYS)
    if unknown:
        raise OneLineError(
            f"kafpy's admin client does not support {', '.join(unknown)} (from {path}); "
            f"it honours {', '.join(sorted(_ADMIN_CONFIG_KEYS))}"
        )
    options: dict[str, Any] = {"security": security} if security.uses_tls else {}
    try:
        for key, value in props.items():
            if key == "client.id":
                options["client_id"] = value
            elif key != "bootstrap.servers":
                options[key.replace(".", "_")] = int(value)
    except ValueError:
        raise OneLineError(f"{key} in {path} must be an integer, not '{value}'") from None
    return options


def _exception_text(error: KafkaError) -> str:
    """Kafka's way of printing the exception: its class and its message."""
    code = getattr(error, "code", Errors.UNKNOWN_SERVER_ERROR)
    try:
        name = _EXCEPTION_NAMES.get(code) or (
            "".join(w.capitalize() for w in Errors(code).name.split("_")) + "Exception"
        )
    except ValueError:
        name = "UnknownServerException"
    message = str(error) or Errors.for_code(code).message
    return f"org.apache.kafka.common.errors.{name}: {message}"


def elect_leaders(
    bootstrap_server: str,
    election_type: ElectionType,
    partitions: Iterable[TopicPartition] | None,
    admin_options: dict[str, Any],
) -> None:
    """Send ElectLeaders and print Kafka's result lines; exit status 1 if any failed."""
    api_timeout_ms = int(admin_options.pop("default_api_timeout_ms", DEFAULT_API_TIMEOUT_MS))
    admin_options.setdefault("request_timeout_ms", api_timeout_ms)
    admin_options.setdefault("client_id", "kafpy-leader-election")
    requested = None if partitions is None else list(partitions)

    async def main() -> dict[TopicPartition, KafkaError | None]:
        admin = AdminClient.connect(bootstrap_server, **admin_options)
        try:
            await admin.client.start()
            return await admin.elect_leaders(
                election_type, requested, timeout_ms=api_timeout_ms // 2
            )
        finally:
            await admin.close()

    quiet_logging()
    try:
        results = asyncio.run(main())
    except KeyboardInterrupt:
        raise OneLineError("Error while making request: interrupted") from None
    except KafkaError as e:
        code = getattr(e, "code", None)
        if code == Errors.REQUEST_TIMED_OUT:
            click.echo("Timeout waiting for election results")
            raise OneLineError("Timeout waiting for election results") from None
        if code == Errors.CLUSTER_AUTHORIZATION_FAILED:
            click.echo("Not authorized to perform leader election")
            raise OneLineError("Not authorized to perform leader election") from None
        raise OneLineError(f"Error while making request: {e}") from None
    except Exception as e:  # every failure is reported as one line, never a traceback
        raise OneLineError(f"Error while making request: {str(e) or type(e).__name__}") from None
    succeeded = [tp for tp, e in results.items() if e is None]
    noop = [
        tp
        for tp, e in results.items()
        if e is not None and getattr(e, "code", None) == Errors.ELECTION_NOT_NEEDED
    ]
    failed = {tp: e for tp, e in results.items() if e is not None and tp not in noop}
    if succeeded:
        click.echo(
            f"Successfully completed leader election ({election_type}) for partitions "
            + ", ".join(map(str, succeeded))
        )
    if noop:
        click.echo("Valid replica already elected for partitions " + ", ".join(map(str, noop)))
    if failed:
        for tp, error in failed.items():
            click.echo(
                f"Error completing leader election ({election_type}) for partition: {tp}: "
                + _exception_text(error)
            )
        raise OneLineError(f"{len(failed)} replica(s) could not be elected")


def _preferred_election_through_zookeeper(
    zookeeper: str, partitions: list[TopicPartition] | None
) -> None:
    async def body(zk: KafkaZkClient) -> None:
        if partitions is None:
            by_topic = await zk.get_partitions_for_topics(await zk.get_all_topics_in_cluster())
            chosen = [
                TopicPartition(t, p) for t, ps in sorted(by_topic.items()) for p in sorted(ps)
            ]
        else:
            known = await zk.get_partitions_for_topics({tp.topic for tp in partitions})
            missing = [tp for tp in partitions if tp.partition not in known.get(tp.topic, [])]
            if missing:
                raise OneLineError(f"Partition {', '.join(map(str, missing))} does not exist")
            chosen = partitions
        try:
            await zk.store.create(
                PreferredReplicaElectionZNode.path,
                PreferredReplicaElectionZNode.encode(chosen),
                make_parents=True,
            )
        except NodeExistsError:
            raise OneLineError(
                "Preferred replica leader election currently in progress; try again later"
            ) from None
        listed = ", ".join(map(str, chosen))
        click.echo(f"Created preferred replica election path with {listed}")
        click.echo(f"Successfully started preferred replica election for partitions {listed}")

    run_on_store(zookeeper, body, "Error while executing leader election command : ")

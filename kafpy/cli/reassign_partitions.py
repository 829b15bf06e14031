"""`kafpy reassign-partitions`: move partition replicas between brokers
(kafka-reassign-partitions.sh of Kafka 2.8).

Actions: `--generate --topics-to-move-json-file F --broker-list 0,1,2
[--disable-rack-aware]`, `--execute --reassignment-json-file F [--throttle N]
[--replica-alter-log-dirs-throttle N] [--additional]`, `--verify --reassignment-json-file F
[--preserve-throttles]`, `--cancel --reassignment-json-file F [--preserve-throttles]` and
`--list`, against `--bootstrap-server B [--command-config F]` or (generate, execute,
verify) `--zookeeper Z`. The operation itself lives in kafpy.admin.reassign_partitions.
"""

from __future__ import annotations

import click

from kafpy.admin.reassign_partitions import (
    AdminClientCluster,
    ReassignmentCluster,
    ZkCluster,
    cancel_assignment,
    execute_assignment,
    generate_assignment,
    list_reassignments,
    parse_broker_list,
    parse_execute_assignment,
    parse_partition_reassignment_data,
    parse_throttle,
    parse_topics_data,
    verify_assignment,
)
from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    run_command,
    run_on_store,
)
from kafpy.client.admin_client import AdminClient
from kafpy.common.errors import KafkaError

ERROR_PREFIX = "Error: "


def _usage(message: str) -> None:
    raise OneLineError(f"{message} (see 'kafpy reassign-partitions --help')")


def _read(path: str | None, option: str) -> str:
    if path is None:
        _usage(f'Missing required argument "[{option}]"')
    assert path is not None
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise OneLineError(
            f"Cannot read the file {path} given to --{option}: {e.strerror}"
        ) from None


@click.command(
    "reassign-partitions",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option("--bootstrap-server", metavar="HOST:PORT",
              help="the server(s) to use for bootstrapping. REQUIRED if an absolute path of the "
              "log directory is specified for any replica in the reassignment json file, or if "
              "--zookeeper is not given.")  # fmt: skip
@click.option("--command-config", metavar="FILE",
              help="Property file containing configs to be passed to Admin Client.")  # fmt: skip
@click.option("--zookeeper", metavar="HOSTS",
              help="DEPRECATED: The connection string for the zookeeper connection in the form "
              "host:port. Multiple URLS can be given to allow fail-over. Please use "
              "--bootstrap-server instead.")  # fmt: skip
@click.option("--generate", is_flag=True,
              help="Generate a candidate partition reassignment configuration. Note that this "
              "only generates a candidate assignment, it does not execute it.")  # fmt: skip
@click.option("--execute", is_flag=True,
              help="Kick off the reassignment as specified by the --reassignment-json-file option.")  # fmt: skip
@click.option("--verify", is_flag=True,
              help="Verify if the reassignment completed as specified by the "
              "--reassignment-json-file option. If there is a throttle engaged for the replicas "
              "specified, and the rebalance has completed, the throttle will be removed")  # fmt: skip
@click.option("--cancel", is_flag=True,
              help="Cancel an active reassignment.")  # fmt: skip
@click.option("--list", "list_", is_flag=True,
              help="List all active partition reassignments.")  # fmt: skip
@click.option("--reassignment-json-file", metavar="FILE",
              help="The JSON file with the partition reassignment configuration. The format to "
              'use is: {"partitions": [{"topic": "foo", "partition": 1, "replicas": [1,2,3], '
              '"log_dirs": ["dir1","dir2","dir3"] }], "version":1}')  # fmt: skip
@click.option("--topics-to-move-json-file", metavar="FILE",
              help="Generate a reassignment configuration to move the partitions of the "
              'specified topics to the list of brokers specified by the --broker-list option. '
              'The format to use is: {"topics": [{"topic": "foo"},{"topic": "foo1"}], '
              '"version":1}')  # fmt: skip
@click.option("--broker-list", metavar="BROKERS",
              help='The list of brokers to which the partitions need to be reassigned in the '
              'form "0,1,2". This is required if --topics-to-move-json-file is used to generate '
              "reassignment configuration")  # fmt: skip
@click.option("--disable-rack-aware", is_flag=True,
              help="Disable rack aware replica assignment")  # fmt: skip
@click.option("--throttle", metavar="BYTES/S",
              help="The movement of partitions between brokers will be throttled to this value "
              "(bytes/sec).")  # fmt: skip
@click.option("--replica-alter-log-dirs-throttle", metavar="BYTES/S",
              help="The movement of replicas between log directories on the same broker will be "
              "throttled to this value (bytes/sec).")  # fmt: skip
@click.option("--timeout", metavar="MS", default="10000",
              help="The maximum time in ms to wait for log directory replica assignment to "
              "begin.")  # fmt: skip
@click.option("--additional", is_flag=True,
              help="Execute this reassignment in addition to any other ongoing ones.")  # fmt: skip
@click.option("--preserve-throttles", is_flag=True,
              help="Do not modify broker or topic throttles.")  # fmt: skip
def command(
    bootstrap_server: str | None,
    command_config: str | None,
    zookeeper: str | None,
    generate: bool,
    execute: bool,
    verify: bool,
    cancel: bool,
    list_: bool,
    reassignment_json_file: str | None,
    topics_to_move_json_file: str | None,
    broker_list: str | None,
    disable_rack_aware: bool,
    throttle: str | None,
    replica_alter_log_dirs_throttle: str | None,
    timeout: str,
    additional: bool,
    preserve_throttles: bool,
) -> None:
    """This tool helps to move topic partitions between replicas."""
    actions = [n for n, on in (("generate", generate), ("execute", execute), ("verify", verify),
                               ("cancel", cancel), ("list", list_)) if on]  # fmt: skip
    if len(actions) != 1:
        _usage("Command must include exactly one action: --generate, --execute, --verify, "
               "--cancel, or --list")  # fmt: skip
    [action] = actions
    if bootstrap_server and zookeeper:
        _usage("Give --bootstrap-server or --zookeeper, not both")
    if not bootstrap_server and not zookeeper:
        _usage("Please specify --bootstrap-server")
    if zookeeper and action in ("cancel", "list"):
        _usage(f"--{action} needs --bootstrap-server (AlterPartitionReassignments and "
               "ListPartitionReassignments are not in ZooKeeper)")  # fmt: skip
    if zookeeper and command_config:
        _usage("--command-config is only used with --bootstrap-server")
    inter_broker = log_dir = -1
    try:
        inter_broker = parse_throttle(throttle, "--throttle")
        log_dir = parse_throttle(
            replica_alter_log_dirs_throttle, "--replica-alter-log-dirs-throttle"
        )
    except KafkaError as e:
        _usage(str(e))
    if action != "execute" and (throttle or replica_alter_log_dirs_throttle or additional):
        _usage("--throttle, --replica-alter-log-dirs-throttle and --additional go with --execute")
    text = ""
    topics_text = ""
    if action == "generate":
        topics_text = _read(topics_to_move_json_file, "topics-to-move-json-file")
        if not broker_list:
            _usage('Missing required argument "[broker-list]"')
    elif action != "list":
        text = _read(reassignment_json_file, "reassignment-json-file")
    # the files are checked before any connection
    try:
        if action == "generate":
            assert broker_list is not None
            parse_broker_list(broker_list)
            parse_topics_data(topics_text)
        elif action == "execute":
            parse_execute_assignment(text)
        elif action in ("verify", "cancel"):
            parse_partition_reassignment_data(text)
    except KafkaError as e:
        raise OneLineError(f"{ERROR_PREFIX}{e}") from None
    out = click.echo

    async def body(cluster: ReassignmentCluster) -> None:
        if action == "generate":
            assert broker_list is not None
            await generate_assignment(cluster, topics_text, broker_list,
                                      not disable_rack_aware, out)  # fmt: skip
        elif action == "execute":
            await execute_assignment(cluster, text, additional, inter_broker, log_dir, out)
        elif action == "verify":
            await verify_assignment(cluster, text, preserve_throttles, out)
        elif action == "cancel":
            await cancel_assignment(cluster, text, preserve_throttles, out)
        else:
            await list_reassignments(cluster, out)

    if zookeeper:
        run_on_store(zookeeper, lambda zk: body(ZkCluster(zk)), ERROR_PREFIX)
        return
    assert bootstrap_server is not None
    options = load_command_config(command_config, lambda m: click.echo(m, err=True))

    async def main() -> None:
        async with AdminClient.connect(bootstrap_server, **options) as admin:
            await body(AdminClientCluster(admin))

    run_command(main, ERROR_PREFIX)

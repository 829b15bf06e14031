"""`kafpy broker-api-versions`: the API versions each broker serves, printed as Kafka 2.8's
kafka-broker-api-versions.sh prints them.

For every broker in the cluster's metadata: `host:port (id: N rack: R) -> (` then one
line per API, `\tProduce(0): 3 to 9 [usable: 9],`, and `)`. "usable" is the highest
version both the broker and a Kafka 2.8 client speak; APIs a 2.8 ZooKeeper-mode broker
has that this one does not serve read `UNSUPPORTED`.
"""

from __future__ import annotations

import asyncio
from typing import Any

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    quiet_logging,
)
from kafpy.client.cluster import Node
from kafpy.client.kafka_client import KafkaClient

# Kafka 2.8's ApiKeys as its tool knows them: id -> (name, oldest, latest version, whether a
# ZooKeeper-mode broker has it).
KAFKA_2_8_APIS: dict[int, tuple[str, int, int, bool]] = {
    0: ("Produce", 0, 9, True), 1: ("Fetch", 0, 12, True), 2: ("ListOffsets", 0, 6, True),
    3: ("Metadata", 0, 11, True), 4: ("LeaderAndIsr", 0, 5, True), 5: ("StopReplica", 0, 3, True),
    6: ("UpdateMetadata", 0, 7, True), 7: ("ControlledShutdown", 0, 3, True),
    8: ("OffsetCommit", 0, 8, True), 9: ("OffsetFetch", 0, 7, True),
    10: ("FindCoordinator", 0, 3, True), 11: ("JoinGroup", 0, 7, True), 12: ("Heartbeat", 0, 4, True),
    13: ("LeaveGroup", 0, 4, True), 14: ("SyncGroup", 0, 5, True), 15: ("DescribeGroups", 0, 5, True),
    16: ("ListGroups", 0, 4, True), 17: ("SaslHandshake", 0, 1, True), 18: ("ApiVersions", 0, 3, True),
    19: ("CreateTopics", 0, 7, True), 20: ("DeleteTopics", 0, 6, True), 21: ("DeleteRecords", 0, 2, True),
    22: ("InitProducerId", 0, 4, True), 23: ("OffsetForLeaderEpoch", 0, 4, True),
    24: ("AddPartitionsToTxn", 0, 3, True), 25: ("AddOffsetsToTxn", 0, 3, True), 26: ("EndTxn", 0, 3, True),
    27: ("WriteTxnMarkers", 0, 1, True), 28: ("TxnOffsetCommit", 0, 3, True),
    29: ("DescribeAcls", 0, 2, True), 30: ("CreateAcls", 0, 2, True), 31: ("DeleteAcls", 0, 2, True),
    32: ("DescribeConfigs", 0, 4, True), 33: ("AlterConfigs", 0, 2, True),
    34: ("AlterReplicaLogDirs", 0, 2, True), 35: ("DescribeLogDirs", 0, 2, True),
    36: ("SaslAuthenticate", 0, 2, True), 37: ("CreatePartitions", 0, 3, True),
    38: ("CreateDelegationToken", 0, 2, True), 39: ("RenewDelegationToken", 0, 2, True),
    40: ("ExpireDelegationToken", 0, 2, True), 41: ("DescribeDelegationToken", 0, 2, True),
    42: ("DeleteGroups", 0, 2, True), 43: ("ElectLeaders", 0, 2, True),
    44: ("IncrementalAlterConfigs", 0, 1, True), 45: ("AlterPartitionReassignments", 0, 0, True),
    46: ("ListPartitionReassignments", 0, 0, True), 47: ("OffsetDelete", 0, 0, True),
    48: ("DescribeClientQuotas", 0, 1, True), 49: ("AlterClientQuotas", 0, 1, True),
    50: ("DescribeUserScramCredentials", 0, 0, True), 51: ("AlterUserScramCredentials", 0, 0, True),
    52: ("Vote", 0, 0, False), 53: ("BeginQuorumEpoch", 0, 0, False), 54: ("EndQuorumEpoch", 0, 0, False),
    55: ("DescribeQuorum", 0, 0, False), 56: ("AlterIsr", 0, 0, True), 57: ("UpdateFeatures", 0, 0, True),
    58: ("Envelope", 0, 0, False), 59: ("FetchSnapshot", 0, 0, False), 60: ("DescribeCluster", 0, 0, True),
    62: ("BrokerRegistration", 0, 0, False), 63: ("BrokerHeartbeat", 0, 0, False),
    64: ("UnregisterBroker", 0, 0, False),
}  # fmt: skip


def node_text(node: Node) -> str:
    """A broker as Kafka's Node.toString writes it (`rack: null` when it has none)."""
    rack = "null" if node.rack is None else node.rack
    return f"{node.host}:{node.port} (id: {node.node_id} rack: {rack})"


def api_version_text(api_key: int, lo: int, hi: int) -> str:
    """One API's line, as Kafka 2.8's NodeApiVersions.apiVersionToText writes it."""
    known = KAFKA_2_8_APIS.get(api_key)
    text = f"{known[0] if known else 'UNKNOWN'}({api_key}): {lo if lo == hi else f'{lo} to {hi}'}"
    if known is None:
        return text
    _, oldest, latest, _ = known
    if latest < lo:
        return text + " [unusable: node too new]"
    if hi < oldest:
        return text + " [unusable: node too old]"
    return text + f" [usable: {min(latest, hi)}]"


def node_api_versions_text(versions: dict[int, tuple[int, int]]) -> str:
    """What a broker serves, as NodeApiVersions.toString(lineBreaks = true) writes it."""
    lines = {key: api_version_text(key, lo, hi) for key, (lo, hi) in versions.items()}
    for key, (name, _, _, zk_broker) in KAFKA_2_8_APIS.items():
        if zk_broker and key not in lines:
            lines[key] = f"{name}({key}): UNSUPPORTED"
    return "(\n\t" + ",\n\t".join(lines[k] for k in sorted(lines)) + "\n)"


async def broker_api_versions(bootstrap_server: str, **client_options: Any) -> str:
    """The tool's whole output for the cluster behind `bootstrap_server` (`client_options`:
    KafkaClient keyword arguments from --command-config)."""
    out = []
    options = {"client_id": "kafpy-broker-api-versions", "retries": 3, **client_options}
    async with KafkaClient(bootstrap_server, **options) as client:
        for node_id, node in sorted(client.cluster.brokers.items()):
            try:
                conn = await client.connection(node_id)
                out.append(f"{node_text(node)} -> {node_api_versions_text(conn.api_versions)}\n")
            except Exception as e:  # one broker down does not hide the others
                out.append(f"{node_text(node)} -> ERROR: {e}\n")
    return "".join(out)


@click.command(cls=AdminCommand, name="broker-api-versions")
@click.option(
    "--bootstrap-server", required=True, help="REQUIRED: The server to connect to (host:port)."
)
@click.option(
    "--command-config",
    metavar="FILE",
    help="A properties file of admin client configs (e.g. security.protocol=SSL, ssl.*).",
)
def command(bootstrap_server: str, command_config: str | None) -> None:
    """Print the API versions every broker of the cluster serves."""
    quiet_logging()
    options = load_command_config(command_config, lambda line: click.echo(line, err=True))
    try:
        text = asyncio.run(broker_api_versions(bootstrap_server, **options))
    except KeyboardInterrupt:
        raise OneLineError("Error: interrupted") from None
    except Exception as e:  # one line, never a traceback
        raise OneLineError(
            f"Error: could not get the API versions of the brokers behind {bootstrap_server}: "
            f"{e or type(e).__name__}"
        ) from None
    click.echo(text, nl=False)

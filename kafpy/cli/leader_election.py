"""`kafpy leader-election`: move partitions back to their preferred replica.

Like Kafka's preferred replica election through ZooKeeper: the partitions go into
/admin/preferred_replica_election, which the controller watches; it makes the first
assigned replica the leader where that replica is alive and in sync, then deletes the
node. Only `--election-type preferred` is supported.
"""

from __future__ import annotations

import click

from kafpy.cli.command_line_utils import AdminCommand, OneLineError, run_on_store
from kafpy.common.topic_partition import TopicPartition
from kafpy.metadata.errors import NodeExistsError
from kafpy.metadata.kafka_zk_client import KafkaZkClient
from kafpy.metadata.zk_data import PreferredReplicaElectionZNode


@click.command(
    "leader-election",
    cls=AdminCommand,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--zookeeper",
    metavar="HOSTS",
    required=True,
    help="REQUIRED: The connection string for the zookeeper connection (host:port[/chroot]).",
)
@click.option(
    "--election-type",
    metavar="TYPE",
    required=True,
    help="Type of election to attempt; kafpy supports 'preferred'.",
)
@click.option(
    "--topic", metavar="TOPIC", help="Name of the topic whose partition should be elected."
)
@click.option("--partition", type=int, metavar="N", help="The partition of --topic to elect.")
@click.option("--all-topic-partitions", is_flag=True, help="Elect every partition of every topic.")
def command(
    zookeeper: str, election_type: str, topic: str | None, partition: int | None, all_topic_partitions: bool
) -> None:  # fmt: skip
    """Move the leadership of partitions to their preferred replica."""
    if election_type.lower() != "preferred":
        raise OneLineError(
            f"Election type {election_type} is not supported: use --election-type preferred"
        )
    if all_topic_partitions == (topic is not None):
        raise OneLineError("Give exactly one of --all-topic-partitions or --topic with --partition "
                           "(see 'kafpy leader-election --help')")  # fmt: skip
    if topic is not None and partition is None:
        raise OneLineError("--topic needs --partition (see 'kafpy leader-election --help')")

    async def body(zk: KafkaZkClient) -> None:
        if all_topic_partitions:
            by_topic = await zk.get_partitions_for_topics(await zk.get_all_topics_in_cluster())
            partitions = [
                TopicPartition(t, p) for t, ps in sorted(by_topic.items()) for p in sorted(ps)
            ]
        else:
            assert topic is not None and partition is not None
            known = (await zk.get_partitions_for_topics([topic])).get(topic, [])
            if partition not in known:
                raise OneLineError(f"Partition {topic}-{partition} does not exist")
            partitions = [TopicPartition(topic, partition)]
        try:
            await zk.store.create(
                PreferredReplicaElectionZNode.path,
                PreferredReplicaElectionZNode.encode(partitions),
                make_parents=True,
            )
        except NodeExistsError:
            raise OneLineError(
                "Preferred replica leader election currently in progress; try again later"
            ) from None
        click.echo(
            f"Created preferred replica election path with {', '.join(map(str, partitions))}"
        )
        click.echo("Successfully started preferred replica election for partitions "
                   f"{', '.join(map(str, partitions))}")  # fmt: skip

    run_on_store(zookeeper, body, "Error while executing leader election command : ")

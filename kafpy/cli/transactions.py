"""`kafpy transactions`: list and describe transactions, as Kafka 3.0's kafka-transactions.sh.

`--list` asks every broker for the transactional ids it coordinates (ListTransactions);
`--describe --transactional-id X` asks X's coordinator (FindCoordinator key_type 1, then
DescribeTransactions); `--find-hanging --broker-id N` asks broker N for the active
producers of the partitions it holds (DescribeProducers), keeps the open transactions
older than `--max-transaction-timeout` minutes, and reports those their coordinator does
not know as part of a transaction (ListTransactions by producer id, DescribeTransactions),
and those of two-phase-commit transactions (KIP-939), which their coordinator never ends
by itself; `--describe-producers --topic T --partition P [--broker-id N]` lists a
partition's active producers (DescribeProducers on its leader, or on broker N);
`--abort --topic T --partition P --start-offset O` (or `--producer-id`,
`--producer-epoch`, `--coordinator-epoch`) writes an ABORT marker for a partition's open
transaction (WriteTxnMarkers), printing nothing when it succeeds.
The requests are `kafpy.client.transaction_admin`'s (TransactionAdmin); this module parses
the options and prints. Output is Kafka's table: every column padded to its widest value, then a tab.
"""

from __future__ import annotations

import asyncio
import time

import click

from kafpy.cli.command_line_utils import AdminCommand, OneLineError, quiet_logging
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.transaction_admin import (
    AbortTransactionSpec,
    TransactionAdmin,
    TransactionAdminError,
)
from kafpy.common.errors import KafkaError
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.transaction.transaction_metadata import TWO_PHASE_COMMIT_TIMEOUT_MS

LIST_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADERS = [
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
]  # fmt: skip
_USAGE = "(see 'kafpy transactions --help')"


def pretty_print_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Kafka's TransactionsCommand table: each cell padded to its column's width, then a tab."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return [
        "".join(v.ljust(w) + "\t" for v, w in zip(row, widths, strict=True))
        for row in [headers, *rows]
    ]


async def list_transactions(admin: TransactionAdmin) -> list[list[str]]:
    return [
        [t.transactional_id, str(t.coordinator), str(t.producer_id), t.state]
        for t in await admin.list_transactions()
    ]


async def describe_transaction(
    admin: TransactionAdmin, transactional_id: str, now_ms: int
) -> list[str]:
    """The --describe row of `transactional_id`, described by its coordinator."""
    try:
        d = await admin.describe_transaction(transactional_id)
    except TransactionAdminError as e:
        raise TransactionAdminError(f"{e}. Enable debug logging for additional detail.") from None
    start = d.transaction_start_time_ms
    partitions = ",".join(f"{tp.topic}-{tp.partition}" for tp in d.topic_partitions)
    return [
        str(d.coordinator), transactional_id, str(d.producer_id), str(d.producer_epoch),
        d.state, str(d.transaction_timeout_ms),
        str(start) if start >= 0 else "None", str(now_ms - start) if start >= 0 else "None", partitions,
    ]  # fmt: skip


PRODUCERS_HEADERS = [
    "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
    "CurrentTransactionStartOffset",
]  # fmt: skip


async def describe_producers(
    admin: TransactionAdmin, tp: TopicPartition, broker_id: int | None
) -> list[list[str]]:
    """Kafka 3.0's DescribeProducersCommand: the active producers of `tp` on its leader (or
    on broker `broker_id`)."""
    on = "leader" if broker_id is None else f"broker {broker_id}"
    try:
        node = await admin.client.leader_for(tp) if broker_id is None else broker_id
        states = await admin.describe_producers(node, {tp.topic: [tp.partition]})
    except (TransactionAdminError, KafkaError) as e:
        raise TransactionAdminError(
            f"Failed to describe producers for partition {tp} on {on}: {e}. "
            "Enable debug logging for additional detail."
        ) from None
    return [
        [str(s.producer_id), str(s.producer_epoch), str(s.coordinator_epoch), str(s.last_sequence),
         str(s.last_timestamp),
         str(s.current_txn_start_offset) if s.current_txn_start_offset >= 0 else "None"]
        for s in states
    ]  # fmt: skip


HANGING_HEADERS = [
    "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
    "LastTimestamp", "Duration(min)",
]  # fmt: skip


async def _partitions_in_transactions(
    admin: TransactionAdmin, producer_ids: list[int]
) -> set[tuple[int, str, int]]:
    """(producer id, topic, partition) of every partition a coordinator has in a transaction
    it will end by itself: not a two-phase-commit one, which waits for its external
    coordinator however long it takes (KIP-939)."""
    transactional_ids = {
        t.producer_id: (t.transactional_id, t.coordinator)
        for t in await admin.list_transactions(producer_ids)
    }
    found: set[tuple[int, str, int]] = set()
    for producer_id, (tid, node) in transactional_ids.items():
        try:
            d = await admin.describe_transaction(tid, coordinator=node)
        except TransactionAdminError:
            continue
        if d.transaction_timeout_ms == TWO_PHASE_COMMIT_TIMEOUT_MS:
            continue
        found.update((producer_id, tp.topic, tp.partition) for tp in d.topic_partitions)
    return found


async def find_hanging(
    admin: TransactionAdmin, broker_id: int, max_transaction_timeout_min: int, now_ms: int,
    topic: str | None = None, partition: int | None = None,
) -> list[list[str]]:  # fmt: skip
    """Kafka 3.0's FindHangingTransactionsCommand, for the partitions broker `broker_id` holds."""
    client = admin.client
    await client.refresh_metadata(None if topic is None else [topic])
    if broker_id not in client.cluster.brokers:
        raise TransactionAdminError(f"Broker {broker_id} is not a live broker of the cluster")
    by_topic: dict[str, list[int]] = {}
    for name, info in sorted(client.cluster.topics.items()):
        if topic is not None and name != topic:
            continue
        for p, placement in sorted(info.partitions.items()):
            if broker_id in placement.replicas and (partition is None or p == partition):
                by_topic.setdefault(name, []).append(p)
    if not by_topic:
        return []
    max_ms = max_transaction_timeout_min * 60_000
    open_txns = [
        s
        for s in await admin.describe_producers(broker_id, by_topic)
        if s.current_txn_start_offset >= 0 and now_ms - s.last_timestamp > max_ms
    ]
    if not open_txns:
        return []
    known = await _partitions_in_transactions(admin, sorted({s.producer_id for s in open_txns}))
    return [
        [s.topic_partition.topic, str(s.topic_partition.partition), str(s.producer_id),
         str(s.producer_epoch), str(s.coordinator_epoch), str(s.current_txn_start_offset),
         str(s.last_timestamp), str((now_ms - s.last_timestamp) // 60_000)]
        for s in open_txns
        # else the coordinator will end it
        if (s.producer_id, s.topic_partition.topic, s.topic_partition.partition) not in known
    ]  # fmt: skip


async def abort_spec(
    admin: TransactionAdmin, tp: TopicPartition, start_offset: int
) -> AbortTransactionSpec:
    """Kafka 3.0's AbortTransactionCommand with --start-offset: the producer whose open
    transaction on `tp` starts at `start_offset` (DescribeProducers on the leader)."""
    try:
        leader = await admin.client.leader_for(tp)
        states = await admin.describe_producers(leader, {tp.topic: [tp.partition]})
    except (TransactionAdminError, KafkaError) as e:
        raise TransactionAdminError(
            f"Failed to validate producer state for partition {tp}: {e}. "
            "Enable debug logging for additional detail."
        ) from None
    for s in states:
        if s.current_txn_start_offset >= 0 and s.current_txn_start_offset == start_offset:
            return AbortTransactionSpec(
                tp, s.producer_id, s.producer_epoch, max(s.coordinator_epoch, 0)
            )
    raise TransactionAdminError(
        f"Could not find any open transactions starting at offset {start_offset} on partition {tp}"
    )


async def abort_transaction(admin: TransactionAdmin, spec: AbortTransactionSpec) -> None:
    try:
        await admin.abort_transaction(spec)
    except TransactionAdminError as e:
        raise TransactionAdminError(f"{e}. Enable debug logging for additional detail.") from None


@click.command(cls=AdminCommand, name="transactions")
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--list", "do_list", is_flag=True, help="List transactions.")
@click.option("--describe", "do_describe", is_flag=True,
              help="Describe the state of an active transactional-id.")  # fmt: skip
@click.option("--find-hanging", "do_find_hanging", is_flag=True, help="Find hanging transactions.")
@click.option("--describe-producers", "do_describe_producers", is_flag=True,
              help="Describe the states of active producers for a topic partition.")  # fmt: skip
@click.option("--abort", "do_abort", is_flag=True,
              help="Abort a hanging transaction (requires administrative privileges).")  # fmt: skip
@click.option("--transactional-id", default=None, help="With --describe: the transactional id.")
@click.option(
    "--broker-id",
    type=int,
    default=None,
    help="With --find-hanging: the broker to look at. With --describe-producers: a replica's "
    "broker instead of the leader.",
)
@click.option("--topic", default=None,
              help="With --find-hanging: only this topic. With --abort: the topic.")  # fmt: skip
@click.option(
    "--partition",
    type=int,
    default=None,
    help="With --find-hanging and --topic: only this partition. With --abort: the partition.",
)
@click.option("--start-offset", type=int, default=None,
              help="With --abort: the start offset of the transaction to abort.")  # fmt: skip
@click.option("--producer-id", type=int, default=None,
              help="With --abort, instead of --start-offset: the producer id.")  # fmt: skip
@click.option("--producer-epoch", type=int, default=None,
              help="With --abort and --producer-id: the producer epoch.")  # fmt: skip
@click.option("--coordinator-epoch", type=int, default=None,
              help="With --abort and --producer-id: the coordinator epoch.")  # fmt: skip
@click.option("--max-transaction-timeout", type=int, default=15, show_default=True,
              help="With --find-hanging: minutes an open transaction may last (transaction.max.timeout.ms).")  # fmt: skip
def command(
    bootstrap_server: str, do_list: bool, do_describe: bool, do_find_hanging: bool,
    do_describe_producers: bool, do_abort: bool,
    transactional_id: str | None, broker_id: int | None, topic: str | None, partition: int | None,
    start_offset: int | None, producer_id: int | None, producer_epoch: int | None,
    coordinator_epoch: int | None, max_transaction_timeout: int,
) -> None:  # fmt: skip
    """List, describe, find hanging or abort transactions, describe a partition's producers
    (Kafka 3.0's kafka-transactions.sh)."""
    actions = [a for a, on in (("list", do_list), ("describe", do_describe),
                               ("describe-producers", do_describe_producers),
                               ("find-hanging", do_find_hanging), ("abort", do_abort)) if on]  # fmt: skip
    if len(actions) != 1:
        raise OneLineError(
            "Command must include exactly one action: --list, --describe, --describe-producers, "
            f"--find-hanging, --abort {_USAGE}"
        )
    action = actions[0]
    spec: AbortTransactionSpec | None = None
    if action == "describe-producers" and (topic is None or partition is None):
        raise OneLineError(f"Option --describe-producers requires --topic and --partition {_USAGE}")
    if action == "abort":
        if topic is None or partition is None:
            raise OneLineError(f"Option --abort requires --topic and --partition {_USAGE}")
        if start_offset is None and producer_id is None:
            raise OneLineError(
                "The transaction to abort must be identified either with --start-offset (for "
                "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
                "--coordinator-epoch (for older brokers)"
            )
        if start_offset is None:
            if producer_epoch is None:
                raise OneLineError("Missing required argument --producer-epoch")
            if coordinator_epoch is None:
                raise OneLineError("Missing required argument --coordinator-epoch")
            spec = AbortTransactionSpec(
                TopicPartition(topic, partition), producer_id or 0, producer_epoch,
                max(coordinator_epoch, 0),
            )  # fmt: skip
    if action == "describe" and not transactional_id:
        raise OneLineError(f"Option --describe requires --transactional-id {_USAGE}")
    if action == "find-hanging":
        if broker_id is None:
            raise OneLineError(f"Option --find-hanging requires --broker-id {_USAGE}")
        if partition is not None and topic is None:
            raise OneLineError(f"Option --partition requires --topic {_USAGE}")
        if max_transaction_timeout < 0:
            raise OneLineError(f"--max-transaction-timeout must be 0 or more minutes {_USAGE}")

    async def main() -> list[str]:
        client = KafkaClient(bootstrap_server, client_id="kafpy-transactions", retries=3)
        admin = TransactionAdmin(client)
        try:
            if action == "list":
                return pretty_print_table(LIST_HEADERS, await list_transactions(admin))
            if action == "describe-producers":
                assert topic is not None and partition is not None
                rows = await describe_producers(admin, TopicPartition(topic, partition), broker_id)
                return pretty_print_table(PRODUCERS_HEADERS, rows)
            if action == "abort":
                assert topic is not None and partition is not None
                tp = TopicPartition(topic, partition)
                if start_offset is not None:
                    await abort_transaction(admin, await abort_spec(admin, tp, start_offset))
                else:
                    assert spec is not None
                    await abort_transaction(admin, spec)
                return []
            if action == "find-hanging":
                assert broker_id is not None
                now = int(time.time() * 1000)
                rows = await find_hanging(
                    admin, broker_id, max_transaction_timeout, now, topic, partition
                )
                return pretty_print_table(HANGING_HEADERS, rows)
            assert transactional_id is not None
            row = await describe_transaction(admin, transactional_id, int(time.time() * 1000))
            return pretty_print_table(DESCRIBE_HEADERS, [row])
        finally:
            await client.close()

    quiet_logging()
    try:
        lines = asyncio.run(main())
    except TransactionAdminError as e:
        raise OneLineError(str(e)) from None
    except KeyboardInterrupt:
        raise OneLineError("Error: interrupted") from None
    except Exception as e:  # one line, never a traceback
        raise OneLineError(
            f"Error: the transactions command failed: {e or type(e).__name__}"
        ) from None
    for line in lines:
        click.echo(line)

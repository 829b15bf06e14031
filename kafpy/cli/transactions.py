"""`kafpy transactions`: list and describe transactions, as Kafka 3.0's kafka-transactions.sh.

`--list` asks every broker for the transactional ids it coordinates (ListTransactions);
`--describe --transactional-id X` asks X's coordinator (FindCoordinator key_type 1, then
DescribeTransactions); `--find-hanging --broker-id N` asks broker N for the active
producers of the partitions it holds (DescribeProducers), keeps the open transactions
older than `--max-transaction-timeout` minutes, and reports those their coordinator does
not know as part of a transaction (ListTransactions by producer id, DescribeTransactions).
The three APIs are Kafka 3.0's (KIP-664): kafpy's brokers serve them beyond 2.8 for this
tool. Output is Kafka's table: every column padded to its widest value, then a tab.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import click

from kafpy.cli.command_line_utils import AdminCommand, OneLineError, quiet_logging
from kafpy.client.find_coordinator import (
    COORDINATOR_RETRIABLE,
    CoordinatorType,
    send_to_coordinator,
)
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.common.errors import KafkaConnectionError, KafkaError, RequestTimedOutError
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors

LIST_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADERS = [
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
]  # fmt: skip
_USAGE = "(see 'kafpy transactions --help')"


class TransactionsCommandError(Exception):
    """A failure the command reports as its one line."""


def pretty_print_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Kafka's TransactionsCommand table: each cell padded to its column's width, then a tab."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return [
        "".join(v.ljust(w) + "\t" for v, w in zip(row, widths, strict=True))
        for row in [headers, *rows]
    ]


def _message(code: int, message: str | None) -> str:
    return str(error_for_code(code, message))


async def list_transactions(client: KafkaClient) -> list[list[str]]:
    await client.refresh_metadata([])
    rows: list[list[str]] = []
    for node in sorted(client.cluster.brokers):
        r = await client.send_to_node(
            node, ApiKey.LIST_TRANSACTIONS, {"state_filters": [], "producer_id_filters": []}
        )
        if r["error_code"] != Errors.NONE:
            raise TransactionsCommandError(
                f"Failed to list transactions: {_message(r['error_code'], None)}"
            )
        rows.extend(
            [s["transactional_id"], str(node), str(s["producer_id"]), s["transaction_state"]]
            for s in r["transaction_states"]
        )
    return rows


async def describe_transaction(
    client: KafkaClient, transactional_id: str, now_ms: int, timeout_ms: int = 5000
) -> list[str]:
    """DescribeTransactions on `transactional_id`'s coordinator, found within `timeout_ms`."""
    failed = f"Failed to describe transaction state of transactional-id `{transactional_id}`"
    try:
        try:
            node, r = await send_to_coordinator(
                client, transactional_id, ApiKey.DESCRIBE_TRANSACTIONS,
                {"transactional_ids": [transactional_id]}, CoordinatorType.TRANSACTION,
                timeout_ms=timeout_ms, context="",
            )  # fmt: skip
        except (KafkaConnectionError, RequestTimedOutError):
            raise
        except KafkaError as e:
            if e.code in COORDINATOR_RETRIABLE:
                raise TransactionsCommandError(
                    "the transaction coordinator is not available; check that the brokers are up"
                ) from None
            raise TransactionsCommandError(str(e)) from None
        state: dict[str, Any] = r["transaction_states"][0]
        if state["error_code"] != Errors.NONE:
            raise TransactionsCommandError(_message(state["error_code"], None))
    except TransactionsCommandError as e:
        raise TransactionsCommandError(
            f"{failed}: {e}. Enable debug logging for additional detail."
        ) from None
    start = state["transaction_start_time_ms"]
    partitions = ",".join(f"{t['topic']}-{p}" for t in state["topics"] for p in t["partitions"])
    return [
        str(node), transactional_id, str(state["producer_id"]), str(state["producer_epoch"]),
        state["transaction_state"], str(state["transaction_timeout_ms"]),
        str(start) if start >= 0 else "None", str(now_ms - start) if start >= 0 else "None", partitions,
    ]  # fmt: skip


HANGING_HEADERS = [
    "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
    "LastTimestamp", "Duration(min)",
]  # fmt: skip


async def _open_transactions(
    client: KafkaClient, broker_id: int, by_topic: dict[str, list[int]], max_ms: int, now_ms: int
) -> list[tuple[str, int, dict[str, Any]]]:
    r = await client.send_to_node(broker_id, ApiKey.DESCRIBE_PRODUCERS, {
        "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]})  # fmt: skip
    found = []
    for t in r["topics"]:
        for p in t["partitions"]:
            if p["error_code"] != Errors.NONE:
                raise TransactionsCommandError(
                    f"Failed to describe producers of {t['name']}-{p['partition_index']}: "
                    f"{_message(p['error_code'], p['error_message'])}"
                )
            for producer in p["active_producers"]:
                started = producer["current_txn_start_offset"] >= 0
                if started and now_ms - producer["last_timestamp"] > max_ms:
                    found.append((t["name"], p["partition_index"], producer))
    return found


async def _partitions_in_transactions(
    client: KafkaClient, producer_ids: list[int]
) -> set[tuple[int, str, int]]:
    """(producer id, topic, partition) of every partition a coordinator has in a transaction."""
    await client.refresh_metadata([])
    transactional_ids: dict[int, tuple[str, int]] = {}
    for node in sorted(client.cluster.brokers):
        body = {"state_filters": [], "producer_id_filters": producer_ids}
        listing = await client.send_to_node(node, ApiKey.LIST_TRANSACTIONS, body)
        if listing["error_code"] != Errors.NONE:
            raise TransactionsCommandError(
                f"Failed to list transactions: {_message(listing['error_code'], None)}"
            )
        for s in listing["transaction_states"]:
            transactional_ids[s["producer_id"]] = (s["transactional_id"], node)
    found: set[tuple[int, str, int]] = set()
    for producer_id, (tid, node) in transactional_ids.items():
        d = await client.send_to_node(
            node, ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": [tid]}
        )
        state = d["transaction_states"][0]
        if state["error_code"] == Errors.NONE:
            found.update(
                (producer_id, x["topic"], p) for x in state["topics"] for p in x["partitions"]
            )
    return found


async def find_hanging(
    client: KafkaClient, broker_id: int, max_transaction_timeout_min: int, now_ms: int,
    topic: str | None = None, partition: int | None = None,
) -> list[list[str]]:  # fmt: skip
    """Kafka 3.0's FindHangingTransactionsCommand, for the partitions broker `broker_id` holds."""
    await client.refresh_metadata(None if topic is None else [topic])
    if broker_id not in client.cluster.brokers:
        raise TransactionsCommandError(f"Broker {broker_id} is not a live broker of the cluster")
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
    open_txns = await _open_transactions(client, broker_id, by_topic, max_ms, now_ms)
    if not open_txns:
        return []
    known = await _partitions_in_transactions(
        client, sorted({s["producer_id"] for _, _, s in open_txns})
    )
    return [
        [name, str(index), str(s["producer_id"]), str(s["producer_epoch"]), str(s["coordinator_epoch"]),
         str(s["current_txn_start_offset"]), str(s["last_timestamp"]),
         str((now_ms - s["last_timestamp"]) // 60_000)]
        for name, index, s in open_txns
        if (s["producer_id"], name, index) not in known  # else the coordinator will end it
    ]  # fmt: skip


@click.command(cls=AdminCommand, name="transactions")
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--list", "do_list", is_flag=True, help="List transactions.")
@click.option("--describe", "do_describe", is_flag=True,
              help="Describe the state of an active transactional-id.")  # fmt: skip
@click.option("--find-hanging", "do_find_hanging", is_flag=True, help="Find hanging transactions.")
@click.option("--transactional-id", default=None, help="With --describe: the transactional id.")
@click.option(
    "--broker-id", type=int, default=None, help="With --find-hanging: the broker to look at."
)
@click.option("--topic", default=None, help="With --find-hanging: only this topic.")
@click.option(
    "--partition",
    type=int,
    default=None,
    help="With --find-hanging and --topic: only this partition.",
)
@click.option("--max-transaction-timeout", type=int, default=15, show_default=True,
              help="With --find-hanging: minutes an open transaction may last (transaction.max.timeout.ms).")  # fmt: skip
def command(
    bootstrap_server: str, do_list: bool, do_describe: bool, do_find_hanging: bool,
    transactional_id: str | None, broker_id: int | None, topic: str | None, partition: int | None,
    max_transaction_timeout: int,
) -> None:  # fmt: skip
    """List, describe or find hanging transactions (Kafka 3.0's kafka-transactions.sh)."""
    actions = [a for a, on in (("list", do_list), ("describe", do_describe),
                               ("find-hanging", do_find_hanging)) if on]  # fmt: skip
    if len(actions) != 1:
        raise OneLineError(
            f"Command must include exactly one action: --list, --describe, --find-hanging {_USAGE}"
        )
    action = actions[0]
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
        try:
            if action == "list":
                return pretty_print_table(LIST_HEADERS, await list_transactions(client))
            if action == "find-hanging":
                assert broker_id is not None
                now = int(time.time() * 1000)
                rows = await find_hanging(
                    client, broker_id, max_transaction_timeout, now, topic, partition
                )
                return pretty_print_table(HANGING_HEADERS, rows)
            assert transactional_id is not None
            row = await describe_transaction(client, transactional_id, int(time.time() * 1000))
            return pretty_print_table(DESCRIBE_HEADERS, [row])
        finally:
            await client.close()

    quiet_logging()
    try:
        lines = asyncio.run(main())
    except TransactionsCommandError as e:
        raise OneLineError(str(e)) from None
    except KeyboardInterrupt:
        raise OneLineError("Error: interrupted") from None
    except Exception as e:  # one line, never a traceback
        raise OneLineError(
            f"Error: the transactions command failed: {e or type(e).__name__}"
        ) from None
    for line in lines:
        click.echo(line)

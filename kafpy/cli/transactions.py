"""`kafpy transactions`: list and describe transactions, as Kafka 3.0's kafka-transactions.sh.

`--list` asks every broker for the transactional ids it coordinates (ListTransactions);
`--describe --transactional-id X` asks X's coordinator (FindCoordinator key_type 1, then
DescribeTransactions). Both APIs are Kafka 3.0's (KIP-664): kafpy's brokers serve them
beyond 2.8 for this tool. `--find-hanging` needs DescribeProducers from the partition
leaders, which kafpy's brokers do not serve yet: it is refused with that reason. Output
is Kafka's table: every column padded to its widest value and followed by a tab.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import click

from kafpy.cli.command_line_utils import AdminCommand, OneLineError, quiet_logging
from kafpy.client.kafka_client import KafkaClient
from kafpy.client.response_errors import error_for_code
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors

LIST_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADERS = [
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
]  # fmt: skip
_RETRIABLE_COORDINATOR = (
    Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.NOT_COORDINATOR,
)  # fmt: skip
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


async def _coordinator(client: KafkaClient, transactional_id: str, attempts: int = 20) -> int:
    for _ in range(attempts):
        r = await client.send_to_any(
            ApiKey.FIND_COORDINATOR, {"key": transactional_id, "key_type": 1}
        )
        if r["error_code"] == Errors.NONE:
            await client.refresh_metadata([])
            return int(r["node_id"])
        if r["error_code"] not in _RETRIABLE_COORDINATOR:
            raise TransactionsCommandError(_message(r["error_code"], r.get("error_message")))
        await asyncio.sleep(0.2)
    raise TransactionsCommandError(
        "the transaction coordinator is not available; check that the brokers are up"
    )


async def describe_transaction(
    client: KafkaClient, transactional_id: str, now_ms: int
) -> list[str]:
    failed = f"Failed to describe transaction state of transactional-id `{transactional_id}`"
    try:
        for _ in range(20):
            node = await _coordinator(client, transactional_id)
            r = await client.send_to_node(
                node, ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": [transactional_id]}
            )
            state: dict[str, Any] = r["transaction_states"][0]
            if state["error_code"] not in _RETRIABLE_COORDINATOR:
                break
            await asyncio.sleep(0.2)
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
def command(
    bootstrap_server: str, do_list: bool, do_describe: bool, do_find_hanging: bool,
    transactional_id: str | None, broker_id: int | None,
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
        raise OneLineError(
            "Error: --find-hanging needs the DescribeProducers API (Kafka 3.0, KIP-664) from the "
            "partition leaders, which kafpy's brokers do not serve yet; use --list and --describe "
            "to see the open transactions instead."
        )

    async def main() -> list[str]:
        client = KafkaClient(bootstrap_server, client_id="kafpy-transactions", retries=3)
        try:
            if action == "list":
                return pretty_print_table(LIST_HEADERS, await list_transactions(client))
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

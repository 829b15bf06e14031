"""`kafpy consumer-groups`: list, describe, reset the offsets of, and delete consumer groups.

Kafka's ConsumerGroupCommand through a broker: ListGroups on every broker, then for one
group FindCoordinator and DescribeGroups / OffsetFetch / OffsetCommit / DeleteGroups on
its coordinator, and ListOffsets on the partitions' leaders for log end offsets and lag.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import click

from kafpy.cli.topics import AdminCommand, OneLineError, quiet_logging
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.topic_partition import TopicPartition
from kafpy.coordinator.consumer_protocol import assignment_partitions
from kafpy.protocol.api_keys import ApiKey
from kafpy.protocol.errors import Errors

Out = Callable[[str], None]
EARLIEST, LATEST = -2, -1
_RETRIABLE_COORDINATOR = (
    Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.COORDINATOR_LOAD_IN_PROGRESS,
    Errors.NOT_COORDINATOR,
)


class GroupCommandError(Exception):
    """A failure of the command, shown as `Error: <message>`."""


def format_table(rows: list[list[str]]) -> list[str]:
    """Columns left-aligned to the widest cell, one space apart (Kafka's layout)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [" ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]


class ConsumerGroupService:
    """The group operations of the command, on one KafkaClient."""

    def __init__(self, client: KafkaClient, attempts: int = 20) -> None:
        self.client = client
        self.attempts = attempts

    async def coordinator(self, group: str) -> int:
        for _ in range(self.attempts):
            r = await self.client.send_to_any(
                ApiKey.FIND_COORDINATOR, {"key": group, "key_type": 0}
            )
            if r["error_code"] == Errors.NONE:
                await self.client.refresh_metadata([])
                return int(r["node_id"])
            if r["error_code"] not in _RETRIABLE_COORDINATOR:
                raise GroupCommandError(
                    f"Finding the coordinator of group '{group}' failed: {Errors(r['error_code']).name}"
                )
            await asyncio.sleep(0.2)
        raise GroupCommandError(
            f"The coordinator of group '{group}' is not available; check that the brokers are up."
        )

    async def _to_coordinator(
        self,
        group: str,
        api: ApiKey,
        body: dict[str, Any],
        error_of: Callable[[dict[str, Any]], int],
    ) -> dict[str, Any]:
        for _ in range(self.attempts):
            node = await self.coordinator(group)
            r = await self.client.send_to_node(node, api, body)
            if error_of(r) not in _RETRIABLE_COORDINATOR:
                return r
            await asyncio.sleep(0.2)
        raise GroupCommandError(f"The coordinator of group '{group}' did not answer; retry later.")

    async def list_groups(self) -> list[str]:
        await self.client.refresh_metadata([])
        groups: set[str] = set()
        for node in sorted(self.client.cluster.brokers):
            r = await self.client.send_to_node(node, ApiKey.LIST_GROUPS, {})
            if r["error_code"] != Errors.NONE:
                raise GroupCommandError(
                    f"Listing the groups of broker {node} failed: {Errors(r['error_code']).name}"
                )
            groups.update(g["group_id"] for g in r["groups"])
        return sorted(groups)

    async def describe(self, group: str) -> dict[str, Any]:
        r = await self._to_coordinator(group, ApiKey.DESCRIBE_GROUPS, {"groups": [group]},
                                       lambda r: r["groups"][0]["error_code"])  # fmt: skip
        described: dict[str, Any] = r["groups"][0]
        if described["error_code"] != Errors.NONE:
            raise GroupCommandError(
                f"Describing group '{group}' failed: {Errors(described['error_code']).name}"
            )
        return described

    async def committed(self, group: str) -> dict[TopicPartition, int]:
        r = await self._to_coordinator(group, ApiKey.OFFSET_FETCH, {"group_id": group, "topics": None},
                                       lambda r: r.get("error_code", 0))  # fmt: skip
        if r.get("error_code", 0) != Errors.NONE:
            raise GroupCommandError(
                f"Fetching the offsets of group '{group}' failed: {Errors(r['error_code']).name}"
            )
        return {
            TopicPartition(t["name"], p["partition_index"]): p["committed_offset"]
            for t in r["topics"] for p in t["partitions"] if p["committed_offset"] >= 0
        }  # fmt: skip

    async def list_offset(self, tp: TopicPartition, timestamp: int) -> int:
        body = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": tp.topic,
                    "partitions": [{"partition_index": tp.partition, "timestamp": timestamp}],
                }
            ],
        }
        r = await self.client.send_to_leader(tp, ApiKey.LIST_OFFSETS, body)
        p = r["topics"][0]["partitions"][0]
        if p["error_code"] != Errors.NONE:
            raise GroupCommandError(
                f"Listing offsets of {tp} failed: {Errors(p['error_code']).name}"
            )
        if "offset" in p:
            return int(p["offset"])
        return int(p["old_style_offsets"][0])

    async def partitions_of(self, topic: str) -> list[TopicPartition]:
        await self.client.refresh_metadata([topic])
        parts = self.client.cluster.partitions_for(topic)
        if not parts:
            raise GroupCommandError(f"Topic '{topic}' does not exist.")
        return [TopicPartition(topic, p) for p in sorted(parts)]

    async def commit(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, offset in offsets.items():
            by_topic.setdefault(tp.topic, []).append(
                {
                    "partition_index": tp.partition,
                    "committed_offset": offset,
                    "committed_metadata": "",
                }
            )
        body = {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}  # fmt: skip
        r = await self._to_coordinator(group, ApiKey.OFFSET_COMMIT, body,
                                       lambda r: r["topics"][0]["partitions"][0]["error_code"])  # fmt: skip
        for t in r["topics"]:
            for p in t["partitions"]:
                if p["error_code"] != Errors.NONE:
                    raise GroupCommandError(
                        f"Committing offsets of group '{group}' failed for {t['name']}-{p['partition_index']}: "
                        f"{Errors(p['error_code']).name}"
                    )

    async def delete(self, groups: list[str]) -> dict[str, int]:
        results: dict[str, int] = {}
        for group in groups:
            r = await self._to_coordinator(group, ApiKey.DELETE_GROUPS, {"groups_names": [group]},
                                           lambda r: r["results"][0]["error_code"])  # fmt: skip
            results[group] = r["results"][0]["error_code"]
        return results


async def describe_group(service: ConsumerGroupService, group: str, out: Out) -> None:
    described = await service.describe(group)
    state = described["group_state"]
    if state == "Dead":
        raise GroupCommandError(f"Consumer group '{group}' does not exist.")
    committed = await service.committed(group)
    owners: dict[TopicPartition, tuple[str, str, str]] = {}
    for m in described["members"]:
        for tp in assignment_partitions(m["member_assignment"]):
            owners[tp] = (m["member_id"], m["client_host"], m["client_id"])
    if state == "PreparingRebalance" or state == "CompletingRebalance":
        out(f"Warning: Consumer group '{group}' is rebalancing.")
    elif not described["members"]:
        out(f"Consumer group '{group}' has no active members.")
    out("")
    rows = [
        [
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ]
    ]
    for tp in sorted(set(committed) | set(owners)):
        end = await service.list_offset(tp, LATEST)
        current = committed.get(tp)
        member, host, client = owners.get(tp, ("-", "-", "-"))
        rows.append([group, tp.topic, str(tp.partition), "-" if current is None else str(current), str(end),
                     "-" if current is None else str(max(end - current, 0)), member, host, client])  # fmt: skip
    for line in format_table(rows):
        out(line)


async def reset_offsets(
    service: ConsumerGroupService,
    group: str,
    topic: str,
    target: tuple[str, int],
    execute: bool,
    out: Out,
) -> None:
    described = await service.describe(group)
    if described["group_state"] not in ("Empty", "Dead"):
        raise GroupCommandError(
            f"Assignments can only be reset if the group '{group}' is inactive, but the current state is "
            f"{described['group_state']}."
        )
    new: dict[TopicPartition, int] = {}
    for tp in await service.partitions_of(topic):
        earliest = await service.list_offset(tp, EARLIEST)
        latest = await service.list_offset(tp, LATEST)
        kind, value = target
        if kind == "earliest":
            new[tp] = earliest
        elif kind == "latest":
            new[tp] = latest
        else:
            new[tp] = min(max(value, earliest), latest)
    if execute:
        await service.commit(group, new)
    out("")
    rows = [["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]]
    rows += [[group, tp.topic, str(tp.partition), str(o)] for tp, o in new.items()]
    for line in format_table(rows):
        out(line)


async def delete_groups(service: ConsumerGroupService, groups: list[str], out: Out) -> None:
    results = await service.delete(groups)
    failed = {g: e for g, e in results.items() if e != Errors.NONE}
    if not failed:
        names = ", ".join(f"'{g}'" for g in groups)
        out(f"Deletion of requested consumer groups ({names}) was successful.")
        return
    out("Deletion of some consumer groups failed:")
    for g, e in failed.items():
        out(f"* Group '{g}' could not be deleted due to: {Errors(e).name}")
    ok = [g for g in groups if g not in failed]
    if ok:
        out(f"These consumer groups were deleted successfully: {', '.join(repr(g) for g in ok)}")
    raise GroupCommandError("Not every group could be deleted.")


@click.command(cls=AdminCommand, name="consumer-groups")
@click.option("--bootstrap-server", required=True, help="host:port of a broker to connect to.")
@click.option("--list", "do_list", is_flag=True, help="List all consumer groups.")
@click.option(
    "--describe", "do_describe", is_flag=True, help="Describe a group: offsets, lag and owners."
)
@click.option(
    "--reset-offsets",
    "do_reset",
    is_flag=True,
    help="Reset a group's offsets (the group must be inactive).",
)
@click.option("--delete", "do_delete", is_flag=True, help="Delete groups (they must be empty).")
@click.option(
    "--group", "groups", multiple=True, help="The consumer group (repeatable for --delete)."
)
@click.option("--topic", help="The topic whose offsets --reset-offsets resets.")
@click.option("--to-earliest", is_flag=True, help="Reset to the earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset to the latest offset.")
@click.option(
    "--to-offset", type=int, default=None, help="Reset to this offset (clamped to the log's range)."
)
@click.option("--dry-run", is_flag=True, help="Show the new offsets only (the default).")
@click.option("--execute", is_flag=True, help="Commit the new offsets.")
def command(
    bootstrap_server: str, do_list: bool, do_describe: bool, do_reset: bool, do_delete: bool,
    groups: tuple[str, ...], topic: str | None, to_earliest: bool, to_latest: bool, to_offset: int | None,
    dry_run: bool, execute: bool,
) -> None:  # fmt: skip
    """List, describe, reset offsets of, or delete consumer groups."""
    actions = [a for a, on in (("list", do_list), ("describe", do_describe), ("reset", do_reset),
                               ("delete", do_delete)) if on]  # fmt: skip
    if len(actions) != 1:
        raise OneLineError(
            "Command must include exactly one action: --list, --describe, --delete, --reset-offsets "
            "(see 'kafpy consumer-groups --help')"
        )
    action = actions[0]
    if action != "list" and not groups:
        raise OneLineError(f"Option --{action if action != 'reset' else 'reset-offsets'} needs --group "
                           "(see 'kafpy consumer-groups --help')")  # fmt: skip
    target: tuple[str, int] = ("latest", 0)
    if action == "reset":
        chosen = [t for t, on in (("earliest", to_earliest), ("latest", to_latest), ("offset", to_offset is not None))
                  if on]  # fmt: skip
        if len(chosen) != 1 or topic is None:
            raise OneLineError("Option --reset-offsets needs --topic and one of --to-earliest, --to-latest, "
                               "--to-offset (see 'kafpy consumer-groups --help')")  # fmt: skip
        if dry_run and execute:
            raise OneLineError("Option --dry-run and --execute cannot be used together")
        target = (chosen[0], to_offset or 0)

    async def main() -> None:
        client = KafkaClient(bootstrap_server, client_id="kafpy-consumer-groups", retries=3)
        try:
            service = ConsumerGroupService(client)
            if action == "list":
                for g in await service.list_groups():
                    click.echo(g)
            elif action == "describe":
                await describe_group(service, groups[0], click.echo)
            elif action == "reset":
                if not execute and not dry_run:
                    click.echo("WARN: No action will be performed as the --execute option is missing. In a future "
                               "major release, the default behavior of this command will be to prompt the user "
                               "before executing the reset rather than doing a dry run. You should add the "
                               "--dry-run option explicitly if you are scripting this command and want to keep "
                               "the current default behavior without prompting.")  # fmt: skip
                assert topic is not None
                await reset_offsets(service, groups[0], topic, target, execute, click.echo)
            else:
                await delete_groups(service, list(groups), click.echo)
        finally:
            await client.close()

    quiet_logging()
    try:
        asyncio.run(main())
    except GroupCommandError as e:
        raise OneLineError(f"Error: {e}") from None
    except KeyboardInterrupt:
        raise OneLineError("Error: interrupted") from None
    except Exception as e:  # one line, never a traceback
        raise OneLineError(
            f"Error: Executing consumer group command failed due to {e or type(e).__name__}"
        ) from None

"""`kafpy consumer-groups`: list, describe, reset the offsets of, and delete consumer groups.

Kafka 2.8's ConsumerGroupCommand (kafka-consumer-groups.sh) through a broker: ListGroups on
every broker, then for each group FindCoordinator and DescribeGroups / OffsetFetch /
OffsetCommit / DeleteGroups on its coordinator, and ListOffsets on the partitions' leaders
for log start and end offsets, offsets by timestamp and lag. The tables, messages and the
CSV of `--export` are printed as kafka-consumer-groups.sh prints them.
"""

from __future__ import annotations

import asyncio
import csv
import io
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    quiet_logging,
)
from kafpy.client.consumer_group_admin import ConsumerGroupAdmin, ConsumerGroupDescription
from kafpy.client.fetcher import Fetcher
from kafpy.client.find_coordinator import COORDINATOR_RETRIABLE
from kafpy.client.kafka_client import KafkaClient
from kafpy.common.errors import Errors, KafkaConnectionError, KafkaError, RequestTimedOutError
from kafpy.common.topic_partition import TopicPartition

Out = Callable[[str], None]
EARLIEST, LATEST = -2, -1
UNKNOWN_OFFSET = -1
MISSING = "-"
GROUP_STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty")
T = TypeVar("T")


class GroupCommandError(Exception):
    """A failure of the command, shown as `Error: <message>`."""


def kafka_format(widths: list[int | None], values: list[object]) -> str:
    """One line as Kafka's `%-Ns %-Ms ... %s` format strings lay it out: each value
    left-aligned in at least its width (never cut), one space apart; None: no padding."""
    return " ".join(
        str(v) if w is None else f"{v!s:<{w}}" for w, v in zip(widths, values, strict=True)
    )


class ConsumerGroupService:
    """The group operations of the command: ConsumerGroupAdmin and the Fetcher's
    ListOffsets on one KafkaClient, their errors turned into the command's sentences.

    `timeout_ms` bounds the finding of a coordinator that is moving or loading (Kafka's
    ConsumerGroupCommand `--timeout`, 5000 ms)."""

    def __init__(self, client: KafkaClient, timeout_ms: int = 5000) -> None:
        self.client = client
        self.admin = ConsumerGroupAdmin(client, timeout_ms=timeout_ms)
        self.fetcher = Fetcher(client)

    async def _call(self, group: str, what: str, call: Awaitable[T]) -> T:
        """Await `call`, telling a failure answered by a broker as `<what> failed: NAME`."""
        try:
            return await call
        except (KafkaConnectionError, RequestTimedOutError):
            raise
        except KafkaError as e:
            if e.code in COORDINATOR_RETRIABLE:
                raise GroupCommandError(
                    f"The coordinator of group '{group}' is not available; check that the brokers are up."
                ) from None
            raise GroupCommandError(f"{what} failed: {Errors(e.code).name}") from None

    def coordinator_address(self, described: ConsumerGroupDescription) -> str:
        """The coordinator as Kafka prints it: `host:port (id)`."""
        broker = self.client.node(described.coordinator)
        where = f"{broker.host}:{broker.port}" if broker is not None else "unknown"
        return f"{where} ({described.coordinator})"

    async def list_groups(self) -> list[str]:
        try:
            return [g.group_id for g in await self.admin.list_groups()]
        except (KafkaConnectionError, RequestTimedOutError):
            raise
        except KafkaError as e:
            # the admin names the broker before the ": " of Kafka's sentence
            failed = str(e).partition(": ")[0]
            raise GroupCommandError(f"{failed} failed: {Errors(e.code).name}") from None

    async def describe(self, group: str) -> ConsumerGroupDescription:
        return await self._call(
            group, f"Describing group '{group}'", self.admin.describe_group(group)
        )

    async def committed(self, group: str) -> dict[TopicPartition, int]:
        return await self._call(group, f"Fetching the offsets of group '{group}'",
                                self.admin.list_group_offsets(group))  # fmt: skip

    async def list_offset(self, tp: TopicPartition, timestamp: int) -> int:
        """The offset ListOffsets gives for `timestamp` (EARLIEST, LATEST or a time in ms;
        UNKNOWN_OFFSET when no record is that late)."""
        try:
            return (await self.fetcher.list_offsets([tp], timestamp))[tp]
        except (KafkaConnectionError, RequestTimedOutError):
            raise
        except KafkaError as e:
            raise GroupCommandError(
                f"Listing offsets of {tp} failed: {Errors(e.code).name}"
            ) from None

    async def partitions_of(self, topic: str) -> list[TopicPartition]:
        await self.client.refresh_metadata([topic])
        parts = self.client.cluster.partitions_for(topic)
        if not parts:
            raise GroupCommandError(f"Topic '{topic}' does not exist.")
        return [TopicPartition(topic, p) for p in sorted(parts)]

    async def commit(self, group: str, offsets: dict[TopicPartition, int]) -> None:
        await self._call(group, f"Committing offsets of group '{group}'",
                         self.admin.alter_group_offsets(group, offsets))  # fmt: skip

    async def delete(self, groups: list[str]) -> dict[str, KafkaError | None]:
        results: dict[str, KafkaError | None] = {}
        for group in groups:
            deleted = self.admin.delete_groups([group])
            results.update(await self._call(group, f"Deleting group '{group}'", deleted))
        return results


def should_print_member_state(group: str, state: str, rows: int, out: Out, err: Out) -> bool:
    """Kafka's shouldPrintMemberState: the line about the group's state, and whether its
    table has anything to show."""
    if state == "Dead":
        raise GroupCommandError(f"Consumer group '{group}' does not exist.")
    if state == "Empty":
        err(f"\nConsumer group '{group}' has no active members.")
    elif state in ("PreparingRebalance", "CompletingRebalance"):
        err(f"\nWarning: Consumer group '{group}' is rebalancing.")
    return rows > 0


async def describe_offsets(service: ConsumerGroupService, group: str, out: Out, err: Out) -> None:
    """`--describe [--offsets]`: one row per assigned or committed partition."""
    described = await service.describe(group)
    if described.state == "Dead":
        should_print_member_state(group, described.state, 0, out, err)
    committed = await service.committed(group)
    rows: list[list[object]] = []
    assigned: set[TopicPartition] = set()
    members = [m for m in described.members if m.assignment]
    for m in sorted(members, key=lambda m: -len(m.assignment)):
        assigned.update(m.assignment)
        for tp in sorted(m.assignment, key=lambda tp: tp.partition):
            rows.append(await _offset_row(service, group, tp, committed.get(tp), m.member_id,
                                          m.host, m.client_id))  # fmt: skip
    for tp in sorted(set(committed) - assigned):
        rows.append(await _offset_row(service, group, tp, committed[tp], MISSING, MISSING, MISSING))
    if not should_print_member_state(group, described.state, len(rows), out, err):
        return
    widths: list[int | None] = [
        max([15] + [len(str(r[0])) for r in rows]),
        max([15] + [len(str(r[1])) for r in rows]),
        10, 15, 15, 15,
        max([15] + [len(str(r[6])) for r in rows]),
        max([15] + [len(str(r[7])) for r in rows]),
        None,
    ]  # fmt: skip
    out("\n" + kafka_format(widths, ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET",
                                     "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]))  # fmt: skip
    for row in rows:
        out(kafka_format(widths, row))


async def _offset_row(
    service: ConsumerGroupService, group: str, tp: TopicPartition, current: int | None,
    member: str, host: str, client: str,
) -> list[object]:  # fmt: skip
    end = await service.list_offset(tp, LATEST)
    lag = MISSING if current is None else str(end - current)
    return [group, tp.topic, tp.partition, MISSING if current is None else current, end, lag,
            member, host, client]  # fmt: skip


async def describe_members(
    service: ConsumerGroupService, group: str, verbose: bool, out: Out, err: Out
) -> None:
    """`--describe --members [--verbose]`: one row per member."""
    d = await service.describe(group)
    if not should_print_member_state(group, d.state, len(d.members), out, err):
        return
    with_instance = any(m.group_instance_id for m in d.members)
    widths: list[int | None] = [
        max([15] + [len(group)]),
        max([15] + [len(m.member_id) for m in d.members]),
        *(
            [max([17] + [len(m.group_instance_id or "") for m in d.members])]
            if with_instance
            else []
        ),
        max([15] + [len(m.host) for m in d.members]),
        max([15] + [len(m.client_id) for m in d.members]),
        15,
    ]

    def line(values: list[object], last: str) -> str:
        if not with_instance:
            values = values[:2] + values[3:]
        return kafka_format(widths, values) + " " + (last if verbose else "")

    out("\n" + line(["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"],
                    "ASSIGNMENT"))  # fmt: skip
    for m in d.members:
        by_topic: dict[str, list[int]] = {}
        for tp in m.assignment:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        assignment = ", ".join(
            sorted(f"{t}({','.join(map(str, sorted(ps)))})" for t, ps in by_topic.items())
        )
        out(line([group, m.member_id, m.group_instance_id or "", m.host, m.client_id, len(m.assignment)],
                 assignment or MISSING))  # fmt: skip


async def describe_state(service: ConsumerGroupService, group: str, out: Out, err: Out) -> None:
    """`--describe --state`: the group's coordinator, assignment strategy, state and size."""
    d = await service.describe(group)
    should_print_member_state(group, d.state, 1, out, err)
    coordinator = service.coordinator_address(d)
    width = max(25, len(coordinator))
    widths: list[int | None] = [width, 25, 20, 15, None]
    out(
        "\n"
        + kafka_format(
            widths, ["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        )
    )
    out(kafka_format(widths, [group, coordinator, d.assignor, d.state, len(d.members)]))


async def list_groups(service: ConsumerGroupService, states: set[str] | None, out: Out) -> None:
    """`--list [--state [s,...]]`: group ids, or a GROUP STATE table."""
    groups = await service.list_groups()
    if states is None:
        for g in groups:
            out(g)
        return
    listed = [(g, (await service.describe(g)).state) for g in groups]
    listed = [(g, s) for g, s in listed if not states or s in states]
    width = max([15] + [len(g) for g, _ in listed])
    out(kafka_format([width, None], ["GROUP", "STATE"]))
    for g, s in listed:
        out(kafka_format([width, None], [g, s]))


def parse_states(value: str) -> set[str]:
    """Kafka's consumerGroupStatesFromString, matching names in any case."""
    by_lower = {s.lower(): s for s in GROUP_STATES}
    parsed = {by_lower.get(s.strip().lower()) for s in value.split(",")}
    if None in parsed:
        raise OneLineError(
            f"Invalid state list '{value}'. Valid states are: {', '.join(GROUP_STATES)}"
        )
    return {s for s in parsed if s is not None}


# -- reset-offsets -------------------------------------------------------------------------


@dataclass(frozen=True)
class ResetSpec:
    """What --reset-offsets resets to: the scenario (`to-earliest`, `shift-by`, ...) and its
    value, and the scope (--all-topics, --topic t / t:0,1, or the plan of --from-file)."""

    scenario: str
    value: Any
    all_topics: bool
    topics: tuple[str, ...]
    plan: dict[str, dict[TopicPartition, int]] | None = None


def parse_datetime(value: str) -> int:
    """Kafka's Utils.getDateTime: 'YYYY-MM-DDTHH:mm:SS.sss' with an optional zone ('Z',
    '+01:00'); without one, UTC. Milliseconds since the epoch."""
    date, sep, rest = value.partition("T")
    if not sep or not rest:
        raise OneLineError(
            f"Error parsing timestamp. It does not contain a 'T' according to ISO8601 format (Actual value: {value})"
        )
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise OneLineError(
            f"--to-datetime: '{value}' is not a date and time; use the format 'YYYY-MM-DDTHH:mm:SS.sss'"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?(?:T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(value: str) -> timedelta:
    """java.time.Duration.parse: ISO-8601 'PnDTnHnMn.nS'."""
    m = _DURATION.fullmatch(value)
    if m is None or value.upper().endswith("T") or value.upper() in ("P", "-P", "+P"):
        raise OneLineError(
            f"--by-duration: '{value}' is not a duration; use the format 'PnDTnHnMnS'"
        )
    sign, days, hours, minutes, seconds, fraction = m.groups()
    d = timedelta(days=int(days or 0), hours=int(hours or 0), minutes=int(minutes or 0),
                  seconds=int(seconds or 0), microseconds=int((fraction or "0").ljust(6, "0")[:6]))  # fmt: skip
    return -d if sign == "-" else d


def parse_reset_plan(text: str, groups: tuple[str, ...]) -> dict[str, dict[TopicPartition, int]]:
    """The CSV of --from-file, as --export writes it: `topic,partition,offset` lines for
    one group, `group,topic,partition,offset` lines otherwise."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]

    def three(r: list[str]) -> bool:
        return len(r) == 3 and r[1].lstrip("-").isdigit() and r[2].lstrip("-").isdigit()

    plan: dict[str, dict[TopicPartition, int]] = {}
    try:
        if len(groups) == 1 and rows and three(rows[0]):
            for topic, partition, offset in rows:
                plan.setdefault(groups[0], {})[TopicPartition(topic, int(partition))] = int(offset)
        else:
            for group, topic, partition, offset in rows:
                plan.setdefault(group, {})[TopicPartition(topic, int(partition))] = int(offset)
    except ValueError:
        raise OneLineError(
            "--from-file: each line must be 'topic,partition,offset' (one group) or "
            "'group,topic,partition,offset', as --export writes them"
        ) from None
    return plan


async def _clamp(
    service: ConsumerGroupService, requested: dict[TopicPartition, int], err: Out
) -> dict[TopicPartition, int]:
    """Kafka's checkOffsetsRange: offsets outside the log are moved to its ends."""
    out: dict[TopicPartition, int] = {}
    for tp, offset in requested.items():
        end = await service.list_offset(tp, LATEST)
        start = await service.list_offset(tp, EARLIEST)
        if offset > end:
            err(f"WARN New offset ({offset}) is higher than latest offset for topic partition {tp}. "
                f"Value will be set to {end}")  # fmt: skip
            offset = end
        elif offset < start:
            err(f"WARN New offset ({offset}) is lower than earliest offset for topic partition {tp}. "
                f"Value will be set to {start}")  # fmt: skip
            offset = start
        out[tp] = offset
    return out


async def _partitions_to_reset(
    service: ConsumerGroupService, group: str, spec: ResetSpec
) -> list[TopicPartition]:
    if spec.all_topics:
        return sorted(await service.committed(group))
    parts: list[TopicPartition] = []
    for arg in spec.topics:
        topic, sep, partitions = arg.partition(":")
        if sep:
            try:
                parts += [TopicPartition(topic, int(p)) for p in partitions.split(",")]
            except ValueError:
                raise GroupCommandError(
                    f"--topic '{arg}': partitions must be numbers, as in 'topic:0,1,2'"
                ) from None
        else:
            parts += await service.partitions_of(topic)
    return parts


async def prepare_offsets_to_reset(
    service: ConsumerGroupService, group: str, spec: ResetSpec, err: Out
) -> dict[TopicPartition, int]:
    """Kafka's prepareOffsetsToReset: the new offset of each partition in scope."""
    parts = await _partitions_to_reset(service, group, spec)
    kind = spec.scenario
    if kind == "to-offset":
        return await _clamp(service, {tp: int(spec.value) for tp in parts}, err)
    if kind == "to-earliest":
        return {tp: await service.list_offset(tp, EARLIEST) for tp in parts}
    if kind == "to-latest":
        return {tp: await service.list_offset(tp, LATEST) for tp in parts}
    if kind == "shift-by":
        committed = await service.committed(group)
        for tp in parts:
            if tp not in committed:
                raise OneLineError(
                    f"Cannot shift offset for partition {tp} since there is no current committed offset"
                )
        return await _clamp(service, {tp: committed[tp] + int(spec.value) for tp in parts}, err)
    if kind in ("to-datetime", "by-duration"):
        timestamp = int(spec.value)
        new: dict[TopicPartition, int] = {}
        for tp in parts:
            offset = await service.list_offset(tp, timestamp)
            new[tp] = offset if offset != UNKNOWN_OFFSET else await service.list_offset(tp, LATEST)
        return new
    if kind == "from-file":
        assert spec.plan is not None
        if group not in spec.plan:
            raise GroupCommandError(f"No reset plan for group {group} found")
        return await _clamp(service, spec.plan[group], err)
    if kind == "to-current":
        committed = await service.committed(group)
        return {
            tp: committed[tp] if tp in committed else await service.list_offset(tp, LATEST)
            for tp in parts
        }
    raise AssertionError(kind)


async def reset_offsets(
    service: ConsumerGroupService, groups: list[str], spec: ResetSpec, execute: bool, err: Out
) -> tuple[dict[str, dict[TopicPartition, int]], list[str]]:
    """Kafka's resetOffsets: the new offsets per group (committed with `execute`), and the
    errors of groups that could not be reset (active groups)."""
    result: dict[str, dict[TopicPartition, int]] = {}
    failures: list[str] = []
    for group in groups:
        state = (await service.describe(group)).state
        if state not in ("Empty", "Dead"):
            failures.append(
                f"Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}."
            )
            result[group] = {}
            continue
        new = await prepare_offsets_to_reset(service, group, spec, err)
        if execute:
            await service.commit(group, new)
        result[group] = new
    return result, failures


def print_offsets_to_reset(result: dict[str, dict[TopicPartition, int]], out: Out) -> None:
    """Kafka's printOffsetsToReset: the GROUP TOPIC PARTITION NEW-OFFSET table."""
    widths: list[int | None] = [30, 30, 10, 15]
    if result:
        out("\n" + kafka_format(widths, ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]))
    for group, offsets in result.items():
        for tp in sorted(offsets):
            out(kafka_format(widths, [group, tp.topic, tp.partition, offsets[tp]]))


def export_offsets_to_csv(result: dict[str, dict[TopicPartition, int]], single_group: bool) -> str:
    """Kafka's exportOffsetsToCsv: `topic,partition,offset` lines for one --group,
    `group,topic,partition,offset` lines otherwise."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for group, offsets in result.items():
        for tp in sorted(offsets):
            row = [tp.topic, tp.partition, offsets[tp]]
            writer.writerow(row if single_group else [group, *row])
    return buf.getvalue()


async def delete_groups(service: ConsumerGroupService, groups: list[str], out: Out) -> None:
    results = await service.delete(groups)
    failed = {g: e for g, e in results.items() if e is not None}
    if not failed:
        names = ", ".join(f"'{g}'" for g in groups)
        out(f"Deletion of requested consumer groups ({names}) was successful.")
        return
    out("\nError: Deletion of some consumer groups failed:")
    for g, e in failed.items():
        out(f"* Group '{g}' could not be deleted due to: {Errors(e.code).name}")
    ok = [g for g in groups if g not in failed]
    if ok:
        out(f"\nThese consumer groups were deleted successfully: {', '.join(repr(g) for g in ok)}")
    raise GroupCommandError("Not every group could be deleted.")


_SCENARIOS = ("to-offset", "to-earliest", "to-latest", "shift-by", "to-datetime", "by-duration",
              "to-current", "from-file")  # fmt: skip
_USAGE = "(see 'kafpy consumer-groups --help')"


@click.command(cls=AdminCommand, name="consumer-groups")
@click.option("--bootstrap-server", required=True, help="REQUIRED: The server(s) to connect to.")
@click.option("--command-config", metavar="FILE",
              help="A properties file of admin client configs (e.g. security.protocol=SSL, ssl.*).")  # fmt: skip
@click.option("--list", "do_list", is_flag=True, help="List all consumer groups.")
@click.option("--describe", "do_describe", is_flag=True,
              help="Describe consumer group and list offset lag (number of messages not yet processed).")  # fmt: skip
@click.option("--reset-offsets", "do_reset", is_flag=True,
              help="Reset offsets of consumer groups (they must be inactive).")  # fmt: skip
@click.option("--delete", "do_delete", is_flag=True, help="Delete groups (they must be empty).")
@click.option("--delete-offsets", "do_delete_offsets", is_flag=True,
              help="Delete offsets of a consumer group (needs the OffsetDelete API).")  # fmt: skip
@click.option(
    "--group", "groups", multiple=True, help="The consumer group we wish to act on (repeatable)."
)
@click.option("--all-groups", is_flag=True, help="Apply to all consumer groups.")
@click.option("--topic", "topics", multiple=True,
              help="Topic to reset ('topic' or 'topic:0,1,2' for some partitions; repeatable).")  # fmt: skip
@click.option(
    "--all-topics", is_flag=True, help="Consider all topics assigned to a group in the reset."
)
@click.option("--members", is_flag=True, help="With --describe: describe the members of the group.")
@click.option(
    "--verbose", is_flag=True, help="With --describe --members: show each member's assignment."
)
@click.option("--offsets", "offsets_opt", is_flag=True,
              help="With --describe: partitions, offsets and lag (the default).")  # fmt: skip
@click.option("--state", "state", is_flag=False, flag_value="", default=None,
              help="With --describe: the group's state; with --list: states of groups (optionally only these, "
                   "comma-separated).")  # fmt: skip
@click.option("--to-earliest", is_flag=True, help="Reset offsets to earliest offset.")
@click.option("--to-latest", is_flag=True, help="Reset offsets to latest offset.")
@click.option("--to-current", is_flag=True, help="Reset offsets to current offset.")
@click.option("--to-offset", type=int, default=None, help="Reset offsets to a specific offset.")
@click.option("--shift-by", type=int, default=None,
              help="Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.")  # fmt: skip
@click.option("--to-datetime", default=None,
              help="Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'")  # fmt: skip
@click.option("--by-duration", default=None,
              help="Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'")  # fmt: skip
@click.option("--from-file", default=None, type=click.Path(dir_okay=False),
              help="Reset offsets to values defined in CSV file.")  # fmt: skip
@click.option(
    "--dry-run", is_flag=True, help="Only show results without executing changes (the default)."
)
@click.option("--execute", is_flag=True, help="Execute operation.")
@click.option("--export", is_flag=True, help="Export operation execution to a CSV format.")
def command(
    bootstrap_server: str, command_config: str | None, do_list: bool, do_describe: bool, do_reset: bool, do_delete: bool,
    do_delete_offsets: bool, groups: tuple[str, ...], all_groups: bool, topics: tuple[str, ...],
    all_topics: bool, members: bool, verbose: bool, offsets_opt: bool, state: str | None,
    to_earliest: bool, to_latest: bool, to_current: bool, to_offset: int | None, shift_by: int | None,
    to_datetime: str | None, by_duration: str | None, from_file: str | None, dry_run: bool,
    execute: bool, export: bool,
) -> None:  # fmt: skip
    """List, describe, reset offsets of, or delete consumer groups (kafka-consumer-groups.sh)."""
    actions = [a for a, on in (("list", do_list), ("describe", do_describe), ("delete", do_delete),
                               ("reset-offsets", do_reset), ("delete-offsets", do_delete_offsets)) if on]  # fmt: skip
    if len(actions) != 1:
        raise OneLineError(
            "Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
            f"--delete-offsets {_USAGE}"
        )
    action = actions[0]
    if action == "delete-offsets":
        raise OneLineError(
            "Error: --delete-offsets needs the OffsetDelete API (Kafka 2.4+), which kafpy's brokers do "
            "not offer yet; reset the group's offsets with --reset-offsets instead."
        )
    if groups and all_groups:
        raise OneLineError(f"Option --group is not valid with --all-groups {_USAGE}")
    if action in ("describe", "delete", "reset-offsets") and not groups and not all_groups:
        raise OneLineError(
            f"Option --{action} takes one of these options: --all-groups, --group {_USAGE}"
        )
    if action == "describe":
        if sum((members, offsets_opt, state is not None)) > 1:
            raise OneLineError(f"Option --describe takes at most one of these options: --members, --offsets, "
                               f"--state {_USAGE}")  # fmt: skip
        if state:
            raise OneLineError(f"Option --describe does not take a value for --state {_USAGE}")
    if action == "delete" and topics:
        raise OneLineError(
            "The consumer does not support topic-specific offset deletion from a consumer group."
        )
    states = parse_states(state) if action == "list" and state else (set() if state == "" else None)
    spec = None
    if action == "reset-offsets":
        if dry_run and execute:
            raise OneLineError(
                f"Option --reset-offsets only accepts one of --execute and --dry-run {_USAGE}"
            )
        given = {"to-offset": to_offset, "to-earliest": to_earliest or None, "to-latest": to_latest or None,
                 "shift-by": shift_by, "to-datetime": to_datetime, "by-duration": by_duration,
                 "to-current": to_current or None, "from-file": from_file}  # fmt: skip
        chosen = [s for s in _SCENARIOS if given[s] is not None]
        if len(chosen) != 1:
            raise OneLineError("Option --reset-offsets requires one of the following scenarios: "
                               + ", ".join(f"--{s}" for s in _SCENARIOS) + f" {_USAGE}")  # fmt: skip
        scenario = chosen[0]
        if not all_topics and not topics and scenario != "from-file":
            raise OneLineError(
                f"One of the reset scopes should be defined: --all-topics, --topic. {_USAGE}"
            )
        if all_topics and topics:
            raise OneLineError(f"Option --all-topics is not valid with --topic {_USAGE}")
        value: Any = given[scenario]
        plan = None
        if scenario == "to-datetime":
            value = parse_datetime(str(to_datetime))
        elif scenario == "by-duration":
            value = int((time.time() - parse_duration(str(by_duration)).total_seconds()) * 1000)
        elif scenario == "from-file":
            try:
                with open(str(from_file), encoding="utf-8") as f:
                    plan = parse_reset_plan(f.read(), groups)
            except OSError as e:
                raise OneLineError(f"--from-file: cannot read {from_file}: {e.strerror}") from None
        spec = ResetSpec(scenario, value, all_topics, topics, plan)
        if not dry_run and not execute:
            click.echo("WARN: No action will be performed as the --execute option is missing.In a future major "
                       "release, the default behavior of this command will be to prompt the user before executing "
                       "the reset rather than doing a dry run. You should add the --dry-run option explicitly if you "
                       "are scripting this command and want to keep the current default behavior without "
                       "prompting.", err=True)  # fmt: skip

    def err(line: str) -> None:
        click.echo(line, err=True)

    options = load_command_config(command_config, err)
    failures: list[str] = []

    async def main() -> None:
        client = KafkaClient(
            bootstrap_server, **{"client_id": "kafpy-consumer-groups", "retries": 3, **options}
        )
        try:
            service = ConsumerGroupService(client)
            if action == "list":
                await list_groups(service, states, click.echo)
                return
            targets = await service.list_groups() if all_groups else list(groups)
            if action == "describe":
                for group in sorted(targets) if all_groups else targets:
                    if members:
                        await describe_members(service, group, verbose, click.echo, err)
                    elif state is not None:
                        await describe_state(service, group, click.echo, err)
                    else:
                        await describe_offsets(service, group, click.echo, err)
            elif action == "reset-offsets":
                assert spec is not None
                result, failed = await reset_offsets(service, targets, spec, execute, err)
                failures.extend(failed)
                if export:
                    click.echo(export_offsets_to_csv(result, len(groups) == 1))
                else:
                    print_offsets_to_reset({g: o for g, o in result.items() if o}, click.echo)
            else:
                await delete_groups(service, targets, click.echo)
        finally:
            await client.close()

    quiet_logging()
    try:
        asyncio.run(main())
    except GroupCommandError as e:
        raise OneLineError(f"\nError: {e}") from None
    except KeyboardInterrupt:
        raise OneLineError("Error: interrupted") from None
    except OneLineError:
        raise
    except Exception as e:  # one line, never a traceback
        raise OneLineError(
            f"\nError: Executing consumer group command failed due to {e or type(e).__name__}"
        ) from None
    if failures:
        for failure in failures:
            click.echo(f"\nError: {failure}")
        sys.exit(1)

"""`kafpy features`: describe and update the cluster's finalized features (KIP-584),
as Kafka 2.8's kafka-features.sh (kafka.admin.FeatureCommand).

`--describe` prints one line per feature a broker supports or the cluster finalized
(none with Kafka 2.8, which defines no feature: the output is empty);
`--upgrade-all` finalizes every feature the tool supports at its highest version and
`--downgrade-all` lowers or deletes the finalized ones the tool does not support as high,
both printing Kafka's `[Add]`/`[Upgrade]`/`[Downgrade]`/`[Delete]` lines with each result,
or only the expected updates with `--dry-run`. A failed update exits with status 1.
"""

from __future__ import annotations

from collections.abc import Mapping

import click

from kafpy.cli.command_line_utils import (
    AdminCommand,
    OneLineError,
    load_command_config,
    run_command,
)
from kafpy.client.admin_client import AdminClient, FeatureMetadata, FeatureUpdate
from kafpy.common.errors import KafkaError
from kafpy.common.features import BrokerFeatures, SupportedVersionRange

ERROR_PREFIX = "Error encountered when executing command: "

# (line, update) per feature
Updates = dict[str, tuple[str, FeatureUpdate]]


def _op(name: str) -> str:
    return f"[{name}]".rjust(11)  # Kafka's f"$op%11s"


def describe_lines(metadata: FeatureMetadata) -> list[str]:
    """FeatureCommand.describeFeatures' lines, features sorted by name."""
    epoch = "-" if metadata.finalized_features_epoch is None else metadata.finalized_features_epoch
    lines = []
    for name in sorted(set(metadata.supported_features) | set(metadata.finalized_features)):
        s_min, s_max = metadata.supported_features.get(name, ("-", "-"))
        f_min, f_max = metadata.finalized_features.get(name, ("-", "-"))
        lines.append(
            f"Feature: {name}\tSupportedMinVersion: {s_min}\tSupportedMaxVersion: {s_max}"
            f"\tFinalizedMinVersionLevel: {f_min}\tFinalizedMaxVersionLevel: {f_max}"
            f"\tEpoch: {epoch}"
        )
    return lines


def _line(op: str, name: str, existing: object, new: object) -> str:
    return (
        f"{_op(op)}\tFeature: {name}\tExistingFinalizedMaxVersion: {existing}"
        f"\tNewFinalizedMaxVersion: {new}"
    )


def upgrade_all_updates(
    metadata: FeatureMetadata, supported: Mapping[str, SupportedVersionRange]
) -> Updates:
    """What --upgrade-all changes: features the tool supports, added or upgraded."""
    updates: Updates = {}
    for name, target in supported.items():
        existing = metadata.finalized_features.get(name)
        if existing is None:
            updates[name] = (_line("Add", name, "-", target.max_version),
                             FeatureUpdate(target.max_version, False))  # fmt: skip
        elif target.max_version > existing[1]:
            updates[name] = (_line("Upgrade", name, existing[1], target.max_version),
                             FeatureUpdate(target.max_version, False))  # fmt: skip
    return updates


def downgrade_all_updates(
    metadata: FeatureMetadata, supported: Mapping[str, SupportedVersionRange]
) -> Updates:
    """What --downgrade-all changes: finalized features deleted (unknown to the tool) or
    downgraded to the tool's highest version."""
    updates: Updates = {}
    for name, (_, existing_max) in metadata.finalized_features.items():
        target = supported.get(name)
        if target is None:
            updates[name] = (_line("Delete", name, existing_max, "-"), FeatureUpdate(0, True))
        elif target.max_version < existing_max:
            updates[name] = (_line("Downgrade", name, existing_max, target.max_version),
                             FeatureUpdate(target.max_version, True))  # fmt: skip
    return updates


def dry_run_text(updates: Updates) -> str:
    """FeatureCommand's dry-run output (the first line follows the heading directly)."""
    return "Expected feature updates:" + "\n".join(updates[n][0] for n in sorted(updates))


def result_lines(
    updates: Updates, results: Mapping[str, KafkaError | None]
) -> tuple[list[str], int]:
    """Each update's line with its result, and how many failed."""
    lines, failures = [], 0
    for name in sorted(updates):
        error = results.get(name, KafkaError("no result from the controller"))
        if error is None:
            lines.append(f"{updates[name][0]}\tResult: OK")
        else:
            failures += 1
            lines.append(
                f"{updates[name][0]}\tResult: FAILED due to {type(error).__name__}: {error}"
            )
    return lines, failures


async def _run(
    admin: AdminClient, action: str, dry_run: bool, supported: Mapping[str, SupportedVersionRange]
) -> None:
    metadata = await admin.describe_features()
    if action == "describe":
        for line in describe_lines(metadata):
            click.echo(line)
        return
    plan = upgrade_all_updates if action == "upgrade-all" else downgrade_all_updates
    updates = plan(metadata, supported)
    if not updates:
        return
    if dry_run:
        click.echo(dry_run_text(updates))
        return
    results = await admin.update_features({n: u for n, (_, u) in updates.items()})
    lines, failures = result_lines(updates, results)
    for line in lines:
        click.echo(line)
    if failures:
        raise OneLineError(f"{ERROR_PREFIX}{failures} feature updates failed!")


@click.command(cls=AdminCommand, name="features")
@click.option("--bootstrap-server", help="REQUIRED: A comma-separated list of host:port pairs to use "
              "for establishing the connection to the Kafka cluster.")  # fmt: skip
@click.option("--command-config", metavar="FILE", help="Property file containing configs to be "
              "passed to Admin Client. This is used with --bootstrap-server option when required.")  # fmt: skip
@click.option(
    "--describe",
    is_flag=True,
    help="Describe supported and finalized features from a random broker.",
)
@click.option("--upgrade-all", is_flag=True, help="Upgrades all finalized features to the maximum "
              "version levels known to the tool. This command finalizes new features known to the "
              "tool that were never finalized previously in the cluster, but it is guaranteed to not "
              "delete any existing feature.")  # fmt: skip
@click.option("--downgrade-all", is_flag=True, help="Downgrades all finalized features to the "
              "maximum version levels known to the tool. This command deletes unknown features from "
              "the list of finalized features in the cluster, but it is guaranteed to not add a new "
              "feature.")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Performs a dry-run of upgrade/downgrade mutations to "
              "finalized feature without applying them.")  # fmt: skip
def command(
    bootstrap_server: str | None, command_config: str | None, describe: bool,
    upgrade_all: bool, downgrade_all: bool, dry_run: bool,
) -> None:  # fmt: skip
    """This tool describes and updates finalized features."""
    actions = [name for name, on in (("describe", describe), ("upgrade-all", upgrade_all),
                                      ("downgrade-all", downgrade_all)) if on]  # fmt: skip
    if len(actions) != 1:
        raise OneLineError(
            "Command must include exactly one action: --describe, --upgrade-all, --downgrade-all."
        )
    if bootstrap_server is None:
        raise OneLineError('Missing required argument "[bootstrap-server]"')
    if dry_run and actions[0] == "describe":
        raise OneLineError("Command can contain --dry-run option only when either --upgrade-all "
                           "or --downgrade-all actions are provided.")  # fmt: skip
    options = load_command_config(command_config, lambda line: click.echo(line, err=True))
    supported = BrokerFeatures.create_default().supported_features

    async def main() -> None:
        client_options = {"client_id": "kafpy-features", **options}
        async with AdminClient.connect(bootstrap_server, **client_options) as admin:
            await _run(admin, actions[0], dry_run, supported)

    run_command(main, ERROR_PREFIX)

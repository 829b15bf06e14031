"""`kafpy features`: Kafka 2.8 FeatureCommand's output lines and option checks."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kafpy.cli.features import (
    command,
    describe_lines,
    downgrade_all_updates,
    dry_run_text,
    result_lines,
    upgrade_all_updates,
)
from kafpy.client.admin_client import FeatureMetadata, FeatureUpdate
from kafpy.common.errors import InvalidRequestError
from kafpy.common.features import SupportedVersionRange

META = FeatureMetadata(
    finalized_features={"a": (1, 2), "old": (1, 1)},
    finalized_features_epoch=7,
    supported_features={"a": (1, 3), "b": (1, 1)},
)
TOOL = {"a": SupportedVersionRange(1, 3), "new": SupportedVersionRange(1, 2)}


def test_describe_lines_are_kafkas() -> None:
    assert describe_lines(META) == [
        "Feature: a\tSupportedMinVersion: 1\tSupportedMaxVersion: 3"
        "\tFinalizedMinVersionLevel: 1\tFinalizedMaxVersionLevel: 2\tEpoch: 7",
        "Feature: b\tSupportedMinVersion: 1\tSupportedMaxVersion: 1"
        "\tFinalizedMinVersionLevel: -\tFinalizedMaxVersionLevel: -\tEpoch: 7",
        "Feature: old\tSupportedMinVersion: -\tSupportedMaxVersion: -"
        "\tFinalizedMinVersionLevel: 1\tFinalizedMaxVersionLevel: 1\tEpoch: 7",
    ]
    assert describe_lines(FeatureMetadata({}, None, {})) == []  # Kafka 2.8: no features


def test_upgrade_all() -> None:
    updates = upgrade_all_updates(META, TOOL)
    assert updates == {
        "a": ("  [Upgrade]\tFeature: a\tExistingFinalizedMaxVersion: 2\tNewFinalizedMaxVersion: 3",
              FeatureUpdate(3, False)),
        "new": ("      [Add]\tFeature: new\tExistingFinalizedMaxVersion: -\tNewFinalizedMaxVersion: 2",
                FeatureUpdate(2, False)),
    }  # fmt: skip
    assert dry_run_text(updates) == (
        "Expected feature updates:  [Upgrade]\tFeature: a\tExistingFinalizedMaxVersion: 2"
        "\tNewFinalizedMaxVersion: 3\n      [Add]\tFeature: new\tExistingFinalizedMaxVersion: -"
        "\tNewFinalizedMaxVersion: 2"
    )


def test_downgrade_all() -> None:
    meta = FeatureMetadata({"a": (1, 5), "old": (1, 1)}, 7, {})
    updates = downgrade_all_updates(meta, TOOL)
    assert updates == {
        "a": ("[Downgrade]\tFeature: a\tExistingFinalizedMaxVersion: 5\tNewFinalizedMaxVersion: 3",
              FeatureUpdate(3, True)),
        "old": ("   [Delete]\tFeature: old\tExistingFinalizedMaxVersion: 1\tNewFinalizedMaxVersion: -",
                FeatureUpdate(0, True)),
    }  # fmt: skip
    lines, failures = result_lines(updates, {"a": None, "old": InvalidRequestError("nope")})
    assert failures == 1
    assert lines[0].endswith("\tResult: OK")
    assert lines[1].endswith("\tResult: FAILED due to InvalidRequestError: nope")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bootstrap-server", "h:1"], "Command must include exactly one action"),
        (["--bootstrap-server", "h:1", "--describe", "--upgrade-all"], "exactly one action"),
        (["--describe"], "bootstrap-server"),
        (["--bootstrap-server", "h:1", "--describe", "--dry-run"], "--dry-run option only when"),
    ],
)
def test_option_errors(args: list[str], message: str) -> None:
    result = CliRunner().invoke(command, args)
    assert result.exit_code != 0 and message in result.output


def test_unreachable_cluster_is_one_line() -> None:
    result = CliRunner().invoke(command, ["--bootstrap-server", "127.0.0.1:1", "--describe"])
    assert result.exit_code == 1
    assert result.output.startswith("Error encountered when executing command: ")
    assert result.output.count("\n") == 1

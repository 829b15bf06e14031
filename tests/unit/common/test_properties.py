"""Tests of the Java properties reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafpy.common.properties import PropertiesError, load_properties, parse_properties


def test_separators_comments_and_continuations() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "broker.id=0\n"
        "listeners : PLAINTEXT://127.0.0.1:9092\n"
        "log.dirs /tmp/a,\\\n"
        "    /tmp/b\n"
        "empty=\n"
        "path=C:\\\\kafka\\tdir\n"
        "uni=\\u0041B\n"
    )
    props = parse_properties(text)
    assert props == {
        "broker.id": "0",
        "listeners": "PLAINTEXT://127.0.0.1:9092",
        "log.dirs": "/tmp/a,/tmp/b",
        "empty": "",
        "path": "C:\\kafka\tdir",
        "uni": "AB",
    }


def test_later_key_wins() -> None:
    assert parse_properties("a=1\na=2\n") == {"a": "2"}


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.properties"
    with pytest.raises(PropertiesError, match="nope.properties"):
        load_properties(missing)

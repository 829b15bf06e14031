"""How the message browser shows bytes: pretty JSON, text with escapes, hex."""

from __future__ import annotations

import pytest

from kafpy.console.message_format import (
    MAX_SHOWN_BYTES,
    MessageFormat,
    pretty_json,
    show_bytes,
    to_hex,
    to_text,
)


def test_json_object_is_pretty_printed_in_auto_and_json_formats() -> None:
    data = b'{"id":1,"tags":["a","b"]}'
    for fmt in (MessageFormat.AUTO, MessageFormat.JSON):
        shown = show_bytes(data, fmt)
        assert shown.format == "json"
        assert shown.text == '{\n  "id": 1,\n  "tags": [\n    "a",\n    "b"\n  ]\n}'
        assert shown.size == len(data)


def test_json_keeps_non_ascii_characters() -> None:
    assert pretty_json('{"name":"Zoë"}'.encode()) == '{\n  "name": "Zoë"\n}'


def test_scalars_and_broken_json_are_not_json() -> None:
    assert pretty_json(b"42") is None
    assert pretty_json(b'{"a": ') is None
    assert show_bytes(b"42").format == "text"


def test_asking_for_json_of_text_falls_back_to_text_and_says_so() -> None:
    shown = show_bytes(b"hello", MessageFormat.JSON)
    assert (shown.format, shown.text, shown.note) == ("text", "hello", "not JSON")


def test_text_format_shows_json_as_it_is() -> None:
    assert show_bytes(b'{"a":1}', MessageFormat.TEXT).text == '{"a":1}'


def test_control_characters_are_escaped_in_text() -> None:
    assert to_text(b"a\x00b\x1b[31m\tc\n") == "a\\x00b\\x1b[31m\tc\n"


def test_bytes_that_are_not_utf8_are_shown_as_hex() -> None:
    shown = show_bytes(b"\xff\xfe<b>")
    assert shown.format == "hex"
    assert shown.text == "00000000  ff fe 3c 62 3e"
    assert show_bytes(b"\xff", MessageFormat.TEXT).note == "not UTF-8 text"


def test_hex_lines_hold_16_bytes_with_their_offset() -> None:
    assert to_hex(bytes(range(18))).splitlines() == [
        "00000000  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f",
        "00000010  10 11",
    ]
    assert show_bytes(b"ab", MessageFormat.HEX).text == "00000000  61 62"


def test_null_and_empty() -> None:
    assert show_bytes(None).format == "null"
    assert show_bytes(None).text is None
    assert show_bytes(b"").text == ""


def test_large_values_are_cut_and_marked() -> None:
    shown = show_bytes(b"x" * (MAX_SHOWN_BYTES + 10))
    assert shown.truncated
    assert shown.size == MAX_SHOWN_BYTES + 10
    assert shown.text is not None and len(shown.text) == MAX_SHOWN_BYTES


def test_format_parameter() -> None:
    assert MessageFormat.parse(None) is MessageFormat.AUTO
    assert MessageFormat.parse("HEX") is MessageFormat.HEX
    with pytest.raises(ValueError, match="Unknown format 'xml': use one of auto, text, json, hex"):
        MessageFormat.parse("xml")

"""Tests for ConfigDef: parsing from strings, validators, and Kafka's error wording."""

from __future__ import annotations

import pytest

from kafpy.common.config_def import (
    LONG_MAX,
    NO_DEFAULT,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    LambdaValidator,
    NonEmptyString,
    Range,
    ValidList,
    ValidString,
    format_value,
    parse_type,
)
from kafpy.common.errors import InvalidConfigurationError


@pytest.mark.parametrize(
    ("type_", "raw", "expected"),
    [
        (ConfigType.INT, " 42 ", 42),
        (ConfigType.INT, "-7", -7),
        (ConfigType.LONG, str(LONG_MAX), LONG_MAX),
        (ConfigType.SHORT, "3", 3),
        (ConfigType.DOUBLE, "0.25", 0.25),
        (ConfigType.DOUBLE, 1, 1.0),
        (ConfigType.BOOLEAN, "TRUE", True),
        (ConfigType.BOOLEAN, " false", False),
        (ConfigType.BOOLEAN, True, True),
        (ConfigType.STRING, "  x  ", "x"),
        (ConfigType.LIST, "a, b ,c", ["a", "b", "c"]),
        (ConfigType.LIST, "", []),
        (ConfigType.LIST, ["a", "b"], ["a", "b"]),
        (ConfigType.CLASS, "org.x.Y", "org.x.Y"),
    ],
)
def test_parse_type(type_: ConfigType, raw: object, expected: object) -> None:
    assert parse_type("k", raw, type_) == expected


@pytest.mark.parametrize(
    ("type_", "raw", "message"),
    [
        (ConfigType.INT, "abc", "Invalid value abc for configuration k: Not a number of type INT"),
        (ConfigType.INT, str(2**31), "Not a number of type INT"),
        (ConfigType.LONG, "1.5", "Not a number of type LONG"),
        (ConfigType.SHORT, "40000", "Not a number of type SHORT"),
        (ConfigType.DOUBLE, "x", "Not a number of type DOUBLE"),
        (ConfigType.BOOLEAN, "yes", "Expected value to be either true or false"),
        (ConfigType.INT, True, "Not a number of type INT"),
    ],
)
def test_parse_type_errors(type_: ConfigType, raw: object, message: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=message):
        parse_type("k", raw, type_)


def test_range_messages() -> None:
    r = Range.at_least(-1)
    r.ensure_valid("retention.ms", -1)
    with pytest.raises(InvalidConfigurationError) as e:
        r.ensure_valid("retention.ms", -5)
    assert (
        str(e.value) == "Invalid value -5 for configuration retention.ms: Value must be at least -1"
    )
    with pytest.raises(InvalidConfigurationError, match="Value must be no more than 1"):
        Range.between(0, 1).ensure_valid("ratio", 1.5)


def test_valid_string_and_list() -> None:
    ValidString("a", "b").ensure_valid("k", "a")
    with pytest.raises(InvalidConfigurationError, match="String must be one of: a, b"):
        ValidString("a", "b").ensure_valid("k", "A")
    CaseInsensitiveValidString("PLAINTEXT").ensure_valid("k", "plaintext")
    ValidList("compact", "delete").ensure_valid("cleanup.policy", ["delete", "compact"])
    with pytest.raises(InvalidConfigurationError) as e:
        ValidList("compact", "delete").ensure_valid("cleanup.policy", ["delete", "foo"])
    assert str(e.value) == (
        "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete"
    )


def test_non_empty_and_lambda() -> None:
    with pytest.raises(InvalidConfigurationError, match="String must be non-empty"):
        NonEmptyString().ensure_valid("k", "")
    v = LambdaValidator(lambda x: None if x == 1 else "must be one")
    v.ensure_valid("k", 1)
    with pytest.raises(
        InvalidConfigurationError, match="Invalid value 2 for configuration k: must be one"
    ):
        v.ensure_valid("k", 2)


def _def() -> ConfigDef:
    return (
        ConfigDef()
        .define("a.int", ConfigType.INT, 5, Range.at_least(0))
        .define("b.list", ConfigType.LIST, "x,y")
        .define("c.required", ConfigType.STRING, NO_DEFAULT, NonEmptyString())
        .define("d.nullable", ConfigType.LONG, None)
    )


def test_parse_fills_defaults_and_parses_given() -> None:
    values = _def().parse({"c.required": "v", "a.int": "7", "unrelated": "1"})
    assert values == {"a.int": 7, "b.list": ["x", "y"], "c.required": "v", "d.nullable": None}


def test_parse_missing_required() -> None:
    with pytest.raises(InvalidConfigurationError) as e:
        _def().parse({})
    assert str(e.value) == 'Missing required configuration "c.required" which has no default value.'


def test_parse_unknown_rejected_when_asked() -> None:
    with pytest.raises(InvalidConfigurationError, match="Unknown configuration name: zz"):
        _def().parse({"c.required": "v", "zz": "1"}, ignore_unknown=False)


def test_parse_validates() -> None:
    with pytest.raises(InvalidConfigurationError, match="Invalid value -1 for configuration a.int"):
        _def().parse({"c.required": "v", "a.int": "-1"})


def test_defaults_are_validated_and_not_shared() -> None:
    d = _def()
    first = d.default_values()["b.list"]
    first.append("z")
    assert d.default_values()["b.list"] == ["x", "y"]
    with pytest.raises(InvalidConfigurationError):
        ConfigDef().define("bad", ConfigType.INT, -1, Range.at_least(0))
    with pytest.raises(ValueError, match="defined twice"):
        ConfigDef().define("a", ConfigType.INT, 1).define("a", ConfigType.INT, 1)


def test_format_value_like_java() -> None:
    assert format_value(True) == "true"
    assert format_value(["a", "b"]) == "[a, b]"
    assert format_value(None) == "null"

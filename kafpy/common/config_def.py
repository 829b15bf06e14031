"""Configuration definitions in the manner of Kafka's ConfigDef.

A `ConfigDef` declares keys (name, type, default, validator, importance, doc) and turns
raw values -- strings from a properties file or ZooKeeper JSON, or Python values from
code -- into typed, validated values. Errors are `InvalidConfigurationError`s worded as
Kafka words them: `Invalid value 5 for configuration retention.ms: Value must be at least -1`.

Topic configs (`kafpy.storage.log_config`) and the broker's server.properties both use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from kafpy.common.errors import InvalidConfigurationError

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1

_COMMA_WITH_WHITESPACE = re.compile(r"\s*,\s*")


class ConfigSource(Protocol):
    """What a component's typed config reads its keys from: the broker's KafkaConfig, whose
    `get` returns a key's parsed value."""

    def get(self, key: str) -> Any: ...


class ConfigType(Enum):
    """The value types Kafka's ConfigDef knows."""

    BOOLEAN = "BOOLEAN"
    STRING = "STRING"
    INT = "INT"
    SHORT = "SHORT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    CLASS = "CLASS"
    PASSWORD = "PASSWORD"


class Importance(Enum):
    """How much a user should care about a key (documentation only)."""

    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()
"""Marks a required key: parsing fails when it is missing."""


def format_value(value: object) -> str:
    """A value as Kafka prints it in messages (Java's toString: lists as `[a, b]`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if value is None:
        return "null"
    return str(value)


def config_error(name: str, value: object, message: str | None = None) -> InvalidConfigurationError:
    """Kafka's ConfigException(name, value, message) wording."""
    text = f"Invalid value {format_value(value)} for configuration {name}"
    if message:
        text += f": {message}"
    return InvalidConfigurationError(text)


class Validator:
    """Checks a parsed value; raises InvalidConfigurationError when it is not allowed."""

    def ensure_valid(self, name: str, value: object) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        return ""


class Range(Validator):
    """A number in [min, max]; either bound may be None (open)."""

    def __init__(self, min: float | None = None, max: float | None = None) -> None:
        self.min = min
        self.max = max

    @classmethod
    def at_least(cls, min: float) -> Range:
        return cls(min, None)

    @classmethod
    def between(cls, min: float, max: float) -> Range:
        return cls(min, max)

    def ensure_valid(self, name: str, value: object) -> None:
        if value is None:
            raise config_error(name, value, "Value must be non-null")
        assert isinstance(value, int | float)
        if self.min is not None and value < self.min:
            raise config_error(name, value, f"Value must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise config_error(name, value, f"Value must be no more than {self.max}")

    def describe(self) -> str:
        if self.min is None:
            return f"[...,{self.max}]"
        if self.max is None:
            return f"[{self.min},...]"
        return f"[{self.min},...,{self.max}]"


class ValidString(Validator):
    """One of a fixed set of strings (case-sensitive, as Kafka's ValidString.in)."""

    def __init__(self, *valid: str) -> None:
        self.valid = list(valid)

    def ensure_valid(self, name: str, value: object) -> None:
        if value not in self.valid:
            raise config_error(name, value, f"String must be one of: {', '.join(self.valid)}")

    def describe(self) -> str:
        return "[" + ", ".join(self.valid) + "]"


class CaseInsensitiveValidString(ValidString):
    """One of a fixed set of strings, ignoring case."""

    def ensure_valid(self, name: str, value: object) -> None:
        if not isinstance(value, str) or value.upper() not in {v.upper() for v in self.valid}:
            raise config_error(
                name, value, f"String must be one of (case insensitive): {', '.join(self.valid)}"
            )


class ValidList(Validator):
    """A list whose every element is one of a fixed set of strings."""

    def __init__(self, *valid: str) -> None:
        self._element = ValidString(*valid)

    def ensure_valid(self, name: str, value: object) -> None:
        assert isinstance(value, list)
        for item in value:
            self._element.ensure_valid(name, item)

    def describe(self) -> str:
        return self._element.describe()


class NonEmptyString(Validator):
    """A string with at least one character."""

    def ensure_valid(self, name: str, value: object) -> None:
        if not value:
            raise config_error(name, value, "String must be non-empty")

    def describe(self) -> str:
        return "non-empty string"


class LambdaValidator(Validator):
    """A validator from a function returning an error message, or None when the value is fine."""

    def __init__(self, check: Callable[[object], str | None], description: str = "") -> None:
        self._check = check
        self._description = description

    def ensure_valid(self, name: str, value: object) -> None:
        message = self._check(value)
        if message is not None:
            raise config_error(name, value, message)

    def describe(self) -> str:
        return self._description


@dataclass(frozen=True)
class ConfigKey:
    """One declared key. `server_default_property` names the broker key it defaults from."""

    name: str
    type: ConfigType
    default: Any
    validator: Validator | None
    importance: Importance
    doc: str
    server_default_property: str | None = None

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


def _parse_int(name: str, value: object, type_: ConfigType, lo: int, hi: int) -> int:
    if isinstance(value, bool):
        raise config_error(name, value, f"Not a number of type {type_.value}")
    if isinstance(value, int):
        parsed = value
    elif isinstance(value, str):
        text = value.strip()
        # Java's parseInt/parseLong: optional sign then decimal digits only
        if not re.fullmatch(r"[+-]?\d+", text):
            raise config_error(name, value, f"Not a number of type {type_.value}")
        parsed = int(text)
    else:
        raise config_error(
            name, value, f"Expected value to be a {type_.value} but it was a {type(value).__name__}"
        )
    if not lo <= parsed <= hi:
        raise config_error(name, value, f"Not a number of type {type_.value}")
    return parsed


def parse_type(name: str, value: object, type_: ConfigType) -> Any:
    """Convert `value` (a string or an already-typed value) to `type_`, as ConfigDef.parseType."""
    if value is None:
        return None
    if type_ is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        if isinstance(value, str):
            text = value.strip().lower()
            if text == "true":
                return True
            if text == "false":
                return False
        raise config_error(name, value, "Expected value to be either true or false")
    if type_ in (ConfigType.STRING, ConfigType.CLASS, ConfigType.PASSWORD):
        if isinstance(value, str):
            return value.strip()
        raise config_error(
            name, value, f"Expected value to be a string, but it was a {type(value).__name__}"
        )
    if type_ is ConfigType.INT:
        return _parse_int(name, value, type_, INT_MIN, INT_MAX)
    if type_ is ConfigType.SHORT:
        return _parse_int(name, value, type_, SHORT_MIN, SHORT_MAX)
    if type_ is ConfigType.LONG:
        return _parse_int(name, value, type_, LONG_MIN, LONG_MAX)
    if type_ is ConfigType.DOUBLE:
        if isinstance(value, bool):
            raise config_error(name, value, "Not a number of type DOUBLE")
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise config_error(name, value, "Not a number of type DOUBLE") from None
        raise config_error(
            name, value, f"Expected value to be a double, but it was a {type(value).__name__}"
        )
    if type_ is ConfigType.LIST:
        if isinstance(value, str):
            text = value.strip()
            return [] if not text else _COMMA_WITH_WHITESPACE.split(text)
        if isinstance(value, Sequence):
            return [str(v) for v in value]
        raise config_error(name, value, "Expected a comma separated list.")
    raise AssertionError(f"unknown config type {type_}")


class ConfigDef:
    """A set of declared config keys; parses and validates raw values against them.

    `define()` returns the ConfigDef so definitions chain, as in Kafka.
    """

    def __init__(self, keys: Mapping[str, ConfigKey] | None = None) -> None:
        self._keys: dict[str, ConfigKey] = dict(keys or {})

    def define(
        self,
        name: str,
        type: ConfigType,
        default: Any = NO_DEFAULT,
        validator: Validator | None = None,
        importance: Importance = Importance.MEDIUM,
        doc: str = "",
        server_default_property: str | None = None,
    ) -> ConfigDef:
        if name in self._keys:
            raise ValueError(f"Configuration {name} is defined twice.")
        parsed_default = default
        if default is not NO_DEFAULT:
            parsed_default = parse_type(name, default, type)
            if validator is not None and parsed_default is not None:
                validator.ensure_valid(name, parsed_default)
        self._keys[name] = ConfigKey(
            name, type, parsed_default, validator, importance, doc, server_default_property
        )
        return self

    @property
    def config_keys(self) -> Mapping[str, ConfigKey]:
        return self._keys

    def names(self) -> list[str]:
        return sorted(self._keys)

    def __contains__(self, name: object) -> bool:
        return name in self._keys

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self._keys.values())

    def key(self, name: str) -> ConfigKey:
        return self._keys[name]

    def default(self, name: str) -> Any:
        """The declared default of key `name`, parsed: the one value a typed settings class
        (ControllerConfig, CleanerConfig...) takes for a setting nobody gave."""
        key = self._keys[name]
        if not key.has_default:
            raise ValueError(f"Configuration {name} has no default value.")
        return _copy(key.default)

    def default_values(self) -> dict[str, Any]:
        """Every key that has a default, with it (required keys are left out)."""
        return {k.name: _copy(k.default) for k in self._keys.values() if k.has_default}

    def parse_value(self, name: str, value: object) -> Any:
        """Parse and validate one value for the declared key `name`."""
        key = self._keys[name]
        parsed = parse_type(name, value, key.type)
        if key.validator is not None and parsed is not None:
            key.validator.ensure_valid(name, parsed)
        return parsed

    def parse(self, props: Mapping[str, object], *, ignore_unknown: bool = True) -> dict[str, Any]:
        """All declared keys, typed: the value in `props` or the default.

        Unknown keys in `props` are ignored (as Kafka's AbstractConfig does) unless
        `ignore_unknown` is False, when they raise InvalidConfigurationError. A missing
        required key raises `Missing required configuration "x" which has no default value.`
        """
        if not ignore_unknown:
            for name in props:
                if name not in self._keys:
                    raise InvalidConfigurationError(f"Unknown configuration name: {name}")
        values: dict[str, Any] = {}
        for key in self._keys.values():
            if key.name in props:
                values[key.name] = self.parse_value(key.name, props[key.name])
            elif key.has_default:
                values[key.name] = _copy(key.default)
            else:
                raise InvalidConfigurationError(
                    f'Missing required configuration "{key.name}" which has no default value.'
                )
        return values


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value

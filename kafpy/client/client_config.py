"""What kafpy's producer and consumer configs share: reading one property as a typed value,
and the structured error a bad value raises.

`ProducerConfig` and `ConsumerConfig` (Kafka's names) declare their keys with a `ConfigDef`;
`ClientConfig` reads a tool's raw properties through such a definition. A bad value raises
`ClientConfigError` naming the key, the value as given and what was expected, so that each
tool (console producer, perf tests, the Spark source) words it in its own sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any

from kafpy.common.config_def import ConfigDef, ConfigType, parse_type
from kafpy.common.errors import InvalidConfigurationError

_INTEGER_TYPES = (ConfigType.INT, ConfigType.LONG, ConfigType.SHORT)


class Expected(Enum):
    """What a rejected client config value should have been."""

    NUMBER = "a number"
    AT_LEAST = "a number at least the minimum"
    VALID = "a value Kafka's validator accepts"


class ClientConfigError(ValueError):
    """A client config value that cannot be taken: `key`, `value` as given, what was
    `expected`, and with it the `minimum` (Expected.AT_LEAST, `parsed` holds the number) or
    Kafka's `detail` sentence (Expected.VALID)."""

    def __init__(
        self,
        key: str,
        value: str,
        expected: Expected,
        *,
        minimum: int | None = None,
        parsed: int | None = None,
        detail: str = "",
    ) -> None:
        self.key = key
        self.value = value
        self.expected = expected
        self.minimum = minimum
        self.parsed = parsed
        self.detail = detail
        super().__init__(
            detail or f"Invalid value {value} for configuration {key}: expected {expected.value}"
        )


class ClientConfig:
    """A client's raw properties read through the `ConfigDef` of its kind (Kafka's
    AbstractConfig for ProducerConfig and ConsumerConfig).

    The getters read one declared key: the value given, else the tool's own default when it
    passes one, else Kafka's default. Numbers are read as kafpy's tools always read them
    (Python's `int` of the stripped text) and checked against the minimum the tool asks
    for; `validate()` applies Kafka's own types and validators to every key given.
    """

    definition: ConfigDef

    def __init__(self, props: Mapping[str, str]) -> None:
        self.props = dict(props)

    def _declared(self, key: str) -> None:
        if key not in self.definition:
            raise KeyError(f"{key} is not a config key of {type(self).__name__}")

    def get_int(self, key: str, default: int | None = None, *, minimum: int | None = None) -> int:
        """The integer `key`; ClientConfigError when it is not a number or below `minimum`."""
        self._declared(key)
        raw = self.props.get(key)
        if raw is None:
            return int(self.definition.default(key) if default is None else default)
        try:
            value = int(raw.strip())
        except ValueError:
            raise ClientConfigError(key, raw, Expected.NUMBER) from None
        if minimum is not None and value < minimum:
            raise ClientConfigError(key, raw, Expected.AT_LEAST, minimum=minimum, parsed=value)
        return value

    def get_string(self, key: str, default: str | None = None) -> str:
        """The string `key` as given (not stripped)."""
        self._declared(key)
        raw = self.props.get(key)
        if raw is not None:
            return raw
        value = self.definition.default(key) if default is None else default
        if value is None:
            raise ValueError(f"{key} has no default: read it from the properties")
        return str(value)

    def get_bool(self, key: str, default: bool | None = None) -> bool:
        """The boolean `key`: true only when it says true (any case, spaces around ignored)."""
        self._declared(key)
        raw = self.props.get(key)
        if raw is None:
            return bool(self.definition.default(key) if default is None else default)
        return raw.strip().lower() == "true"

    def unknown(self) -> list[str]:
        """The keys given that this kind of config does not declare, sorted."""
        return sorted(k for k in self.props if k not in self.definition)

    def validate(self) -> dict[str, Any]:
        """Every declared key given, parsed and validated as Kafka does; ClientConfigError
        (Expected.NUMBER for a number that is not one, else Expected.VALID) on the first bad
        one."""
        values: dict[str, Any] = {}
        for key, raw in self.props.items():
            if key not in self.definition:
                continue
            config_key = self.definition.key(key)
            try:
                parse_type(key, raw, config_key.type)
            except InvalidConfigurationError as e:
                expected = Expected.NUMBER if config_key.type in _INTEGER_TYPES else Expected.VALID
                raise ClientConfigError(key, raw, expected, detail=str(e)) from None
            try:
                values[key] = self.definition.parse_value(key, raw)
            except InvalidConfigurationError as e:
                raise ClientConfigError(key, raw, Expected.VALID, detail=str(e)) from None
        return values

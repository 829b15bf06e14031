"""Compatibility levels, and checking a new schema against a subject's earlier versions.

Confluent's levels: BACKWARD (the new schema reads data written with the latest one),
FORWARD (the latest reads the new one's data), FULL (both), their *_TRANSITIVE forms
(against every earlier version, not only the latest) and NONE. What "reads" means is the
format's own rule (avro_compatibility.py, json_schema.py).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol


class CompatibilityLevel(enum.Enum):
    """A subject's (or the registry's) compatibility level."""

    NONE = "NONE"
    BACKWARD = "BACKWARD"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD = "FORWARD"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL = "FULL"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @classmethod
    def for_name(cls, name: object) -> CompatibilityLevel | None:
        """The level named `name` (any case), None if there is none."""
        if not isinstance(name, str):
            return None
        try:
            return cls(name.strip().upper())
        except ValueError:
            return None

    @property
    def transitive(self) -> bool:
        return self.name.endswith("_TRANSITIVE")

    @property
    def backward(self) -> bool:
        return self.name.startswith(("BACKWARD", "FULL"))

    @property
    def forward(self) -> bool:
        return self.name.startswith(("FORWARD", "FULL"))


class ParsedSchema(Protocol):
    """A schema of one format, parsed: its type, the form two equal schemas share, and how
    it reads data written with another schema of its format."""

    @property
    def schema_type(self) -> str: ...

    @property
    def canonical(self) -> str: ...

    @property
    def text(self) -> str:
        """The schema as stored and served (compact JSON)."""
        ...

    def read_errors(self, writer: ParsedSchema) -> list[str]:
        """Why this schema cannot read all data written with `writer` (empty: it can)."""
        ...


def compatibility_errors(
    level: CompatibilityLevel, new: ParsedSchema, previous: Sequence[ParsedSchema]
) -> list[str]:
    """Why `new` is not compatible at `level` with `previous` (oldest first; empty: it is)."""
    if level is CompatibilityLevel.NONE or not previous:
        return []
    against = list(previous) if level.transitive else [previous[-1]]
    errors: list[str] = []
    for old in reversed(against):
        if old.schema_type != new.schema_type:
            errors.append(f"Incompatible schema type: {new.schema_type} is not {old.schema_type}")
            continue
        if level.backward:
            errors.extend(new.read_errors(old))
        if level.forward:
            errors.extend(old.read_errors(new))
    return errors

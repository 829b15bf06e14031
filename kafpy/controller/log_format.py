"""Renders collections the way Kafka's Scala controller prints them in its logs.

Operators grep controller.log for Kafka's shapes (`New topics: [Set(t)], ...`,
`Map(t-0 -> Vector(1, 2, 0))`), so the controller's messages use the same renderings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafpy.common.logger import PrefixAdapter, component_logger
from kafpy.protocol.errors import Errors


def scala_set(items: Iterable[object]) -> str:
    """`Set(a, b)`; items sorted by their text so the line is stable."""
    return "Set(" + ", ".join(sorted(str(i) for i in items)) + ")"


def scala_vector(items: Sequence[object]) -> str:
    return "Vector(" + ", ".join(str(i) for i in items) + ")"


def scala_map(mapping: Mapping[Any, Any]) -> str:
    """`Map(k -> v, ...)`; a sequence value prints as a Vector."""

    def render(value: object) -> str:
        if isinstance(value, list | tuple):
            return scala_vector(value)
        return str(value)

    return "Map(" + ", ".join(f"{k} -> {render(v)}" for k, v in mapping.items()) + ")"


def comma_list(items: Iterable[object]) -> str:
    """`a,b,c` (Scala's mkString(","))."""
    return ",".join(str(i) for i in items)


def error_name(code: int) -> str:
    """An error code by its `Errors` name (`NOT_CONTROLLER`), or the number if unknown."""
    try:
        return Errors(code).name
    except ValueError:
        return str(code)


def controller_logger(controller_id: int) -> PrefixAdapter:
    """The logger of Kafka's KafkaController (`[Controller id=N] `): the controller and the
    parts split out of it (reassignment, elections, broker changes, deletion events) log
    their lines through it, as Kafka's one class does."""
    return component_logger("kafpy.controller.KafkaController", "Controller", controller_id)

"""Logging in Kafka's shape: `[2026-11-21 10:00:00,123] INFO [LogManager id=0] message (kafpy.log.LogManager)`.

Components get a logger through `component_logger(name, component, ident)`, which puts
the `[Component id=N] ` prefix in front of every message, as Kafka's `logIdent` does.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

KAFKA_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"


class KafkaLogFormatter(logging.Formatter):
    """Formats records as Kafka's log4j pattern `[%d] %p %m (%c)%n`."""

    def __init__(self) -> None:
        super().__init__(KAFKA_FORMAT)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        ct = self.converter(record.created)
        return f"{ct.tm_year:04d}-{ct.tm_mon:02d}-{ct.tm_mday:02d} {ct.tm_hour:02d}:{ct.tm_min:02d}:{ct.tm_sec:02d},{int(record.msecs):03d}"


class PrefixAdapter(logging.LoggerAdapter):  # type: ignore[type-arg]
    """Prefixes each message with a fixed log ident such as `[LogManager id=0] `."""

    def __init__(self, logger: logging.Logger, prefix: str) -> None:
        super().__init__(logger, {})
        self.prefix = prefix

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        return f"{self.prefix}{msg}", kwargs


def component_logger(
    name: str, component: str | None = None, ident: object = None
) -> PrefixAdapter:
    """A logger named `name` whose messages start with `[component id=ident] `.

    With no component the prefix is empty; with a component and no ident it is `[component] `.
    """
    if component is None:
        prefix = ""
    elif ident is None:
        prefix = f"[{component}] "
    else:
        prefix = f"[{component} id={ident}] "
    return PrefixAdapter(logging.getLogger(name), prefix)


def configure_logging(
    level: int | str = logging.INFO, stream: Any = None, logs_dir: str | Path | None = None
) -> None:
    """Send kafpy's logs to `stream` (stderr by default) in Kafka's format, and to
    `<logs_dir>/server.log` as well when a logs dir is given."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(KafkaLogFormatter())
    handlers: list[logging.Handler] = [handler]
    if logs_dir is not None:
        Path(logs_dir).mkdir(parents=True, exist_ok=True)
        file_handler = logging.FileHandler(Path(logs_dir) / "server.log", encoding="utf-8")
        file_handler.setFormatter(KafkaLogFormatter())
        handlers.append(file_handler)
    root = logging.getLogger("kafpy")
    root.handlers[:] = handlers
    root.setLevel(level)
    root.propagate = False

"""Logging in Kafka's shape: `[2026-11-21 10:00:00,123] INFO [LogManager id=0] message (kafpy.log.LogManager)`.

Components get a logger through `component_logger(name, component, ident)`, which puts
the `[Component id=N] ` prefix in front of every message, as Kafka's `logIdent` does.

Where the lines go is configured as Kafka's `config/log4j.properties` configures log4j:
`log4j.rootLogger=LEVEL, appender, ...`, `log4j.logger.<name>=LEVEL[, appender, ...]`,
`log4j.additivity.<name>=false` and `log4j.appender.<name>` entries (ConsoleAppender,
FileAppender, DailyRollingFileAppender with its DatePattern, RollingFileAppender with
MaxFileSize and MaxBackupIndex). `load_logging_config` reads such a file; without one the
broker uses `DEFAULT_LOG4J_PROPERTIES`, the same layout as the shipped
`config/log4j.properties` and Kafka's: server.log, controller.log, state-change.log,
log-cleaner.log and kafka-authorizer.log, rolled every hour.

kafpy's logger names are Kafka's with `kafpy` for `kafka` (`kafpy.controller`,
`kafpy.log.LogCleaner`, `kafpy.state.change.logger`); a file written for Kafka may name
them `kafka.*` or `state.change.logger`. The root logger of the file is kafpy's top logger
`kafpy` (other libraries' loggers are left alone). `${kafka.logs.dir}` is the `LOG_DIR`
directory, as Kafka's scripts set it; without one, appenders writing under it are left out
and the lines go to the console only.
"""

from __future__ import annotations

import logging
import logging.handlers
import re
import sys
import time
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafpy.common.properties import load_properties

KAFKA_FORMAT = "[%(asctime)s] %(levelname)s %(message)s (%(name)s)"

TRACE = 5
"""log4j's TRACE, below Python's DEBUG."""
logging.addLevelName(TRACE, "TRACE")

LOG4J_LEVELS: Mapping[str, int] = {
    "ALL": 1,
    "TRACE": TRACE,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 10,
}
# the level names log4j prints where Python's differ
_LOG4J_LEVEL_NAMES = {logging.WARNING: "WARN", logging.CRITICAL: "FATAL"}

ROOT_LOGGER = "kafpy"

DEFAULT_LOG4J_PROPERTIES: Mapping[str, str] = {
    "log4j.rootLogger": "INFO, stdout, kafkaAppender",
    "log4j.appender.stdout": "org.apache.log4j.ConsoleAppender",
    "log4j.appender.kafkaAppender": "org.apache.log4j.DailyRollingFileAppender",
    "log4j.appender.kafkaAppender.DatePattern": "'.'yyyy-MM-dd-HH",
    "log4j.appender.kafkaAppender.File": "${kafka.logs.dir}/server.log",
    "log4j.appender.stateChangeAppender": "org.apache.log4j.DailyRollingFileAppender",
    "log4j.appender.stateChangeAppender.DatePattern": "'.'yyyy-MM-dd-HH",
    "log4j.appender.stateChangeAppender.File": "${kafka.logs.dir}/state-change.log",
    "log4j.appender.cleanerAppender": "org.apache.log4j.DailyRollingFileAppender",
    "log4j.appender.cleanerAppender.DatePattern": "'.'yyyy-MM-dd-HH",
    "log4j.appender.cleanerAppender.File": "${kafka.logs.dir}/log-cleaner.log",
    "log4j.appender.controllerAppender": "org.apache.log4j.DailyRollingFileAppender",
    "log4j.appender.controllerAppender.DatePattern": "'.'yyyy-MM-dd-HH",
    "log4j.appender.controllerAppender.File": "${kafka.logs.dir}/controller.log",
    "log4j.appender.authorizerAppender": "org.apache.log4j.DailyRollingFileAppender",
    "log4j.appender.authorizerAppender.DatePattern": "'.'yyyy-MM-dd-HH",
    "log4j.appender.authorizerAppender.File": "${kafka.logs.dir}/kafka-authorizer.log",
    "log4j.logger.kafpy": "INFO",
    "log4j.logger.kafpy.controller": "TRACE, controllerAppender",
    "log4j.additivity.kafpy.controller": "false",
    "log4j.logger.kafpy.log.LogCleaner": "INFO, cleanerAppender",
    "log4j.additivity.kafpy.log.LogCleaner": "false",
    "log4j.logger.kafpy.state.change.logger": "INFO, stateChangeAppender",
    "log4j.additivity.kafpy.state.change.logger": "false",
    "log4j.logger.kafpy.authorizer.logger": "INFO, authorizerAppender",
    "log4j.additivity.kafpy.authorizer.logger": "false",
}
"""The logging layout without a config file: Kafka's config/log4j.properties."""


class LoggingConfigError(ValueError):
    """A logging configuration that cannot be applied; the message names the key."""


class KafkaLogFormatter(logging.Formatter):
    """Formats records as Kafka's log4j pattern `[%d] %p %m (%c)%n` (levels as log4j spells them)."""

    def __init__(self) -> None:
        super().__init__(KAFKA_FORMAT)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        ct = self.converter(record.created)
        return f"{ct.tm_year:04d}-{ct.tm_mon:02d}-{ct.tm_mday:02d} {ct.tm_hour:02d}:{ct.tm_min:02d}:{ct.tm_sec:02d},{int(record.msecs):03d}"

    def format(self, record: logging.LogRecord) -> str:
        name = _LOG4J_LEVEL_NAMES.get(record.levelno)
        if name is None:
            return super().format(record)
        saved, record.levelname = record.levelname, name
        try:
            return super().format(record)
        finally:
            record.levelname = saved


class DailyRollingFileHandler(logging.handlers.TimedRotatingFileHandler):
    """log4j's DailyRollingFileAppender: rolls the file at the start of every period of its
    DatePattern (`'.'yyyy-MM-dd-HH`: every hour, on the hour), renaming it to the file name
    plus the pattern of the period it holds (`server.log.2026-11-21-10`); nothing is deleted."""

    def __init__(self, filename: str | Path, date_pattern: str = "'.'yyyy-MM-dd-HH") -> None:
        suffix, when = _parse_date_pattern(date_pattern)
        super().__init__(filename, when=when, encoding="utf-8")
        self.suffix = suffix
        self.date_pattern = date_pattern

    def computeRollover(self, currentTime: float) -> int:
        """The start of the next period, on the clock (log4j rolls on the hour, not an hour
        after the file was opened)."""
        t = time.localtime(currentTime)
        if self.when == "M":
            start = time.mktime((*t[:5], 0, 0, 0, -1))
        elif self.when == "H":
            start = time.mktime((*t[:4], 0, 0, 0, 0, -1))
        else:
            start = time.mktime((*t[:3], 0, 0, 0, 0, 0, -1))
        return int(start + self.interval)


_DATE_TOKENS = (("yyyy", "%Y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"))


def _parse_date_pattern(pattern: str) -> tuple[str, str]:
    """A DatePattern such as `'.'yyyy-MM-dd-HH` as (strftime suffix after the '.', period)."""
    text = pattern.strip()
    if not text.startswith("'.'"):
        raise LoggingConfigError(
            f"DatePattern {pattern}: kafpy supports patterns starting with '.' "
            "(such as '.'yyyy-MM-dd-HH)"
        )
    rest = text[3:]
    suffix = rest
    for token, directive in _DATE_TOKENS:
        suffix = suffix.replace(token, directive)
    if re.search(r"[A-Za-z]", re.sub(r"%[YmdHM]", "", suffix)):
        raise LoggingConfigError(
            f"DatePattern {pattern}: only yyyy, MM, dd, HH and mm are supported"
        )
    if "mm" in rest:
        return suffix, "M"
    if "HH" in rest:
        return suffix, "H"
    if "dd" in rest:
        return suffix, "MIDNIGHT"
    raise LoggingConfigError(f"DatePattern {pattern}: name at least the day (dd)")


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


# -- log4j-style configuration --------------------------------------------------------------


@dataclass(frozen=True)
class AppenderConfig:
    """One `log4j.appender.<name>`: its class and settings."""

    name: str
    kind: str  # ConsoleAppender, FileAppender, DailyRollingFileAppender, RollingFileAppender
    settings: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LoggerConfig:
    """One logger's level (None: inherited), appenders and additivity."""

    level: int | None
    appenders: tuple[str, ...] = ()
    additive: bool = True


@dataclass(frozen=True)
class LoggingConfig:
    """A parsed log4j-style configuration: loggers by kafpy logger name, appenders by name."""

    loggers: Mapping[str, LoggerConfig]
    appenders: Mapping[str, AppenderConfig]


_APPENDER_KINDS = ("ConsoleAppender", "FileAppender", "DailyRollingFileAppender",
                   "RollingFileAppender")  # fmt: skip


def python_logger_name(log4j_name: str) -> str:
    """The kafpy logger a log4j logger name means (`kafka.controller` -> `kafpy.controller`)."""
    if log4j_name == "kafka" or log4j_name.startswith("kafka."):
        return "kafpy" + log4j_name[len("kafka") :]
    if log4j_name == "state.change.logger":
        return "kafpy.state.change.logger"
    return log4j_name


def _level(key: str, text: str) -> int:
    level = LOG4J_LEVELS.get(text.strip().upper())
    if level is None:
        raise LoggingConfigError(
            f"Invalid level '{text.strip()}' for {key}: use one of {', '.join(LOG4J_LEVELS)}"
        )
    return level


def _logger_entry(key: str, value: str, additive: bool) -> LoggerConfig:
    level_text, *appenders = [part.strip() for part in value.split(",")]
    level = _level(key, level_text) if level_text else None
    return LoggerConfig(level, tuple(a for a in appenders if a), additive)


def parse_logging_config(props: Mapping[str, str]) -> LoggingConfig:
    """Read the log4j keys of `props` (other keys are ignored, as log4j does)."""
    additivity: dict[str, bool] = {}
    for key, value in props.items():
        if key.startswith("log4j.additivity."):
            name = python_logger_name(key[len("log4j.additivity.") :])
            additivity[name] = value.strip().lower() != "false"
    loggers: dict[str, LoggerConfig] = {}
    root = props.get("log4j.rootLogger")
    for key, value in props.items():
        if key.startswith("log4j.logger."):
            name = python_logger_name(key[len("log4j.logger.") :])
            loggers[name] = _logger_entry(key, value, additivity.get(name, True))
    if root is not None:
        entry = _logger_entry("log4j.rootLogger", root, False)
        own = loggers.get(ROOT_LOGGER)
        # log4j.logger.kafka refines the root's level for kafpy's own top logger
        level = own.level if own is not None and own.level is not None else entry.level
        root_appenders = entry.appenders + (own.appenders if own is not None else ())
        loggers[ROOT_LOGGER] = LoggerConfig(level, root_appenders, False)
    appenders: dict[str, AppenderConfig] = {}
    for key, value in props.items():
        if not key.startswith("log4j.appender.") or key.count(".") != 2:
            continue
        name = key[len("log4j.appender.") :]
        kind = value.strip().rsplit(".", 1)[-1]
        if kind not in _APPENDER_KINDS:
            raise LoggingConfigError(
                f"Unsupported appender class {value.strip()} for {key}: kafpy supports "
                f"{', '.join(_APPENDER_KINDS)}"
            )
        prefix = key + "."
        settings = {k[len(prefix) :]: v.strip() for k, v in props.items() if k.startswith(prefix)}
        if kind == "DailyRollingFileAppender":
            _parse_date_pattern(settings.get("DatePattern", "'.'yyyy-MM-dd"))
        appenders[name] = AppenderConfig(name, kind, settings)
    for name, logger in loggers.items():
        for appender in logger.appenders:
            if appender not in appenders:
                raise LoggingConfigError(
                    f"Logger {name} names appender {appender}, which has no "
                    f"log4j.appender.{appender} entry"
                )
    return LoggingConfig(loggers, appenders)


def load_logging_config(path: str | Path) -> LoggingConfig:
    """Parse a log4j.properties file."""
    return parse_logging_config(load_properties(path))


def _size(key: str, text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*(KB|MB|GB)?\s*", text, re.IGNORECASE)
    if m is None:
        raise LoggingConfigError(f"Invalid size '{text}' for {key}: use a number with KB, MB or GB")
    unit = {"KB": 1024, "MB": 1024**2, "GB": 1024**3}.get((m.group(2) or "").upper(), 1)
    return int(m.group(1)) * unit


def _file_path(appender: AppenderConfig, logs_dir: str | Path | None) -> Path | None:
    raw = appender.settings.get("File")
    if not raw:
        raise LoggingConfigError(f"log4j.appender.{appender.name}.File is required")
    if "${kafka.logs.dir}" in raw:
        if logs_dir is None:
            return None  # no LOG_DIR: console only, as before logging was configurable
        raw = raw.replace("${kafka.logs.dir}", str(logs_dir))
    unknown = re.search(r"\$\{[^}]*\}", raw)
    if unknown:
        raise LoggingConfigError(
            f"log4j.appender.{appender.name}.File: {unknown.group(0)} is not known "
            "(only ${kafka.logs.dir}, the LOG_DIR directory)"
        )
    return Path(raw)


def _handler(
    appender: AppenderConfig, logs_dir: str | Path | None, stream: Any, roll_files: bool
) -> logging.Handler | None:
    handler: logging.Handler
    if appender.kind == "ConsoleAppender":
        target = appender.settings.get("Target", "")
        handler = logging.StreamHandler(
            sys.stdout if target == "System.out" else stream or sys.stderr
        )
    else:
        path = _file_path(appender, logs_dir)
        if path is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        if not roll_files:
            # another process rolls this file: follow it to the new one
            handler = logging.handlers.WatchedFileHandler(path, encoding="utf-8")
        elif appender.kind == "DailyRollingFileAppender":
            pattern = appender.settings.get("DatePattern", "'.'yyyy-MM-dd")
            handler = DailyRollingFileHandler(path, pattern)
        elif appender.kind == "RollingFileAppender":
            key = f"log4j.appender.{appender.name}"
            handler = logging.handlers.RotatingFileHandler(
                path, encoding="utf-8",
                maxBytes=_size(key + ".MaxFileSize", appender.settings.get("MaxFileSize", "10MB")),
                backupCount=int(appender.settings.get("MaxBackupIndex", "1")),
            )  # fmt: skip
        else:
            handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(KafkaLogFormatter())
    return handler


_configured: list[str] = []


def reset_logging() -> None:
    """Undo `apply_logging_config`: the loggers it configured lose their handlers (closed),
    levels and additivity."""
    for name in _configured:
        logger = logging.getLogger(name)
        for h in logger.handlers:
            h.close()
        logger.handlers[:] = []
        logger.setLevel(logging.NOTSET)
        logger.propagate = True
    _configured[:] = []


def apply_logging_config(
    config: LoggingConfig,
    logs_dir: str | Path | None = None,
    *,
    stream: Any = None,
    root_level: int | str | None = None,
    roll_files: bool = True,
) -> None:
    """Configure kafpy's loggers as `config` says, replacing an earlier configuration.

    logs_dir: what `${kafka.logs.dir}` stands for (None: file appenders under it are left
    out). stream: the console appenders' stream (stderr by default). root_level: overrides
    the root logger's level. roll_files: False in a helper process whose files the broker
    rolls (it writes to the current file, whatever its age).
    """
    reset_logging()
    handlers: dict[str, logging.Handler | None] = {}
    for name, entry in sorted(config.loggers.items()):
        logger = logging.getLogger(name)
        attached: list[logging.Handler] = []
        for appender in entry.appenders:
            if appender not in handlers:
                handlers[appender] = _handler(
                    config.appenders[appender], logs_dir, stream, roll_files
                )
            handler = handlers[appender]
            if handler is not None:
                attached.append(handler)
        logger.handlers[:] = attached
        level = entry.level
        if name == ROOT_LOGGER and root_level is not None:
            level = logging.getLevelName(root_level) if isinstance(root_level, str) else root_level
        logger.setLevel(level if level is not None else logging.NOTSET)
        # a logger whose files are all left out (no LOG_DIR) keeps its lines on the console
        lost_all = bool(entry.appenders) and not attached
        logger.propagate = (entry.additive or lost_all) and name != ROOT_LOGGER
        _configured.append(name)
    if ROOT_LOGGER not in config.loggers:
        logging.getLogger(ROOT_LOGGER).propagate = False
        _configured.append(ROOT_LOGGER)


def configure_logging(
    level: int | str = logging.INFO,
    stream: Any = None,
    logs_dir: str | Path | None = None,
    *,
    config: LoggingConfig | None = None,
    roll_files: bool = True,
) -> None:
    """Send kafpy's logs to `stream` (stderr by default) in Kafka's format and, when a logs
    dir is given, to Kafka's files there: `config`'s layout, or without one Kafka's
    (server.log, controller.log, state-change.log, log-cleaner.log, rolled hourly).
    `level` is the root logger's level when no config is given."""
    if config is None:
        config = parse_logging_config(DEFAULT_LOG4J_PROPERTIES)
        apply_logging_config(
            config, logs_dir, stream=stream, root_level=level, roll_files=roll_files
        )
    else:
        apply_logging_config(config, logs_dir, stream=stream, roll_files=roll_files)

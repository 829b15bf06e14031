"""Kafka's checkpoint files: a version line, a count line, then one entry per line.

`OffsetCheckpointFile` holds `topic partition offset` entries, the format of
`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
`replication-offset-checkpoint` and `cleaner-offset-checkpoint`. `CheckpointFile` is the
generic part (any entry codec), so other checkpoints of the same shape can reuse it.

Writes go to `<file>.tmp`, are flushed and fsynced, then renamed over the file and the
directory is fsynced, so a crash leaves either the old or the new checkpoint, never a
torn one.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Generic, TypeVar

from kafpy.common.errors import KafkaStorageError
from kafpy.common.topic_partition import TopicPartition

_DIGITS = re.compile(r"[0-9]+")
_LONG = re.compile(r"-?[0-9]+")

K = TypeVar("K")
V = TypeVar("V")

CURRENT_VERSION = 0


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves the old or the new content: written to
    `<path>.tmp`, fsynced, renamed over `path`, and the directory fsynced. OSError on failure."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


class MalformedCheckpointError(KafkaStorageError):
    """A checkpoint file exists but cannot be parsed; the message names the file and line."""


def fsync_dir(path: Path) -> None:
    """fsync a directory so that a rename inside it is durable (a no-op where unsupported)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the rename is still atomic
    finally:
        os.close(fd)


class CheckpointFile(Generic[K, V]):
    """A checkpoint file of `key value` entries with a version and a count header.

    `format_entry(k, v)` renders one line (without the newline); `parse_entry(line)`
    returns (k, v) or None when the line is malformed.
    """

    def __init__(
        self,
        path: str | Path,
        version: int,
        format_entry: Callable[[K, V], str],
        parse_entry: Callable[[str], tuple[K, V] | None],
    ) -> None:
        self.path = Path(path)
        self.version = version
        self._format_entry = format_entry
        self._parse_entry = parse_entry
        self._lock = threading.Lock()

    @property
    def tmp_path(self) -> Path:
        return self.path.with_name(self.path.name + ".tmp")

    def write(self, entries: Mapping[K, V]) -> None:
        """Atomically replace the file with `entries`; raises KafkaStorageError on I/O errors."""
        lines = [str(self.version), str(len(entries))]
        lines.extend(self._format_entry(k, v) for k, v in entries.items())
        data = ("\n".join(lines) + "\n").encode("utf-8")
        with self._lock:
            try:
                write_atomically(self.path, data)
            except OSError as e:
                raise KafkaStorageError(
                    f"Error while writing to checkpoint file {self.path}: {e.strerror or e}"
                ) from e

    def read(self) -> dict[K, V]:
        """The entries; an absent file reads as empty.

        Raises MalformedCheckpointError naming the file and line for a bad version,
        a bad count, a malformed entry or a count that does not match the entries.
        """
        with self._lock:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                return {}
            except OSError as e:
                raise KafkaStorageError(
                    f"Error while reading checkpoint file {self.path}: {e.strerror or e}"
                ) from e
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise MalformedCheckpointError(
                f"Checkpoint file {self.path} is not UTF-8 text: byte {e.start} at line {line} "
                f"cannot be decoded"
            ) from e
        return self._parse(text)

    def _parse(self, text: str) -> dict[K, V]:
        lines = text.splitlines()
        if not lines:
            raise MalformedCheckpointError(
                f"Checkpoint file {self.path} is empty: it must start with a version line"
            )
        version_line = lines[0].strip()
        if version_line != str(self.version):
            raise MalformedCheckpointError(
                f"Unrecognized version of the checkpoint file {self.path} at line 1: "
                f"'{version_line}' (expected {self.version})"
            )
        if len(lines) < 2:
            raise MalformedCheckpointError(
                f"Checkpoint file {self.path} has no entry count at line 2"
            )
        count_line = lines[1].strip()
        if not _DIGITS.fullmatch(count_line):
            raise MalformedCheckpointError(
                f"Malformed entry count in checkpoint file {self.path} at line 2: '{count_line}'"
            )
        expected = int(count_line)
        entries: dict[K, V] = {}
        found = 0
        for lineno, line in enumerate(lines[2:], start=3):
            if not line.strip():
                continue
            try:
                parsed = self._parse_entry(line)
            except ValueError:
                parsed = None
            if parsed is None:
                raise MalformedCheckpointError(
                    f"Malformed line in checkpoint file {self.path} at line {lineno}: '{line}'"
                )
            key, value = parsed
            entries[key] = value
            found += 1
        if found != expected:
            raise MalformedCheckpointError(
                f"Expected {expected} entries in checkpoint file {self.path}, but found {found}"
            )
        return entries


def _format_offset_entry(tp: TopicPartition, offset: int) -> str:
    return f"{tp.topic} {tp.partition} {offset}"


def _parse_offset_entry(line: str) -> tuple[TopicPartition, int] | None:
    parts = line.split()
    if len(parts) != 3:
        return None
    topic, partition, offset = parts
    # ASCII digits only, as Kafka's toInt/toLong (Python's int() also takes "1_0", "٣")
    if not _DIGITS.fullmatch(partition) or not _LONG.fullmatch(offset):
        return None
    return TopicPartition(topic, int(partition)), int(offset)


class OffsetCheckpointFile(CheckpointFile[TopicPartition, int]):
    """A checkpoint of one offset per partition (`topic partition offset` lines, version 0)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, CURRENT_VERSION, _format_offset_entry, _parse_offset_entry)

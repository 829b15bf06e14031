"""TransactionIndex: the `.txnindex` file listing the aborted transactions of a segment.

Each 34-byte entry is (version int16 = 0, producerId int64, firstOffset int64,
lastOffset int64, lastStableOffset int64), big-endian, in the order the aborts were
written (so by lastOffset). A fetch at READ_COMMITTED collects the aborted transactions
overlapping the fetched range. The file is created only when the first entry is written.
"""

from __future__ import annotations

import bisect
import os
import struct
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafpy.storage.abstract_index import CorruptIndexError
from kafpy.storage.file_handle_cache import open_transient

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
CURRENT_VERSION = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction of a producer and the offsets it spans."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(
            self.version,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )

    @classmethod
    def from_bytes(cls, data: bytes | memoryview, position: int = 0) -> AbortedTxn:
        version, pid, first, last, lso = _ENTRY.unpack_from(data, position)
        if version != CURRENT_VERSION:
            raise CorruptIndexError(
                f"Unexpected aborted transaction version {version}, current version is {CURRENT_VERSION}"
            )
        return cls(pid, first, last, lso, version)


@dataclass(frozen=True, slots=True)
class TxnIndexSearchResult:
    """Aborted transactions found in one segment; complete when no later segment can add more."""

    aborted_transactions: list[AbortedTxn]
    is_complete: bool


class TransactionIndex:
    """The aborted-transaction index of one segment (Kafka's `TransactionIndex`).

    The entries are read from the file once and kept (this object is the file's only
    writer), so a read_committed fetch finds its range by bisection instead of parsing
    the file again each time. Aborts are rare: the file is opened only for a moment to
    write one, so the index holds no descriptor."""

    def __init__(self, start_offset: int, file: Path) -> None:
        self.start_offset = start_offset
        self.file = Path(file)
        self._lock = threading.RLock()
        self._last_offset: int | None = None
        self._dirty = False  # written since the last fsync
        self._entries: list[AbortedTxn] | None = None  # None: not read yet
        self._last_offsets: list[int] = []

    def _cached(self) -> list[AbortedTxn]:
        if self._entries is None:
            try:
                data = self.file.read_bytes()
            except FileNotFoundError:
                data = b""
            entries = [
                AbortedTxn.from_bytes(data, pos)
                for pos in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE)
            ]
            self._entries = entries
            self._last_offsets = [t.last_offset for t in entries]
        return self._entries

    def _open(self) -> int:
        return open_transient(self.file, os.O_RDWR | os.O_CREAT)

    def append(self, txn: AbortedTxn) -> None:
        with self._lock:
            if self._last_offset is None and self.file.exists():
                for existing in self.all_aborted_txns():
                    self._last_offset = existing.last_offset
            if self._last_offset is not None and self._last_offset >= txn.last_offset:
                raise ValueError(
                    f"The last offset of appended transactions must increase sequentially, but "
                    f"{txn.last_offset} is not greater than current last offset {self._last_offset} "
                    f"of index {self.file}"
                )
            entries = self._cached()
            fd = self._open()
            try:
                os.pwrite(fd, txn.to_bytes(), len(entries) * ENTRY_SIZE)
            finally:
                os.close(fd)
            self._dirty = True
            self._last_offset = txn.last_offset
            entries.append(txn)
            self._last_offsets.append(txn.last_offset)

    def _iterate(self) -> Iterator[tuple[AbortedTxn, int]]:
        for i, txn in enumerate(self._cached()):
            yield txn, i * ENTRY_SIZE

    def all_aborted_txns(self) -> list[AbortedTxn]:
        with self._lock:
            return [t for t, _ in self._iterate()]

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> TxnIndexSearchResult:
        """Aborted transactions overlapping [fetch_offset, upper_bound_offset)."""
        with self._lock:
            entries = self._cached()
            found: list[AbortedTxn] = []
            # entries are in last-offset order; those ending before the fetch cannot overlap
            for txn in entries[bisect.bisect_left(self._last_offsets, fetch_offset) :]:
                if txn.first_offset < upper_bound_offset:
                    found.append(txn)
                if txn.last_stable_offset >= upper_bound_offset:
                    return TxnIndexSearchResult(found, True)
            return TxnIndexSearchResult(found, False)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of transactions whose last offset is >= `offset`."""
        with self._lock:
            new_last: int | None = None
            for txn, pos in self._iterate():
                if txn.last_offset >= offset:
                    self._truncate_file(pos)
                    self._last_offset = new_last
                    kept = pos // ENTRY_SIZE
                    assert self._entries is not None
                    del self._entries[kept:]
                    del self._last_offsets[kept:]
                    return
                new_last = txn.last_offset

    def _truncate_file(self, size: int) -> None:
        fd = self._open()
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
        self._dirty = True

    def reset(self) -> None:
        with self._lock:
            if self.file.exists():
                self._truncate_file(0)
            self._last_offset = None
            self._entries, self._last_offsets = [], []

    def flush(self) -> None:
        with self._lock:
            if self._dirty and self.file.exists():
                fd = self._open()
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            self._dirty = False

    def close(self) -> None:
        """Nothing stays open between writes; kept for the shape of a segment's files."""

    def delete_if_exists(self) -> bool:
        with self._lock:
            self.close()
            self._entries, self._last_offsets = None, []
            try:
                self.file.unlink()
                return True
            except FileNotFoundError:
                return False

    def rename_to(self, new_file: Path) -> None:
        with self._lock:
            if self.file.exists():
                os.replace(self.file, new_file)
            self.file = Path(new_file)

    def update_parent_dir(self, parent: Path) -> None:
        self.file = Path(parent) / self.file.name

    def sanity_check(self) -> None:
        with self._lock:
            try:
                size = os.stat(self.file).st_size
            except FileNotFoundError:
                size = 0
            if size % ENTRY_SIZE != 0:
                raise CorruptIndexError(
                    f"Transaction index file {self.file} is corrupt: its size "
                    f"{size} is not a multiple of {ENTRY_SIZE}."
                )
            for txn, _ in self._iterate():
                if txn.last_offset < self.start_offset:
                    raise CorruptIndexError(
                        f"Last offset of aborted transaction {txn} in index {self.file} is less than "
                        f"start offset {self.start_offset}"
                    )

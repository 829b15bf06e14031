"""SkimpyOffsetMap: a bounded map from a key's digest to the latest offset seen for it."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

Digest = Callable[[bytes], bytes]


def _hashlib_digest(algorithm: str) -> tuple[Digest, int]:
    try:
        probe = hashlib.new(algorithm)
    except ValueError:
        raise ValueError(
            f"Unknown key hash algorithm {algorithm!r} for the cleaner's offset map; "
            f"use one of {', '.join(sorted(hashlib.algorithms_guaranteed))}"
        ) from None
    size = probe.digest_size
    if algorithm == "md5":
        md5 = hashlib.md5
        return (lambda key: md5(key).digest()), size
    return (lambda key: hashlib.new(algorithm, key).digest()), size


class SkimpyOffsetMap:
    """The cleaner's dedupe map (Kafka's SkimpyOffsetMap): key digest -> latest offset.

    Keys are stored only as their `hash_algorithm` digest, as Kafka does, so two keys
    with the same digest count as one key (with MD5 that does not happen by accident).
    The capacity is what a table of `memory` bytes with `digest size + 8` bytes per
    slot holds (`slots`); `is_full` says when `load_factor` of it is used, which is where
    the cleaner stops building the map and bounds the round's end offset. Newer offsets
    of a key overwrite older ones. Python's dict does the probing Kafka's table does by
    hand; the bound keeps the memory in proportion to the configured buffer.
    """

    def __init__(
        self,
        memory: int,
        hash_algorithm: str = "md5",
        load_factor: float = 1.0,
        digest: Digest | None = None,
        digest_size: int | None = None,
    ) -> None:
        default_digest, default_size = _hashlib_digest(hash_algorithm)
        self._digest = digest or default_digest
        self.hash_size = digest_size or default_size
        self.bytes_per_entry = self.hash_size + 8
        self.slots = memory // self.bytes_per_entry
        if self.slots < 1:
            raise ValueError(
                f"An offset map of {memory} bytes cannot hold a single {self.bytes_per_entry}-byte "
                "entry; raise log.cleaner.dedupe.buffer.size"
            )
        if not 0 < load_factor <= 1:
            raise ValueError(
                f"log.cleaner.io.buffer.load.factor must be in (0, 1], got {load_factor}"
            )
        self.load_factor = load_factor
        self.max_entries = max(1, int(self.slots * load_factor))
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        """Record `offset` as the latest of `key`; an existing entry is overwritten."""
        d = self._digest(key)
        m = self._map
        if d not in m and len(m) >= self.slots:
            raise ValueError(
                f"The offset map is full ({self.slots} entries); the cleaner must stop at is_full"
            )
        m[d] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The latest offset put for `key`, or -1."""
        return self._map.get(self._digest(key), -1)

    def digest(self, key: bytes) -> bytes:
        return self._digest(key)

    def get_digest(self, digest: bytes) -> int:
        return self._map.get(digest, -1)

    def update_latest_offset(self, offset: int) -> None:
        """Move latest_offset forward to cover batches with nothing to insert."""
        if offset > self.latest_offset:
            self.latest_offset = offset

    @property
    def size(self) -> int:
        return len(self._map)

    @property
    def is_full(self) -> bool:
        return len(self._map) >= self.max_entries

    def free_entries(self) -> int:
        """How many more distinct keys fit before `is_full`."""
        return max(0, self.max_entries - len(self._map))

    @property
    def utilization(self) -> float:
        return len(self._map) / self.slots

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1

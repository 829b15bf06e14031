"""Log compaction: Kafka's LogCleaner, LogCleanerManager and Cleaner.

Compaction keeps, for every key of a topic with `cleanup.policy=compact`, at least the
latest record, dropping older values and, after `delete.retention.ms`, tombstones.

The names below load on first use: a broker reads its CleanerConfig at start-up, but the
cleaner itself (and its worker process's code) only when log.cleaner.enable starts it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafpy.storage.cleaner.cleaner_config import CleanerConfig
    from kafpy.storage.cleaner.log_cleaner import LogCleaner
    from kafpy.storage.cleaner.log_cleaner_manager import (
        LogCleanerManager,
        LogCleaningAbortedError,
    )

__all__ = ["CleanerConfig", "LogCleaner", "LogCleanerManager", "LogCleaningAbortedError"]

_HOMES = {
    "CleanerConfig": "kafpy.storage.cleaner.cleaner_config",
    "LogCleaner": "kafpy.storage.cleaner.log_cleaner",
    "LogCleanerManager": "kafpy.storage.cleaner.log_cleaner_manager",
    "LogCleaningAbortedError": "kafpy.storage.cleaner.log_cleaner_manager",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'kafpy.storage.cleaner' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)

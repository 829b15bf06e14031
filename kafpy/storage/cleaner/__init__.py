"""Log compaction: Kafka's LogCleaner, LogCleanerManager and Cleaner.

Compaction keeps, for every key of a topic with `cleanup.policy=compact`, at least the
latest record, dropping older values and, after `delete.retention.ms`, tombstones.
"""

from kafpy.storage.cleaner.cleaner_config import CleanerConfig
from kafpy.storage.cleaner.log_cleaner import LogCleaner
from kafpy.storage.cleaner.log_cleaner_manager import LogCleanerManager, LogCleaningAbortedError

__all__ = ["CleanerConfig", "LogCleaner", "LogCleanerManager", "LogCleaningAbortedError"]

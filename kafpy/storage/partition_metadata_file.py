"""PartitionMetadataFile: `<partition dir>/partition.metadata`, where a replica keeps its topic's
id (KIP-516) as Kafka 2.8 writes it:

    version: 0
    topic_id: <22-character id>

(no newline after the last line). The broker writes it when a LeaderAndIsr request (v5+)
first tells it the topic id, and reads it when the log is loaded, so that a later request for a
topic of the same name but another id (deleted and created again meanwhile) is refused with
INCONSISTENT_TOPIC_ID instead of mixing the two topics' data. Written to a .tmp file, fsynced
and renamed, as the other checkpoint files.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from kafpy.common.errors import KafkaStorageError
from kafpy.common.file_descriptors import is_out_of_file_descriptors, too_many_open_files
from kafpy.common.kafka_uuid import uuid_from_string, uuid_to_string
from kafpy.storage.offset_checkpoint_file import write_atomically

PARTITION_METADATA_FILE = "partition.metadata"
CURRENT_VERSION = 0


class MalformedPartitionMetadataError(KafkaStorageError):
    """The file exists but does not read as Kafka's format."""


class PartitionMetadataFile:
    """The partition.metadata file of one partition directory."""

    def __init__(self, dir: Path) -> None:
        self.path = Path(dir) / PARTITION_METADATA_FILE

    def exists(self) -> bool:
        return self.path.exists()

    def read(self) -> uuid.UUID | None:
        """The topic id, None when there is no file; MalformedPartitionMetadataError naming the
        file and what is wrong with it otherwise."""
        try:
            text = self.path.read_bytes().decode("utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as e:
            if is_out_of_file_descriptors(e):  # the file is fine: the process is out
                raise too_many_open_files(f"Cannot read {self.path}", e) from e
            raise MalformedPartitionMetadataError(f"Cannot read {self.path}: {e}") from e
        fields: dict[str, str] = {}
        for line in text.splitlines():
            key, sep, value = line.partition(":")
            if not sep or key.strip() not in ("version", "topic_id"):
                raise MalformedPartitionMetadataError(
                    f"Malformed line in partition metadata file {self.path}: {line!r}"
                )
            fields[key.strip()] = value.strip()
        if fields.get("version") != str(CURRENT_VERSION):
            raise MalformedPartitionMetadataError(
                f"Unrecognized version of partition metadata file {self.path}: "
                f"{fields.get('version')!r} (kafpy reads version {CURRENT_VERSION})"
            )
        try:
            return uuid_from_string(fields.get("topic_id", ""))
        except ValueError as e:
            raise MalformedPartitionMetadataError(
                f"Malformed topic id in partition metadata file {self.path}: {e}"
            ) from e

    def write(self, topic_id: uuid.UUID) -> None:
        """Replace the file atomically; KafkaStorageError on an I/O error."""
        data = f"version: {CURRENT_VERSION}\ntopic_id: {uuid_to_string(topic_id)}".encode()
        try:
            write_atomically(self.path, data)
        except OSError as e:
            raise KafkaStorageError(f"Error while writing {self.path}: {e}") from e

"""Kafka's errors as exceptions, each carrying the wire error code it maps to.

Messages are sentences that name the thing and the fix; the protocol layer turns an
exception into its `code` for the response, the CLI prints `str(exc)`.
"""

from __future__ import annotations


class KafkaError(Exception):
    """Base of all kafpy errors that have a Kafka meaning."""

    code: int = -1  # UNKNOWN_SERVER_ERROR
    retriable: bool = False


class OffsetOutOfRangeError(KafkaError):
    code = 1


class CorruptRecordError(KafkaError):
    """A batch failed its CRC, size or structure checks (CORRUPT_MESSAGE)."""

    code = 2
    retriable = True


class UnknownTopicOrPartitionError(KafkaError):
    code = 3
    retriable = True


class InvalidFetchSizeError(KafkaError):
    code = 4


class LeaderNotAvailableError(KafkaError):
    code = 5
    retriable = True


class NotLeaderOrFollowerError(KafkaError):
    code = 6
    retriable = True


class RequestTimedOutError(KafkaError):
    code = 7
    retriable = True


class KafkaConnectionError(KafkaError):
    """The connection to a broker could not be made or was lost (NETWORK_EXCEPTION).

    Raised by the client for every request that was in flight on the connection."""

    code = 13
    retriable = True


class MessageTooLargeError(KafkaError):
    code = 10


class StaleControllerEpochError(KafkaError):
    code = 11


class ControllerMovedError(KafkaError):
    """Another broker became the controller (or the controller epoch moved on) while this
    one was acting as controller; the work in progress is abandoned and the broker resigns."""


class OffsetMetadataTooLargeError(KafkaError):
    code = 12


class KafkaStorageError(KafkaError):
    """A log dir is unusable (KAFKA_STORAGE_ERROR)."""

    code = 56
    retriable = True


class InvalidTopicError(KafkaError):
    code = 17


class RecordListTooLargeError(KafkaError):
    code = 18


class NotEnoughReplicasError(KafkaError):
    code = 19
    retriable = True


class NotEnoughReplicasAfterAppendError(KafkaError):
    code = 20
    retriable = True


class InvalidRequiredAcksError(KafkaError):
    code = 21


class InvalidTimestampError(KafkaError):
    code = 32


class UnsupportedVersionError(KafkaError):
    code = 35


class TopicExistsError(KafkaError):
    code = 36


class InvalidPartitionsError(KafkaError):
    code = 37


class InvalidReplicationFactorError(KafkaError):
    code = 38


class InvalidReplicaAssignmentError(KafkaError):
    code = 39


class InvalidConfigurationError(KafkaError):
    """A config key is unknown or its value is out of range (INVALID_CONFIG)."""

    code = 40


class NotControllerError(KafkaError):
    code = 41
    retriable = True


class InvalidRequestError(KafkaError):
    code = 42


class PolicyViolationError(KafkaError):
    code = 44


class TopicDeletionDisabledError(KafkaError):
    code = 73


class InvalidRecordError(KafkaError):
    """A batch is well formed but breaks a rule (INVALID_RECORD), e.g. bad magic."""

    code = 87


class LogDirNotFoundError(KafkaError):
    code = 57


class InconsistentBrokerMetadataError(KafkaError):
    """meta.properties disagrees with the broker's configuration."""


class AdminCommandFailedError(KafkaError):
    """An admin operation could not be carried out; the message says why."""


class BrokerNotAvailableError(KafkaError):
    code = 8


class AdminOperationError(KafkaError):
    """An admin operation on the metadata store was refused; the message says why."""


class TopicAlreadyMarkedForDeletionError(KafkaError):
    """A deletion marker already exists for the topic."""


class ReplicaNotAvailableError(KafkaError):
    code = 9
    retriable = True


class FencedLeaderEpochError(KafkaError):
    """The request's leader epoch is older than the partition's (FENCED_LEADER_EPOCH)."""

    code = 74
    retriable = True


class UnknownLeaderEpochError(KafkaError):
    """The request's leader epoch is newer than the broker knows (UNKNOWN_LEADER_EPOCH)."""

    code = 76
    retriable = True


class StaleBrokerEpochError(KafkaError):
    code = 77


class OffsetNotAvailableError(KafkaError):
    code = 78
    retriable = True


class OutOfOrderSequenceError(KafkaError):
    """An idempotent producer's batch does not follow its last sequence (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    code = 45


class DuplicateSequenceError(KafkaError):
    """A batch repeats sequence numbers already written (DUPLICATE_SEQUENCE_NUMBER)."""

    code = 46


class InvalidProducerEpochError(KafkaError):
    """A producer wrote with an epoch older than the last one seen (INVALID_PRODUCER_EPOCH)."""

    code = 47


class InvalidTxnStateError(KafkaError):
    """A producer broke the rules of its ongoing transaction (INVALID_TXN_STATE)."""

    code = 48


class UnknownProducerIdError(KafkaError):
    """The partition has no state for the producer id of a batch that does not start at
    sequence 0 (UNKNOWN_PRODUCER_ID), e.g. because retention removed its batches."""

    code = 59

"""Kafka's errors: the one table of error codes, and the exceptions that carry them.

`Errors` is the table: Kafka's name and number for every error code (Errors.java), with
`Errors.X.retriable` and Kafka's default `Errors.X.message`. Every exception with a Kafka
meaning derives from `KafkaError` and names its row (`error = Errors.CORRUPT_MESSAGE`);
its `code` and `retriable` are read from that row, never written again. `for_code(code)`
is the exception class of a code, a class per code as in aiokafka's errors.py (codes
without a class of their own below get one made from the table). The few exceptions
without a wire code of their own (ControllerMovedError, AdminOperationError, ...) answer
UNKNOWN_SERVER_ERROR.

The table lives here, at the bottom of the package map, rather than in protocol/: records/,
storage/ and common/ raise these errors and may not import upwards. protocol.errors
presents the same `Errors` to the wire format. Messages of raised errors are sentences
that name the thing and the fix; the protocol layer answers with the exception's `code`,
the CLI prints `str(exc)`.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar, cast

__all__ = ["Errors", "KafkaError", "for_code"]


class Errors(IntEnum):
    """Kafka's error codes, with `retriable` and Kafka's default `message` per code."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127

    @property
    def retriable(self) -> bool:
        """Whether a client may retry the request that got this error."""
        return _INFO[self][0]

    @property
    def message(self) -> str:
        """Kafka's default message for this code."""
        return _INFO[self][1]

    @classmethod
    def for_code(cls, code: int) -> Errors:
        """The member for a code; UNKNOWN_SERVER_ERROR for a code not in the table."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR


# code: (retriable, Kafka's default message)


_INFO: dict[int, tuple[bool, str]] = {
    Errors.UNKNOWN_SERVER_ERROR: (
        False,
        "The server experienced an unexpected error when processing the request.",
    ),
    Errors.NONE: (False, ""),
    Errors.OFFSET_OUT_OF_RANGE: (
        False,
        "The requested offset is not within the range of offsets maintained by the server.",
    ),
    Errors.CORRUPT_MESSAGE: (
        True,
        "This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.",
    ),
    Errors.UNKNOWN_TOPIC_OR_PARTITION: (True, "This server does not host this topic-partition."),
    Errors.INVALID_FETCH_SIZE: (False, "The requested fetch size is invalid."),
    Errors.LEADER_NOT_AVAILABLE: (
        True,
        "There is no leader for this topic-partition as we are in the middle of a leadership election.",
    ),
    Errors.NOT_LEADER_OR_FOLLOWER: (
        True,
        "For requests intended only for the leader, this error indicates that the broker is not the current leader. For requests intended for any replica, this error indicates that the broker is not a replica of the topic partition.",
    ),
    Errors.REQUEST_TIMED_OUT: (True, "The request timed out."),
    Errors.BROKER_NOT_AVAILABLE: (False, "The broker is not available."),
    Errors.REPLICA_NOT_AVAILABLE: (
        True,
        "The replica is not available for the requested topic-partition. Produce/Fetch requests and other requests intended only for the leader or follower return NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.",
    ),
    Errors.MESSAGE_TOO_LARGE: (
        False,
        "The request included a message larger than the max message size the server will accept.",
    ),
    Errors.STALE_CONTROLLER_EPOCH: (False, "The controller moved to another broker."),
    Errors.OFFSET_METADATA_TOO_LARGE: (
        False,
        "The metadata field of the offset request was too large.",
    ),
    Errors.NETWORK_EXCEPTION: (True, "The server disconnected before a response was received."),
    Errors.COORDINATOR_LOAD_IN_PROGRESS: (
        True,
        "The coordinator is loading and hence can't process requests.",
    ),
    Errors.COORDINATOR_NOT_AVAILABLE: (True, "The coordinator is not available."),
    Errors.NOT_COORDINATOR: (True, "This is not the correct coordinator."),
    Errors.INVALID_TOPIC_EXCEPTION: (
        False,
        "The request attempted to perform an operation on an invalid topic.",
    ),
    Errors.RECORD_LIST_TOO_LARGE: (
        False,
        "The request included message batch larger than the configured segment size on the server.",
    ),
    Errors.NOT_ENOUGH_REPLICAS: (
        True,
        "Messages are rejected since there are fewer in-sync replicas than required.",
    ),
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: (
        True,
        "Messages are written to the log, but to fewer in-sync replicas than required.",
    ),
    Errors.INVALID_REQUIRED_ACKS: (
        False,
        "Produce request specified an invalid value for required acks.",
    ),
    Errors.ILLEGAL_GENERATION: (False, "Specified group generation id is not valid."),
    Errors.INCONSISTENT_GROUP_PROTOCOL: (
        False,
        "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.",
    ),
    Errors.INVALID_GROUP_ID: (False, "The configured groupId is invalid."),
    Errors.UNKNOWN_MEMBER_ID: (False, "The coordinator is not aware of this member."),
    Errors.INVALID_SESSION_TIMEOUT: (
        False,
        "The session timeout is not within the range allowed by the broker (as configured by group.min.session.timeout.ms and group.max.session.timeout.ms).",
    ),
    Errors.REBALANCE_IN_PROGRESS: (False, "The group is rebalancing, so a rejoin is needed."),
    Errors.INVALID_COMMIT_OFFSET_SIZE: (False, "The committing offset data size is not valid."),
    Errors.TOPIC_AUTHORIZATION_FAILED: (False, "Topic authorization failed."),
    Errors.GROUP_AUTHORIZATION_FAILED: (False, "Group authorization failed."),
    Errors.CLUSTER_AUTHORIZATION_FAILED: (False, "Cluster authorization failed."),
    Errors.INVALID_TIMESTAMP: (False, "The timestamp of the message is out of acceptable range."),
    Errors.UNSUPPORTED_SASL_MECHANISM: (
        False,
        "The broker does not support the requested SASL mechanism.",
    ),
    Errors.ILLEGAL_SASL_STATE: (False, "Request is not valid given the current SASL state."),
    Errors.UNSUPPORTED_VERSION: (False, "The version of API is not supported."),
    Errors.TOPIC_ALREADY_EXISTS: (False, "Topic with this name already exists."),
    Errors.INVALID_PARTITIONS: (False, "Number of partitions is below 1."),
    Errors.INVALID_REPLICATION_FACTOR: (
        False,
        "Replication factor is below 1 or larger than the number of available brokers.",
    ),
    Errors.INVALID_REPLICA_ASSIGNMENT: (False, "Replica assignment is invalid."),
    Errors.INVALID_CONFIG: (False, "Configuration is invalid."),
    Errors.NOT_CONTROLLER: (True, "This is not the correct controller for this cluster."),
    Errors.INVALID_REQUEST: (
        False,
        "This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker. See the broker logs for more details.",
    ),
    Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT: (
        False,
        "The message format version on the broker does not support the request.",
    ),
    Errors.POLICY_VIOLATION: (False, "Request parameters do not satisfy the configured policy."),
    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER: (
        False,
        "The broker received an out of order sequence number.",
    ),
    Errors.DUPLICATE_SEQUENCE_NUMBER: (False, "The broker received a duplicate sequence number."),
    Errors.INVALID_PRODUCER_EPOCH: (False, "Producer attempted to produce with an old epoch."),
    Errors.INVALID_TXN_STATE: (
        False,
        "The producer attempted a transactional operation in an invalid state.",
    ),
    Errors.INVALID_PRODUCER_ID_MAPPING: (
        False,
        "The producer attempted to use a producer id which is not currently assigned to its transactional id.",
    ),
    Errors.INVALID_TRANSACTION_TIMEOUT: (
        False,
        "The transaction timeout is larger than the maximum value allowed by the broker (as configured by transaction.max.timeout.ms).",
    ),
    Errors.CONCURRENT_TRANSACTIONS: (
        True,
        "The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.",
    ),
    Errors.TRANSACTION_COORDINATOR_FENCED: (
        False,
        "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.",
    ),
    Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: (False, "Transactional Id authorization failed."),
    Errors.SECURITY_DISABLED: (False, "Security features are disabled."),
    Errors.OPERATION_NOT_ATTEMPTED: (
        False,
        "The broker did not attempt to execute this operation. This may happen for batched RPCs where some operations in the batch failed, causing the broker to respond without trying the rest.",
    ),
    Errors.KAFKA_STORAGE_ERROR: (True, "Disk error when trying to access log file on the disk."),
    Errors.LOG_DIR_NOT_FOUND: (
        False,
        "The user-specified log directory is not found in the broker config.",
    ),
    Errors.SASL_AUTHENTICATION_FAILED: (False, "SASL Authentication failed."),
    Errors.UNKNOWN_PRODUCER_ID: (
        False,
        "This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question. This could happen if, for instance, the producer's records were deleted because their retention time had elapsed. Once the last records of the producerId are removed, the producer's metadata is removed from the broker, and future appends by the producer will return this exception.",
    ),
    Errors.REASSIGNMENT_IN_PROGRESS: (False, "A partition reassignment is in progress."),
    Errors.DELEGATION_TOKEN_AUTH_DISABLED: (False, "Delegation Token feature is not enabled."),
    Errors.DELEGATION_TOKEN_NOT_FOUND: (False, "Delegation Token is not found on server."),
    Errors.DELEGATION_TOKEN_OWNER_MISMATCH: (
        False,
        "Specified Principal is not valid Owner/Renewer.",
    ),
    Errors.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: (
        False,
        "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.",
    ),
    Errors.DELEGATION_TOKEN_AUTHORIZATION_FAILED: (False, "Delegation Token authorization failed."),
    Errors.DELEGATION_TOKEN_EXPIRED: (False, "Delegation Token is expired."),
    Errors.INVALID_PRINCIPAL_TYPE: (False, "Supplied principalType is not supported."),
    Errors.NON_EMPTY_GROUP: (False, "The group is not empty."),
    Errors.GROUP_ID_NOT_FOUND: (False, "The group id does not exist."),
    Errors.FETCH_SESSION_ID_NOT_FOUND: (True, "The fetch session ID was not found."),
    Errors.INVALID_FETCH_SESSION_EPOCH: (True, "The fetch session epoch is invalid."),
    Errors.LISTENER_NOT_FOUND: (
        True,
        "There is no listener on the leader broker that matches the listener on which metadata request was processed.",
    ),
    Errors.TOPIC_DELETION_DISABLED: (False, "Topic deletion is disabled."),
    Errors.FENCED_LEADER_EPOCH: (
        True,
        "The leader epoch in the request is older than the epoch on the broker.",
    ),
    Errors.UNKNOWN_LEADER_EPOCH: (
        True,
        "The leader epoch in the request is newer than the epoch on the broker.",
    ),
    Errors.UNSUPPORTED_COMPRESSION_TYPE: (
        False,
        "The requesting client does not support the compression type of given partition.",
    ),
    Errors.STALE_BROKER_EPOCH: (False, "Broker epoch has changed."),
    Errors.OFFSET_NOT_AVAILABLE: (
        True,
        "The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.",
    ),
    Errors.MEMBER_ID_REQUIRED: (
        False,
        "The group member needs to have a valid member id before actually entering a consumer group.",
    ),
    Errors.PREFERRED_LEADER_NOT_AVAILABLE: (True, "The preferred leader was not available."),
    Errors.GROUP_MAX_SIZE_REACHED: (False, "The consumer group has reached its max size."),
    Errors.FENCED_INSTANCE_ID: (
        False,
        "The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.",
    ),
    Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE: (
        True,
        "Eligible topic partition leaders are not available.",
    ),
    Errors.ELECTION_NOT_NEEDED: (True, "Leader election not needed for topic partition."),
    Errors.NO_REASSIGNMENT_IN_PROGRESS: (False, "No partition reassignment is in progress."),
    Errors.GROUP_SUBSCRIBED_TO_TOPIC: (
        False,
        "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.",
    ),
    Errors.INVALID_RECORD: (
        False,
        "This record has failed the validation on broker and hence will be rejected.",
    ),
    Errors.UNSTABLE_OFFSET_COMMIT: (True, "There are unstable offsets that need to be cleared."),
    Errors.THROTTLING_QUOTA_EXCEEDED: (True, "The throttling quota has been exceeded."),
    Errors.PRODUCER_FENCED: (
        False,
        "There is a newer producer with the same transactionalId which fences the current one.",
    ),
    Errors.RESOURCE_NOT_FOUND: (
        False,
        "A request illegally referred to a resource that does not exist.",
    ),
    Errors.DUPLICATE_RESOURCE: (False, "A request illegally referred to the same resource twice."),
    Errors.UNACCEPTABLE_CREDENTIAL: (
        False,
        "Requested credential would not meet criteria for acceptability.",
    ),
    Errors.INCONSISTENT_VOTER_SET: (
        False,
        "Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters.",
    ),
    Errors.INVALID_UPDATE_VERSION: (False, "The given update version was invalid."),
    Errors.FEATURE_UPDATE_FAILED: (
        False,
        "Unable to update finalized features due to an unexpected server error.",
    ),
    Errors.PRINCIPAL_DESERIALIZATION_FAILURE: (
        False,
        "Request principal deserialization failed during forwarding. This indicates an internal error on the broker cluster security setup.",
    ),
    Errors.SNAPSHOT_NOT_FOUND: (False, "Requested snapshot was not found."),
    Errors.POSITION_OUT_OF_RANGE: (
        False,
        "Requested position is not greater than or equal to zero, and less than the size of the snapshot.",
    ),
    Errors.UNKNOWN_TOPIC_ID: (True, "This server does not host this topic ID."),
    Errors.DUPLICATE_BROKER_REGISTRATION: (False, "This broker ID is already in use."),
    Errors.BROKER_ID_NOT_REGISTERED: (False, "The given broker ID was not registered."),
    Errors.INCONSISTENT_TOPIC_ID: (
        True,
        "The log's topic ID did not match the topic ID in the request.",
    ),
    Errors.INCONSISTENT_CLUSTER_ID: (
        False,
        "The clusterId in the request does not match that found on the server.",
    ),
    Errors.TRANSACTIONAL_ID_NOT_FOUND: (False, "The transactionalId could not be found."),
    Errors.FETCH_SESSION_TOPIC_ID_ERROR: (
        True,
        "The fetch session encountered inconsistent topic ID usage.",
    ),
    Errors.INELIGIBLE_REPLICA: (False, "The new ISR contains at least one ineligible replica."),
    Errors.NEW_LEADER_ELECTED: (
        False,
        "The AlterPartition request successfully updated the partition state but the leader has changed.",
    ),
    Errors.OFFSET_MOVED_TO_TIERED_STORAGE: (
        False,
        "The requested offset is moved to tiered storage.",
    ),
    Errors.FENCED_MEMBER_EPOCH: (
        False,
        "The member epoch is fenced by the group coordinator. The member must abandon all its partitions and rejoin.",
    ),
    Errors.UNRELEASED_INSTANCE_ID: (
        False,
        "The instance ID is still used by another member in the consumer group. That member must leave first.",
    ),
    Errors.UNSUPPORTED_ASSIGNOR: (
        False,
        "The assignor or its version range is not supported by the consumer group.",
    ),
    Errors.STALE_MEMBER_EPOCH: (
        False,
        "The member epoch is stale. The member must retry after receiving its updated member epoch via the ConsumerGroupHeartbeat API.",
    ),
    Errors.MISMATCHED_ENDPOINT_TYPE: (
        False,
        "The request was sent to an endpoint of the wrong type.",
    ),
    Errors.UNSUPPORTED_ENDPOINT_TYPE: (False, "This endpoint type is not supported yet."),
    Errors.UNKNOWN_CONTROLLER_ID: (False, "This controller ID is not known."),
    Errors.UNKNOWN_SUBSCRIPTION_ID: (
        False,
        "Client sent a push telemetry request with an invalid or outdated subscription ID.",
    ),
    Errors.TELEMETRY_TOO_LARGE: (
        False,
        "Client sent a push telemetry request larger than the maximum size the broker will accept.",
    ),
    Errors.INVALID_REGISTRATION: (
        False,
        "The controller has considered the broker registration to be invalid.",
    ),
    Errors.TRANSACTION_ABORTABLE: (
        False,
        "The server encountered an error with the transaction. The client can abort the transaction to continue using this transactional ID.",
    ),
    Errors.INVALID_RECORD_STATE: (
        False,
        "The record state is invalid. The acknowledgement of delivery could not be completed.",
    ),
    Errors.SHARE_SESSION_NOT_FOUND: (True, "The share session was not found."),
    Errors.INVALID_SHARE_SESSION_EPOCH: (True, "The share session epoch is invalid."),
    Errors.FENCED_STATE_EPOCH: (
        False,
        "The share coordinator rejected the request because the share-group state epoch did not match.",
    ),
    Errors.INVALID_VOTER_KEY: (False, "The voter key doesn't match the receiving replica's key."),
    Errors.DUPLICATE_VOTER: (False, "The voter is already part of the set of voters."),
    Errors.VOTER_NOT_FOUND: (False, "The voter is not part of the set of voters."),
}


class KafkaError(Exception):
    """Base of all kafpy errors that have a Kafka meaning (UNKNOWN_SERVER_ERROR itself).

    A subclass sets `error` to its row of `Errors`; `code` and `retriable` follow from it
    (an error standing for several, as RecordsNotDeliveredError, may set them per instance).
    """

    error: ClassVar[Errors] = Errors.UNKNOWN_SERVER_ERROR
    code: int = int(Errors.UNKNOWN_SERVER_ERROR)
    retriable: bool = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.code = int(cls.error)
        cls.retriable = cls.error.retriable
        if cls.__doc__ is None:
            cls.__doc__ = f"{cls.error.message} ({cls.error.name})"
        if "error" in vars(cls):
            # the first class declared for a code is the one for_code answers
            _CLASSES.setdefault(cls.error, cls)


_CLASSES: dict[Errors, type[KafkaError]] = {Errors.UNKNOWN_SERVER_ERROR: KafkaError}


def for_code(code: int) -> type[KafkaError]:
    """The exception class of an error code (KafkaError for a code not in the table).

    Codes without a class declared here get one, named after Kafka's name of the code
    (`GROUP_AUTHORIZATION_FAILED` -> `GroupAuthorizationFailedError`), made once.
    Raises ValueError for 0 (NONE), which is not an error.
    """
    error = Errors.for_code(code)
    if error is Errors.NONE:
        raise ValueError("error code 0 (NONE) is not an error")
    cls = _CLASSES.get(error)
    if cls is None:
        name = "".join(word.capitalize() for word in error.name.split("_")) + "Error"
        cls = cast(type[KafkaError], type(name, (KafkaError,), {"error": error}))
        cls.__module__ = __name__
    return cls


class OffsetOutOfRangeError(KafkaError):
    error = Errors.OFFSET_OUT_OF_RANGE


class CorruptRecordError(KafkaError):
    """A batch failed its CRC, size or structure checks (CORRUPT_MESSAGE)."""

    error = Errors.CORRUPT_MESSAGE


class UnknownTopicOrPartitionError(KafkaError):
    error = Errors.UNKNOWN_TOPIC_OR_PARTITION


class InconsistentTopicIdError(KafkaError):
    error = Errors.INCONSISTENT_TOPIC_ID


class InvalidFetchSizeError(KafkaError):
    error = Errors.INVALID_FETCH_SIZE


class LeaderNotAvailableError(KafkaError):
    error = Errors.LEADER_NOT_AVAILABLE


class NotLeaderOrFollowerError(KafkaError):
    error = Errors.NOT_LEADER_OR_FOLLOWER


class RequestTimedOutError(KafkaError):
    error = Errors.REQUEST_TIMED_OUT


class KafkaConnectionError(KafkaError):
    """The connection to a broker could not be made or was lost (NETWORK_EXCEPTION).

    Raised by the client for every request that was in flight on the connection."""

    error = Errors.NETWORK_EXCEPTION


class MessageTooLargeError(KafkaError):
    error = Errors.MESSAGE_TOO_LARGE


class StaleControllerEpochError(KafkaError):
    error = Errors.STALE_CONTROLLER_EPOCH


class ControllerMovedError(KafkaError):
    """Another broker became the controller (or the controller epoch moved on) while this
    one was acting as controller; the work in progress is abandoned and the broker resigns."""


class OffsetMetadataTooLargeError(KafkaError):
    error = Errors.OFFSET_METADATA_TOO_LARGE


class KafkaStorageError(KafkaError):
    """A log dir is unusable (KAFKA_STORAGE_ERROR)."""

    error = Errors.KAFKA_STORAGE_ERROR


class InvalidTopicError(KafkaError):
    error = Errors.INVALID_TOPIC_EXCEPTION


class RecordListTooLargeError(KafkaError):
    error = Errors.RECORD_LIST_TOO_LARGE


class NotEnoughReplicasError(KafkaError):
    error = Errors.NOT_ENOUGH_REPLICAS


class NotEnoughReplicasAfterAppendError(KafkaError):
    error = Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND


class InvalidRequiredAcksError(KafkaError):
    error = Errors.INVALID_REQUIRED_ACKS


class InvalidTimestampError(KafkaError):
    error = Errors.INVALID_TIMESTAMP


class UnsupportedVersionError(KafkaError):
    error = Errors.UNSUPPORTED_VERSION


class UnsupportedCompressionTypeError(KafkaError):
    error = Errors.UNSUPPORTED_COMPRESSION_TYPE


class UnsupportedForMessageFormatError(KafkaError):
    """The log's message format cannot hold what was asked (idempotent or transactional
    records in a log of format v0/v1, a timestamp search in a v0 log)."""

    error = Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT


class TopicExistsError(KafkaError):
    error = Errors.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(KafkaError):
    error = Errors.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    error = Errors.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(KafkaError):
    error = Errors.INVALID_REPLICA_ASSIGNMENT


class InvalidConfigurationError(KafkaError):
    """A config key is unknown or its value is out of range (INVALID_CONFIG)."""

    error = Errors.INVALID_CONFIG


class NotControllerError(KafkaError):
    error = Errors.NOT_CONTROLLER


class InvalidRequestError(KafkaError):
    error = Errors.INVALID_REQUEST


class PolicyViolationError(KafkaError):
    error = Errors.POLICY_VIOLATION


class TopicDeletionDisabledError(KafkaError):
    error = Errors.TOPIC_DELETION_DISABLED


class InvalidRecordError(KafkaError):
    """A batch is well formed but breaks a rule (INVALID_RECORD), e.g. bad magic."""

    error = Errors.INVALID_RECORD


class LogDirNotFoundError(KafkaError):
    error = Errors.LOG_DIR_NOT_FOUND


class InconsistentBrokerMetadataError(KafkaError):
    """meta.properties disagrees with the broker's configuration."""


class AdminCommandFailedError(KafkaError):
    """An admin operation could not be carried out; the message says why."""


class BrokerNotAvailableError(KafkaError):
    error = Errors.BROKER_NOT_AVAILABLE


class AdminOperationError(KafkaError):
    """An admin operation on the metadata store was refused; the message says why."""


class TopicAlreadyMarkedForDeletionError(KafkaError):
    """A deletion marker already exists for the topic."""


class ReplicaNotAvailableError(KafkaError):
    error = Errors.REPLICA_NOT_AVAILABLE


class FencedLeaderEpochError(KafkaError):
    """The request's leader epoch is older than the partition's (FENCED_LEADER_EPOCH)."""

    error = Errors.FENCED_LEADER_EPOCH


class UnknownLeaderEpochError(KafkaError):
    """The request's leader epoch is newer than the broker knows (UNKNOWN_LEADER_EPOCH)."""

    error = Errors.UNKNOWN_LEADER_EPOCH


class StaleBrokerEpochError(KafkaError):
    error = Errors.STALE_BROKER_EPOCH


class OffsetNotAvailableError(KafkaError):
    error = Errors.OFFSET_NOT_AVAILABLE


class OutOfOrderSequenceError(KafkaError):
    """An idempotent producer's batch does not follow its last sequence (OUT_OF_ORDER_SEQUENCE_NUMBER)."""

    error = Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


class DuplicateSequenceError(KafkaError):
    """A batch repeats sequence numbers already written (DUPLICATE_SEQUENCE_NUMBER)."""

    error = Errors.DUPLICATE_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    """A producer wrote with an epoch older than the last one seen (INVALID_PRODUCER_EPOCH)."""

    error = Errors.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(KafkaError):
    """A producer broke the rules of its ongoing transaction (INVALID_TXN_STATE)."""

    error = Errors.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(KafkaError):
    """A marker from a coordinator epoch older than the last one the partition saw for
    the producer (TRANSACTION_COORDINATOR_FENCED): a zombie coordinator wrote it."""

    error = Errors.TRANSACTION_COORDINATOR_FENCED


class ProducerFencedError(KafkaError):
    """Another producer with the same transactional.id has been started and fenced this one
    (PRODUCER_FENCED): it can only be closed."""

    error = Errors.PRODUCER_FENCED


class UnknownProducerIdError(KafkaError):
    """The partition has no state for the producer id of a batch that does not start at
    sequence 0 (UNKNOWN_PRODUCER_ID), e.g. because retention removed its batches."""

    error = Errors.UNKNOWN_PRODUCER_ID


class UnsupportedSaslMechanismError(KafkaError):
    """The client asked for a SASL mechanism the listener does not enable
    (UNSUPPORTED_SASL_MECHANISM)."""

    error = Errors.UNSUPPORTED_SASL_MECHANISM


class IllegalSaslStateError(KafkaError):
    """A SASL request came out of order, e.g. SaslAuthenticate before SaslHandshake
    (ILLEGAL_SASL_STATE)."""

    error = Errors.ILLEGAL_SASL_STATE


class SaslAuthenticationError(KafkaError):
    """SASL authentication failed: wrong credentials or a malformed exchange
    (SASL_AUTHENTICATION_FAILED)."""

    error = Errors.SASL_AUTHENTICATION_FAILED

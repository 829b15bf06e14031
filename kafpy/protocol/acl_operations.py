"""Kafka's ACL operations and the operations each resource type supports.

The authorized-operations fields of Metadata, DescribeCluster and DescribeGroups carry a
32-bit set with bit `code` set for each operation allowed (Kafka's Utils.to32BitField).
Without an authorizer a broker reports every operation the resource type supports.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum


class AclOperation(IntEnum):
    """Kafka's AclOperation codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    # 13 and 14 are Kafka 3's CreateTokens and DescribeTokens, which kafpy does not have.
    TWO_PHASE_COMMIT = 15  # KIP-939: InitProducerId with enable2Pc, on a TransactionalId


_OP = AclOperation
TOPIC_OPERATIONS = frozenset({_OP.READ, _OP.WRITE, _OP.CREATE, _OP.DESCRIBE, _OP.DELETE, _OP.ALTER,
                              _OP.DESCRIBE_CONFIGS, _OP.ALTER_CONFIGS})  # fmt: skip
GROUP_OPERATIONS = frozenset({_OP.READ, _OP.DESCRIBE, _OP.DELETE})
CLUSTER_OPERATIONS = frozenset({_OP.CREATE, _OP.CLUSTER_ACTION, _OP.DESCRIBE_CONFIGS, _OP.ALTER_CONFIGS,
                                _OP.IDEMPOTENT_WRITE, _OP.ALTER, _OP.DESCRIBE})  # fmt: skip
TRANSACTIONAL_ID_OPERATIONS = frozenset({_OP.DESCRIBE, _OP.WRITE, _OP.TWO_PHASE_COMMIT})


def to_bit_field(operations: Iterable[AclOperation]) -> int:
    """The 32-bit set of `operations` (bit `code` set for each)."""
    bits = 0
    for op in operations:
        bits |= 1 << int(op)
    return bits

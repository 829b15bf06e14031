"""ElectionType: which leader election an ElectLeaders request asks for (KIP-460).

As Kafka's `org.apache.kafka.common.ElectionType`: the value travels as an int8 in
ElectLeaders v1+ (v0 means preferred), and `kafpy leader-election --election-type` takes
the name.
"""

from __future__ import annotations

import enum


class ElectionType(enum.IntEnum):
    """PREFERRED moves the leadership to the preferred replica when it is live and in sync;
    UNCLEAN elects any live replica when no in-sync replica is live (data may be lost)."""

    PREFERRED = 0
    UNCLEAN = 1

    def __str__(self) -> str:
        return self.name

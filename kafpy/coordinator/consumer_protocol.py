"""The consumer protocol's bytes now live in kafpy.protocol.consumer_protocol (wire format,
below client/, which writes them). This name stays so that modules written against the
old path still import; new code imports kafpy.protocol.consumer_protocol."""

from kafpy.protocol.consumer_protocol import (
    assignment_partitions,
    encode_assignment,
    encode_subscription,
    read_assignment,
    subscription_topics,
)

__all__ = [
    "assignment_partitions",
    "encode_assignment",
    "encode_subscription",
    "read_assignment",
    "subscription_topics",
]

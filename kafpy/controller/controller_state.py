"""ControllerState: what the controller is busy with, one value per kind of event.

As Kafka's `kafka.controller.ControllerState`: every event names the state the controller
is in while it processes it, so logs and timings say what the time went to.
"""

from __future__ import annotations

import enum


class ControllerState(enum.Enum):
    """The controller's activity while it processes an event."""

    IDLE = "Idle"
    CONTROLLER_CHANGE = "ControllerChange"
    BROKER_CHANGE = "BrokerChange"
    TOPIC_CHANGE = "TopicChange"
    TOPIC_DELETION = "TopicDeletion"
    ALTER_PARTITION_REASSIGNMENT = "AlterPartitionReassignment"
    AUTO_LEADER_BALANCE = "AutoLeaderBalance"
    MANUAL_LEADER_BALANCE = "ManualLeaderBalance"
    CONTROLLED_SHUTDOWN = "ControlledShutdown"
    ISR_CHANGE = "IsrChange"
    LEADER_AND_ISR_RESPONSE_RECEIVED = "LeaderAndIsrResponseReceived"
    LOG_DIR_CHANGE = "LogDirChange"
    UNCLEAN_LEADER_ELECTION_ENABLE = "UncleanLeaderElectionEnable"
    LIST_PARTITION_REASSIGNMENT = "ListPartitionReassignment"
    UPDATE_FEATURES = "UpdateFeatures"

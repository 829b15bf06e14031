"""The replication keys a partition reads, declared beside their user.

`replica.lag.time.max.ms` decides when a follower drops out of a partition's ISR
(`kafpy.cluster.partition`); KafkaConfig takes this definition in, so its default is
written once.
"""

from __future__ import annotations

from kafpy.common.config_def import ConfigDef, ConfigType, Importance

REPLICA_LAG_TIME_MAX_MS = "replica.lag.time.max.ms"

REPLICATION_CONFIG_DEF: ConfigDef = ConfigDef().define(
    REPLICA_LAG_TIME_MAX_MS, ConfigType.LONG, 30000, None, Importance.HIGH
)
"""The server.properties keys the cluster package reads (a subset of KafkaConfig)."""

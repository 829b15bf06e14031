"""The socket server's keys, declared beside the network layer that reads them.

KafkaConfig takes this definition in, so `SocketServer`'s constructor defaults and the
broker's configuration share one declaration of each default.
"""

from __future__ import annotations

from kafpy.common.config_def import ConfigDef, ConfigType, Importance, Range

SOCKET_REQUEST_MAX_BYTES = "socket.request.max.bytes"
CONNECTIONS_MAX_IDLE_MS = "connections.max.idle.ms"


def _socket_server_config_def() -> ConfigDef:
    h, m, t = Importance.HIGH, Importance.MEDIUM, ConfigType
    return (
        ConfigDef()
        .define(SOCKET_REQUEST_MAX_BYTES, t.INT, 104857600, Range.at_least(1), h,
                "The largest request a client may send; a bigger one closes its connection.")
        .define(CONNECTIONS_MAX_IDLE_MS, t.LONG, 600000, None, m)
    )  # fmt: skip


SOCKET_SERVER_CONFIG_DEF: ConfigDef = _socket_server_config_def()
"""The server.properties keys of the socket server (a subset of KafkaConfig)."""

"""kafpy.testing: real Kafka brokers for Python test suites.

`KafkaBroker` (one broker, in this process or as a child process) and `KafkaCluster`
(several in-process brokers sharing one embedded metadata store), each with a
`FaultInjector` as `.faults`; the pytest plugin (kafpy.testing.pytest_plugin) offers them
as fixtures. The names load on first use, so the plugin costs nothing until a fixture
starts a broker.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafpy.testing.broker import KafkaBroker, KafkaCluster
    from kafpy.testing.faults import FaultInjector

__all__ = ["FaultInjector", "KafkaBroker", "KafkaCluster"]


def __getattr__(name: str) -> Any:
    if name in ("KafkaBroker", "KafkaCluster"):
        from kafpy.testing import broker

        return getattr(broker, name)
    if name == "FaultInjector":
        from kafpy.testing.faults import FaultInjector

        return FaultInjector
    raise AttributeError(f"module 'kafpy.testing' has no attribute {name!r}")

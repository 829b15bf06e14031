"""kafpy.testing: real Kafka brokers for Python test suites.

`KafkaBroker` (one broker, in this process or as a child process) and `KafkaCluster`
(several in-process brokers sharing one embedded metadata store), each with a
`FaultInjector` as `.faults`; the pytest plugin (kafpy.testing.pytest_plugin) offers them
as fixtures.
"""

from kafpy.testing.broker import KafkaBroker, KafkaCluster
from kafpy.testing.faults import FaultInjector

__all__ = ["FaultInjector", "KafkaBroker", "KafkaCluster"]

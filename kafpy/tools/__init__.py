"""Tools around brokers rather than inside them: process management for local clusters.

`kafpy.tools.local_cluster` runs a ZooKeeper and several `kafpy server` processes on
loopback; `kafpy cluster`, the cluster tests and the benchmarks use it.
"""

"""Cluster tests: a real ZooKeeper and several `kafpy server` processes, killed and restarted."""

"""The controller: runs inside the broker that wins /controller and turns ZooKeeper changes
into state-machine transitions and LeaderAndIsr / UpdateMetadata / StopReplica requests."""

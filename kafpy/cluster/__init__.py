"""Partition and replica state on a broker (Kafka's kafka.cluster): the leader's view of
its followers, the high watermark, the ISR to expand or shrink, appends and reads through
the partition's log."""

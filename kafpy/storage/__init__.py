"""Kafka's log layer on disk: segments, indexes, Log, LogManager, checkpoints, configs."""

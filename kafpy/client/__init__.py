"""kafpy's own async Kafka client: connections, cluster metadata, admin operations."""

"""One broker process (Kafka's `kafka.server`): KafkaConfig and the broker lifecycle
(KafkaServer), the socket server and KafkaApis request handling, ReplicaManager, Partition
and the replica fetchers, the delayed operations (purgatory), MetadataCache, AdminManager
and the dynamic config listener."""

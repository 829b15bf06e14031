"""Topic administration on the metadata store, as Kafka's AdminUtils and TopicCommand."""

"""Record batches in Kafka's v2 format (magic 2): parsing, validation, building, compression."""

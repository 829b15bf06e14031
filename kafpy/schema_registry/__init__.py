"""kafpy's schema registry (`kafpy schema-registry`, extra `schema-registry`): a process
speaking Confluent Schema Registry's REST API v1, keeping its state in the compacted topic
`_schemas` of any Kafka cluster in Confluent's own record format, so that Confluent's
serializers and tools use it unmodified. See docs/schema_registry.md.
"""

"""The Kafka wire format: primitives, headers, per-API message schemas and error codes."""

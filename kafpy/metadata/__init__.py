"""The metadata store (ZooKeeper layout, MetadataStore interface and its backends)."""

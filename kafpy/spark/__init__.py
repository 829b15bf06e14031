"""kafpy's PySpark Python Data Source "kafpy": batch and streaming reads and writes with the
options and schema of Spark's Kafka connector."""

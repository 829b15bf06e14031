"""The transaction coordinator (Kafka's kafka.coordinator.transaction): transactional ids,
their state in __transaction_state, and the markers that end transactions."""

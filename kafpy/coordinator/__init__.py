"""The group coordinator: consumer groups, rebalances and committed offsets in __consumer_offsets."""

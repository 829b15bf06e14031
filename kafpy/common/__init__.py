"""Building blocks shared by every layer: time, scheduling, logging, errors, names."""

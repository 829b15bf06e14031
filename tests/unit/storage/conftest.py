"""Wires the storage tests' shared fixtures (defined in segment_fixtures.py)."""

from .segment_fixtures import clock, log_dir

__all__ = ["clock", "log_dir"]

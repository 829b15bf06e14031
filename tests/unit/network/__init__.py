"""Tests of kafpy.network."""

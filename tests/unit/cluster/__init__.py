"""Tests of kafpy.cluster."""

"""Wires the Spark test fixtures (tests/spark/fixtures.py) into the Spark tests."""

from tests.spark.fixtures import spark

__all__ = ["spark"]

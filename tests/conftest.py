"""Wires the fixtures each package owns (tests/fixtures/*) into every test."""

pytest_plugins = [
    "tests.fixtures.zookeeper",
    "tests.fixtures.broker",
    "tests.fixtures.cluster",
    "tests.fixtures.tmpfs",
    "tests.fixtures.file_descriptors",
    "tests.fixtures.processes",
    "tests.fixtures.console",
    "tests.fixtures.tls",
    "tests.fixtures.sasl",
    "tests.fixtures.kerberos",
    "tests.fixtures.schema_registry",
]

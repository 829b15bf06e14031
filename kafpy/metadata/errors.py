"""Errors of the metadata store, named after ZooKeeper's KeeperException codes."""

from __future__ import annotations


class MetadataStoreError(Exception):
    """Base class of metadata store failures; the message names the path."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class NoNodeError(MetadataStoreError):
    """The node (or, on create, its parent) does not exist."""


class NodeExistsError(MetadataStoreError):
    """A node already exists at the path being created."""


class BadVersionError(MetadataStoreError):
    """The expected version did not match the node's current version."""


class NotEmptyError(MetadataStoreError):
    """A node with children cannot be deleted without `recursive=True`."""


class NoChildrenForEphemeralsError(MetadataStoreError):
    """Ephemeral nodes cannot have children."""


class SessionExpiredError(MetadataStoreError):
    """The store's session expired: ephemeral nodes are gone and watches are lost."""


class ConnectionLossError(MetadataStoreError):
    """The connection to the store was lost; the outcome of the operation is unknown."""

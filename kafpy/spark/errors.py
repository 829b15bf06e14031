"""The error the kafpy data source raises for options it cannot take."""

from __future__ import annotations


class OptionError(ValueError):
    """A data source option is missing, malformed, contradicts another one or is not
    supported."""

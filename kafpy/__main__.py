"""Allows `python -m kafpy ...` as an alias of the `kafpy` command."""

from kafpy.cli.main import main

main()

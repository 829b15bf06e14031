"""The `kafpy` command line."""

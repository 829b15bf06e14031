"""LogDirFailureChannel: an I/O error queues its dir once; running out of file descriptors
queues nothing (the disk is fine)."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import pytest

from kafpy.common.errors import KafkaStorageError
from kafpy.common.file_descriptors import too_many_open_files
from kafpy.server.log_dir_failure_channel import LogDirFailureChannel


def test_an_io_error_queues_its_dir_once(tmp_path: Path) -> None:
    channel = LogDirFailureChannel()
    error = OSError(errno.EIO, "Input/output error")
    channel.maybe_add_offline_log_dir(tmp_path, "Error while appending records to t-0", error)
    channel.maybe_add_offline_log_dir(tmp_path, "Error while appending records to t-1", error)
    assert channel.has_offline_log_dir(tmp_path)
    assert list(channel._queue) == [tmp_path]


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENFILE])
def test_out_of_file_descriptors_is_no_failure_of_the_dir(
    tmp_path: Path, code: int, caplog: pytest.LogCaptureFixture
) -> None:
    channel = LogDirFailureChannel()
    checkpoint_error = KafkaStorageError("Error while writing to checkpoint file")
    checkpoint_error.__cause__ = OSError(code, "Too many open files")
    with caplog.at_level(logging.WARNING, "kafpy.server.LogDirFailureChannel"):
        channel.maybe_add_offline_log_dir(tmp_path, "Error while writing", checkpoint_error)
        channel.maybe_add_offline_log_dir(
            tmp_path,
            "Error while appending",
            too_many_open_files("Cannot open x", OSError(code, "x")),
        )
    assert not channel.has_offline_log_dir(tmp_path)
    assert not channel._queue
    assert f"Log dir {tmp_path} stays online: the broker is out of file descriptors" in caplog.text

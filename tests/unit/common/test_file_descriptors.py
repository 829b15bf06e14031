"""file_descriptors: the limit raised to the hard one, descriptors counted, and EMFILE/ENFILE
told apart from I/O errors however deep they were wrapped."""

from __future__ import annotations

import errno
import os
import resource

from kafpy.common.errors import Errors, KafkaStorageError
from kafpy.common.file_descriptors import (
    TooManyOpenFilesError,
    is_out_of_file_descriptors,
    open_file_count,
    open_files_limit,
    raise_open_files_limit,
    too_many_open_files,
)


def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowered = min(soft, hard, max(open_file_count() + 64, 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        before, after, reported_hard = raise_open_files_limit()
        assert (before, reported_hard) == (lowered, hard)
        assert after == open_files_limit() == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert after == hard or hard == resource.RLIM_INFINITY
        assert raise_open_files_limit() == (after, after, reported_hard)  # nothing left to raise
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_open_file_count_counts_this_process_descriptors() -> None:
    # other threads of a test worker may open or close a file between two counts: a
    # count off by a constant fails every try, a race only one
    seen = []
    for _ in range(5):
        before = open_file_count()
        held = [os.open(os.devnull, os.O_RDONLY) for _ in range(10)]
        try:
            during = open_file_count()
        finally:
            for fd in held:
                os.close(fd)
        seen.append((during - before, open_file_count() - before))
        if seen[-1] == (10, 0):
            break
    assert seen[-1] == (10, 0), seen


def test_emfile_and_enfile_are_found_through_the_errors_that_wrap_them() -> None:
    def wrapped(code: int) -> KafkaStorageError:
        try:
            try:
                raise OSError(code, os.strerror(code))
            except OSError as e:
                raise KafkaStorageError("Error while writing to checkpoint file") from e
        except KafkaStorageError as outer:
            return outer

    assert is_out_of_file_descriptors(wrapped(errno.EMFILE))
    assert is_out_of_file_descriptors(wrapped(errno.ENFILE))
    assert not is_out_of_file_descriptors(wrapped(errno.EIO))
    assert not is_out_of_file_descriptors(wrapped(errno.ENOSPC))
    assert not is_out_of_file_descriptors(None)


def test_the_refusal_names_the_limit_or_the_system_and_is_a_storage_error() -> None:
    emfile = too_many_open_files("Cannot create the log of t-0 in /d", OSError(errno.EMFILE, "x"))
    assert isinstance(emfile, TooManyOpenFilesError) and emfile.code == Errors.KAFKA_STORAGE_ERROR
    assert str(emfile).startswith("Cannot create the log of t-0 in /d: too many open files: ")
    assert f"RLIMIT_NOFILE limit of {open_files_limit()}" in str(emfile)
    enfile = too_many_open_files("Cannot open x", OSError(errno.ENFILE, "x"))
    assert "the system has no file descriptor left (ENFILE): raise fs.file-max" in str(enfile)
    assert is_out_of_file_descriptors(enfile)

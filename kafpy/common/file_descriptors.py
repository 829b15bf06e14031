"""File descriptors as a resource: the process's limit (RLIMIT_NOFILE), how many are open,
and whether an error means that they ran out.

A broker holds a descriptor per client connection, per open segment file and a few of its
own. Running out (EMFILE: this process's RLIMIT_NOFILE; ENFILE: the system's fs.file-max)
says nothing about the disk, so it must never take a log dir offline the way an I/O error
does: the operation that needed a descriptor is refused with `TooManyOpenFilesError`,
whose message names the limit, and the broker goes on serving what it already has open.
"""

from __future__ import annotations

import errno
import os
import resource

from kafpy.common.errors import KafkaStorageError

__all__ = [
    "TooManyOpenFilesError",
    "is_out_of_file_descriptors",
    "open_file_count",
    "open_files_limit",
    "raise_open_files_limit",
    "too_many_open_files",
]

_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)
# where Linux lists a process's open descriptors (one entry each)
_FD_DIR = "/proc/self/fd"


class TooManyOpenFilesError(KafkaStorageError):
    """An operation needed a file descriptor and the process (EMFILE) or the system
    (ENFILE) had none left: KAFKA_STORAGE_ERROR for the partition concerned, but not a
    log dir failure (the disk is fine)."""


def open_files_limit() -> int:
    """The soft RLIMIT_NOFILE: how many descriptors this process may hold open."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _finite(soft)


def raise_open_files_limit() -> tuple[int, int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard one, as the JVM does for Kafka
    (-XX:+MaxFDLimit). Returns (soft before, soft after, hard); the soft limit stays as it
    was if the system refuses (an unlimited hard limit is capped at fs.nr_open)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else _nr_open()
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError):
            target = soft
        return _finite(soft), _finite(target), _finite(hard)
    return _finite(soft), _finite(soft), _finite(hard)


def open_file_count() -> int:
    """The descriptors this process holds open (the entries of /proc/self/fd). Costs a
    directory listing: a few ms with 20,000 open; not for a hot path. At the limit the
    listing itself cannot open the directory, and the answer is the limit."""
    try:
        # the listing's own descriptor is among the entries
        return max(len(os.listdir(_FD_DIR)) - 1, 0)
    except OSError as e:
        if e.errno in _OUT_OF_DESCRIPTORS:
            return open_files_limit()
        return -1  # no /proc: unknown


def is_out_of_file_descriptors(error: BaseException | None) -> bool:
    """Whether `error`, or an error it was raised from, is EMFILE or ENFILE."""
    return any(
        isinstance(e, TooManyOpenFilesError)
        or (isinstance(e, OSError) and e.errno in _OUT_OF_DESCRIPTORS)
        for e in _chain(error)
    )


def too_many_open_files(what: str, error: BaseException) -> TooManyOpenFilesError:
    """The error to raise when `what` (e.g. "Cannot create the log of t-0 in /data")
    failed for want of a descriptor: it says which limit was reached and what to do."""
    limit = open_files_limit()
    if any(
        isinstance(e, OSError) and e.errno == errno.ENFILE for e in _chain(error)
    ):  # the whole system is out, not this process
        reason = (
            "the system has no file descriptor left (ENFILE): raise fs.file-max, or stop "
            "what else holds descriptors on this machine"
        )
    else:
        reason = (
            f"too many open files: {open_file_count()} of this broker's RLIMIT_NOFILE "
            f"limit of {limit} are in use (EMFILE); raise the limit (ulimit -n, "
            "LimitNOFILE= in a systemd unit) or host fewer partitions or connections here"
        )
    return TooManyOpenFilesError(f"{what}: {reason}")


def _chain(error: BaseException | None) -> list[BaseException]:
    """`error` and the errors it was raised from (or during), nearest first."""
    out: list[BaseException] = []
    while error is not None and len(out) < 16:
        out.append(error)
        error = error.__cause__ or error.__context__
    return out


def _nr_open() -> int:
    """The most a process may raise RLIMIT_NOFILE to on Linux (fs.nr_open)."""
    try:
        with open("/proc/sys/fs/nr_open", "rb") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 1 << 20


def _finite(limit: int) -> int:
    return _nr_open() if limit == resource.RLIM_INFINITY else limit

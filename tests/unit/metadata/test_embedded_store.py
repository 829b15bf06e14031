"""Behaviour of the embedded store beyond the shared contract: persistence and expiry."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafpy.common.time import MockTime
from kafpy.metadata.embedded_store import DB_FILE_NAME, EmbeddedStore
from kafpy.metadata.errors import ConnectionLossError, MetadataStoreError
from kafpy.metadata.store import EventType, WatchedEvent

WAIT_S = 20.0


def test_nodes_and_versions_survive_a_restart(tmp_path: Path) -> None:
    async def first_run() -> tuple[int, int]:
        store = EmbeddedStore(tmp_path)
        await store.start()
        await store.create("/config/topics/t", b"{}", make_parents=True)
        await store.set("/config/topics/t", b'{"version":1}')
        await store.create("/brokers/ids/0", b"{}", ephemeral=True, make_parents=True)
        await store.create("/q/", b"", sequential=True, make_parents=True)
        stat = await store.exists("/config/topics/t")
        assert stat is not None
        session = store.session_id
        await store.close()
        return stat.mzxid, session

    async def second_run(mzxid: int, old_session: int) -> None:
        store = EmbeddedStore(tmp_path)
        await store.start()
        data, stat = await store.get("/config/topics/t")
        assert data == b'{"version":1}'
        assert stat.version == 1
        assert stat.mzxid == mzxid
        assert await store.exists("/brokers/ids/0") is None
        # the zxid and session counters continue from where they were
        await store.create("/later")
        assert (await store.exists("/later")).czxid > mzxid  # type: ignore[union-attr]
        assert store.session_id > old_session
        # so does the parent's cversion, hence the sequence numbers
        assert await store.create("/q/", b"", sequential=True) == "/q/0000000001"
        await store.close()

    mzxid, session = asyncio.run(first_run())
    assert (tmp_path / DB_FILE_NAME).exists()
    asyncio.run(second_run(mzxid, session))


def test_ephemeral_nodes_of_a_crashed_process_are_deleted_at_start(tmp_path: Path) -> None:
    crash = textwrap.dedent(
        f"""
        import asyncio, os
        from kafpy.metadata.embedded_store import EmbeddedStore

        async def main():
            store = EmbeddedStore({str(tmp_path)!r})
            await store.start()
            await store.create("/brokers/ids/0", b"{{}}", ephemeral=True, make_parents=True)
            os._exit(0)  # no close: like a crash

        asyncio.run(main())
        """
    )
    subprocess.run([sys.executable, "-c", crash], check=True, timeout=60)

    async def restart() -> None:
        store = EmbeddedStore(tmp_path)
        await store.start()
        assert await store.get_children("/brokers/ids") == []
        stat = await store.exists("/brokers/ids")
        assert stat is not None and (stat.cversion, stat.num_children) == (2, 0)
        await store.close()

    asyncio.run(restart())


def test_a_data_dir_is_used_by_one_process_at_a_time(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = EmbeddedStore(tmp_path)
        await store.start()
        try:
            probe = textwrap.dedent(
                f"""
                import asyncio
                from kafpy.metadata.embedded_store import EmbeddedStore
                asyncio.run(EmbeddedStore({str(tmp_path)!r}).start())
                """
            )
            result = subprocess.run(
                [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
            )
            assert result.returncode != 0
            assert "in use by another process" in result.stderr
        finally:
            await store.close()

    asyncio.run(scenario())


def test_expire_session() -> None:
    async def scenario() -> None:
        store = EmbeddedStore(None)
        await store.start()
        other = store.new_session()
        await other.start()
        await store.create("/brokers/ids", make_parents=True)
        await store.create("/brokers/ids/1", b"{}", ephemeral=True)
        await store.create("/watched", b"")

        own_watch: list[WatchedEvent] = []
        await store.get("/watched", watch=own_watch.append)
        others_watch: asyncio.Queue[WatchedEvent] = asyncio.Queue()
        await other.get_children("/brokers/ids", watch=others_watch.put_nowait)
        expired = asyncio.Event()
        sessions_at_expiry: list[int] = []

        async def on_expired() -> None:
            sessions_at_expiry.append(store.session_id)
            await store.create("/brokers/ids/1", b"{}", ephemeral=True)
            expired.set()

        store.on_session_expired(on_expired)
        old_session = store.session_id

        await store.expire_session()
        event = await asyncio.wait_for(others_watch.get(), WAIT_S)
        assert event == WatchedEvent(EventType.CHILD, "/brokers/ids")
        await asyncio.wait_for(expired.wait(), WAIT_S)
        # the callback ran with a new session in place and re-registered the broker
        assert sessions_at_expiry == [store.session_id]
        assert store.session_id != old_session
        stat = await other.exists("/brokers/ids/1")
        assert stat is not None and stat.ephemeral_owner == store.session_id

        # the expired session's watches are gone
        await other.set("/watched", b"x")
        barrier: asyncio.Queue[WatchedEvent] = asyncio.Queue()
        await store.exists("/barrier", watch=barrier.put_nowait)
        await other.create("/barrier")
        await asyncio.wait_for(barrier.get(), WAIT_S)
        assert own_watch == []
        await other.close()
        await store.close()

    asyncio.run(scenario())


def test_sessions_on_the_same_directory_share_the_database(tmp_path: Path) -> None:
    async def scenario() -> None:
        first, second = EmbeddedStore(tmp_path), EmbeddedStore(tmp_path)
        await first.start()
        await second.start()
        await first.create("/a", b"1")
        assert (await second.get("/a"))[0] == b"1"
        await first.close()
        # the database stays open for the remaining session
        await second.set("/a", b"2")
        await second.close()
        third = EmbeddedStore(tmp_path)
        await third.start()
        assert (await third.get("/a"))[0] == b"2"
        await third.close()

    asyncio.run(scenario())


def test_times_come_from_the_given_clock() -> None:
    async def scenario() -> None:
        time = MockTime(current_ms=1_000)
        store = EmbeddedStore(None, time=time)
        await store.start()
        await store.create("/a", b"")
        time.advance(500)
        stat = await store.set("/a", b"x")
        assert (stat.ctime, stat.mtime) == (1_000, 1_500)
        await store.close()

    asyncio.run(scenario())


def test_operations_need_an_open_session() -> None:
    async def scenario() -> None:
        store = EmbeddedStore(None)
        with pytest.raises(ConnectionLossError, match="start"):
            await store.get("/")
        await store.start()
        await store.close()
        with pytest.raises(MetadataStoreError):
            await store.create("/a")

    asyncio.run(scenario())


def test_an_unreadable_database_is_reported(tmp_path: Path) -> None:
    (tmp_path / DB_FILE_NAME).write_bytes(b"this is not a database" * 100)

    async def scenario() -> None:
        with pytest.raises(MetadataStoreError, match="cannot be read.*move it away"):
            await EmbeddedStore(tmp_path).start()

    asyncio.run(scenario())
    # the directory is not left locked
    (tmp_path / DB_FILE_NAME).unlink()

    async def retry() -> None:
        store = EmbeddedStore(tmp_path)
        await store.start()
        await store.close()

    asyncio.run(retry())


def test_a_burst_of_requests_leaves_the_loop_to_other_work(tmp_path: Path) -> None:
    """Requests answered at once still let other tasks run during a long burst (as a
    controller's 1,000 state-node creations do), in slices, and every request succeeds."""

    async def main() -> None:
        store = EmbeddedStore(tmp_path)
        await store.start()
        ticks: list[int] = []
        written = 0

        async def ticker() -> None:
            while True:
                ticks.append(written)
                await asyncio.sleep(0)

        task = asyncio.get_running_loop().create_task(ticker())
        await asyncio.sleep(0)  # the ticker has run once
        before = len(ticks)
        # without slicing, no other task would run until the loop below ends
        while len(ticks) == before and written < 20000:
            await store.create(f"/burst/{written}", b"x" * 100, make_parents=True)
            written += 1
        assert len(ticks) > before, "no other task ran during 20,000 requests"
        assert 0 < ticks[-1] < 20000  # it ran in the middle of the burst
        task.cancel()
        assert len(await store.get_children("/burst")) == written
        await store.close()

    asyncio.run(main())


def test_concurrent_callers_are_sliced_too(tmp_path: Path) -> None:
    """2,000 callers woken in the same loop iteration (a controller creating the state nodes
    of 2,000 partitions at once) share the slices: between two turns of another task, far
    fewer requests than callers are answered."""

    async def main() -> None:
        store = EmbeddedStore(tmp_path)
        await store.start()
        await store.create("/states", b"")
        answered = 0
        between_ticks: list[int] = []
        done = False

        async def ticker() -> None:
            last = 0
            while not done:
                between_ticks.append(answered - last)
                last = answered
                await asyncio.sleep(0)

        async def caller(i: int) -> None:
            nonlocal answered
            await store.create(f"/states/{i}", b"x" * 100)
            answered += 1
            await store.set(f"/states/{i}", b"y" * 100)
            answered += 1

        task = asyncio.get_running_loop().create_task(ticker())
        await asyncio.gather(*(caller(i) for i in range(2000)))
        done = True
        await task
        assert answered == 4000
        assert len(await store.get_children("/states")) == 2000
        # unsliced, each iteration answers one request of every caller woken in it: 2,000
        assert max(between_ticks) < 1000, max(between_ticks)
        await store.close()

    asyncio.run(main())

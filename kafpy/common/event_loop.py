"""How kafpy's long-running processes (a broker, the schema registry) run their event loop:
uvloop when it is installed, and a heap frozen once start-up is done."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Coroutine
from typing import Any

GENERATION_2_THRESHOLD = 100


def run_event_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` on uvloop when it is installed, else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    uvloop.run(main)


def settle_garbage_collector() -> None:
    """Once start-up is done: what it built (recovered logs, configs, caches) lives as long
    as the process; moved out of the collector's reach, it is no longer walked by every
    generation-2 collection, which stops the loop for as long as it takes
    (bench/metadata_load.py: the longest went from 157 to 76-104 ms)."""
    gc.collect()
    gc.freeze()
    # A generation-2 collection walks every object the broker keeps (logs, indexes, groups,
    # connections: 50-90 ms under bench/metadata_load.py's load on 2 busy cores), and the
    # broker makes next to no cyclic garbage for it to find. Run one per 100 generation-1
    # collections instead of 10: 2 in that bench's run instead of 3-8, Metadata p99 5-8 ms
    # instead of 3-61 ms; generations 0 and 1 (sub-millisecond pauses) are left as they are.
    gen0, gen1, _ = gc.get_threshold()
    gc.set_threshold(gen0, gen1, GENERATION_2_THRESHOLD)

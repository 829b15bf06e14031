"""The schema registry under load: registering versions, then look-ups at a fixed rate.

    python bench/schema_registry.py [--subjects 100] [--versions 100] [--rate 1000]
                                    [--duration 10]

Starts one broker and one `kafpy schema-registry` (separate processes), then:
1. registers subjects × versions AVRO schemas, one at a time over one HTTP connection
   (each version adds a field with a default, so BACKWARD checks pass): registrations/s
   and the latency percentiles of a registration (each one is written to `_schemas` and
   read back before it is answered);
2. restarts the registry and times how long it takes to read `_schemas` back and answer;
3. for --duration seconds at --rate requests/s (open loop: latency counts from when the
   request was due, so a stall is not hidden), half look-ups by id
   (GET /schemas/ids/{id}) and half by schema (POST /subjects/{subject}): the achieved rate
   and p50/p99/p99.9/max in ms, the CPU time the registry and the client spent per
   look-up, the host's load average (the figures mean little on a busy host), and the
   slowest request of each second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from bench_support import cpu_seconds, exit_with, free_port, start_broker, wait_port  # noqa: E402

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent.parent))

from kafpy.common.wait import wait_until  # noqa: E402

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def percentiles(samples_ms: list[float]) -> str:
    s = sorted(samples_ms)

    def at(q: float) -> float:
        return s[min(len(s) - 1, int(q * len(s)))]

    return (
        f"n={len(s)} p50={at(0.5):.2f} p99={at(0.99):.2f} p99.9={at(0.999):.2f} max={s[-1]:.2f} ms"
    )


def schema(subject: int, version: int) -> str:
    fields = [{"name": "id", "type": "long"}] + [
        {"name": f"f{i}", "type": "string", "default": ""} for i in range(1, version)
    ]
    return json.dumps({"type": "record", "name": f"Rec{subject}", "fields": fields})


def start_registry(workdir: Path, broker_port: int, port: int) -> subprocess.Popen[bytes]:
    log = open(workdir / "schema-registry.log", "ab")  # noqa: SIM115 - the child holds it
    return subprocess.Popen(
        [sys.executable, "-m", "kafpy", "schema-registry",
         "--override", f"kafkastore.bootstrap.servers=127.0.0.1:{broker_port}",
         "--override", f"listeners=http://127.0.0.1:{port}",
         "--override", "kafkastore.timeout.ms=10000"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def register_all(url: str, subjects: int, versions: int) -> list[tuple[int, int, int]]:
    """Register every version; returns (subject, version, id) of each."""
    done: list[tuple[int, int, int]] = []
    latencies: list[float] = []
    headers = {"Content-Type": CONTENT_TYPE}
    connector = aiohttp.TCPConnector(limit=1)
    async with aiohttp.ClientSession(url, connector=connector, headers=headers) as http:
        start = time.perf_counter()
        for v in range(1, versions + 1):
            for s in range(subjects):
                began = time.perf_counter()
                body = json.dumps({"schema": schema(s, v)})
                async with http.post(f"/subjects/s{s}-value/versions", data=body) as r:
                    answer = await r.json(content_type=None)
                    if r.status != 200:
                        raise SystemExit(f"registration refused: {r.status} {answer}")
                latencies.append((time.perf_counter() - began) * 1000)
                done.append((s, v, answer["id"]))
        elapsed = time.perf_counter() - start
    print(
        f"registered {len(done)} versions in {elapsed:.1f} s: {len(done) / elapsed:.0f}/s; "
        f"latency {percentiles(latencies)}"
    )
    return done


async def look_up(
    url: str, registered: list[tuple[int, int, int]], rate: int, duration: float, pid: int
) -> None:
    headers = {"Content-Type": CONTENT_TYPE}
    connector = aiohttp.TCPConnector(limit=64)
    by_id: list[float] = []
    by_schema: list[float] = []
    failures = 0
    worst: dict[int, float] = {}  # second of the run -> its slowest request, ms
    start = 0.0
    rng = random.Random(7)
    # the request bodies are made before the clock starts, so the client's own work is small
    bodies = {(s, v): json.dumps({"schema": schema(s, v)}) for s, v, _ in registered}
    async with aiohttp.ClientSession(url, connector=connector, headers=headers) as http:

        async def one(due: float, i: int) -> None:
            nonlocal failures
            s, v, schema_id = rng.choice(registered)
            if i % 2:
                request = http.get(f"/schemas/ids/{schema_id}")
            else:
                request = http.post(f"/subjects/s{s}-value", data=bodies[(s, v)])
            async with request as r:
                await r.read()
                if r.status != 200:
                    failures += 1
            latency = (time.perf_counter() - due) * 1000
            (by_id if i % 2 else by_schema).append(latency)
            second = int(due - start)
            worst[second] = max(worst.get(second, 0.0), latency)

        total = int(rate * duration)
        tasks = []
        cpu_before, own_before = cpu_seconds(pid), time.process_time()
        start = time.perf_counter()
        for i in range(total):
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(due, i)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
        cpu = cpu_seconds(pid) - cpu_before
        own = time.process_time() - own_before
    print(
        f"look-ups at {rate}/s for {duration:g} s: {total / elapsed:.0f}/s achieved, "
        f"{failures} failed; CPU per look-up: registry {cpu / total * 1e6:.0f} µs, this "
        f"client {own / total * 1e6:.0f} µs; load average {os.getloadavg()[0]:.1f}"
    )
    print(f"  by id     (GET /schemas/ids/{{id}})    {percentiles(by_id)}")
    print(f"  by schema (POST /subjects/{{subject}}) {percentiles(by_schema)}")
    print("  slowest request per second: " + " ".join(f"{worst[s]:.0f}" for s in sorted(worst)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--subjects", type=int, default=100)
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--duration", type=float, default=10.0)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="kafpy-sr-bench-"))
    broker_port, registry_port = free_port(), free_port()
    url = f"http://127.0.0.1:{registry_port}"
    broker = start_broker(workdir, broker_port, open(workdir / "broker.log", "ab"))  # noqa: SIM115
    registry = None
    try:
        wait_port(broker_port)
        registry = start_registry(workdir, broker_port, registry_port)
        wait_port(registry_port, timeout=120)
        registered = asyncio.run(register_all(url, args.subjects, args.versions))
        stop(registry)
        began = time.perf_counter()
        registry = start_registry(workdir, broker_port, registry_port)
        wait_until(
            lambda: _answers(url), timeout_s=300, interval_s=0.05,
            on_timeout=exit_with("the restarted registry did not answer"),
        )  # fmt: skip
        print(
            f"restart: read {len(registered)} versions back from _schemas and answered in "
            f"{time.perf_counter() - began:.2f} s"
        )
        asyncio.run(look_up(url, registered, args.rate, args.duration, registry.pid))
    finally:
        if registry is not None:
            stop(registry)
        stop(broker)
        shutil.rmtree(workdir, ignore_errors=True)


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/subjects", timeout=1) as r:
            return bool(r.status == 200)
    except OSError:
        return False


if __name__ == "__main__":
    main()

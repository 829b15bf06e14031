"""Start-up benchmark: time to first Metadata and memory of a fresh kafpy broker.

Run: `python bench/startup.py [--runs 10]`

Each run is a fresh Python process, so imports count where a user would pay them:
- in-process: `import kafpy.testing`, then `KafkaBroker().start()` (a KafkaServer on its
  own loop thread) until its Metadata lists itself and a controller; then a second broker
  in the same process; and the process's peak RSS (VmHWM) with the first one idle;
- subprocess: `KafkaBroker(mode="subprocess").start()` from the same kind of process;
- `kafpy server`: from spawning `python -m kafpy server` until a client's Metadata request
  is answered with the broker and a controller; the server's peak RSS once idle.
Figures are medians of the runs, in seconds and MB; progress goes to stderr. Python's
bytecode is cached (in a temporary PYTHONPYCACHEPREFIX, filled by one warm-up run not
counted) as an installed kafpy's is, even where PYTHONDONTWRITEBYTECODE is set: without
it every run compiles every module and measures the compiler.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
_ENV["PYTHONPATH"] = str(ROOT)

# One fresh process: import, first broker, second broker, peak RSS (JSON on stdout).
_INPROCESS = """
import json, time
t0 = time.perf_counter()
from kafpy.testing import KafkaBroker
t1 = time.perf_counter()
first = KafkaBroker(mode=MODE).start()
t2 = time.perf_counter()
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
second = None
if MODE == "inprocess":
    t3 = time.perf_counter()
    second = KafkaBroker().start()
    t4 = time.perf_counter()
    second.stop()
first.stop()
print(json.dumps({"import": t1 - t0, "first": t2 - t1,
                  "second": (t4 - t3) if second else None, "rss_mb": int(hwm) / 1024}))
"""


def _run_python(code: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_ENV, check=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _metadata_request() -> bytes:
    # Metadata v1, correlation id 1, client id "bench", topics: none (empty array)
    client_id = b"bench"
    body = struct.pack(">hhih", 3, 1, 1, len(client_id)) + client_id + struct.pack(">i", 0)
    return struct.pack(">i", len(body)) + body


def _answers_metadata(port: int) -> bool:
    """One Metadata v1 over a raw socket: True once it lists a broker and a controller."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(_metadata_request())
            (size,) = struct.unpack(">i", _recv(s, 4))
            body = _recv(s, size)
    except OSError:
        return False
    # correlation id, brokers array count, then per broker: id, host, port, rack
    (brokers,) = struct.unpack_from(">i", body, 4)
    if brokers < 1:
        return False
    pos = 8
    for _ in range(brokers):
        pos += 4
        (host_len,) = struct.unpack_from(">h", body, pos)
        pos += 2 + host_len + 4
        (rack_len,) = struct.unpack_from(">h", body, pos)
        pos += 2 + max(rack_len, 0)
    (controller,) = struct.unpack_from(">i", body, pos)
    return bool(controller >= 0)


def _recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _kafpy_server_run() -> dict[str, float]:
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="kafpy-bench-") as d:
        args = [
            sys.executable, "-m", "kafpy", "server",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override", f"log.dirs={d}/logs",
        ]  # fmt: skip
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            args, env=_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            while not _answers_metadata(port):
                if proc.poll() is not None:
                    raise RuntimeError(f"kafpy server exited with {proc.returncode}")
                time.sleep(0.002)
            elapsed = time.perf_counter() - t0
            time.sleep(0.5)  # idle
            status = Path(f"/proc/{proc.pid}/status").read_text()
            hwm = next(line for line in status.splitlines() if line.startswith("VmHWM"))
            rss_mb = int(hwm.split()[1]) / 1024
        finally:
            proc.terminate()
            proc.wait(30)
    return {"first": elapsed, "rss_mb": rss_mb}


def _median(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"inprocess": [], "subprocess": [], "server": []}
    with tempfile.TemporaryDirectory(prefix="kafpy-bench-pycache-") as pycache:
        _ENV["PYTHONPYCACHEPREFIX"] = pycache
        for i in range(args.runs + 1):
            print(f"run {i}/{args.runs}" + (" (warm-up)" if i == 0 else ""), file=sys.stderr)
            runs = {
                "inprocess": _run_python(_INPROCESS.replace("MODE", '"inprocess"')),
                "subprocess": _run_python(_INPROCESS.replace("MODE", '"subprocess"')),
                "server": _kafpy_server_run(),
            }
            if i:
                for kind, figures in runs.items():
                    results[kind].append(figures)
    inproc, sub, server = results["inprocess"], results["subprocess"], results["server"]
    print(f"median of {args.runs} runs")
    print(f"import kafpy.testing            {_median(inproc, 'import'):.3f} s")
    print(f"in-process, first broker        {_median(inproc, 'first'):.3f} s to first Metadata")
    print(f"in-process, second broker       {_median(inproc, 'second'):.3f} s to first Metadata")
    print(f"in-process peak RSS             {_median(inproc, 'rss_mb'):.1f} MB (whole process)")
    print(f"KafkaBroker(mode='subprocess')  {_median(sub, 'first'):.3f} s to first Metadata")
    print(f"kafpy server                    {_median(server, 'first'):.3f} s to first Metadata")
    print(f"kafpy server peak RSS           {_median(server, 'rss_mb'):.1f} MB (idle)")


if __name__ == "__main__":
    main()

"""Build kafpy's wheel and sdist, check them, and prove the core wheel works on its own.

Run by `make package-check` (and CI): builds with `python -m build`, runs `twine check`,
installs the core wheel (no extras) into a fresh venv outside the checkout, then, from an
empty directory, starts `kafpy server` with no arguments, produces one record with kcat,
reads it back with `kafpy console-consumer`, runs an application's test suite on the
`kafpy.testing` pytest plugin, checks that a part needing an extra refuses
naming it, and stops the broker with SIGTERM. Prints the venv's size (the goal is 60 MB).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import venv
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOPIC = "package-check"
PACKAGE_DATA = (
    "kafpy/config/server.properties",
    "kafpy/config/log4j.properties",
    "kafpy/console/templates/base.html",
    "kafpy/console/static/console.css",
)
APP_TEST = """
from kafpy.testing import KafkaBroker


def test_a_broker_in_the_test_process(kafka_bootstrap):
    assert kafka_bootstrap.startswith("127.0.0.1:")


def test_records_round_trip():
    with KafkaBroker() as broker:
        broker.create_topic("orders", partitions=1)
        broker.produce("orders", [b"one", b"two"])
        assert [r.value for r in broker.consume("orders", 2)] == [b"one", b"two"]
"""


def run(*args: str | Path, cwd: Path | None = None, timeout: float = 600) -> str:
    print("$", " ".join(str(a) for a in args), flush=True)
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        sys.exit(f"failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


def du_mb(path: Path) -> float:
    return (
        sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6
    )


def wait_for_port(port: int, server: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"kafpy server exited with {server.returncode} while starting")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"kafpy server did not listen on {port} within {seconds:.0f} s")


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="kafpy-package-"))
    server: subprocess.Popen[bytes] | None = None
    try:
        dist = work / "dist"
        run(sys.executable, "-m", "build", "--outdir", dist, REPO)
        wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
        assert len(wheels) == 1 and len(sdists) == 1, os.listdir(dist)
        run(sys.executable, "-m", "twine", "check", "--strict", wheels[0], sdists[0])
        with zipfile.ZipFile(wheels[0]) as wheel:
            names = set(wheel.namelist())
        for data in PACKAGE_DATA:
            assert data in names, f"{data} is not in the wheel"

        env_dir = work / "venv"
        venv.create(env_dir, with_pip=True)
        bin_dir = env_dir / "bin"
        empty = du_mb(env_dir)
        run(bin_dir / "pip", "install", "-q", wheels[0])
        size = du_mb(env_dir)
        print(
            f"a fresh venv with the core wheel: {size:.1f} MB (goal: 60 MB): the venv's own "
            f"pip and setuptools {empty:.1f} MB, kafpy and its dependencies {size - empty:.1f} MB"
        )

        home = work / "home"  # an empty directory: nothing of the checkout around
        home.mkdir()
        version = run(bin_dir / "kafpy", "--version", cwd=home)
        expected = run(sys.executable, "-c", "import kafpy; print(kafpy.__version__)", cwd=REPO)
        assert expected.strip() in version, (version, expected)
        wheel_version = wheels[0].name.split("-")[1]
        assert wheel_version == expected.strip(), (wheel_version, expected)

        console = subprocess.run(
            [bin_dir / "kafpy", "console"], cwd=home, capture_output=True, text=True, timeout=60
        )
        assert console.returncode == 1, console
        assert "kafpy console needs `pip install 'kafpy[console]'`" in console.stderr, console
        assert "Traceback" not in console.stderr, console.stderr
        tls = subprocess.run(
            [bin_dir / "kafpy", "server", "--override", "listeners=SSL://127.0.0.1:0"],
            cwd=home, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert tls.returncode != 0, tls
        assert "needs `pip install 'kafpy[crypto]'`" in tls.stderr, tls
        assert "Traceback" not in tls.stderr, tls.stderr

        # kafpy.testing installs light: an application's test suite on the core wheel
        run(bin_dir / "pip", "install", "-q", "pytest")
        (home / "test_app.py").write_text(APP_TEST)
        run(bin_dir / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=home)
        (home / "test_app.py").unlink()

        # the shipped configs work on the core install
        shipped = run(
            bin_dir / "python",
            "-c",
            "import kafpy, pathlib; print(pathlib.Path(kafpy.__file__).parent / 'config')",
            cwd=home,
        ).strip()
        configs = Path(shipped)
        assert (configs / "server.properties").is_file() and (
            configs / "log4j.properties"
        ).is_file()

        log = (home / "server.log").open("wb")
        server = subprocess.Popen(
            [bin_dir / "kafpy", "server"], cwd=home, stdout=log, stderr=subprocess.STDOUT
        )
        wait_for_port(9092, server, 60)
        record = f"kafpy {expected.strip()} from its wheel"
        produce = subprocess.run(
            ["kcat", "-P", "-b", "127.0.0.1:9092", "-t", TOPIC],
            input=record + "\n",
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert produce.returncode == 0, produce
        consumed = run(
            bin_dir / "kafpy",
            "console-consumer",
            "--bootstrap-server",
            "127.0.0.1:9092",
            "--topic",
            TOPIC,
            "--from-beginning",
            "--max-messages",
            "1",
            "--timeout-ms",
            "30000",
            cwd=home,
            timeout=90,
        )
        assert consumed.splitlines() == [record], consumed
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=60)
        server = None
        log.close()
        assert code == 0, f"kafpy server exited with {code} on SIGTERM"
        assert "shut down completed" in (home / "server.log").read_text(), "no clean shutdown"
        print("package check passed: built, checked, installed, served, stopped cleanly")
    finally:
        if server is not None:
            server.kill()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

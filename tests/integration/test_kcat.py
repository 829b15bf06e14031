"""kcat (Debian's /usr/bin/kcat) against a real `kafpy server`: -L, -P, -C -e."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid

import pytest

from tests.fixtures.broker import KafpyBroker

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat is not installed (apt-get install kcat)")


def kcat(*args: str, stdin: str | None = None) -> str:
    assert KCAT is not None
    res = subprocess.run([KCAT, *args], input=stdin, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_produce_list_and_consume(kafpy_module_broker: KafpyBroker) -> None:
    b = kafpy_module_broker.bootstrap
    topic = f"kc-{uuid.uuid4().hex[:8]}"
    lines = "".join(f"key{i}:value {i}\n" for i in range(20))
    kcat("-b", b, "-P", "-t", topic, "-K", ":", "-z", "snappy", stdin=lines)

    meta = json.loads(kcat("-b", b, "-L", "-t", topic, "-J"))
    assert [br["id"] for br in meta["brokers"]] == [kafpy_module_broker.broker_id]
    assert meta["controllerid"] == kafpy_module_broker.broker_id
    [t] = meta["topics"]
    assert t["topic"] == topic and [(p["partition"], p["leader"]) for p in t["partitions"]] == [
        (0, 0)
    ]
    assert f'topic "{topic}" with 1 partitions' in kcat("-b", b, "-L")

    out = kcat("-b", b, "-C", "-t", topic, "-e", "-o", "beginning", "-f", "%o|%k|%s\n")
    assert out.splitlines() == [f"{i}|key{i}|value {i}" for i in range(20)]
    out = kcat("-b", b, "-C", "-t", topic, "-e", "-o", "15", "-f", "%o\n")
    assert out.split() == [str(i) for i in range(15, 20)]

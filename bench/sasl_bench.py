"""SASL cost on one `kafpy server`: authenticated connections per second and produce
throughput, PLAINTEXT vs SASL_PLAINTEXT.

    python bench/sasl_bench.py [--connections 200] [--records 50000] [--size 1024] [--rounds 2]

Starts a broker with a PLAINTEXT and a SASL_PLAINTEXT listener (PLAIN users from JAAS, a
SCRAM user made with `kafpy configs`), then opens --connections connections with kafpy's
client (ApiVersions, then SaslHandshake + SaslAuthenticate) for PLAINTEXT, PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 (4096 iterations; the client's PBKDF2 is most of SCRAM's
cost), OAUTHBEARER with unsecured tokens (Kafka's validator) and with RS256 and ES256
tokens checked by kafpy's JWKS validator on a third listener, and produces --records records with confluent-kafka over PLAINTEXT and over
SASL_PLAINTEXT/SCRAM-SHA-256 (authentication is per connection, so throughput should
not move). The cases take turns for --rounds rounds and the best round counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jwt
from bench_support import free_port, produce_all, wait_port  # noqa: E402
from confluent_kafka import Producer
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.client.connection import BrokerConnection
from kafpy.security.oauthbearer import OAuthBearerGivenToken
from kafpy.security.oauthbearer_unsecured import OAuthBearerUnsecuredLogin

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
JWKS_HANDLER = "kafpy.security.oauthbearer_jwks.OAuthBearerJwksValidator"


def signed_cases(jwks_port: int, rsa_key: rsa.RSAPrivateKey, ec_key: ec.EllipticCurvePrivateKey
                 ) -> list[tuple[str, int, ClientSecurity]]:  # fmt: skip
    cases = []
    for alg, key, kid in (("RS256", rsa_key, "r"), ("ES256", ec_key, "e")):
        claims = {"sub": "alice", "iat": time.time(), "exp": time.time() + 3600}
        token = OAuthBearerGivenToken(jwt.encode(claims, key, alg, {"kid": kid}))
        sasl = SaslCredentials("OAUTHBEARER", oauthbearer=token)
        cases.append((f"JWKS {alg}", jwks_port, ClientSecurity("SASL_PLAINTEXT", None, sasl)))
    return cases


async def connections_per_second(port: int, security: ClientSecurity, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        conn = BrokerConnection("127.0.0.1", port, security=security)
        await conn.connect()
        await conn.close()
    return n / (time.perf_counter() - start)


def produce_rate(conf: dict[str, str], topic: str, n: int, value: bytes) -> float:
    p = Producer({**conf, "acks": "1", "linger.ms": 5, "batch.size": 1 << 20})
    p.produce(topic, value)
    p.flush(30)  # connected and authenticated before timing
    return n / produce_all(p, topic, n, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=2, help="best round counts (shared machine)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kafpy-sasl-bench-"))
    plain_port, sasl_port, jwks_port = free_port(), free_port(), free_port()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    keys = [
        {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(rsa_key.public_key())), "kid": "r"},
        {**json.loads(jwt.algorithms.ECAlgorithm.to_jwk(ec_key.public_key())), "kid": "e"},
    ]
    (work / "jwks.json").write_text(json.dumps({"keys": keys}))
    overrides = {
        "broker.id": "0", "log.dirs": str(work / "logs"),
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                     f"JWKS://127.0.0.1:{jwks_port}",
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,JWKS:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{OAUTH};",
        "listener.name.jwks.sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.jwks.oauthbearer.sasl.server.callback.handler.class": JWKS_HANDLER,
        "listener.name.jwks.oauthbearer.sasl.jaas.config":
            f'{OAUTH} kafpyJwksUrl="{(work / "jwks.json").as_uri()}";',
    }  # fmt: skip
    cmd = [sys.executable, "-m", "kafpy", "server"]
    for k, v in overrides.items():
        cmd += ["--override", f"{k}={v}"]
    with (work / "broker.out").open("wb") as log:
        broker = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    try:
        wait_port(plain_port)
        time.sleep(2)
        subprocess.run(
            [sys.executable, "-m", "kafpy", "configs", "--bootstrap-server",
             f"127.0.0.1:{plain_port}", "--alter", "--entity-type", "users", "--entity-name",
             "alice", "--add-config",
             "SCRAM-SHA-256=[password=alice-secret],SCRAM-SHA-512=[password=alice-secret]"],
            check=True, capture_output=True,
        )  # fmt: skip
        time.sleep(1)
        cases = [("PLAINTEXT", plain_port, ClientSecurity())] + [
            (m, sasl_port,
             ClientSecurity("SASL_PLAINTEXT", None, SaslCredentials(m, "alice", "alice-secret")))
            for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
        ] + [
            ("OAUTHBEARER", sasl_port, ClientSecurity("SASL_PLAINTEXT", None, SaslCredentials(
                "OAUTHBEARER", oauthbearer=OAuthBearerUnsecuredLogin(
                    {"unsecuredLoginStringClaim_sub": "alice"})))),
        ] + signed_cases(jwks_port, rsa_key, ec_key)  # fmt: skip
        print(f"connections (kafpy client, {args.connections} each, best of {args.rounds}):")
        asyncio.run(connections_per_second(plain_port, ClientSecurity(), 10))  # warm-up
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for name, port, security in cases:
                rate = asyncio.run(connections_per_second(port, security, args.connections))
                best[name] = max(best.get(name, 0.0), rate)
        for name, rate in best.items():
            print(f"  {name:<14} {rate:8.0f} connections/s")
        value = b"x" * args.size
        plain = {"bootstrap.servers": f"127.0.0.1:{plain_port}"}
        scram = {
            "bootstrap.servers": f"127.0.0.1:{sasl_port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }  # fmt: skip
        print(f"produce (confluent-kafka, {args.records} x {args.size} B, acks=1):")
        base = sasl = 0.0
        for _ in range(args.rounds):
            base = max(base, produce_rate(plain, "bench-plain", args.records, value))
            sasl = max(sasl, produce_rate(scram, "bench-sasl", args.records, value))
        print(f"  PLAINTEXT      {base:8.0f} records/s")
        print(f"  SASL/SCRAM     {sasl:8.0f} records/s ({100 * sasl / base:.0f} % of PLAINTEXT)")
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""GSSAPI (Kerberos) cost on one `kafpy server`: authenticated connections per second with
kafpy's client, PLAINTEXT vs SASL_PLAINTEXT with PLAIN vs GSSAPI.

    python bench/gssapi_bench.py [--connections 200] [--rounds 2]

Starts an MIT KDC (k5test, in a temporary directory, on a free port) with the principals
kafka/127.0.0.1 and alice and their key tables, a broker with a PLAINTEXT and a
SASL_PLAINTEXT listener (PLAIN and GSSAPI), then opens --connections connections with
kafpy's client for each case (ApiVersions, then SaslHandshake + SaslAuthenticate). The
client logs in once (its tickets are cached), so a GSSAPI connection costs the security
context (an AP-REQ the broker decrypts with its key, its AP-REP) and the wrapped
security-layer exchange: three SaslAuthenticate round trips against PLAIN's one. The
cases take turns for --rounds rounds and the best round counts. Needs the KDC binaries
(`make system-deps`) and the kerberos and test extras.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_support import free_port, wait_port  # noqa: E402
from sasl_bench import connections_per_second

from kafpy.client.client_security import ClientSecurity, SaslCredentials
from kafpy.security.kerberos_login import KerberosLogin

REALM = "KAFPY.BENCH"
PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="best round counts (shared machine)")
    args = parser.parse_args()
    from k5test import K5Realm

    kdc_port = free_port()
    realm = K5Realm(
        realm=REALM, portbase=kdc_port, create_user=False, create_host=False, get_creds=False,
        krb5_conf={"libdefaults": {"rdns": "false", "dns_canonicalize_hostname": "false"},
                   "realms": {"$realm": {"kdc": "127.0.0.1:$port0"}}},
    )  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="kafpy-gssapi-bench-"))
    broker = None
    try:
        keytabs = {}
        for name, principal in (("kafka", f"kafka/127.0.0.1@{REALM}"), ("alice", f"alice@{REALM}")):
            realm.addprinc(principal)
            keytabs[name] = work / f"{name}.keytab"
            realm.extract_keytab(principal, str(keytabs[name]))
        os.environ.update({
            "KRB5_CONFIG": realm.env["KRB5_CONFIG"], "KRB5RCACHEDIR": str(work),
            "KRB5CCNAME": f"FILE:{work / 'ccache'}",
        })  # fmt: skip
        plain_port, sasl_port = free_port(), free_port()
        overrides = {
            "broker.id": "0", "log.dirs": str(work / "logs"),
            "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
            "sasl.enabled.mechanisms": "PLAIN,GSSAPI", "sasl.kerberos.service.name": "kafka",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "listener.name.sasl_plaintext.gssapi.sasl.jaas.config":
                "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true "
                f'storeKey=true keyTab="{keytabs["kafka"]}" principal="kafka/127.0.0.1@{REALM}";',
        }  # fmt: skip
        cmd = [sys.executable, "-m", "kafpy", "server"]
        for k, v in overrides.items():
            cmd += ["--override", f"{k}={v}"]
        with (work / "broker.out").open("wb") as log:
            broker = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy()
            )
        wait_port(plain_port)
        wait_port(sasl_port)
        login = KerberosLogin(f"alice@{REALM}", keytabs["alice"], "kafka")
        cases = [
            ("PLAINTEXT", plain_port, ClientSecurity()),
            ("PLAIN", sasl_port, ClientSecurity("SASL_PLAINTEXT", None,
                                                SaslCredentials("PLAIN", "alice", "alice-secret"))),
            ("GSSAPI", sasl_port, ClientSecurity("SASL_PLAINTEXT", None,
                                                 SaslCredentials("GSSAPI", "alice", "", kerberos=login))),
        ]  # fmt: skip
        for _, port, security in cases:  # warm-up: the client's login and service ticket
            asyncio.run(connections_per_second(port, security, 5))
        print(f"connections (kafpy client, {args.connections} each, best of {args.rounds}):")
        best: dict[str, float] = {}
        for _ in range(args.rounds):
            for name, port, security in cases:
                rate = asyncio.run(connections_per_second(port, security, args.connections))
                best[name] = max(best.get(name, 0.0), rate)
        for name, rate in best.items():
            print(f"  {name:<10} {rate:8.0f} connections/s")
    finally:
        if broker is not None:
            broker.terminate()
            broker.wait(30)
        realm.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

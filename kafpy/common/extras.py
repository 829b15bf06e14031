"""The optional parts of kafpy and the pip extras that install them.

`pip install kafpy` holds the broker, the client, every CLI tool and `kafpy.testing`. The
Spark data source, the web console, the broker's Prometheus endpoint, SASL/GSSAPI
(Kerberos), the schema registry and the parts that need the cryptography library
(TLS listeners, PKCS12 stores, encrypted password configs, signed OAUTHBEARER tokens,
`kafpy cluster up --secure`) need libraries of their own, installed by an extra
(`pip install 'kafpy[spark]'`); using one of those parts without its extra fails at once
with a MissingExtraError naming the extra.
"""

from __future__ import annotations

import importlib.util

EXTRAS: dict[str, tuple[str, ...]] = {
    "spark": ("pyspark", "pyarrow", "numpy"),
    "console": ("aiohttp", "jinja2"),
    "metrics": ("prometheus_client", "aiohttp"),
    "kerberos": ("gssapi",),
    "schema-registry": ("aiohttp", "fastavro", "jsonschema"),
    "crypto": ("cryptography",),
}
"""Extra name -> the modules it installs (import names, as find_spec looks them up)."""


class MissingExtraError(ImportError):
    """A part of kafpy was used without the extra that installs its libraries."""


def missing_modules(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here."""
    return [m for m in EXTRAS[extra] if importlib.util.find_spec(m) is None]


def require_extra(extra: str, what: str) -> None:
    """Raise MissingExtraError (`<what> needs pip install 'kafpy[<extra>]'`) unless every
    module of `extra` can be imported."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtraError(
            f"{what} needs `pip install 'kafpy[{extra}]'` (not installed: {', '.join(missing)})",
            name=missing[0],
        )

"""The package's layers: a module imports from its own package or from a lower tier, never
from above or beside it (docs/architecture.md draws the same stack)."""

from __future__ import annotations

import ast
from pathlib import Path

import kafpy

# top to bottom; packages in one tier do not import each other
TIERS: list[set[str]] = [
    {"__main__"},
    {"cli"},
    {"testing", "tools", "console", "spark", "schema_registry"},
    {"server"},
    {"cluster", "network"},
    {"controller", "coordinator"},
    {"admin"},
    {"client"},
    {"security"},
    {"metadata"},
    {"protocol", "storage"},
    {"records"},
    {"common"},
]
TIER_OF = {package: i for i, tier in enumerate(TIERS) for package in tier}
ROOT = Path(kafpy.__file__).parent


def _package_of(path: Path, root: Path = ROOT) -> str:
    relative = path.relative_to(root).parts
    return relative[0] if len(relative) > 1 else relative[0].removesuffix(".py")


def _imported_packages(path: Path) -> set[str]:
    """The kafpy packages a module names in its imports, TYPE_CHECKING ones included."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found.update(n.split(".")[1] for n in names if n.startswith("kafpy."))
    return found


def upward_imports(root: Path = ROOT) -> list[str]:
    """Each import that points up or sideways, as `module -> package`."""
    wrong = []
    for path in sorted(root.rglob("*.py")):
        package = _package_of(path, root)
        if package == "__init__":
            continue
        for target in _imported_packages(path) - {package}:
            if TIER_OF[target] <= TIER_OF[package]:
                wrong.append(f"{path.relative_to(root.parent)} -> kafpy.{target}")
    return sorted(wrong)


def test_every_package_has_a_tier() -> None:
    packages = {_package_of(p) for p in ROOT.rglob("*.py")} - {"__init__"}
    assert packages == set(TIER_OF)


def test_no_module_imports_upward_or_sideways() -> None:
    assert upward_imports() == []


def test_upward_and_sideways_imports_are_found(tmp_path: Path) -> None:
    root = tmp_path / "kafpy"
    (root / "storage").mkdir(parents=True)
    (root / "storage" / "log.py").write_text(
        "from kafpy.records.record_batch import H_CRC\nimport kafpy.server.kafka_config\n"
    )
    (root / "protocol").mkdir()
    (root / "protocol" / "types.py").write_text(
        "if TYPE_CHECKING:\n    from kafpy.storage.log import Log\n"
    )
    assert upward_imports(root) == [
        "kafpy/protocol/types.py -> kafpy.storage",
        "kafpy/storage/log.py -> kafpy.server",
    ]

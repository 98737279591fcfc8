"""The realizer's two parts (docs/design/service-shape.md, the realizer's two parts): no company-wide module imports
the host part.

Company-wide modules are those of ``domain/``, ``usecases/`` and ``endpoints/`` outside a
``host/`` subpackage; the host part is those ``host/`` subpackages, ``adapters/`` and
``orchestration/``. Every import is counted, those under ``TYPE_CHECKING`` included: a
company-wide module reaches the host only through the ports of ``usecases/ports.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import workspace_realizer

PACKAGE = Path(workspace_realizer.__file__).parent
NAME = "workspace_realizer"
COMPANY_WIDE = ("domain", "usecases", "endpoints")
HOST = tuple(
    f"{NAME}.{part}"
    for part in ("domain.host", "usecases.host", "endpoints.host", "adapters", "orchestration")
)


def company_wide_modules(package: Path = PACKAGE) -> list[Path]:
    """Every module of the company-wide part."""
    return sorted(
        path
        for top in COMPANY_WIDE
        for path in (package / top).rglob("*.py")
        if "host" not in path.relative_to(package).parts
    )


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([NAME, *parts])


def imported(path: Path, package: Path = PACKAGE) -> set[str]:
    """The dotted names ``path`` imports (for ``from m import n``: ``m`` and ``m.n``, so a host
    subpackage imported by name counts), relative imports resolved."""
    module = _module_name(path, package)
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            names.add(source)
            names.update(f"{source}.{alias.name}" for alias in node.names)
    return names


def host_imports(path: Path, package: Path = PACKAGE) -> list[str]:
    """The host-part modules ``path`` imports."""
    return sorted(
        name
        for name in imported(path, package)
        if any(name == host or name.startswith(host + ".") for host in HOST)
    )


def findings(package: Path = PACKAGE) -> list[str]:
    """``<module>: imports <host module>`` for each company-wide module that imports host code."""
    return [
        f"{path.relative_to(package)}: imports {name}"
        for path in company_wide_modules(package)
        for name in host_imports(path, package)
    ]


def test_no_company_wide_module_imports_the_host_part() -> None:
    assert company_wide_modules(), "no company-wide module found"
    assert findings() == []


def test_the_host_part_is_there() -> None:
    for sub in ("domain/host", "usecases/host", "endpoints/host", "adapters", "orchestration"):
        assert (PACKAGE / sub / "__init__.py").is_file(), sub
    assert (PACKAGE / "usecases" / "ports.py").is_file()


def test_a_planted_host_import_is_named(tmp_path: Path) -> None:
    package = tmp_path / NAME
    for sub in ("domain/host", "usecases/host", "endpoints", "adapters", "orchestration"):
        (package / sub).mkdir(parents=True, exist_ok=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "usecases" / "fine.py").write_text(
        "from workspace_realizer.usecases.ports import HostPaths\n"
        "from workspace_realizer.readmodels import RealizerReadModels\n"
    )
    (package / "usecases" / "bad.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from workspace_realizer.adapters.gitcli import GitRunner\n"
        "if TYPE_CHECKING:\n"
        "    from ..orchestration.context import Realizer\n"
    )
    (package / "domain" / "by_name.py").write_text("from workspace_realizer.domain import host\n")
    (package / "endpoints" / "relative.py").write_text("from .host import workspaces\n")
    (package / "usecases" / "host" / "allowed.py").write_text(
        "from workspace_realizer.adapters.gitcli import GitRunner\n"
    )
    assert findings(package) == [
        "domain/by_name.py: imports workspace_realizer.domain.host",
        "endpoints/relative.py: imports workspace_realizer.endpoints.host",
        "endpoints/relative.py: imports workspace_realizer.endpoints.host.workspaces",
        "usecases/bad.py: imports workspace_realizer.adapters.gitcli",
        "usecases/bad.py: imports workspace_realizer.adapters.gitcli.GitRunner",
        "usecases/bad.py: imports workspace_realizer.orchestration.context",
        "usecases/bad.py: imports workspace_realizer.orchestration.context.Realizer",
    ]

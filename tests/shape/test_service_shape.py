"""Every service has the one skeleton (docs/design/service-shape.md) and the source keeps the
size limits; a missing part is named (tests/shape/shape.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shape.shape import (
    FILES,
    PACKAGES,
    limit_findings,
    service_findings,
    service_packages,
)

ROOT = Path(__file__).resolve().parents[2]
SERVICES = service_packages(ROOT)


def test_every_service_is_checked() -> None:
    assert {p.name for p in SERVICES} == {
        "api_gateway",
        "git_credentials",
        "heartbeat_controller",
        "runtime_supervisor",
        "workspace_realizer",
    }


@pytest.mark.parametrize("package", SERVICES, ids=[p.name for p in SERVICES])
def test_the_service_has_the_skeleton(package: Path) -> None:
    findings = service_findings(package, ROOT)
    assert findings == [], "\n".join(map(str, findings))


def test_the_source_keeps_the_size_limits() -> None:
    findings = limit_findings(ROOT)
    assert findings == [], "\n".join(map(str, findings))


def _service(root: Path, *, skip: str = "", extra: str = "") -> Path:
    package = root / "services" / "demo" / "src" / "demo"
    for name in FILES:
        if name != skip:
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            (package / name).write_text("match 1:\n    case _:\n        pass\n")
    for name in PACKAGES:
        if name != skip:
            (package / name).mkdir(parents=True, exist_ok=True)
            (package / name / "__init__.py").write_text("")
    if extra:
        (package / extra).write_text("")
    return package


def test_a_complete_service_passes(tmp_path: Path) -> None:
    assert service_findings(_service(tmp_path), tmp_path) == []


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    lacking_inbox = service_findings(_service(tmp_path / "a", skip="inbox.py"), tmp_path / "a")
    lacking_domain = service_findings(_service(tmp_path / "b", skip="domain"), tmp_path / "b")
    assert [f.problem for f in lacking_inbox] == ["lacks inbox.py"]
    assert [f.problem for f in lacking_domain] == ["lacks the package domain/"]


def test_a_module_beside_the_skeleton_is_named(tmp_path: Path) -> None:
    found = service_findings(_service(tmp_path, extra="helpers.py"), tmp_path)
    assert [f.problem for f in found] == ["helpers.py is not in the skeleton"]


def test_a_closure_handler_and_a_hand_added_endpoint_are_named(tmp_path: Path) -> None:
    package = _service(tmp_path)
    (package / "endpoints" / "things.py").write_text(
        "async def register(service):\n"
        "    async def get(q, ctx):\n"
        "        return q\n"
        "    await service.add_endpoint('get', 's', get, object)\n"
    )
    problems = [f.problem for f in service_findings(package, tmp_path)]
    assert problems == [
        "adds an endpoint by hand (use mount)",
        "defines no endpoint class with a route table",
        "handler get is a closure inside register",
    ]


def test_limits_name_long_functions_modules_and_unexplained_fmt_skip(tmp_path: Path) -> None:
    source = tmp_path / "libs" / "demo" / "src" / "demo"
    source.mkdir(parents=True)
    body = "\n".join(f"    x{i} = {i}" for i in range(85))
    (source / "long.py").write_text(f"def f():\n{body}\n" + "\n" * 300)
    (source / "skip.py").write_text(
        "A = [1,2]  # fmt: skip\n# hand-laid: a grid reads as one\nB = [1,2]  # fmt: skip\n"
    )
    problems = sorted(str(f) for f in limit_findings(tmp_path))
    assert problems == [
        "libs/demo/src/demo/long.py: 386 lines (at most 350)",
        "libs/demo/src/demo/long.py:1: f is 86 lines (at most 80)",
        "libs/demo/src/demo/skip.py:1: fmt: skip without a '# hand-laid:' reason",
    ]

"""A namespace's gate without the namespace (docs/design/isolation.md): the policy it decides with
is the project's allowlist plus the holding run's entries, read again when their files change; what
it decided is counted per period (the holding run's, or the time between runs) in ``tally.json``,
at once for a new (host, port, verdict), later for a count that grows; a period keeps at most 200
distinct tuples; and the supervisor reads the tally back into the periods it records."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from runtime_supervisor.adapters.containment import gate as gate_module
from runtime_supervisor.adapters.containment.egress import (
    Policy,
    Rule,
    TallyFile,
    network_list,
    policy_path,
    project_rules_path,
    read_json,
    run_path,
    tally_path,
    write_json,
)
from runtime_supervisor.adapters.containment.gate import Gate
from runtime_supervisor.orchestration.egress import _periods, hold, let_go

PROJECT = "p-1"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def folder(home: Path) -> Path:
    path = home / "netns" / "cy1-abc"
    write_json(policy_path(path), {"companyId": "c-acme", "projectId": PROJECT})
    return path


@pytest.fixture
def gate(folder: Path, home: Path) -> Gate:
    return Gate(folder, home, opened=())


def _later(path: Path) -> None:
    """Move ``path``'s mtime clearly forward (a rewrite within the clock's tick keeps it)."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def _write(path: Path, data: dict[str, Any]) -> None:
    existed = path.exists()
    write_json(path, data)
    if existed:
        _later(path)


def _tally(folder: Path) -> TallyFile:
    found = read_json(tally_path(folder), TallyFile)
    assert found is not None, "tally.json written"
    return found


def _counts(folder: Path, period: int = -1) -> dict[tuple[str, int, str], int]:
    seen = _tally(folder)["periods"][period]["seen"]
    return {(s["host"], s["port"], s["verdict"]): s["count"] for s in seen}


# -- the policy -----------------------------------------------------------------------------------


def test_the_policy_is_the_project_allowlist_plus_the_holding_run_s_entries(
    gate: Gate, folder: Path, home: Path
) -> None:
    assert gate.policy().rules == (), "no allowlist, no run: nothing"
    assert gate.policy().run_id is None
    write_json(project_rules_path(home, PROJECT), {"rules": [{"host": "*.npmjs.org", "port": 443}]})
    write_json(run_path(folder), {"runId": "r-1", "rules": [{"host": "github.com"}]})
    policy = gate.policy()
    assert policy.rules == (Rule("*.npmjs.org", 443), Rule("github.com"))
    assert policy.run_id == "r-1"
    assert policy.allows("140.82.112.3", 22, ["github.com"])
    assert policy.allows("104.16.0.1", 443, ["registry.npmjs.org"])
    assert not policy.allows("104.16.0.1", 80, ["registry.npmjs.org"])
    assert not policy.allows("127.0.0.1", 443, ["github.com"]), "the host's own, whatever a rule"


def test_the_policy_follows_its_files_as_they_change(gate: Gate, folder: Path, home: Path) -> None:
    rules_file = project_rules_path(home, PROJECT)
    _write(rules_file, {"rules": [{"host": "pypi.org"}]})
    assert gate.policy().resolves("pypi.org")

    _write(rules_file, {"rules": [{"host": "*.pythonhosted.org"}]})
    policy = gate.policy()
    assert not policy.resolves("pypi.org"), "the project's new allowlist replaced the old"
    assert policy.resolves("files.pythonhosted.org")

    hold(folder, "r-1", [])
    assert gate.policy().run_id == "r-1"
    _write(run_path(folder), {"runId": "r-1", "rules": [{"host": "github.com", "port": 443}]})
    assert gate.policy().rules == (Rule("*.pythonhosted.org"), Rule("github.com", 443))

    let_go(folder, "r-2")
    assert gate.policy().run_id == "r-1", "another run letting go leaves r-1's entries"
    let_go(folder, "r-1")
    policy = gate.policy()
    assert (policy.run_id, policy.rules) == (None, (Rule("*.pythonhosted.org"),))

    rules_file.unlink()
    assert gate.policy().rules == (), "the allowlist file gone: nothing"
    _write(policy_path(folder), {"companyId": "c-acme", "projectId": "p-2"})
    write_json(project_rules_path(home, "p-2"), {"rules": [{"host": "10.0.0.0/8"}]})
    assert gate.policy().rules == (Rule("10.0.0.0/8"),), "the namespace's project changed"


def test_an_unreadable_file_counts_as_none(gate: Gate, folder: Path, home: Path) -> None:
    project_rules_path(home, PROJECT).parent.mkdir(parents=True)
    project_rules_path(home, PROJECT).write_text("{not json", encoding="utf-8")
    run_path(folder).write_text('["r-1"]', encoding="utf-8")
    policy = gate.policy()
    assert (policy.rules, policy.run_id) == ((), None)


def test_the_gate_never_opens_the_host_s_own_addresses_but_the_operator_may(
    folder: Path, home: Path
) -> None:
    write_json(project_rules_path(home, PROJECT), {"rules": [{"host": "127.0.0.0/8"}]})
    closed = Gate(folder, home, opened=())
    assert not closed.policy().allows("127.0.0.1", 4222)
    opened = Gate(folder, home, opened=network_list(["127.0.0.0/8"]))
    assert opened.policy().allows("127.0.0.1", 4222)


def test_names_answered_are_remembered_per_address_newest_first(gate: Gate) -> None:
    gate.remember("registry.npmjs.org", ["104.16.0.1", "104.16.1.2"])
    gate.remember("npmjs.com", ["104.16.0.1"])
    gate.remember("registry.npmjs.org", ["104.16.0.1"])
    assert gate.names_of("104.16.0.1") == ["registry.npmjs.org", "npmjs.com"]
    assert gate.names_of("104.16.1.2") == ["registry.npmjs.org"]
    assert gate.names_of("192.0.2.1") == []
    for index in range(6):
        gate.remember(f"n{index}.example", ["192.0.2.9"])
    assert gate.names_of("192.0.2.9") == ["n5.example", "n4.example", "n3.example", "n2.example"]


# -- counting -------------------------------------------------------------------------------------


def test_a_new_tuple_is_written_at_once_and_a_repeat_later(gate: Gate, folder: Path) -> None:
    policy = Policy(run_id="r-1")
    gate.count(policy, "github.com", 443, "allowed")
    assert _counts(folder) == {("github.com", 443, "allowed"): 1}
    assert not gate.dirty
    tally = _tally(folder)
    assert tally["current"] == "r-1"
    assert [(p["period"], p["runId"]) for p in tally["periods"]] == [("r-1", "r-1")]

    gate.count(policy, "github.com", 443, "allowed")
    gate.count(policy, "github.com", 443, "allowed")
    assert gate.dirty, "a grown count waits for the flusher"
    assert _counts(folder) == {("github.com", 443, "allowed"): 1}, "not written yet"

    gate.count(policy, "github.com", 443, "denied")
    assert _counts(folder) == {("github.com", 443, "allowed"): 3, ("github.com", 443, "denied"): 1}
    assert not gate.dirty, "a new tuple wrote everything counted so far"


def test_the_flusher_writes_what_grew(
    gate: Gate, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = Policy(run_id="r-1")
    gate.count(policy, "github.com", 443, "allowed")
    gate.count(policy, "github.com", 443, "allowed")
    assert gate.dirty

    class Stop(Exception):
        pass

    rounds: list[float] = []

    def sleep(seconds: float) -> None:
        rounds.append(seconds)
        if len(rounds) > 2:
            raise Stop

    monkeypatch.setattr(gate_module.time, "sleep", sleep)
    with pytest.raises(Stop):
        gate.flusher()
    assert _counts(folder) == {("github.com", 443, "allowed"): 2}
    assert not gate.dirty
    entry = _tally(folder)["periods"][0]["seen"][0]
    assert entry["firstAt"] <= entry["lastAt"]


def test_periods_follow_the_run_holding_the_namespace(gate: Gate, folder: Path) -> None:
    gate.count(gate.policy(), "example.com", 53, "denied")
    hold(folder, "r-1", [])
    gate.count(gate.policy(), "github.com", 443, "allowed")
    gate.count(gate.policy(), "github.com", 443, "allowed")
    let_go(folder, "r-1")
    gate.count(gate.policy(), "example.com", 53, "denied")
    _write(run_path(folder), {"runId": "r-2", "rules": []})
    gate.count(gate.policy(), "github.com", 443, "allowed")

    tally = _tally(folder)
    keys = [p["period"] for p in tally["periods"]]
    assert len(keys) == 4, keys
    assert [k.split(":")[0] for k in keys[0::2]] == ["idle", "idle"], keys
    assert keys[0] != keys[2], "each time between runs is a period of its own"
    assert keys[1::2] == ["r-1", "r-2"]
    assert [p["runId"] for p in tally["periods"]] == [None, "r-1", None, "r-2"]
    assert tally["current"] == "r-2"
    assert _counts(folder, 1) == {("github.com", 443, "allowed"): 2}, "r-1's count, complete"
    assert _counts(folder, 3) == {("github.com", 443, "allowed"): 1}, "r-2 counts from one"
    assert _counts(folder, 2) == {("example.com", 53, "denied"): 1}


def test_a_period_keeps_200_distinct_tuples_and_counts_the_rest_as_one(
    gate: Gate, folder: Path
) -> None:
    policy = Policy(run_id="r-1")
    for index in range(200):
        gate.count(policy, f"h{index}.example", 443, "denied")
    gate.count(policy, "h0.example", 443, "denied")
    for index in range(200, 205):
        gate.count(policy, f"h{index}.example", 443, "denied")
    gate.count(policy, "late.example", 80, "allowed")
    gate._flush_locked()
    counts = _counts(folder)
    assert len(counts) == 202, "200 tuples, and one of the rest per verdict"
    assert counts[("h0.example", 443, "denied")] == 2, "a known tuple still counts"
    assert counts[("*", 0, "denied")] == 5
    assert counts[("*", 0, "allowed")] == 1
    assert ("h200.example", 443, "denied") not in counts

    gate.count(Policy(run_id="r-2"), "h200.example", 443, "denied")
    assert _counts(folder) == {("h200.example", 443, "denied"): 1}, "a new period starts empty"


def test_the_supervisor_reads_the_gate_s_tally_into_its_periods(gate: Gate, folder: Path) -> None:
    gate.count(Policy(run_id="r-1"), "github.com", 443, "allowed")
    gate.count(Policy(run_id="r-1"), "github.com", 443, "allowed")
    gate.count(Policy(run_id=None), "example.com", 53, "denied")
    periods = _periods(_tally(folder), None, gone=False)
    assert [(p.run_id, p.ended) for p in periods] == [("r-1", True), (None, False)]
    [seen] = periods[0].seen
    assert (seen.host, seen.port, seen.verdict, seen.count) == ("github.com", 443, "allowed", 2)
    assert seen.first_at <= seen.last_at
    assert periods[1].key.startswith("idle:")

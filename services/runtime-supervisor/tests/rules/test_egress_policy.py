"""Egress decisions as pure logic (docs/design/isolation.md): which names, addresses and ports an
allowlist lets through; that the host's own addresses stay out of reach whatever a rule says
unless the operator opened their network; the gate's little DNS (a query read, an answer or a
refusal built); and which periods of a gate's tally the supervisor treats as ended."""

from __future__ import annotations

import socket
import struct
from typing import Any

import pytest

from runtime_supervisor.adapters.containment import dns
from runtime_supervisor.adapters.containment.egress import (
    ALWAYS_LOCAL,
    Policy,
    Rule,
    network_list,
    rules_of,
)
from runtime_supervisor.orchestration.egress import _periods

HOST_ADDRESS = "10.20.30.40"
LOCAL = network_list([*ALWAYS_LOCAL, HOST_ADDRESS])


def _policy(*rules: Rule, opened: tuple[str, ...] = ()) -> Policy:
    return Policy(rules=rules, local=LOCAL, opened=network_list(opened))


# -- rules and policy ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "name", "named"),
    [
        ("github.com", "github.com", True),
        ("github.com", "GitHub.COM", True),
        ("github.com", "github.com.", True),
        ("GitHub.com.", "github.com", True),
        ("github.com", "api.github.com", False),
        ("github.com", "github.co", False),
        ("*.npmjs.org", "registry.npmjs.org", True),
        ("*.npmjs.org", "a.b.npmjs.org", True),
        ("*.npmjs.org", "Registry.NPMJS.org.", True),
        ("*.npmjs.org", "npmjs.org", False),
        ("*.npmjs.org", ".npmjs.org", False),
        ("*.npmjs.org", "evilnpmjs.org", False),
        ("*.npmjs.org", "registry.npmjs.org.evil.com", False),
    ],
)
def test_a_name_rule_names_exact_names_and_wildcards_name_only_subdomains(
    rule: str, name: str, named: bool
) -> None:
    assert Rule(rule).names(name) is named, f"{rule!r} names {name!r}: expected {named}"


def test_a_name_rule_allows_an_address_only_through_the_names_answered_with_it() -> None:
    policy = _policy(Rule("registry.npmjs.org", 443))
    assert policy.allows("104.16.0.1", 443, ["registry.npmjs.org"])
    assert policy.allows("104.16.0.1", 443, ["other.example", "REGISTRY.npmjs.org."])
    assert not policy.allows("104.16.0.1", 443, []), "an address no name was answered with"
    assert not policy.allows("104.16.0.1", 443, ["example.com"])


def test_address_and_network_rules_allow_the_addresses_they_cover() -> None:
    policy = _policy(Rule("93.184.216.34"), Rule("198.51.100.0/24", 5432))
    assert policy.allows("93.184.216.34", 80)
    assert policy.allows("93.184.216.34", 8443, ["whatever.example"]), "any port, any name"
    assert not policy.allows("93.184.216.35", 80), "a single address is not its neighbour"
    assert policy.allows("198.51.100.7", 5432)
    assert policy.allows("198.51.100.255", 5432)
    assert not policy.allows("198.51.101.1", 5432), "outside the network"
    assert not policy.allows("198.51.100.7", 5433), "the network's rule names one port"


def test_a_rule_with_a_port_allows_that_port_only_and_one_without_allows_all() -> None:
    policy = _policy(Rule("pypi.org", 443), Rule("*.pythonhosted.org"))
    assert policy.allows("151.101.0.223", 443, ["pypi.org"])
    assert not policy.allows("151.101.0.223", 80, ["pypi.org"])
    for port in (80, 443, 8080):
        assert policy.allows("151.101.1.63", port, ["files.pythonhosted.org"]), port


def test_the_host_s_own_addresses_are_never_allowed_unless_their_network_is_opened() -> None:
    rules = (Rule("127.0.0.1"), Rule(HOST_ADDRESS), Rule("169.254.169.254"), Rule("0.0.0.0/0"),
             Rule("localhost"))  # fmt: skip
    closed = _policy(*rules)
    for address in ("127.0.0.1", "127.0.0.53", HOST_ADDRESS, "169.254.169.254"):
        assert closed.host_local(address), address
        assert not closed.allows(address, 4222, ["localhost"]), f"{address} reached"
    assert closed.allows("8.8.8.8", 53), "the catch-all rule still opens the internet"
    assert not closed.host_local("8.8.8.8")

    opened = _policy(*rules, opened=("127.0.0.0/8",))
    assert opened.allows("127.0.0.1", 4222)
    assert not opened.allows(HOST_ADDRESS, 4222), "only the opened network"
    assert not opened.allows("169.254.169.254", 80)
    both = _policy(Rule(HOST_ADDRESS, 5432), opened=(f"{HOST_ADDRESS}/32",))
    assert both.allows(HOST_ADDRESS, 5432)
    assert not both.allows(HOST_ADDRESS, 4222), "opening a network does not allow it by itself"
    assert not _policy(opened=("127.0.0.0/8",)).allows("127.0.0.1", 80), "no rule, no way"


def test_names_resolve_only_when_a_name_rule_names_them() -> None:
    policy = _policy(Rule("github.com", 443), Rule("*.npmjs.org"), Rule("10.0.0.0/8"))
    assert policy.resolves("github.com")
    assert policy.resolves("GITHUB.com."), "whatever the port, case or trailing dot"
    assert policy.resolves("registry.npmjs.org")
    assert not policy.resolves("npmjs.org")
    assert not policy.resolves("api.github.com")
    assert not policy.resolves("example.com"), "an address rule resolves no name"
    assert not Policy().resolves("github.com"), "no rule, nothing resolves"


def test_rules_come_from_plain_data_and_malformed_entries_are_left_out() -> None:
    raw: Any = [
        {"host": "github.com", "port": 443},
        {"host": "*.npmjs.org"},
        {"host": "10.0.0.0/8", "port": None},
        {"host": 7},
        {"port": 443},
        "github.com",
        {"host": "pypi.org", "port": "443"},
    ]
    assert rules_of(raw) == (
        Rule("github.com", 443),
        Rule("*.npmjs.org"),
        Rule("10.0.0.0/8"),
        Rule("pypi.org"),
    )
    assert rules_of(None) == ()
    assert rules_of({"host": "github.com"}) == ()
    assert network_list(["10.0.0.1/8", " 192.0.2.1 ", "nonsense", "::1"]) == (
        network_list(["10.0.0.0/8"])[0],
        network_list(["192.0.2.1/32"])[0],
    )


# -- DNS ----------------------------------------------------------------------------------------


def _query(name: str, qtype: int = dns.A, *, ident: int = 0x1234, flags: int = 0x0100) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split("."))
    return (struct.pack("!HHHHHH", ident, flags, 1, 0, 0, 0) + labels + b"\0"
            + struct.pack("!HH", qtype, 1))  # fmt: skip


def test_a_query_is_read_and_answered_with_its_addresses() -> None:
    q = dns.question(_query("registry.npmjs.org"))
    assert q is not None
    assert (q.ident, q.name, q.qtype) == (0x1234, "registry.npmjs.org", dns.A)
    reply = dns.answer(q, ["104.16.0.1", "104.16.1.2"])
    ident, flags, qdcount, ancount, nscount, arcount = struct.unpack_from("!HHHHHH", reply)
    assert ident == 0x1234, "the reply carries the query's id"
    assert flags & 0x8000, "QR: a response"
    assert flags & 0x0100, "RD echoed from the query"
    assert flags & 0x000F == dns.NOERROR
    assert (qdcount, ancount, nscount, arcount) == (1, 2, 0, 0)
    assert reply[12 : 12 + len(q.raw)] == q.raw, "the question is repeated"
    at = 12 + len(q.raw)
    addresses = []
    for _ in range(ancount):
        pointer, rtype, rclass, ttl, size = struct.unpack_from("!HHHIH", reply, at)
        assert (pointer, rtype, rclass, size) == (0xC00C, dns.A, 1, 4)
        assert ttl > 0
        addresses.append(socket.inet_ntoa(reply[at + 12 : at + 16]))
        at += 16
    assert addresses == ["104.16.0.1", "104.16.1.2"]
    assert at == len(reply), "nothing after the answers"


def test_rd_is_echoed_only_when_asked_and_a_refusal_has_no_answer() -> None:
    q = dns.question(_query("example.com", flags=0))
    assert q is not None
    reply = dns.answer(q, rcode=dns.REFUSED)
    flags, ancount = struct.unpack_from("!H", reply, 2)[0], struct.unpack_from("!H", reply, 6)[0]
    assert flags & 0x8000
    assert not flags & 0x0100, "RD not asked, not echoed"
    assert flags & 0x000F == dns.REFUSED
    assert ancount == 0


def test_a_question_of_another_type_gets_no_address() -> None:
    q = dns.question(_query("github.com", dns.AAAA))
    assert q is not None
    assert q.qtype == dns.AAAA
    reply = dns.answer(q, ["140.82.112.3"])
    assert struct.unpack_from("!H", reply, 6)[0] == 0, "no A record for an AAAA question"
    assert len(reply) == 12 + len(q.raw)


def test_a_response_or_a_truncated_packet_is_no_question() -> None:
    query = _query("github.com")
    assert dns.question(_query("github.com", flags=0x8180)) is None, "a response"
    assert dns.question(query[:11]) is None, "shorter than a header"
    for cut in (12, 15, len(query) - 5, len(query) - 1):
        assert dns.question(query[:cut]) is None, f"cut at {cut}"
    no_question = struct.pack("!HHHHHH", 1, 0x0100, 0, 0, 0, 0)
    assert dns.question(no_question) is None
    compressed = struct.pack("!HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"\xc0\x0c" + b"\0\1\0\1"
    assert dns.question(compressed) is None
    assert dns.question(query) is not None


# -- periods of a tally -------------------------------------------------------------------------


def _seen(host: str, count: int = 1, verdict: str = "allowed") -> dict[str, Any]:
    return {"host": host, "port": 443, "verdict": verdict, "count": count,
            "firstAt": "2026-11-29T12:00:00+00:00", "lastAt": "2026-11-29T12:01:00+00:00"}  # fmt: skip


def _tally(*periods: tuple[str, str | None]) -> dict[str, Any]:
    return {"current": periods[-1][0] if periods else "",
            "periods": [{"period": key, "runId": run, "seen": [_seen(f"{key}.example")]}
                        for key, run in periods]}  # fmt: skip


def _ended(tally: dict[str, Any], running: str | None, gone: bool = False) -> list[bool]:
    return [p.ended for p in _periods(tally, running, gone)]


def test_all_periods_but_the_last_ended_and_the_last_while_its_run_holds_on() -> None:
    tally = _tally(("idle:2026-11-29T11:00:00+00:00", None), ("r-1", "r-1"), ("r-2", "r-2"))
    assert _ended(tally, "r-2") == [True, True, False]
    periods = _periods(tally, "r-2", False)
    assert [(p.key, p.run_id) for p in periods] == [
        ("idle:2026-11-29T11:00:00+00:00", None),
        ("r-1", "r-1"),
        ("r-2", "r-2"),
    ]
    seen = periods[1].seen[0]
    assert (seen.host, seen.port, seen.verdict, seen.count) == ("r-1.example", 443, "allowed", 1)
    assert seen.first_at.isoformat() == "2026-11-29T12:00:00+00:00"


def test_the_last_period_ends_when_another_run_or_none_holds_or_the_namespace_is_gone() -> None:
    run_last = _tally(("idle:t0", None), ("r-1", "r-1"))
    assert _ended(run_last, None) == [True, True], "the run let go, no run since"
    assert _ended(run_last, "r-2") == [True, True], "another run holds it now"
    assert _ended(run_last, "r-1", gone=True) == [True, True], "the namespace is gone"
    idle_last = _tally(("r-1", "r-1"), ("idle:t1", None))
    assert _ended(idle_last, None) == [True, False], "still idle"
    assert _ended(idle_last, "r-2") == [True, True], "a run began"
    assert _ended(idle_last, None, gone=True) == [True, True]


def test_a_tally_with_nothing_or_malformed_entries_gives_what_can_be_read() -> None:
    assert _periods({}, None, False) == []
    assert _periods({"periods": None}, "r-1", True) == []
    tally: dict[str, Any] = {"periods": ["junk", {"period": "r-1", "runId": "r-1", "seen": [
        _seen("ok.example", 3), _seen("odd.example", verdict="maybe"), "junk"]}]}  # fmt: skip
    [period] = _periods(tally, "r-1", False)
    assert not period.ended
    assert [(s.host, s.count) for s in period.seen] == [("ok.example", 3)]

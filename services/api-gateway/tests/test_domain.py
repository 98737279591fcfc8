"""The gateway's aggregates: companies, keys and sessions, each rule and each refusal."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from api_gateway.domain import (
    ApiKey,
    Company,
    InvalidIssuePrefixError,
    InvalidNameError,
    KeyKindNotAllowedError,
    Session,
    derive_issue_prefix,
    hash_secret,
    new_key,
)


def test_company_prefix_defaults_to_four_letters_of_the_name() -> None:
    # A name with spaces and digits: only its letters count, upper-cased.
    company = Company.register(name="  acme 42 corp ")
    assert company.name == "acme 42 corp"
    assert company.issue_prefix == "ACME"
    # Short names give short prefixes.
    assert Company.register(name="Xy").issue_prefix == "XY"
    # Non-ASCII letters are skipped.
    assert derive_issue_prefix("Ünïcode") == "NCOD"


def test_company_keeps_a_given_prefix() -> None:
    assert Company.register(name="Acme", issue_prefix="WIDGETS").issue_prefix == "WIDGETS"


@pytest.mark.parametrize("prefix", ["acme", "AC-ME", "", "ABCDEFGHIJK", "A1"])
def test_company_refuses_a_prefix_that_is_not_1_to_10_capitals(prefix: str) -> None:
    with pytest.raises(InvalidIssuePrefixError) as caught:
        Company.register(name="Acme", issue_prefix=prefix)
    assert caught.value.details == {"field": "issuePrefix"}
    assert caught.value.status == 422


def test_company_without_letters_needs_a_prefix() -> None:
    with pytest.raises(InvalidIssuePrefixError, match="give issuePrefix"):
        Company.register(name="1234")
    assert Company.register(name="1234", issue_prefix="NUM").issue_prefix == "NUM"


@pytest.mark.parametrize("name", ["", "   ", "x" * 201])
def test_company_name_must_be_present_and_short(name: str) -> None:
    with pytest.raises(InvalidNameError):
        Company.register(name=name)


def test_api_key_records_only_the_hash_and_revokes_once() -> None:
    key = new_key("board")
    api_key = ApiKey.issue(
        company_id="c1", name="ci", kind="board", agent_id=None, key_hash=hash_secret(key)
    )
    # The clear key is nowhere in the aggregate's events.
    assert all(key not in repr(e) for e in api_key.collect_events())
    # The first revoke records an event, the second nothing.
    assert api_key.revoke() is True
    assert [type(e).__name__ for e in api_key.collect_events()] == ["Revoked"]
    assert api_key.revoke() is False
    assert api_key.collect_events() == []


def test_api_key_kind_and_agent_must_agree() -> None:
    with pytest.raises(KeyKindNotAllowedError, match="leave out agentId"):
        ApiKey.issue(company_id="c", name="b", kind="board", agent_id="a1", key_hash="h")
    with pytest.raises(KeyKindNotAllowedError, match="needs agentId"):
        ApiKey.issue(company_id="c", name="a", kind="agent", agent_id=None, key_hash="h")


def test_keys_look_like_cy_kind_random() -> None:
    key = new_key("board")
    assert re.fullmatch(r"cy_board_[A-Za-z0-9_-]{43}", key)
    assert new_key("board") != key
    assert hash_secret(key) == hash_secret(key) != hash_secret(new_key("board"))
    assert re.fullmatch(r"[0-9a-f]{64}", hash_secret(key))


def test_session_id_derives_from_the_hash_and_ends_once() -> None:
    session = Session(
        session_hash="h1",
        csrf_hash="c1",
        company_id="c",
        key_id="k",
        expires_at=datetime(2030, 1, 1, tzinfo=UTC),
    )
    # The aggregate id is a function of the session hash, so sign-out finds it without a scan.
    assert session.id == Session.create_id("h1") != Session.create_id("h2")
    assert session.end() is True
    assert session.end() is False

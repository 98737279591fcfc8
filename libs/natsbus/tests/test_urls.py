"""parse_nats_urls: one server or a comma list, each entry checked, a bad one refused by name."""

from __future__ import annotations

import pytest

from natsbus.connection import redact_url
from natsbus.urls import NATS_URL_EXAMPLE, NatsUrl, NatsUrlError, parse_nats_urls


def _urls(value: str) -> list[str]:
    return [one.url for one in parse_nats_urls(value)]


def test_one_server_is_a_list_of_one() -> None:
    (server,) = parse_nats_urls("nats://127.0.0.1:4222")
    assert server == NatsUrl(
        url="nats://127.0.0.1:4222", scheme="nats", host="127.0.0.1", port=4222
    )


def test_a_comma_list_keeps_its_order_and_spaces_around_entries_are_tolerated() -> None:
    value = " nats://10.0.0.1:4222 ,nats://10.0.0.2:4223,  tls://nats-3.example:4224 "
    assert _urls(value) == [
        "nats://10.0.0.1:4222",
        "nats://10.0.0.2:4223",
        "tls://nats-3.example:4224",
    ]
    assert [(s.host, s.port) for s in parse_nats_urls(value)] == [
        ("10.0.0.1", 4222),
        ("10.0.0.2", 4223),
        ("nats-3.example", 4224),
    ]


def test_a_sequence_is_read_like_a_comma_list() -> None:
    assert _urls(["nats://a:1", " nats://b:2"]) == ["nats://a:1", "nats://b:2"]


def test_defaults_a_scheme_and_a_port_as_nats_py_does_and_drops_duplicates() -> None:
    servers = parse_nats_urls("127.0.0.1:4333,nats-2,NATS://127.0.0.1:4333")
    assert [s.url for s in servers] == ["nats://127.0.0.1:4333", "nats://nats-2"]
    assert servers[1].port == 4222
    assert parse_nats_urls("wss://edge.example")[0].port == 443


def test_user_information_is_kept_for_the_client_but_never_shown() -> None:
    (server,) = parse_nats_urls("nats://cli:s3cret@127.0.0.1:4222")
    assert server.url == "nats://cli:s3cret@127.0.0.1:4222"
    assert server.shown == "nats://127.0.0.1:4222"
    assert "s3cret" not in repr(server)
    assert redact_url("nats://a:pw@h1:1, nats://h2:2") == "nats://h1:1,nats://h2:2"
    assert parse_nats_urls("nats://[::1]:4222")[0].shown == "nats://[::1]:4222"


@pytest.mark.parametrize(
    ("value", "named", "why"),
    [
        (
            "nats://127.0.0.1:4222,nats://127.0.0.1:99999",
            "'nats://127.0.0.1:99999'",
            "no valid port",
        ),
        ("nats://a:4222, nats://b:port", "'nats://b:port'", "no valid port"),
        ("nats://a:4222,http://b:4222", "'http://b:4222'", "scheme 'http' is not nats"),
        ("nats://a:4222 nats://b:4222", "'nats://a:4222 nats://b:4222'", "holds a space"),
        ("nats://a:4222;nats://b:4222", "'nats://a:4222;nats://b:4222'", "holds a space or ';'"),
        ("nats://:4222", "'nats://:4222'", "names no valid host"),
        ("nats://a:4222/x", "'nats://a:4222/x'", "more than a host and a port"),
        ("nats://a:4222,,nats://b:4222", "an empty entry", "a comma too many"),
        ("nats://a:4222,", "an empty entry", "a comma too many"),
        (" , ", "names no server", ""),
        ("ws://a:80,nats://b:4222", "mixes websocket", ""),
    ],
)
def test_a_bad_entry_is_refused_by_name_with_a_good_example(
    value: str, named: str, why: str
) -> None:
    with pytest.raises(NatsUrlError) as caught:
        parse_nats_urls(value)
    message = str(caught.value)
    assert message.startswith("CLIPYARD_NATS_URL ")
    assert named in message
    assert why in message
    assert f"such as {NATS_URL_EXAMPLE}" in message
    assert isinstance(caught.value, ValueError)


def test_a_refusal_hides_a_password_and_names_the_setting_it_is_given() -> None:
    with pytest.raises(NatsUrlError) as caught:
        parse_nats_urls("nats://cli:s3cret@127.0.0.1:70000", setting="NATS_SERVERS")
    assert "s3cret" not in str(caught.value)
    assert "'nats://***@127.0.0.1:70000'" in str(caught.value)
    assert str(caught.value).startswith("NATS_SERVERS ")

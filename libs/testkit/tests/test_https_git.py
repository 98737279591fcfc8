"""The https_git_server fixture: real git over real TLS with Basic auth (and reference case 18)."""

from __future__ import annotations

import http.client
import os
import re
import socket
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from testkit.https_git import REALM, HttpsGitServer, RequestRecord, isolated_git_env

pytestmark = pytest.mark.integration

# An inline credential helper: answers `get` with the token from the environment (never argv).
HELPER = '!f() { test "$1" = get && echo "username=${HELPER_USER:-x-access-token}" && echo "password=$CLIPYARD_GIT_TOKEN"; }; f'


def git(
    home: Path,
    *args: str,
    ca: Path | None = None,
    token: str | None = None,
    username: str | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run git with no ambient configuration; with ``token`` the inline helper answers."""
    extra = {"GIT_SSL_CAINFO": str(ca)} if ca is not None else {}
    if token is not None:
        extra["CLIPYARD_GIT_TOKEN"] = token
    if username is not None:
        extra["HELPER_USER"] = username
    helper = ["-c", "credential.helper=", "-c", f"credential.helper={HELPER}"] if token else []
    return subprocess.run(
        ["git", "-c", "credential.helper=", *helper, *args],
        env=isolated_git_env(home, extra),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def server_sha(server: HttpsGitServer, name: str, ref: str) -> str:
    result = subprocess.run(
        ["git", "--git-dir", str(server.repo_path(name)), "rev-parse", ref],
        env=isolated_git_env(server.root / "home"),
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "client-home"
    folder.mkdir()
    return folder


def test_clone_with_credential_helper_and_ca(
    https_git_server: HttpsGitServer, home: Path, tmp_path: Path
) -> None:
    url = https_git_server.create_repo(
        "org/demo",
        {"README.md": "# demo\n", "src/app.py": "print('hi')\n"},
        branches={"feature": {"feature.txt": "wip\n"}},
    )
    assert url == f"https://127.0.0.1:{https_git_server.port}/org/demo.git"
    assert https_git_server.host_port == f"127.0.0.1:{https_git_server.port}"

    result = git(
        home,
        "clone",
        url,
        str(tmp_path / "clone"),
        ca=https_git_server.ca_path,
        token=https_git_server.token,
    )

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "clone" / "src" / "app.py").read_text() == "print('hi')\n"
    branches = git(home, "branch", "-r", cwd=tmp_path / "clone").stdout
    assert "origin/feature" in branches
    log = https_git_server.request_log
    # git asks anonymously first, gets 401, then asks its helper
    assert log[0] == RequestRecord(
        "GET", "/org/demo.git/info/refs?service=git-upload-pack", None, False, 401
    )
    assert any(r.username == "x-access-token" and r.auth_ok and r.method == "POST" for r in log)
    assert https_git_server.token not in repr(log)
    assert https_git_server.token not in repr(https_git_server)
    assert https_git_server.token not in url


def test_wrong_token_fails_authentication(
    https_git_server: HttpsGitServer, home: Path, tmp_path: Path
) -> None:
    url = https_git_server.create_repo("demo")

    result = git(home, "clone", url, str(tmp_path / "c"), ca=https_git_server.ca_path, token="nope")

    assert result.returncode != 0
    assert "Authentication failed" in result.stderr
    log = https_git_server.request_log
    assert log
    assert not any(r.auth_ok for r in log)
    assert ("x-access-token", 401) in {(r.username, r.status) for r in log}
    assert not (tmp_path / "c").exists()


def test_missing_repository_is_not_found(https_git_server: HttpsGitServer, home: Path) -> None:
    https_git_server.create_repo("present")
    missing = f"{https_git_server.url}/absent.git"

    result = git(
        home, "ls-remote", missing, ca=https_git_server.ca_path, token=https_git_server.token
    )

    assert result.returncode != 0
    assert "not found" in result.stderr
    assert https_git_server.request_log[-1].status == 404
    assert https_git_server.errors == []


def test_allowed_usernames_and_set_token(https_git_server: HttpsGitServer, home: Path) -> None:
    url = https_git_server.create_repo("demo")
    ca, old = https_git_server.ca_path, https_git_server.token

    assert git(home, "ls-remote", url, ca=ca, token=old, username="oauth2").returncode == 0
    stranger = git(home, "ls-remote", url, ca=ca, token=old, username="someone")
    assert "Authentication failed" in stranger.stderr

    https_git_server.set_token("rotated-token-value")

    assert "Authentication failed" in git(home, "ls-remote", url, ca=ca, token=old).stderr
    fresh = git(home, "ls-remote", url, ca=ca, token="rotated-token-value")
    assert fresh.returncode == 0, fresh.stderr
    assert ("someone", False) in {(r.username, r.auth_ok) for r in https_git_server.request_log}


def test_reference_case_18_cainfo_gets_past_tls(
    https_git_server: HttpsGitServer, home: Path
) -> None:
    # Given a self-signed HTTPS server
    url = https_git_server.create_repo("case18")
    main = server_sha(https_git_server, "case18", "main")

    # without GIT_SSL_CAINFO, ls-remote fails on the certificate; no HTTP request gets through
    untrusted = git(home, "ls-remote", url, token=https_git_server.token)
    assert untrusted.returncode != 0
    assert re.search(r"certificate", untrusted.stderr, re.IGNORECASE), untrusted.stderr
    assert "Authentication failed" not in untrusted.stderr
    assert https_git_server.request_log == []

    # with it, TLS passes: no credentials → the server's 401 and git cannot prompt
    anonymous = git(home, "ls-remote", url, ca=https_git_server.ca_path)
    assert anonymous.returncode != 0
    assert "certificate" not in anonymous.stderr.lower()
    assert "terminal prompts disabled" in anonymous.stderr
    assert https_git_server.request_log[-1].status == 401

    # and with credentials it lists the server's refs
    trusted = git(home, "ls-remote", url, ca=https_git_server.ca_path, token=https_git_server.token)
    assert trusted.returncode == 0, trusted.stderr
    assert f"{main}\trefs/heads/main" in trusted.stdout.splitlines()


def test_fetch_after_new_server_commit(
    https_git_server: HttpsGitServer, home: Path, tmp_path: Path
) -> None:
    url = https_git_server.create_repo("demo", {"a.txt": "one\n"})
    ca, token, clone = https_git_server.ca_path, https_git_server.token, tmp_path / "clone"
    assert git(home, "clone", url, str(clone), ca=ca, token=token).returncode == 0

    new = https_git_server.commit("demo", {"a.txt": "two\n", "b.txt": "new\n"}, message="second")
    fetched = git(home, "fetch", "origin", ca=ca, token=token, cwd=clone)

    assert fetched.returncode == 0, fetched.stderr
    assert git(home, "rev-parse", "origin/main", cwd=clone).stdout.strip() == new
    assert git(home, "show", "origin/main:a.txt", cwd=clone).stdout == "two\n"
    assert git(home, "rev-parse", "HEAD", cwd=clone).stdout.strip() != new


def test_large_push_sends_a_chunked_body(
    https_git_server: HttpsGitServer, home: Path, tmp_path: Path
) -> None:
    url = https_git_server.create_repo("demo")
    ca, token, clone = https_git_server.ca_path, https_git_server.token, tmp_path / "clone"
    assert git(home, "clone", url, str(clone), ca=ca, token=token).returncode == 0
    (clone / "blob.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # beyond http.postBuffer
    git(home, "add", "blob.bin", cwd=clone)
    git(home, "commit", "-q", "-m", "big", cwd=clone)
    https_git_server.clear_log()

    pushed = git(home, "push", "origin", "HEAD:main", ca=ca, token=token, cwd=clone)

    assert pushed.returncode == 0, pushed.stderr
    local = git(home, "rev-parse", "HEAD", cwd=clone).stdout.strip()
    assert server_sha(https_git_server, "demo", "main") == local
    receive = [r for r in https_git_server.request_log if r.path.endswith("/git-receive-pack")]
    assert any(r.chunked and r.status == 200 for r in receive), receive


def test_gzip_request_body_is_passed_through(
    https_git_server: HttpsGitServer, home: Path, tmp_path: Path
) -> None:
    # 30 branches on distinct commits make a protocol v0 upload-pack request > 1 KiB: git gzips it
    branches = {f"topic-{n:02}": {f"t{n}.txt": f"{n}\n"} for n in range(30)}
    url = https_git_server.create_repo("many", branches=branches)
    ca, token = https_git_server.ca_path, https_git_server.token

    cloned = git(
        home, "-c", "protocol.version=0", "clone", url, str(tmp_path / "c"), ca=ca, token=token
    )

    assert cloned.returncode == 0, cloned.stderr
    assert "origin/topic-29" in git(home, "branch", "-r", cwd=tmp_path / "c").stdout
    posts = [r for r in https_git_server.request_log if r.method == "POST"]
    assert any(r.content_encoding == "gzip" and r.status == 200 for r in posts), posts


def test_certificate_names_and_401_challenge(https_git_server: HttpsGitServer) -> None:
    context = ssl.create_default_context(cafile=str(https_git_server.ca_path))
    for host in ("127.0.0.1", "localhost"):
        connection = http.client.HTTPSConnection(
            host, https_git_server.port, context=context, timeout=10
        )
        try:
            connection.request("GET", "/nothing.git/info/refs?service=git-upload-pack")
            response = connection.getresponse()
            response.read()
        finally:
            connection.close()
        assert response.status == 401
        assert response.getheader("WWW-Authenticate") == f'Basic realm="{REALM}"'
    raw = socket.create_connection(("127.0.0.1", https_git_server.port), timeout=10)
    try:
        with pytest.raises(ssl.SSLCertVerificationError):
            ssl.create_default_context().wrap_socket(raw, server_hostname="127.0.0.1")
    finally:
        raw.close()


def test_stop_closes_idle_connections_and_threads(tmp_path: Path) -> None:
    server = HttpsGitServer(tmp_path / "srv").start()
    port = server.port
    context = ssl.create_default_context(cafile=str(server.ca_path))
    idle = context.wrap_socket(
        socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1"
    )
    try:
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        stopper.join(timeout=10)
        assert not stopper.is_alive(), "stop() hung on an idle keep-alive connection"
    finally:
        idle.close()
    assert not [t for t in threading.enumerate() if t.name == "https-git"]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    with pytest.raises(RuntimeError):
        _ = server.url

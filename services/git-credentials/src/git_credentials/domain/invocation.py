"""How one git process authenticates (reference §8.4 as changed by DECISIONS 9).

``-c credential.helper=`` resets every ambient helper (gh, glab, osxkeychain, store, a repo's
own), then one inline helper per scoped host answers git's ``get`` only for ``https`` and those
hosts, reading the token from ``CLIPYARD_GIT_TOKEN`` at run time. Two independent gates: the
URL-scoped helper key and the helper's own protocol/host check (a repository's ``insteadOf``
pointing elsewhere gets nothing). The token is never in argv, a URL or a file.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from contracts.credentials import GitCredential, GitProvider
from git_credentials.domain.chain import ResolvedToken
from git_credentials.domain.hosts import GITHUB_SSH_PREFIXES, Remote

__all__ = [
    "PROVIDER_LABELS",
    "TOKEN_ENV",
    "USERNAMES",
    "build_credential",
    "ca_env",
    "helper_script",
    "ssh_rewrite_args",
]

TOKEN_ENV = "CLIPYARD_GIT_TOKEN"
USERNAMES: Mapping[GitProvider, str] = {"github": "x-access-token", "gitlab": "oauth2"}
PROVIDER_LABELS: Mapping[GitProvider, str] = {"github": "GitHub", "gitlab": "GitLab"}
_GITHUB_HTTPS_BASE = "https://github.com/"


def _has_port(host: str) -> bool:
    return ":" in host.rsplit("]", 1)[-1]


def helper_script(hosts: Sequence[str], username: str) -> str:
    """An inline (``!``-prefixed) credential helper answering only for ``hosts`` over https.

    It reads git's request from stdin up to EOF or a blank line (so ``store`` and ``erase`` are
    drained silently) and, for ``get`` with ``protocol=https`` and a ``host`` among ``hosts``
    (compared lowercase; a host without a port also matches its ``:443`` form), prints
    ``username=<username>`` and ``password=$CLIPYARD_GIT_TOKEN``. Anything else prints nothing
    and exits 0. Hosts are single-quoted, so ``case`` treats brackets and ports literally.

    Args:
        hosts: Lowercase ``host[:port]`` entries the helper answers for (at least one).
        username: The fixed username (``x-access-token`` or ``oauth2``).

    Returns:
        The helper, for a ``credential.<url>.helper`` value.

    Raises:
        ValueError: ``hosts`` is empty.
    """
    if not hosts:
        raise ValueError("a credential helper needs at least one host")
    patterns: list[str] = []
    for host in hosts:
        patterns.append(host)
        if not _has_port(host):
            patterns.append(f"{host}:443")
    cases = "|".join(shlex.quote(pattern) for pattern in patterns)
    return (
        "!f() { p=; h=; "
        'while IFS= read -r l; do [ -z "$l" ] && break; case "$l" in '
        'protocol=*) p="${l#protocol=}";; '
        "host=*) h=$(printf '%s' \"${l#host=}\" | tr '[:upper:]' '[:lower:]');; "
        "esac; done; "
        f'[ "$1" = get ] && [ "$p" = https ] && [ -n "${TOKEN_ENV}" ] || return 0; '
        f'case "$h" in {cases}) '
        f"printf 'username=%s\\npassword=%s\\n' {shlex.quote(username)} \"${TOKEN_ENV}\";; "
        "esac; }; f"
    )


def ssh_rewrite_args() -> list[str]:
    """``-c url.https://github.com/.insteadOf=<form>`` for each accepted GitHub SSH form."""
    args: list[str] = []
    for prefix in GITHUB_SSH_PREFIXES:
        args += ["-c", f"url.{_GITHUB_HTTPS_BASE}.insteadOf={prefix}"]
    return args


def ca_env(remote: Remote, ca_cert_path: str | None) -> dict[str, str]:
    """``GIT_SSL_CAINFO`` for a self-managed GitLab host when a CA path is set, else nothing
    (never for gitlab.com or GitHub; a blank path is unset: reference case 13)."""
    ca_path = (ca_cert_path or "").strip()
    return {"GIT_SSL_CAINFO": ca_path} if remote.self_managed and ca_path else {}


def build_credential(
    remote: Remote, token: ResolvedToken, ca_cert_path: str | None
) -> GitCredential:
    """The ``-c`` options and environment that authenticate one git process for ``remote``.

    Args:
        remote: The classified remote.
        token: The resolved token (it goes only into ``env[CLIPYARD_GIT_TOKEN]``).
        ca_cert_path: ``CLIPYARD_GITLAB_CA_CERT_PATH``; set as ``GIT_SSL_CAINFO`` for a
            self-managed GitLab host only (blank: unset).

    Returns:
        The credential: config args, env, secret name, source and provider label.
    """
    script = helper_script(remote.scoped_hosts, USERNAMES[remote.provider])
    config_args = ["-c", "credential.helper="]
    for host in remote.scoped_hosts:
        config_args += ["-c", f"credential.https://{host}.helper={script}"]
    if remote.ssh_rewrite:
        config_args += ssh_rewrite_args()
    env = {TOKEN_ENV: token.token, "GIT_TERMINAL_PROMPT": "0", **ca_env(remote, ca_cert_path)}
    return GitCredential(
        config_args=config_args,
        env=env,
        secret_name=token.secret_name,
        source=token.source,
        provider_label=PROVIDER_LABELS[remote.provider],
    )

"""Host gating: which remote URLs get a credential, for which provider (DECISIONS 9, reference §8.1).

Only ``https`` remotes without userinfo on ``github.com`` / ``www.github.com``, ``gitlab.com`` /
``www.gitlab.com`` and the self-managed GitLab hosts of ``CLIPYARD_GITLAB_HOSTS`` (exact port; an
entry without a port matches only 443) get one, plus the four GitHub SSH forms, which are rewritten
to ``https://github.com/`` for that one git process. Everything else (``http:``, GitHub Enterprise,
Bitbucket, unlisted hosts, URLs with userinfo, local paths, anything that is not a URL) gets none,
and git runs with its ambient behaviour.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from contracts.credentials import GitProvider

__all__ = [
    "GITHUB_HOSTS",
    "GITHUB_SSH_PREFIXES",
    "GITLAB_COM_HOSTS",
    "Remote",
    "classify_remote",
    "is_github_https_remote",
    "parse_gitlab_hosts",
]

GITHUB_HOSTS: tuple[str, ...] = ("github.com", "www.github.com")
GITLAB_COM_HOSTS: tuple[str, ...] = ("gitlab.com", "www.gitlab.com")
GITHUB_SSH_PREFIXES: tuple[str, ...] = (
    "git@github.com:",
    "git@www.github.com:",
    "ssh://git@github.com/",
    "ssh://git@www.github.com/",
)
"""The GitHub SSH remotes accepted (case-sensitive, as git's ``insteadOf`` prefix match is)."""

_HTTPS_PORT = 443


@dataclass(frozen=True)
class Remote:
    """A remote that may get a credential.

    Attributes:
        provider: ``github`` or ``gitlab``.
        host: Lowercase ``host[:port]`` as git sends it in ``host=`` (no port when 443).
        scoped_hosts: The hosts the credential helper is scoped to.
        self_managed: True for a host listed in ``CLIPYARD_GITLAB_HOSTS``.
        ssh_rewrite: True for a GitHub SSH remote rewritten to HTTPS for that one process.
    """

    provider: GitProvider
    host: str
    scoped_hosts: tuple[str, ...]
    self_managed: bool = False
    ssh_rewrite: bool = False


def _authority(parts: SplitResult) -> str | None:
    """``host[:port]`` of a split URL, lowercase, without a 443 port; None when malformed."""
    hostname = parts.hostname
    if not hostname or parts.netloc.endswith(":"):
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    host = f"[{hostname}]" if ":" in hostname else hostname
    if port is None or port == _HTTPS_PORT:
        return host
    return f"{host}:{port}"


def _normalize_entry(entry: str) -> str | None:
    """One ``CLIPYARD_GITLAB_HOSTS`` entry (``host[:port]`` or a full URL) as ``host[:port]``."""
    text = entry.strip().lower()
    if not text:
        return None
    if "://" not in text:
        text = f"https://{text}"
    try:
        return _authority(urlsplit(text))
    except ValueError:
        return None


def parse_gitlab_hosts(raw: str | None) -> tuple[str, ...]:
    """The self-managed GitLab hosts of ``CLIPYARD_GITLAB_HOSTS``.

    Args:
        raw: A comma list of ``host[:port]`` or full URLs (None or blank: no host).

    Returns:
        Distinct lowercase ``host[:port]`` entries in order (a 443 port is dropped, so an entry
        without a port matches only 443); blank and malformed entries are dropped.
    """
    if not raw:
        return ()
    hosts: list[str] = []
    for entry in raw.split(","):
        host = _normalize_entry(entry)
        if host is not None and host not in hosts:
            hosts.append(host)
    return tuple(hosts)


def _has_unsafe_characters(url: str) -> bool:
    return any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url)


def _github_ssh_remote(url: str) -> Remote | None:
    for prefix in GITHUB_SSH_PREFIXES:
        if url.startswith(prefix) and len(url) > len(prefix):
            return Remote("github", "github.com", GITHUB_HOSTS, ssh_rewrite=True)
    return None


def classify_remote(url: str, gitlab_hosts: Sequence[str]) -> Remote | None:
    """The provider and credential scope of a remote URL, or None when it gets no credential.

    Args:
        url: The remote URL exactly as git will be given it.
        gitlab_hosts: The self-managed GitLab hosts (entries as ``parse_gitlab_hosts`` accepts).

    Returns:
        The :class:`Remote`, or None for ``http:``, GitHub Enterprise, Bitbucket, unlisted hosts,
        a port that does not match, userinfo in the URL, local paths and non-URLs.
    """
    if not url or _has_unsafe_characters(url):
        return None
    ssh = _github_ssh_remote(url)
    if ssh is not None:
        return ssh
    if not url.startswith("https://"):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if "@" in parts.netloc:
        return None
    host = _authority(parts)
    if host is None:
        return None
    if host in GITHUB_HOSTS:
        return Remote("github", host, GITHUB_HOSTS)
    if host in GITLAB_COM_HOSTS:
        return Remote("gitlab", host, GITLAB_COM_HOSTS)
    if host in parse_gitlab_hosts(",".join(gitlab_hosts)):
        return Remote("gitlab", host, (host,), self_managed=True)
    return None


def is_github_https_remote(url: str) -> bool:
    """True for ``https://github.com/…`` and ``https://www.github.com/…`` without userinfo."""
    remote = classify_remote(url, ())
    return remote is not None and remote.provider == "github" and not remote.ssh_rewrite

"""What every server-side git process gets (ARCHITECTURE §6), and how its steps are scrubbed.

* ``-c`` options: hooks from an empty directory only, fsmonitor off, ``safe.directory=*``, no
  pager or editor, auto-gc and auto-maintenance off, signing off. They come after a credential's
  own options, so they win.
* Environment: the sanitized base (no server settings, no repository-location variables such as
  ``GIT_DIR``), then the credential's variables, then fixed settings nothing overrides (no system
  config, no terminal prompt, ``LC_ALL=C``), then per-call extras (``GIT_INDEX_FILE``).
* Display and metadata: URL userinfo and query strings, and the credential's secret values, are
  replaced by ``***``.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from telemetry import scrub_url_secrets
from telemetry.redaction import is_secret_name
from workspace_realizer.adapters.environment import sanitize_env
from workspace_realizer.adapters.ports import GitInvocation

__all__ = [
    "FIXED_ENV",
    "display_command",
    "ensure_empty_dir",
    "git_env",
    "hardening_args",
    "scrub_metadata",
    "secret_values",
]

FIXED_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "LC_ALL": "C",
    "LANGUAGE": "C",
    # Read-only commands (status) never take the index lock to refresh it, so inspections can run
    # beside other git work on the repository without waiting for its lock or disturbing it.
    "GIT_OPTIONAL_LOCKS": "0",
    # A server-side trace (below, none is inherited) never prints an Authorization header.
    "GIT_TRACE_REDACT": "1",
}

# Variables that would point git at another repository, index or config than the one asked for.
_GIT_LOCATION_VARS = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_QUARANTINE_PATH",
        "GIT_EXTERNAL_DIFF",
        "GIT_ASKPASS",
    }
)


def hardening_args(hooks_dir: Path) -> list[str]:
    """The ``-c`` options every git process gets.

    Args:
        hooks_dir: The empty directory given as ``core.hooksPath``.

    Returns:
        The options, ``-c`` and value alternating.
    """
    return [
        "-c",
        f"core.hooksPath={hooks_dir}",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "safe.directory=*",
        "-c",
        "core.pager=cat",
        "-c",
        "core.editor=true",
        "-c",
        "gc.auto=0",
        "-c",
        "maintenance.auto=false",
        "-c",
        "commit.gpgSign=false",
        "-c",
        "tag.gpgSign=false",
        # A submodule's git dir is a company's to write (its config can name filters and
        # commands): the server's git never looks into one.
        "-c",
        "diff.ignoreSubmodules=all",
        "-c",
        "submodule.recurse=false",
        "-c",
        "status.submoduleSummary=false",
    ]


def _inherited(name: str) -> bool:
    if name == "GIT_CONFIG_GLOBAL":
        return True
    if name.startswith("GIT_TRACE") or name == "GIT_CURL_VERBOSE":
        return False  # traces could copy the credential exchange to stderr or a file
    return name not in _GIT_LOCATION_VARS and not name.startswith("GIT_CONFIG_")


def git_env(
    base: Mapping[str, str],
    auth: GitInvocation | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one git process.

    Args:
        base: The server's environment (sanitized here).
        auth: A credential whose variables are added.
        extra: Per-call variables, added last.

    Returns:
        The complete environment.
    """
    env = {name: value for name, value in sanitize_env(base).items() if _inherited(name)}
    if auth is not None:
        env.update(auth.env)
    env.update(FIXED_ENV)
    if extra:
        env.update(extra)
    return env


def ensure_empty_dir(path: Path) -> None:
    """Create ``path`` (mode 0555) or empty it: it must never hold a hook.

    Args:
        path: The hooks directory.
    """
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o755)
    for entry in path.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    path.chmod(0o555)


def secret_values(auth: GitInvocation | None) -> list[str]:
    """The credential values handed to git in its environment (hidden from every output).

    Args:
        auth: The credential, if any.

    Returns:
        The values of its secret-looking variables.
    """
    if auth is None:
        return []
    return [
        value
        for name, value in auth.env.items()
        if is_secret_name(name) and not name.startswith("GIT_CONFIG_") and len(value) >= 4
    ]


def display_command(args: Sequence[str], secrets: Sequence[str] = ()) -> str:
    """``git <args>`` quoted for display, with URL secrets (and the given values) hidden.

    Args:
        args: The git arguments after the global ``-c`` options.
        secrets: Literal values to hide.

    Returns:
        The display command.
    """
    text = shlex.join(["git", *args])
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return str(scrub_url_secrets(text))


def scrub_metadata(metadata: Mapping[str, object], secrets: Sequence[str]) -> dict[str, object]:
    """A copy of step metadata with URL secrets and the given values hidden in every string.

    Args:
        metadata: The metadata.
        secrets: Literal values to hide.

    Returns:
        The scrubbed copy.
    """

    def scrub(value: object) -> object:
        if isinstance(value, str):
            for secret in secrets:
                value = value.replace(secret, "***")
            return scrub_url_secrets(value)
        if isinstance(value, Mapping):
            return {str(k): scrub(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [scrub(v) for v in value]
        return value

    return {str(key): scrub(value) for key, value in metadata.items()}

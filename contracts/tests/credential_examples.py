"""Examples of the git-credentials messages (secrets, invocations, pull-request facts).

Loaded by ``examples.py``, which passes its envelope builder and principals in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from contracts.base import Message, Principal
from contracts.credential_events import (
    CredentialResolved,
    SecretCreated,
    SecretDeleted,
    SecretRotated,
)
from contracts.credentials import (
    CreateSecret,
    DeleteSecret,
    ListSecretAccessEvents,
    ListSecrets,
    LookupPullRequests,
    ResolveGitInvocation,
    RotateSecret,
)

COMPANY = "0b5f0c1e-4a43-4c8e-9c1e-1c2f3a4b5c6d"
SECRET = "8a4d6f2b-1c0e-4b5a-8d4e-6f7a8b9c0d1e"
RUN = "9b5e7a3c-2d1f-4c6b-9e5f-7a8b9c0d1e2f"
OP = "7f3c5e1a-0b9d-4a4f-9c3d-5e6f7a8b9c0d"


def build(envelope: Callable[..., dict[str, Any]], principal: Principal) -> list[Message]:
    """Every git-credentials message, once each."""
    p = principal
    return [
        CreateSecret(principal=p, company_id=COMPANY, name="GITHUB_TOKEN", value="example-value"),
        RotateSecret(principal=p, secret_id=SECRET, value="example-value-2"),
        DeleteSecret(principal=p, secret_id=SECRET),
        ListSecrets(principal=p, company_id=COMPANY, limit=20, offset=0),
        ListSecretAccessEvents(principal=p, company_id=COMPANY, limit=20, offset=0),
        ResolveGitInvocation(
            principal=p,
            company_id=COMPANY,
            remote_url="https://github.com/acme/api.git",
            run_id=RUN,
            operation_id=None,
        ),
        LookupPullRequests(
            principal=p,
            company_id=COMPANY,
            repo_url="https://github.com/acme/api.git",
            references=["https://github.com/acme/api/pull/12"],
            run_id=None,
            operation_id=OP,
        ),
        SecretCreated(**envelope("secret"), name="GITHUB_TOKEN", version=1),
        SecretRotated(**envelope("secret", 2), name="GITHUB_TOKEN", version=2),
        SecretDeleted(**envelope("secret", 3), name="GITHUB_TOKEN", versions_destroyed=2),
        CredentialResolved(
            **envelope("credential"),
            secret_name="GITHUB_TOKEN",
            source="company_secret",
            provider="github",
            remote_host="github.com",
            operation_id=OP,
        ),
    ]

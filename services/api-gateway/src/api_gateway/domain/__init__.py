"""The gateway's domain: companies, API keys, operator-page sessions, run tokens and the marks of
deleted agents (aggregates), the secrets and names they check, and the gateway's errors.

Pure: no I/O. Keys, session ids and run tokens are never stored in the clear, only their SHA-256
hashes.
"""

from __future__ import annotations

from api_gateway.domain.api_key import ApiKey, ApiKeyKind
from api_gateway.domain.company import Company, check_root
from api_gateway.domain.credentials import (
    csrf_token_of,
    hash_secret,
    new_key,
    new_session_secret,
)
from api_gateway.domain.deleted_agent import DeletedAgent
from api_gateway.domain.errors import (
    AgentNotFoundError,
    ApiKeyNotFoundError,
    CompanyNotFoundError,
    ForbiddenError,
    GatewayError,
    InvalidInputError,
    InvalidIssuePrefixError,
    InvalidNameError,
    KeyKindNotAllowedError,
    NotFoundError,
    RunEndedError,
    RunTokenUnusableError,
    UnauthenticatedError,
)
from api_gateway.domain.names import MAX_NAME_LENGTH, check_name, derive_issue_prefix
from api_gateway.domain.run_token import RUN_TOKEN_PREFIX, RunToken, is_run_token, new_run_token
from api_gateway.domain.session import Session

__all__ = [
    "MAX_NAME_LENGTH",
    "RUN_TOKEN_PREFIX",
    "AgentNotFoundError",
    "ApiKey",
    "ApiKeyKind",
    "ApiKeyNotFoundError",
    "Company",
    "CompanyNotFoundError",
    "DeletedAgent",
    "ForbiddenError",
    "GatewayError",
    "InvalidInputError",
    "InvalidIssuePrefixError",
    "InvalidNameError",
    "KeyKindNotAllowedError",
    "NotFoundError",
    "RunEndedError",
    "RunToken",
    "RunTokenUnusableError",
    "Session",
    "UnauthenticatedError",
    "check_name",
    "check_root",
    "csrf_token_of",
    "derive_issue_prefix",
    "hash_secret",
    "is_run_token",
    "new_key",
    "new_run_token",
    "new_session_secret",
]

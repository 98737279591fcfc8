"""The physical limit of the HTTP edge: a bare Litestar app on the gateway's server stack.

uvicorn with uvloop and httptools, no access log: what ``api_gateway`` runs on. Its routes answer
constants, with no authentication, no store and no bus.
"""

from __future__ import annotations

import sys

import uvicorn
from litestar import Litestar, get


@get("/api/companies/{company_id:str}", sync_to_thread=False)
def get_company(company_id: str) -> dict[str, str]:
    """Answer a constant company."""
    return {"id": company_id, "name": "Acme", "issuePrefix": "ACME"}


@get("/api/health", sync_to_thread=False)
def get_health() -> dict[str, str]:
    """Answer a constant health."""
    return {"status": "ok"}


app = Litestar([get_company, get_health])

if __name__ == "__main__":
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        loop="uvloop",
        http="httptools",
        access_log=False,
        log_level="warning",
        server_header=False,
    )

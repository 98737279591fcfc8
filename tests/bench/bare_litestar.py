"""The physical limit of the HTTP edge: a bare Litestar app on the same uvicorn settings."""

from __future__ import annotations

import sys

import uvicorn
from litestar import Litestar, get


@get("/api/companies/{company_id:str}", sync_to_thread=False)
def get_company(company_id: str) -> dict[str, str]:
    """Answer a constant company, no authentication, no store."""
    return {"id": company_id, "name": "Acme", "issuePrefix": "ACME"}


app = Litestar([get_company])

if __name__ == "__main__":
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=int(sys.argv[1]),
        loop="asyncio",
        access_log=False,
        log_level="warning",
        server_header=False,
    )

"""Git credentials end to end: a private HTTPS git server and a GitHub-like API, the whole stack,
and a planted token searched for everywhere it must never be.

The HTTPS server (git's http-backend behind TLS with a throwaway CA) requires basic auth with the
token; its ``host:port`` is a self-managed GitLab host (``CLIPYARD_GITLAB_HOSTS``), so the token
comes from the company's ``GITLAB_TOKEN`` secret. The local GitHub API answers for private pull
requests only with the ``GITHUB_TOKEN`` secret.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.canary import Canary
from tests.e2e.gitutil import git, make_repo

pytestmark = [pytest.mark.e2e, pytest.mark.both_stores]

GITLAB_TOKEN = "glpat-canary-7f3c5e1a0b9d4a4f9c3d5e6f"


@pytest.fixture
def stack_env(https_git_server: Any, github_api: Any) -> dict[str, str]:
    https_git_server.set_token(GITLAB_TOKEN)
    return {
        "CLIPYARD_GITLAB_HOSTS": https_git_server.host_port,
        "CLIPYARD_GITLAB_CA_CERT_PATH": str(https_git_server.ca_path),
        "CLIPYARD_GITHUB_API_URL": github_api.url,
        # The runner's own tokens must not answer for a missing secret.
        "GITHUB_TOKEN": "",
        "GH_TOKEN": "",
        "GITLAB_TOKEN": "",
    }


async def _company(canary: Canary, stack: Any) -> tuple[str, str]:
    async with canary.client(stack, stack.admin_key) as admin:
        company = (await admin.post("/api/companies", json={"name": "Acme"})).json()
        key = await admin.post(
            f"/api/companies/{company['id']}/api-keys", json={"name": "b", "kind": "board"}
        )
    return str(company["id"]), str(key.json()["key"])


async def _project(board: Any, company_id: str) -> str:
    project = await board.post(
        f"/api/companies/{company_id}/projects",
        json={
            "name": "Api",
            "executionWorkspacePolicy": {
                "enabled": True,
                "defaultMode": "isolated_workspace",
                "workspaceStrategy": {"type": "git_worktree", "baseRef": "main"},
            },
        },
    )
    assert project.status_code == 201, project.text
    return str(project.json()["id"])


async def _repo_only_workspace(board: Any, project_id: str, repo_url: str) -> dict[str, Any]:
    """Create a repo-only project workspace and wait for its managed clone to end."""
    created = await board.post(
        f"/api/projects/{project_id}/workspaces",
        json={"name": "api", "repoUrl": repo_url, "isPrimary": True},
    )
    assert created.status_code in (201, 202), created.text
    if created.status_code == 202:
        operation = created.json()["operationId"]
        for _ in range(300):
            op = (await board.get(f"/api/operations/{operation}")).json()
            if op["status"] != "running":
                break
            await asyncio.sleep(0.1)
    workspaces = (await board.get(f"/api/projects/{project_id}/workspaces")).json()
    found = [w for w in workspaces if w["repoUrl"] == repo_url]
    assert len(found) == 1, workspaces
    return dict(found[0])


async def _issue(board: Any, company_id: str, project_id: str, title: str) -> dict[str, Any]:
    issue = await board.post(
        f"/api/companies/{company_id}/issues",
        json={"title": title, "projectId": project_id, "status": "in_progress"},
    )
    assert issue.status_code == 201, issue.text
    return dict(issue.json())


SERVICE_STORES = ["controller", "credentials", "gateway", "realizer", "supervisor"]
"""The tokens of the five services, each naming its SQLite file or PostgreSQL schema."""


def _scanned(stack: Any, tmp_path: Path, nats_store: Path) -> list[Path]:
    """The places the canary reads, after checking that each kind of place is really there:
    every service's store (SQLite files here, or PostgreSQL, read by
    :func:`_assert_clean`), the vault and its key file, the exported spans, the service logs,
    the NATS store (published events), the git server's repositories and every worktree."""
    home = stack.home
    stores = sorted((home / "data").glob("*.sqlite"))
    if stack.store == "sqlite":
        assert [p.stem for p in stores] == SERVICE_STORES
        assert (home / "credentials" / "vault.db").stat().st_size > 0
    else:  # every store and the vault are in PostgreSQL: nothing of them may be in the home
        assert stores == []
        assert not (home / "credentials" / "vault.db").exists()
    assert (home / "credentials" / "master.key").is_file()
    assert (home / "telemetry" / "spans.jsonl").stat().st_size > 0
    logs = list((tmp_path / "service-logs").glob("*.log"))
    assert len(logs) == 5
    assert any(p.stat().st_size > 0 for p in logs)
    assert any(nats_store.rglob("*.blk")), "no JetStream message block to read"
    return [tmp_path, nats_store]


def _assert_clean(canary: Canary, stack: Any, tmp_path: Path, nats_server: Any) -> None:
    """No planted token anywhere: every file of :func:`_scanned` and every stored row (each
    SQLite store, or every table of the stack's PostgreSQL database: the five services' schemas
    and the key vault's)."""
    roots = _scanned(stack, tmp_path, Path(nats_server.store_dir))
    if stack.store == "sqlite":
        canary.assert_clean(
            roots, stores=sorted((stack.home / "data").glob("*.sqlite")), min_files=20
        )
        return
    schemas = canary.scan_postgres(stack.postgres_dsn)
    assert {f"clipyard_{name}" for name in SERVICE_STORES} <= set(schemas), schemas
    assert "git_credentials_vault" in schemas, schemas
    assert all(schemas[f"clipyard_{name}"] > 0 for name in SERVICE_STORES), schemas
    canary.assert_clean(roots, postgres_dsn=stack.postgres_dsn, min_files=20)


async def test_authenticated_clone_and_fetch_with_a_company_secret_leave_no_token_anywhere(
    stack: Any, https_git_server: Any, github_api: Any, tmp_path: Path, nats_server: Any
) -> None:
    helper = f"credential.https://{https_git_server.host_port}.helper"
    with Canary(GITLAB_TOKEN, github_api.token, helper_fragment=helper) as canary:
        https_git_server.on_authenticated = canary.sample_now
        repo_url = https_git_server.create_repo("acme/api", {"README.md": "hello\n"})
        company_id, key = await _company(canary, stack)
        async with canary.client(stack, key) as board:
            secret = await board.post(
                f"/api/companies/{company_id}/secrets",
                json={"name": "GITLAB_TOKEN", "value": f"  {GITLAB_TOKEN}\n"},
            )
            assert secret.status_code == 201, secret.text
            assert set(secret.json()) == {
                "id",
                "companyId",
                "name",
                "version",
                "createdAt",
                "updatedAt",
            }
            project_id = await _project(board, company_id)
            pws = await _repo_only_workspace(board, project_id, repo_url)
            assert pws["managedCheckout"]["state"] == "ready", pws
            checkout = Path(pws["managedCheckout"]["path"])
            assert (checkout / "README.md").read_text() == "hello\n"
            # The server moves on; realizing a workspace fetches the base with the token.
            newer = https_git_server.commit("acme/api", {"CHANGELOG.md": "v2\n"})
            issue = await _issue(board, company_id, project_id, "Use the token")
            realized = await board.post(f"/api/issues/{issue['id']}/execution-workspace", json={})
            assert realized.status_code == 201, realized.text
            worktree = Path(realized.json()["workspace"]["cwd"])
            assert git(worktree, "rev-parse", "HEAD") == newer
            assert (worktree / "CHANGELOG.md").read_text() == "v2\n"
            # Every authenticated request used the GitLab username and the secret's token.
            authed = [r for r in https_git_server.request_log if r.auth_ok]
            assert len(authed) >= 2, https_git_server.request_log
            assert {r.username for r in authed} == {"oauth2"}
            assert any("upload-pack" in r.path for r in authed)
            # The audit names the secret and the host, never the value.
            access = await board.get(f"/api/companies/{company_id}/secret-access-events")
            assert access.status_code == 200, access.text
            events = access.json()
            assert events, "no resolution was audited"
            assert {e["secretName"] for e in events} == {"GITLAB_TOKEN"}
            assert {e["remoteHost"] for e in events} == {https_git_server.host_port}
            assert {e["source"] for e in events} == {"company_secret"}
            assert all(e["operationId"] or e["runId"] for e in events)
            # One resolution per operation (the clone's, the realization's), not per git process.
            keys = [(e["operationId"], e["runId"]) for e in events]
            assert len(keys) == len(set(keys))
            assert (checkout / ".git" / "config").read_text().count(https_git_server.host_port) == 1
            # The token did travel: in the environment of the git processes given the helper.
            assert canary.helper_processes > 0
            assert canary.token_in_helper_env > 0
        _assert_clean(canary, stack, tmp_path, nats_server)


async def test_a_rejected_or_missing_credential_is_described_and_leaves_no_partial_directory(
    stack: Any, https_git_server: Any, github_api: Any, tmp_path: Path, nats_server: Any
) -> None:
    wrong = "glpat-wrong-0b5f0c1e4a434c8e9c1e1c2f"
    with Canary(GITLAB_TOKEN, wrong) as canary:
        repo_url = https_git_server.create_repo("acme/private", {"README.md": "secret\n"})
        company_id, key = await _company(canary, stack)
        async with canary.client(stack, key) as board:
            secret = await board.post(
                f"/api/companies/{company_id}/secrets",
                json={"name": "GITLAB_TOKEN", "value": wrong},
            )
            assert secret.status_code == 201, secret.text
            project_id = await _project(board, company_id)
            pws = await _repo_only_workspace(board, project_id, repo_url)
            checkout = pws["managedCheckout"]
            assert checkout["state"] == "failed", pws
            assert "GITLAB_TOKEN company-secret GitLab credential" in checkout["error"]
            assert "rejected" in checkout["error"]
            # Realizing tries the clone again and fails with the same description (422).
            issue = await _issue(board, company_id, project_id, "Nope")
            realized = await board.post(f"/api/issues/{issue['id']}/execution-workspace", json={})
            assert realized.status_code == 422, realized.text
            assert realized.json()["code"] == "managed_checkout_failed"
            assert "GITLAB_TOKEN company-secret GitLab credential" in realized.json()["error"]
            # Without any secret the description says which secret to add.
            deleted = await board.delete(f"/api/secrets/{secret.json()['id']}")
            assert deleted.status_code == 204, deleted.text
            again = await board.post(f"/api/issues/{issue['id']}/execution-workspace", json={})
            assert again.status_code == 422, again.text
            assert "No GitLab credential is configured" in again.json()["error"]
            assert "GITLAB_TOKEN" in again.json()["error"]
        # No clone directory, finished or partial, was left behind.
        assert not Path(checkout["path"]).exists(), checkout
        checkouts = stack.home / "checkouts"
        leftovers = [p for p in checkouts.rglob("*")] if checkouts.exists() else []
        assert [p for p in leftovers if p.is_file()] == [], leftovers
        assert not [p for p in leftovers if ".clone-" in p.name], leftovers
        assert all(not r.auth_ok for r in https_git_server.request_log)
        _assert_clean(canary, stack, tmp_path, nats_server)


async def test_merged_via_pr_needs_the_branch_at_the_workspace_head(
    stack: Any, https_git_server: Any, github_api: Any, tmp_path: Path, nats_server: Any
) -> None:
    with Canary(GITLAB_TOKEN, github_api.token) as canary:
        repo = make_repo(tmp_path / "api")
        company_id, key = await _company(canary, stack)
        async with canary.client(stack, key) as board:
            secret = await board.post(
                f"/api/companies/{company_id}/secrets",
                json={"name": "GITHUB_TOKEN", "value": github_api.token},
            )
            assert secret.status_code == 201, secret.text
            project_id = await _project(board, company_id)
            pws = await board.post(
                f"/api/projects/{project_id}/workspaces",
                json={
                    "name": "api",
                    "cwd": str(repo),
                    "repoUrl": "https://github.com/acme/api.git",
                    "isPrimary": True,
                },
            )
            assert pws.status_code == 201, pws.text
            states = {}
            for number, matching in ((7, True), (8, False)):
                issue = await _issue(board, company_id, project_id, f"Change {number}")
                realized = await board.post(
                    f"/api/issues/{issue['id']}/execution-workspace", json={}
                )
                assert realized.status_code == 201, realized.text
                ws = realized.json()["workspace"]
                worktree = Path(ws["cwd"])
                (worktree / f"change{number}.txt").write_text("work\n")
                git(worktree, "add", ".")
                git(worktree, "commit", "-q", "-m", f"change {number}")
                head = git(worktree, "rev-parse", "HEAD")
                github_api.add_pull_request(
                    "acme",
                    "api",
                    number,
                    state="closed",
                    merged=True,
                    head_ref=ws["branchName"],
                    head_sha=head if matching else "0" * 40,
                    private=True,
                )
                product = await board.post(
                    f"/api/issues/{issue['id']}/work-products",
                    json={
                        "type": "pull_request",
                        "url": f"https://github.com/acme/api/pull/{number}",
                    },
                )
                assert product.status_code == 201, product.text
                done = await board.patch(f"/api/issues/{issue['id']}", json={"status": "done"})
                assert done.status_code == 200, done.text
                detail = (await board.get(f"/api/execution-workspaces/{ws['id']}")).json()
                states[number] = detail["deliveryState"]
            assert states == {7: "merged_via_pr", 8: "unmerged"}
            asked = [r for r in github_api.requests if r.path.startswith("/repos/acme/api/pulls/")]
            assert asked, "the GitHub API was never asked"
            assert {r.authorization for r in asked} == {"valid"}
            events = (await board.get(f"/api/companies/{company_id}/secret-access-events")).json()
            assert "GITHUB_TOKEN" in {e["secretName"] for e in events}
        _assert_clean(canary, stack, tmp_path, nats_server)

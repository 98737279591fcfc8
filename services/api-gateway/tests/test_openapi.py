"""The OpenAPI document and the docs page: served without a key, every operation documented."""

from __future__ import annotations

import re
from typing import Any

from litestar.testing import TestClient

from contracts.errors import CATALOGUE, ErrorCode

Client = TestClient[Any]

PUBLIC_OPERATIONS = {"getHealth", "signIn", "signOut"}


def test_openapi_json_and_docs_need_no_key(client: Client) -> None:
    document = client.get("/api/openapi.json")
    assert document.status_code == 200
    assert document.json()["info"]["title"] == "Clipyard API"
    docs = client.get("/api/docs")
    assert docs.status_code == 200
    assert "text/html" in docs.headers["content-type"]


def test_the_docs_page_loads_its_files_from_the_gateway_only(client: Client) -> None:
    page = client.get("/api/docs").text
    loaded = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page)
    assert loaded, page
    assert all(url.startswith("/api/docs/assets/") for url in loaded), loaded
    for url in loaded:
        answer = client.get(url)
        assert answer.status_code == 200, url
        assert len(answer.content) > 100, url
        assert "max-age" in answer.headers["cache-control"]
    script = client.get("/api/docs/assets/swagger-ui-bundle.js")
    assert script.headers["content-type"].startswith("text/javascript")
    # Nothing else of the package, and no path out of its folder.
    for name in ("swagger-editor-bundle.js", "..%2F__init__.py", "LICENSE"):
        refused = client.get(f"/api/docs/assets/{name}")
        assert refused.status_code == 404, name
        assert refused.json()["code"] == "not_found"


def test_every_operation_has_an_id_a_description_and_its_errors(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    operations = [
        (path, method, op)
        for path, item in document["paths"].items()
        for method, op in item.items()
    ]
    assert {op["operationId"] for _, _, op in operations} >= {
        "createCompany",
        "listCompanies",
        "getCompany",
        "createApiKey",
        "listApiKeys",
        "deleteApiKey",
        "signIn",
        "signOut",
        "getHealth",
        "getOperation",
        "streamCompanyEvents",
    }
    for path, method, op in operations:
        assert op.get("operationId"), (path, method)
        assert len(op.get("description", "")) > 20, (path, method)
        if op["operationId"] in PUBLIC_OPERATIONS:
            assert op["security"] == [{}], "public operations need no key"
            continue
        errors = {
            status: r for status, r in op["responses"].items() if status.startswith(("4", "5"))
        }
        assert "401" in errors, (path, method)
        for response in errors.values():
            assert response["content"]["application/json"]["schema"]["$ref"].endswith("ErrorBody")
            assert "`" in response["description"], "descriptions list the error codes"
    # The document's description lists every error code of the catalogue, with its status.
    for code, entry in CATALOGUE.items():
        line = f"`{code.value}` ({entry.status}): {entry.description}"
        assert line in document["info"]["description"]
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_bodies_are_the_contract_structs(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    create = document["paths"]["/api/companies"]["post"]
    schema_ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    schema = document["components"]["schemas"][schema_ref.rsplit("/", 1)[1]]
    assert set(schema["properties"]) == {"name", "issuePrefix"}
    assert schema["required"] == ["name"]
    listing = document["paths"]["/api/companies"]["get"]["responses"]["200"]
    assert "X-Total-Count" in listing["headers"]


def test_the_openapi_document_lists_the_secret_operations(client: Client) -> None:
    document = client.get("/api/openapi.json").json()
    paths = document["paths"]
    operations = {
        (path, method): op
        for path, item in paths.items()
        for method, op in item.items()
        if "secret" in path
    }
    assert {op["operationId"] for op in operations.values()} == {
        "createSecret",
        "listSecrets",
        "rotateSecret",
        "deleteSecret",
        "listSecretAccessEvents",
    }
    assert all(op["tags"] == ["secrets"] for op in operations.values())
    assert "secrets" in [tag["name"] for tag in document["tags"]]
    create = paths["/api/companies/{company_id}/secrets"]["post"]
    assert {"201", "400", "401", "403", "404", "409", "413"} <= set(create["responses"])
    assert "413" in paths["/api/secrets/{secret_id}"]["put"]["responses"]
    assert "204" in paths["/api/secrets/{secret_id}"]["delete"]["responses"]
    schemas = document["components"]["schemas"]
    body_ref = create["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = schemas[body_ref.rsplit("/", 1)[1]]
    assert set(body["properties"]) == {"name", "value"}
    assert body["properties"]["value"]["maxLength"] == 65536
    view_ref = create["responses"]["201"]["content"]["application/json"]["schema"]["$ref"]
    assert set(schemas[view_ref.rsplit("/", 1)[1]]["properties"]) == {
        "id",
        "companyId",
        "name",
        "version",
        "createdAt",
        "updatedAt",
    }
    listing = paths["/api/companies/{company_id}/secret-access-events"]["get"]
    assert "X-Total-Count" in listing["responses"]["200"]["headers"]


def test_every_documented_error_is_the_catalogue_s_code_status_and_description(
    client: Client,
) -> None:
    document = client.get("/api/openapi.json").json()
    documented: set[str] = set()
    for path, item in document["paths"].items():
        for method, op in item.items():
            for status, response in op["responses"].items():
                schema = response.get("content", {}).get("application/json", {}).get("schema", {})
                if not schema.get("$ref", "").endswith("ErrorBody"):
                    continue  # not an error body (health's 503 is its report)
                description = response["description"]
                codes = re.findall(r"(?:^|; )`([a-z_]+)`: ", description)
                assert codes, (path, method, status)
                entries = [CATALOGUE[ErrorCode(code)] for code in codes]
                assert all(e.status == int(status) for e in entries), (path, method, status)
                expected = "; ".join(f"`{e.code.value}`: {e.description}" for e in entries)
                assert description == expected, (path, method, status)
                documented.update(codes)
    assert {"unauthenticated", "validation_failed", "not_found", "state_conflict"} <= documented


def test_the_document_is_as_strict_as_the_behaviour(client: Client) -> None:
    doc = client.get("/api/openapi.json").json()
    schemas = doc["components"]["schemas"]
    # Every request body refuses unknown fields, and says so (nested inputs too).
    for name in ("CreateProjectBody", "UpdateIssueBody", "WakeBody", "ExecutionWorkspacePolicyIn",
                 "RuntimeConfigIn", "ServiceSpecIn"):  # fmt: skip
        assert schemas[name]["additionalProperties"] is False, name
    # A reference to a record is a UUID.
    assert "pattern" in schemas["CreateIssueBody"]["properties"]["projectId"]
    # A 204 has no body; the event stream is text/event-stream.
    for path in doc["paths"].values():
        for operation in path.values():
            no_content = operation.get("responses", {}).get("204")
            assert no_content is None or "content" not in no_content, operation["operationId"]
    stream = doc["paths"]["/api/companies/{company_id}/events/stream"]["get"]["responses"]["200"]
    assert list(stream["content"]) == ["text/event-stream"]
    # Names and titles say what the domain checks: 1 to 200 characters, not only blanks.
    for name, field in (("CreateProjectBody", "name"), ("CreateIssueBody", "title"),
                        ("CreateAgentBody", "name"), ("UpdateExecutionWorkspaceBody", "name")):  # fmt: skip
        prop = schemas[name]["properties"][field]
        text = next(p for p in prop.get("anyOf", [prop]) if p.get("type") == "string")
        assert (text["minLength"], text["maxLength"]) == (1, 200), (name, text)
        assert "pattern" in text, name
    # A project workspace patched to neither a checkout nor a repository is outside the schema.
    rule = schemas["UpdateProjectWorkspaceBody"]["not"]
    assert rule["required"] == ["cwd", "repoUrl"]
    cleared = rule["properties"]["cwd"]["anyOf"]
    assert {"type": "null"} in cleared
    assert {"type": "string", "pattern": "^\\s*$"} in cleared  # blanks clear it too

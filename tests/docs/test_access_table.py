"""The access table of ARCHITECTURE §5.1 is the model's ``POLICY``, row for row."""

from __future__ import annotations

from pathlib import Path

from servicekit.access import POLICY, Action, ActorKind, Reach, Resource

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "design" / "ARCHITECTURE.md"
COLUMNS = ("admin", "board key", "board session", "agent key", "run token")


def _documented() -> dict[tuple[ActorKind, Resource, Action], Reach]:
    lines = ARCHITECTURE.read_text().splitlines()
    start = lines.index("### 5.1 Access model")
    header = next(i for i in range(start, len(lines)) if lines[i].startswith("| resource |"))
    cells = [c.strip() for c in lines[header].strip("|").split("|")]
    assert tuple(cells[2:]) == COLUMNS, cells
    table: dict[tuple[ActorKind, Resource, Action], Reach] = {}
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        resource, action, *reaches = (c.strip() for c in line.strip("|").split("|"))
        for column, reach in zip(COLUMNS, reaches, strict=True):
            if reach != "—":
                kind = ActorKind(column.replace(" ", "_"))
                table[(kind, Resource(resource), Action(action))] = Reach(reach)
    return table


def test_the_documented_table_is_the_policy_of_every_credential_kind() -> None:
    policy = {key: reach for key, reach in POLICY.items() if key[0] is not ActorKind.SYSTEM}
    documented = _documented()
    assert documented == policy, (
        "docs/design/ARCHITECTURE.md §5.1 and servicekit.access.POLICY differ:\n"
        f"only documented: {sorted(set(documented.items()) - set(policy.items()))}\n"
        f"only in POLICY: {sorted(set(policy.items()) - set(documented.items()))}"
    )

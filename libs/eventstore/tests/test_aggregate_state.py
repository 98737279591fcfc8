"""An aggregate as plain data, the shape read models keep and replays compare."""

from __future__ import annotations

from datetime import datetime

from eventstore_sample import ADMIN, Company

from eventstore import aggregate_state
from eventstore.cause import Cause, acting


def test_the_state_is_its_public_attributes_with_id_version_and_times() -> None:
    with acting(Cause(actor=ADMIN, reason="test")):
        company = Company(name="Acme", issue_prefix="ACME")
        company.rename("Acme Inc")
    state = aggregate_state(company)
    assert state["id"] == str(company.id)
    assert state["version"] == 2
    assert isinstance(state["created_on"], datetime)
    assert state["modified_on"] >= state["created_on"]
    assert (state["name"], state["issue_prefix"], state["ticks"]) == ("Acme Inc", "ACME", 0)
    assert not [key for key in state if key.startswith("_")]

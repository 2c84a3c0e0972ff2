"""The org-level record of the last apply: service ids, checkpoints, failed fields.

``serviceIds`` resolves the org to each provider's own scope (the ZITADEL org
id, the Coolify project uuid, the Cloudflare zone id); ``failedFields`` lists
declared fields the apply could not make true (never an invented empty list:
it is computed from what the run saw); ``lastApplied`` says when the declared
org with this digest was last applied completely.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trueup.state.store import Store, now


@dataclass
class OrgState:
    org_id: str
    service_ids: dict[str, str] = field(default_factory=dict)
    checkpoints: list[dict[str, Any]] = field(default_factory=list)
    failed_fields: list[str] = field(default_factory=list)
    last_applied: dict[str, str] | None = None
    run_id: str | None = None
    outcome: str | None = None
    updated_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "orgId": self.org_id,
            "serviceIds": dict(self.service_ids),
            "checkpoints": list(self.checkpoints),
            "failedFields": list(self.failed_fields),
            "lastApplied": self.last_applied,
            "run": self.run_id,
            "outcome": self.outcome,
            "updatedAt": self.updated_at,
        }


def load_state(store: Store, target_key: str) -> OrgState | None:
    row = store.db.one(
        "SELECT org_id, service_ids, checkpoints, failed_fields, last_applied_at, "
        "declared_digest, run_id, outcome, updated_at FROM org_states WHERE target_key = :key",
        {"key": target_key},
    )
    if row is None:
        return None
    org_id, ids, checkpoints, failed, at, declared, run_id, outcome, updated = row
    return OrgState(
        org_id=str(org_id),
        service_ids=json.loads(ids),
        checkpoints=json.loads(checkpoints),
        failed_fields=json.loads(failed),
        last_applied={"at": at, "declaredOrgVersion": declared} if at else None,
        run_id=run_id,
        outcome=outcome,
        updated_at=updated,
    )


def save_state(store: Store, target_key: str, state: OrgState) -> None:
    state.updated_at = now()
    params = {
        "key": target_key,
        "org": state.org_id,
        "ids": json.dumps(state.service_ids, sort_keys=True),
        "checkpoints": json.dumps(state.checkpoints, sort_keys=True),
        "failed": json.dumps(state.failed_fields),
        "at": state.last_applied["at"] if state.last_applied else None,
        "declared": state.last_applied["declaredOrgVersion"] if state.last_applied else None,
        "run": state.run_id,
        "outcome": state.outcome,
        "updated": state.updated_at,
    }
    with store.db.transaction():
        store.db.execute(
            "INSERT INTO org_states (target_key, org_id, service_ids, checkpoints, failed_fields, "
            "last_applied_at, declared_digest, run_id, outcome, updated_at) VALUES (:key, :org, "
            ":ids, :checkpoints, :failed, :at, :declared, :run, :outcome, :updated) "
            "ON CONFLICT (target_key) DO UPDATE SET org_id = excluded.org_id, "
            "service_ids = excluded.service_ids, checkpoints = excluded.checkpoints, "
            "failed_fields = excluded.failed_fields, last_applied_at = excluded.last_applied_at, "
            "declared_digest = excluded.declared_digest, run_id = excluded.run_id, "
            "outcome = excluded.outcome, updated_at = excluded.updated_at",
            params,
        )

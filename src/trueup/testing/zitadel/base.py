"""ZITADEL fake state: the instance, its organizations and object details.

Every object carries ZITADEL's ``details`` (``sequence``, ``creationDate``,
``changeDate``, ``resourceOwner``). The caller's org is the token's own
org (the seeded default org, named like a fresh instance's "ZITADEL")
unless the ``x-zitadel-orgid`` header names another one.
"""

from __future__ import annotations

import os
import re
from typing import Any

from trueup.testing._util import numeric_id, proto_time
from trueup.testing.store import JSON, JsonStore
from trueup.testing.zitadel import proto

MGMT_PREFIX = "/management/v1"
V2_PREFIX = "/v2"


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "org"


class ZitadelStore(JsonStore):
    """Instance-wide sequence plus organizations."""

    def __init__(
        self,
        state_file: str | os.PathLike[str] | None = None,
        *,
        default_org_name: str = "ZITADEL",
        domain: str = "localhost",
    ) -> None:
        self._default_org_name = default_org_name
        self._domain = domain
        super().__init__(state_file)

    def _initial(self) -> JSON:
        data: JSON = {
            "sequence": 0,
            "orgs": {},
            "projects": {},
            "roles": {},
            "apps": {},
            "grants": {},
        }
        data["default_org_id"] = self._new_org(data, self._default_org_name)["id"]
        return data

    # -- bookkeeping ---------------------------------------------------------------------

    def _stamp(self, data: JSON, obj: JSON, owner: str | None = None) -> JSON:
        """Bump the sequence and change date; set creation data on first stamp."""
        data["sequence"] = int(data["sequence"]) + 1
        now = proto_time()
        meta = obj.setdefault("_meta", {})
        if "creationDate" not in meta:
            meta["creationDate"] = now
            meta["resourceOwner"] = owner
        meta["sequence"] = data["sequence"]
        meta["changeDate"] = now
        return obj

    @staticmethod
    def _details(obj: JSON, *, created: bool = True) -> JSON:
        """``details`` of an object (``creationDate`` only for creates and reads)."""
        meta = obj["_meta"]
        details: JSON = {"sequence": str(meta["sequence"])}
        if created:
            details["creationDate"] = meta["creationDate"]
        details["changeDate"] = meta["changeDate"]
        details["resourceOwner"] = meta["resourceOwner"]
        return details

    def _list_details(self, data: JSON, total: int) -> JSON:
        return {
            "totalResult": proto.u64(total),
            "processedSequence": str(data["sequence"]),
            "viewTimestamp": proto_time(),
        }

    @staticmethod
    def _page(items: list[Any], offset: int, limit: int, asc: bool = True) -> list[Any]:
        """One page, in creation order (``asc``) or newest first."""
        ordered = items if asc else items[::-1]
        return ordered[offset : offset + limit]

    # -- orgs ----------------------------------------------------------------------------

    @property
    def default_org_id(self) -> str:
        """The org the token belongs to (used when no ``x-zitadel-orgid`` is sent)."""
        with self._read() as data:
            return str(data["default_org_id"])

    def add_org(self, name: str) -> str:
        """Seed an organization; returns its id."""
        with self._write() as data:
            return str(self._create_org(data, name)["id"])

    def org_id(self, name: str) -> str | None:
        with self._read() as data:
            for org in data["orgs"].values():
                if org["name"] == name:
                    return str(org["id"])
        return None

    def seed(self, payload: JSON) -> JSON:
        """``POST /_fake/seed``: ``{"orgs": [names]}`` returns their ids."""
        unknown = set(payload) - {"orgs"}
        if unknown:
            raise ValueError(f"unknown seed field(s): {', '.join(sorted(unknown))}")
        orgs = {name: self.org_id(name) or self.add_org(name) for name in payload.get("orgs", [])}
        return {"default_org_id": self.default_org_id, "orgs": orgs}

    def _new_org(self, data: JSON, name: str) -> JSON:
        org_id = numeric_id()
        org: JSON = {
            "id": org_id,
            "name": name,
            "primaryDomain": f"{_slug(name)}.{self._domain}",
        }
        self._stamp(data, org, owner=org_id)
        data["orgs"][org_id] = org
        return org

    def _create_org(self, data: JSON, name: str) -> JSON:
        if any(o["name"].lower() == name.lower() for o in data["orgs"].values()):
            raise proto.already_exists("Errors.Org.AlreadyExists", "COMMAND-Bdn3s")
        return self._new_org(data, name)

    def resolve_org(self, header: str | None) -> str:
        """The org a management call acts in: the header's, else the token's own."""
        with self._read() as data:
            org_id = header.strip() if header and header.strip() else str(data["default_org_id"])
            if org_id not in data["orgs"]:
                raise proto.not_found("Errors.Org.NotFound", "AUTH-Bs7Ds")
            return org_id

    def _org_view(self, org: JSON, *, v2: bool) -> JSON:
        return {
            "id": org["id"],
            "details": self._details(org),
            "state": "ORGANIZATION_STATE_ACTIVE" if v2 else "ORG_STATE_ACTIVE",
            "name": org["name"],
            "primaryDomain": org["primaryDomain"],
        }

    def create_org(self, body: JSON) -> JSON:
        """``POST /management/v1/orgs`` -> ``{id, details}``."""
        name = proto.string(body, "name", "AddOrgRequest", required=True)
        with self._write() as data:
            org = self._create_org(data, name)
            return {"id": org["id"], "details": self._details(org)}

    def get_my_org(self, org_id: str) -> JSON:
        with self._read() as data:
            return {"org": self._org_view(data["orgs"][org_id], v2=False)}

    def create_org_v2(self, body: JSON) -> JSON:
        """``POST /v2/organizations`` -> ``{details, organizationId}``."""
        name = proto.string(body, "name", "AddOrganizationRequest", required=True)
        with self._write() as data:
            org = self._create_org(data, name)
            return {"details": self._details(org), "organizationId": org["id"]}

    def search_orgs_v2(self, body: JSON) -> JSON:
        offset, limit, asc = proto.list_query(body)
        queries = proto.field(body, "queries") or proto.field(body, "filters") or []
        with self._read() as data:
            orgs = list(data["orgs"].values())
            for query in queries:
                if not isinstance(query, dict):
                    raise proto.invalid_argument("proto: invalid value for queries")
                name_query = proto.field(query, "nameQuery") or proto.field(query, "nameFilter")
                id_query = proto.field(query, "idQuery") or proto.field(query, "idFilter")
                domain_query = proto.field(query, "domainQuery") or proto.field(
                    query, "domainFilter"
                )
                if name_query is not None:
                    orgs = [o for o in orgs if proto.text_match(o["name"], name_query, "name")]
                if id_query is not None:
                    orgs = [o for o in orgs if o["id"] == proto.field(id_query, "id")]
                if domain_query is not None:
                    orgs = [
                        o
                        for o in orgs
                        if proto.text_match(o["primaryDomain"], domain_query, "domain")
                    ]
            if proto.field(body, "sortingColumn") == "ORGANIZATION_FIELD_NAME_NAME":
                orgs.sort(key=lambda o: str(o["name"]), reverse=not asc)
            result = [self._org_view(o, v2=True) for o in self._page(orgs, offset, limit)]
            details = self._list_details(data, len(orgs))
            details.pop("processedSequence")
            details["timestamp"] = details.pop("viewTimestamp")
            return {"details": details, "result": result}

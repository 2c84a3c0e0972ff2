"""The wire format: which entries a follower sees, and what it accepts as signed."""

from __future__ import annotations

from typing import Any

import pytest

from trueup.source.wire import (
    Revision,
    WireError,
    check_share,
    entry_digest,
    manifest_for,
    parse,
    safe_path,
    share,
    share_tag,
)


def entry(
    rid: str, groups: list[str] | None = None, deps: list[str] | None = None
) -> dict[str, Any]:
    resource: dict[str, Any] = {"id": rid, "kind": "file", "target": rid, "content": rid}
    if groups:
        resource["groups"] = groups
    if deps:
        resource["depends_on"] = deps
    return {"resource": resource, "files": {}}


ENTRIES = [
    entry("everyone"),
    entry("laptop", ["laptops"], ["base"]),
    entry("base", ["servers"]),
    entry("server", ["servers"]),
]


def ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["resource"]["id"] for e in entries]


def test_a_follower_sees_its_groups_resources_those_of_no_group_and_their_dependencies() -> None:
    assert ids(share(ENTRIES, ["laptops"])) == ["everyone", "laptop", "base"]
    assert ids(share(ENTRIES, ["servers"])) == ["everyone", "base", "server"]
    assert ids(share(ENTRIES, [])) == ["everyone"]


def test_the_share_tag_changes_exactly_when_what_a_follower_sees_changes() -> None:
    laptops = share(ENTRIES, ["laptops"])
    edited = [*ENTRIES[:3], entry("server", ["servers"], ["everyone"])]
    assert share_tag("r1", laptops) == share_tag("r1", share(edited, ["laptops"]))
    assert share_tag("r1", share(ENTRIES, ["servers"])) != share_tag(
        "r1", share(edited, ["servers"])
    )
    assert share_tag("r1", laptops) != share_tag("r2", laptops)


def signed(entries: list[dict[str, Any]]) -> Revision:
    profile = {"id": "p", "name": "P", "groups": ["laptops", "servers"]}
    return Revision(manifest_for(profile, entries, 3, None, "now"), "sig", tuple(entries))


def test_an_entry_the_manifest_does_not_name_is_refused() -> None:
    revision = signed(ENTRIES)
    check_share(Revision(revision.manifest, "sig", tuple(share(ENTRIES, ["laptops"]))))
    forged = entry("laptop", ["laptops"], ["base"])
    forged["resource"]["content"] = "evil"
    with pytest.raises(WireError, match="'laptop' is not the one the source signed"):
        check_share(Revision(revision.manifest, "sig", (forged,)))


def test_the_revision_id_is_the_profile_and_the_digest_of_its_content() -> None:
    one, two = signed(ENTRIES), signed(list(reversed(ENTRIES)))
    assert one.id == two.id and one.id.startswith("p:") and len(one.manifest["digest"]) == 64
    assert signed(ENTRIES[:3]).id != one.id
    assert one.manifest["entries"] == sorted(entry_digest(e) for e in ENTRIES)


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../x", "a//b", "./a", "", ".."])
def test_a_file_path_outside_the_revision_is_refused(path: str) -> None:
    with pytest.raises(WireError):
        safe_path(path)


def test_a_received_revision_with_a_file_outside_it_is_refused() -> None:
    bad = entry("a")
    bad["files"] = {"../../.bashrc": ["file", "0" * 64, 1, False]}
    body = signed([bad]).to_json()
    with pytest.raises(WireError, match="outside the revision"):
        parse(body)
    assert parse(signed(ENTRIES).to_json()).seq == 3
    with pytest.raises(WireError, match="unknown revision format"):
        parse({**body, "schema": "trueup.revision/0"})

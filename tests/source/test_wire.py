"""The wire format: which entries a follower sees, and what it accepts as signed."""

from __future__ import annotations

from typing import Any

import pytest

from trueup.source.wire import (
    Revision,
    WireError,
    check_share,
    cut,
    delta,
    entry_digest,
    manifest_for,
    parse,
    root,
    safe_path,
    share,
    share_tag,
    tag_seq,
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
    assert ids(share(ENTRIES, ["laptops"])) == ["base", "everyone", "laptop"]
    assert ids(share(ENTRIES, ["servers"])) == ["base", "everyone", "server"]
    assert ids(share(ENTRIES, [])) == ["everyone"]


def test_the_share_tag_changes_exactly_when_what_a_follower_sees_changes() -> None:
    edited = [*ENTRIES[:3], entry("server", ["servers"], ["everyone"])]
    one, two = signed(ENTRIES), signed(edited)
    assert share_tag(cut(one, ["laptops"])) != share_tag(cut(two, ["laptops"]))  # another revision
    assert share_tag(cut(one, ["laptops"])) == share_tag(cut(one, ["laptops"]))
    assert share_tag(cut(one, ["laptops"])) != share_tag(cut(one, ["servers"]))
    assert tag_seq(share_tag(cut(one, ["laptops"]))) == 3 and tag_seq('"abc"') is None


def signed(entries: list[dict[str, Any]]) -> Revision:
    profile = {"id": "p", "name": "P", "groups": ["laptops", "servers"]}
    return Revision(manifest_for(profile, entries, 3, None, "now"), "sig", tuple(entries))


def test_a_share_must_give_the_signed_root_with_its_hidden_digests() -> None:
    laptops = cut(signed(ENTRIES), ["laptops"])
    check_share(laptops)
    forged = entry("laptop", ["laptops"], ["base"])
    forged["resource"]["content"] = "evil"
    altered = Revision(laptops.manifest, "sig", (*laptops.entries[:2], forged), laptops.hidden)
    with pytest.raises(WireError, match="not the ones the source signed"):
        check_share(altered)
    short = Revision(laptops.manifest, "sig", laptops.entries[1:], laptops.hidden)
    with pytest.raises(WireError, match="not the ones the source signed"):
        check_share(short)
    twice = Revision(
        laptops.manifest, "sig", (*laptops.entries, laptops.entries[0]), laptops.hidden
    )
    with pytest.raises(WireError, match="received twice"):
        check_share(twice)


def test_a_change_carries_only_what_changed_and_rebuilds_the_share() -> None:
    one = cut(signed(ENTRIES), ["laptops"])
    edited = [entry("everyone", deps=[]), *ENTRIES[1:]]
    edited[0]["resource"]["content"] = "new"
    two = cut(signed(edited), ["laptops"])
    change = delta(one, two)
    assert [e["resource"]["id"] for e in change["changed"]] == ["everyone"]
    assert change["removed"] == [] and change["hidden_added"] == []
    rebuilt = parse(change, one)
    assert rebuilt.entries == two.entries and rebuilt.hidden == two.hidden
    check_share(rebuilt)
    with pytest.raises(WireError, match="which this machine lacks"):
        parse(change, None)


def test_the_revision_id_is_the_profile_and_the_digest_of_its_content() -> None:
    one, two = signed(ENTRIES), signed(list(reversed(ENTRIES)))
    assert one.id == two.id and one.id.startswith("p:") and len(one.manifest["digest"]) == 64
    assert signed(ENTRIES[:3]).id != one.id
    assert one.manifest["entries"] == root(entry_digest(e) for e in ENTRIES)


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

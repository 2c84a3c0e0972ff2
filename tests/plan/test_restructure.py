"""Restructured trees: the planner's path logic over the PathKind protocol."""

from __future__ import annotations

from trueup import kinds
from trueup.canonical import sha256_hex
from trueup.model import ABSENT, Action, ActionType, Applied, Observed, Plan, Resource, Target
from trueup.plan import restructure
from trueup.plan.planner import compute_plan

TARGET = Target("profile", "p", "P", "/root")


def file(rid: str, target: str, content: str = "x") -> Resource:
    spec = {"content": content, "digest": sha256_hex(content.encode()), "executable": False}
    return Resource(rid, "file", "replace", target, spec)


def folder(rid: str, target: str, files: dict[str, list[object]]) -> Resource:
    return Resource(rid, "directory", "replace", target, {"source": "/src", "files": files})


def applied(resource: Resource) -> Applied:
    return Applied(resource, resource.spec.get("digest"), {}, "rev", "2026-12-05T00:00:00Z")


def as_written(resource: Resource) -> Observed:
    return Observed("file", resource.spec["digest"], {"executable": False})


def test_file_like_kinds_are_path_kinds_and_the_others_are_not() -> None:
    # A tool or a credential is known by its name or presence, never restructured.
    elsewhere = {"tool", "credential", "agent-task"}
    for name in kinds.names():
        assert (restructure.path_kind(name) is None) == (name in elsewhere), name
    for name in kinds.provider_names():
        assert restructure.path_kind(name) is None, name


def test_a_remote_object_never_moves() -> None:
    was = Resource("d", "cloudflare.dns_record", "replace-if-unmodified", "a", {})
    assert not restructure.moved(was, Resource("d", was.kind, was.policy, "b", {}))
    assert restructure.moved(file("a", "x"), file("a", "y"))
    assert not restructure.moved(file("a", "x"), file("a", "x", "changed"))


def test_a_renamed_resource_names_its_heir() -> None:
    old = file("old", "t/a")
    heirs = restructure.heirs([file("new", "t/a")], {"old": applied(old)})
    assert heirs == {"old": "new"}


def test_a_file_inside_a_declared_folder_is_covered_by_it() -> None:
    dropped = {"f": file("f", "t/a/b")}
    found = restructure.covered(dropped, [folder("d", "t/a", {"b": ["file", "0", False]})])
    assert found == {"f": "d"}


def test_a_declared_folder_inherits_the_files_trueup_wrote_there() -> None:
    inner = file("f", "t/a/b")
    entry = ["file", inner.spec["digest"], False]
    declared = folder("d", "t/a", {"b": entry})
    taken = restructure.adopted({"f": "d"}, [declared], {"f": applied(inner)}, {})
    assert taken["d"].detail == {"files": {"b": entry}}


def test_a_file_moved_up_to_its_folders_name_frees_that_place() -> None:
    """A file "t/a/b" becomes "t/a": the removal goes first, taking the emptied folder."""
    inner = file("inner", "t/a/b")
    plan = compute_plan(
        TARGET,
        "/p.toml",
        "decl",
        [file("outer", "t/a")],
        {"inner": as_written(inner), "outer": Observed("directory", None, {"holds": ["b"]})},
        {"inner": applied(inner)},
    )
    removal, write = plan.actions
    assert removal.type is ActionType.REMOVE_RESOURCE and removal.frees == "t/a"
    assert write.type is ActionType.WRITE_FILE and write.exclusive


def test_typed_fields_keep_the_plans_json_and_digest() -> None:
    """Saved plans are versioned: the fields travel in payload as they always did."""
    action = Action("a", "file", ActionType.REMOVE_RESOURCE, "forget", {"k": 1}, handed_over="b")
    body = action.to_json()
    assert body["payload"] == {"k": 1, "handed_over": "b"}
    assert Action.from_json(body) == action
    plan = Plan(TARGET, "/p.toml", "d", {"a": ABSENT.identity()}, (action,))
    assert Plan.from_body(plan.body()).digest == plan.digest

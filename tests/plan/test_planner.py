"""The planner is a pure function whose identity covers what it saw."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trueup.errors import UsageError
from trueup.model import ABSENT, ActionType, Applied, Observed, Resource, Target
from trueup.plan.planner import compute_plan, topological_order

TARGET = Target("profile", "p", "P", "/root")


def file(rid: str, deps: tuple[str, ...] = (), content: str = "x") -> Resource:
    from trueup.fs import sha256_bytes

    spec = {"content": content, "digest": sha256_bytes(content.encode()), "executable": False}
    return Resource(rid, "file", "replace", f"t/{rid}", spec, deps)


def plan(resources: list[Resource], observed: dict[str, Observed] | None = None) -> object:
    return compute_plan(TARGET, "/p.toml", "decl", resources, observed or {}, {})


def test_same_inputs_same_digest() -> None:
    resources = [file("a"), file("b", ("a",))]
    first = compute_plan(TARGET, "/p.toml", "d", resources, {}, {})
    second = compute_plan(TARGET, "/p.toml", "d", list(reversed(resources)), {}, {})
    assert first.digest == second.digest
    assert [a.resource_id for a in first.actions] == ["a", "b"]


def test_digest_covers_the_observed_state() -> None:
    resources = [file("a")]
    absent = compute_plan(TARGET, "/p.toml", "d", resources, {"a": ABSENT}, {})
    present = compute_plan(
        TARGET, "/p.toml", "d", resources, {"a": Observed("file", "ff", {"executable": False})}, {}
    )
    assert absent.digest != present.digest
    assert [a.type for a in absent.actions] == [a.type for a in present.actions]


def test_digest_covers_the_declaration() -> None:
    one = compute_plan(TARGET, "/p.toml", "d1", [file("a")], {}, {})
    two = compute_plan(TARGET, "/p.toml", "d2", [file("a")], {}, {})
    assert one.digest != two.digest


def test_dependencies_first_ties_by_id() -> None:
    order = topological_order([file("c"), file("b", ("c",)), file("a", ("c",)), file("z")])
    assert [r.id for r in order] == ["c", "a", "b", "z"]


def test_a_cycle_is_named() -> None:
    with pytest.raises(UsageError, match=r"dependency cycle: a -> b -> c -> a"):
        topological_order([file("a", ("b",)), file("b", ("c",)), file("c", ("a",)), file("d")])


def test_actions_carry_their_dependencies_as_edges() -> None:
    the_plan = compute_plan(TARGET, "/p.toml", "d", [file("a"), file("b", ("a",))], {}, {})
    by_id = {a.resource_id: a for a in the_plan.actions}
    assert by_id["b"].before == ("a",)
    assert by_id["a"].type is ActionType.WRITE_FILE


@given(st.lists(st.sampled_from("abcdefgh"), unique=True, min_size=1))
def test_order_respects_every_edge(ids: list[str]) -> None:
    resources = [file(rid, tuple(d for d in ids if d < rid)[:2]) for rid in ids]
    order = [r.id for r in topological_order(resources)]
    for resource in resources:
        for dep in resource.depends_on:
            assert order.index(dep) < order.index(resource.id)


def test_a_plan_holding_a_non_finite_number_has_no_identity() -> None:
    from trueup.errors import UsageError
    from trueup.model import Action

    live = compute_plan(TARGET, "/p.toml", "d", [file("a")], {}, {})
    poisoned = Action("a", "config", ActionType.WRITE_CONFIG, "set", {"set": {"x": float("nan")}})
    bad = type(live)(live.target, live.source, live.declaration, live.observed, (poisoned,))
    with pytest.raises(UsageError, match="not finite"):
        _ = bad.digest


def applied_as(resource: Resource) -> dict[str, Applied]:
    return {resource.id: Applied(resource, resource.spec["digest"], {}, "r0", "t0")}


@pytest.mark.parametrize(
    "moved",
    [
        lambda r: Resource(r.id, r.kind, r.policy, "t/elsewhere", r.spec),
        lambda r: Resource(r.id, "config", r.policy, r.target, r.spec),
    ],
    ids=["target", "kind"],
)
def test_an_id_applied_as_another_target_or_kind_needs_a_person(moved: Any) -> None:
    declared = file("a")
    result = compute_plan(TARGET, "/p.toml", "d", [declared], {}, applied_as(moved(declared)))
    (action,) = result.actions
    assert action.type is ActionType.HUMAN_ACTION
    assert action.payload["moved"]["to"] == "file t/a"
    if action.payload["moved"]["from"].endswith(" t/a"):  # the old kind is in the way
        assert "drop a from the profile" in action.summary
        assert "--overwrite" not in action.summary, "it could not help"
    else:
        assert "--overwrite a" in action.summary and "new id" in action.summary


def test_overwrite_takes_a_moved_id_over_without_its_old_record() -> None:
    declared = file("a")
    was = Resource("a", "file", "replace-if-unmodified", "t/old", declared.spec)
    seen = {"a": Observed("file", "not-what-was-applied", {"executable": False})}
    result = compute_plan(
        TARGET, "/p.toml", "d", [declared], seen, applied_as(was), frozenset({"a"})
    )
    (action,) = result.actions
    assert action.type is ActionType.WRITE_FILE
    assert "t/old (applied before) is left as it is" in action.summary
    assert action.payload["moved"] == {"from": "file t/old"}


def test_an_unmoved_id_is_planned_against_its_record_as_before() -> None:
    declared = file("a")
    seen = {"a": Observed("file", declared.spec["digest"], {"executable": False})}
    result = compute_plan(TARGET, "/p.toml", "d", [declared], seen, applied_as(declared))
    assert [a.type for a in result.actions] == [ActionType.NO_OP]


def _dropped_file_under(declared: Resource, edited: bool) -> object:
    """A file trueup wrote at t/a, dropped; ``declared`` is what the profile says now."""
    old = file("old")
    old = Resource("old", "file", "replace", "t/a", old.spec)
    digest = "edited" if edited else old.spec["digest"]
    seen = {
        "old": Observed("file", digest, {"executable": False}),
        declared.id: Observed("blocked" if declared.target != "t/a" else "file", digest),
    }
    return compute_plan(TARGET, "/p.toml", "d", [declared], seen, applied_as(old))


@pytest.mark.parametrize("target", ["t/a", "t/a/inside"], ids=["same-place", "below"])
def test_an_unmodified_dropped_file_in_a_new_targets_way_is_removed_first(target: str) -> None:
    declared = Resource("new", "file", "replace", target, file("new").spec)
    if target == "t/a":  # another kind at the same place: a file is no heir to a folder
        tree = {"x.md": ["file", "d1", False]}
        declared = Resource("new", "directory", "replace", target, {"files": tree, "digest": "t"})
    result: Any = _dropped_file_under(declared, edited=False)
    first, then = result.actions
    assert (first.resource_id, first.type) == ("old", ActionType.REMOVE_RESOURCE)
    assert then.resource_id == "new" and then.type.applies
    assert result.observed["new"] == "absent:None:", (
        "planned, and checked, as the removal leaves it"
    )


def test_an_edited_dropped_file_in_a_new_targets_way_stays_for_a_person() -> None:
    declared = Resource("new", "file", "replace", "t/a/inside", file("new").spec)
    result: Any = _dropped_file_under(declared, edited=True)
    kinds_of = {a.resource_id: a.type for a in result.actions}
    assert kinds_of["new"] is ActionType.DRIFT_CONFLICT
    # Its record stays: once the person undoes the edit, the file goes and "new" comes.
    assert kinds_of["old"] is ActionType.NO_OP

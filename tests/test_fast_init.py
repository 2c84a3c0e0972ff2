"""Frozen value classes made quickly, and exactly as their dataclass would make them."""

from __future__ import annotations

import dataclasses
from dataclasses import FrozenInstanceError, InitVar, dataclass, field
from typing import Any

import pytest

from trueup.execute.rollback import Capture
from trueup.fast_init import fast_init
from trueup.kinds.base import Decision
from trueup.model import Action, ActionType, Applied, Evidence, Observed, Resource


@fast_init
@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0
    tags: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Plain:
    x: int
    y: int = 0
    tags: dict[str, Any] = field(default_factory=dict)


def test_it_takes_the_same_arguments_and_makes_the_same_value() -> None:
    for args, kwargs in [
        ((1,), {}),
        ((1, 2), {}),
        ((), {"x": 1, "tags": {"a": 1}}),
        ((1,), {"y": 3}),
    ]:
        assert dataclasses.astuple(Point(*args, **kwargs)) == dataclasses.astuple(
            Plain(*args, **kwargs)
        )
    assert Point(1, 2) == Point(x=1, y=2)
    assert repr(Point(1)) == "Point(x=1, y=0, tags={})"
    assert dataclasses.replace(Point(1), y=5) == Point(1, 5)


def test_a_default_factory_gives_each_instance_its_own_value() -> None:
    assert Point(1).tags is not Point(1).tags


def test_missing_and_unknown_arguments_are_refused_as_before() -> None:
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, z=2)  # type: ignore[call-arg]


def test_it_stays_frozen() -> None:
    point = Point(1)
    with pytest.raises(FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del point.y  # type: ignore[misc]


class NoSlots:
    x: int


class Checked:
    x: int

    def __post_init__(self) -> None:
        pass


class Hidden:
    x: int
    y: int = field(init=False, default=0)


class Late:
    x: InitVar[int]


class Named:
    x: int


@pytest.mark.parametrize(
    ("cls", "options", "why"),
    [
        (NoSlots, {"frozen": True}, "frozen=True, slots=True"),
        (Checked, {"frozen": True, "slots": True}, "__post_init__"),
        (Hidden, {"frozen": True, "slots": True}, "plain fields"),
        (Late, {"frozen": True, "slots": True}, "plain fields"),
        (Named, {"frozen": True, "slots": True, "kw_only": True}, "plain fields"),
    ],
    ids=["no slots", "post_init", "init=False", "InitVar", "kw_only"],
)
def test_what_it_cannot_make_as_the_dataclass_would_is_refused(
    cls: type, options: dict[str, bool], why: str
) -> None:
    shaped = type(cls.__name__, (), dict(cls.__dict__))
    with pytest.raises(TypeError, match=why):
        fast_init(dataclass(**options)(shaped))  # type: ignore[call-overload]


def test_trueups_bulk_values_are_made_by_it() -> None:
    """The values a 10,000-file apply makes by the ten thousand (see the module)."""
    for cls in (Resource, Observed, Applied, Action, Evidence, Decision, Capture):
        assert cls.__init__.__code__.co_filename == "<string>"
        assert "_set_" in " ".join(cls.__init__.__code__.co_names), cls
    action = Action("a", "file", ActionType.WRITE_FILE, "create file")
    assert action.payload == {} and action.before == () and not action.destroys
    assert Observed("absent") == Observed("absent", None, {})

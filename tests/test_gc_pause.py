"""Bulk phases pause the cyclic collector, and always give it back."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from trueup.gc_pause import thaw, without_cyclic_gc


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@without_cyclic_gc
def phase(inner: bool = False) -> tuple[bool, bool]:
    """Whether the collector ran in a nested phase, and in this one after it."""
    nested = phase_inner() if inner else False
    return nested, gc.isenabled()


@without_cyclic_gc
def phase_inner() -> bool:
    return gc.isenabled()


@without_cyclic_gc
def failing_phase() -> None:
    raise RuntimeError("boom")


def test_the_collector_is_paused_during_a_phase_and_back_after() -> None:
    assert phase() == (False, False)
    assert gc.isenabled()


def test_a_nested_phase_does_not_resume_it_early() -> None:
    assert phase(inner=True) == (False, False)
    assert gc.isenabled()


def test_the_collector_is_back_after_a_phase_fails() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        failing_phase()
    assert gc.isenabled()


def test_a_caller_that_turned_it_off_keeps_it_off() -> None:
    gc.disable()
    assert phase() == (False, False)
    assert not gc.isenabled()


@without_cyclic_gc
def keeping(count: int) -> list[list[int]]:
    return [[i] for i in range(count)]


def test_what_a_phase_keeps_is_frozen_so_the_collector_does_not_walk_it_again() -> None:
    try:
        kept = keeping(20_000)
        walked = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in walked for o in kept), "frozen: in no generation it walks"
        assert gc.get_freeze_count() >= len(kept)
        thaw()
        walked = {id(o) for o in gc.get_objects()}
        assert all(id(o) in walked for o in kept), "thawed: collectable again"
    finally:
        thaw()


def test_a_phase_that_fails_freezes_what_was_kept_too() -> None:
    try:
        with pytest.raises(RuntimeError, match="boom"):
            failing_phase()
        assert gc.get_freeze_count() > 0
    finally:
        thaw()

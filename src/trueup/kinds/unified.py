"""A unified diff that stays fast on a large file with a few edits.

``difflib`` searches the whole of both sequences for their longest match,
which takes seconds on the 200,000 lines of a 5 MB JSON file where a plan set
two keys. People's config files differ from their edited versions in a few
places, so the lines both share at the start and end are matched directly, and
what is left is split at a line found once in each side (patience diff's
anchor) until the pieces are small enough for ``difflib``. Every match found
is a true one, so the diff is always correct; where a change could align
more than one way it may align another, equally valid way than ``difflib``
alone would.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterator, Sequence

Block = tuple[int, int, int]

#: Pieces with at most this many pairs of lines (left times right) go to difflib.
_SMALL = 250_000


def unified_diff(
    before: Sequence[str], after: Sequence[str], fromfile: str, tofile: str, n: int = 3
) -> Iterator[str]:
    """As ``difflib.unified_diff`` (lines keep their ends; headers as diff -u), which
    it is for files small enough."""
    if len(before) * len(after) <= _SMALL:
        yield from difflib.unified_diff(before, after, fromfile, tofile, n=n)
        return
    matcher = _Anchored(before, after)
    started = False
    for group in matcher.get_grouped_opcodes(n):
        if not started:
            started = True
            yield f"--- {fromfile}\n"
            yield f"+++ {tofile}\n"
        first, last = group[0], group[-1]
        yield f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in before[i1:i2])
                continue
            if tag in ("replace", "delete"):
                yield from ("-" + line for line in before[i1:i2])
            if tag in ("replace", "insert"):
                yield from ("+" + line for line in after[j1:j2])


def _range(start: int, stop: int) -> str:
    """A hunk's line range, as diff -u writes it (``difflib``'s own rule)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


class _Anchored(difflib.SequenceMatcher[str]):
    """A matcher whose matching blocks come from ``_match`` (see the module docstring)."""

    # difflib's own attributes, which its stubs leave out.
    a: Sequence[str]
    b: Sequence[str]
    matching_blocks: list[difflib.Match] | None
    opcodes: list[tuple[str, int, int, int, int]] | None

    def __init__(self, before: Sequence[str], after: Sequence[str]) -> None:
        super().__init__(None, before, after, autojunk=False)

    def set_seq2(self, b: Sequence[str]) -> None:
        # difflib indexes the second sequence here; the anchored search never needs it.
        self.b = b
        self.matching_blocks = self.opcodes = None

    def get_matching_blocks(self) -> list[difflib.Match]:
        if self.matching_blocks is None:
            a, b = self.a, self.b
            blocks: list[Block] = []
            _match(a, 0, len(a), b, 0, len(b), blocks)
            merged: list[Block] = []
            for i, j, k in blocks:
                if (
                    merged
                    and merged[-1][0] + merged[-1][2] == i
                    and merged[-1][1] + merged[-1][2] == j
                ):
                    pi, pj, pk = merged.pop()
                    merged.append((pi, pj, pk + k))
                elif k:
                    merged.append((i, j, k))
            merged.append((len(a), len(b), 0))
            self.matching_blocks = [difflib.Match(*block) for block in merged]
        return self.matching_blocks


def _match(
    a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int, out: list[Block]
) -> None:
    """Append to ``out``, in order, blocks of lines equal in ``a[alo:ahi]`` and ``b[blo:bhi]``."""
    head = 0
    while alo + head < ahi and blo + head < bhi and a[alo + head] == b[blo + head]:
        head += 1
    if head:
        out.append((alo, blo, head))
        alo, blo = alo + head, blo + head
    tail = 0
    while alo < ahi - tail and blo < bhi - tail and a[ahi - 1 - tail] == b[bhi - 1 - tail]:
        tail += 1
    ahi, bhi = ahi - tail, bhi - tail
    if alo < ahi and blo < bhi:
        anchor = None if (ahi - alo) * (bhi - blo) <= _SMALL else _anchor(a, alo, ahi, b, blo, bhi)
        if anchor is None:
            piece = difflib.SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            out += [(alo + i, blo + j, k) for i, j, k in piece.get_matching_blocks()]
        else:
            i, j = anchor
            _match(a, alo, i, b, blo, j, out)
            out.append((i, j, 1))
            _match(a, i + 1, ahi, b, j + 1, bhi, out)
    if tail:
        out.append((ahi, bhi, tail))


def _anchor(
    a: Sequence[str], alo: int, ahi: int, b: Sequence[str], blo: int, bhi: int
) -> tuple[int, int] | None:
    """A line found exactly once in each side, near the middle of ``a``'s (within a
    quarter of it either way, so each split leaves pieces at most 3/4 as long and the
    recursion stays shallow)."""
    in_a = Counter(a[alo:ahi])
    in_b = Counter(b[blo:bhi])
    middle = (alo + ahi) // 2
    for step in range((ahi - alo) // 4 + 1):
        for i in (middle + step, middle - step - 1):
            if alo <= i < ahi and in_a[a[i]] == 1 and in_b[a[i]] == 1:
                return i, b.index(a[i], blo, bhi)
    return None

"""The commit partner: a second process that does what it is asked, on the names it
is given, answers in order, and does nothing more once stopped."""

from __future__ import annotations

import errno
import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trueup.fsops import witness
from trueup.partner import APPEARED, CHANGED, Content, Partner, PartnerGone

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="a partner is only started with two cores"
)


@pytest.fixture
def partner() -> Iterator[Partner]:
    """A partner that is up; stopped after the test, whatever it did."""
    started = Partner.start()
    assert started is not None
    deadline = time.monotonic() + 10
    while not started.ready():
        assert time.monotonic() < deadline, "the partner never said it was up"
        time.sleep(0.01)
    yield started
    started.abort()


def test_it_creates_renames_and_reads_back_what_it_is_asked(
    tmp_path: Path, partner: Partner
) -> None:
    temps = [bytes(tmp_path / f".t{i}") for i in range(3)]
    partner.submit("create", [(t, f"data {i}".encode(), 0o640, None) for i, t in enumerate(temps)])
    finals = [bytes(tmp_path / f"f{i}") for i in range(3)]
    partner.submit("rename", [(t, f, True) for t, f in zip(temps, finals, strict=True)])
    partner.submit("digest", (finals, 1024))
    partner.submit("syncfs", [bytes(tmp_path)])
    answers = partner.answers()
    assert [op for op, _ in answers] == ["create", "rename", "digest", "syncfs"]
    assert answers[0][1] is None and answers[1][1] is None and answers[3][1] is None
    for i, final in enumerate(finals):
        assert Path(os.fsdecode(final)).read_bytes() == f"data {i}".encode()
        assert os.stat(final).st_mode & 0o777 == 0o640
    assert [tuple(found) for found in answers[2][1]] == [
        (f, witness(os.lstat(f)), hashlib.sha256(Path(os.fsdecode(f)).read_bytes()).hexdigest())
        for f in finals
    ]
    assert not partner.busy


def test_answers_can_be_taken_up_to_a_kind_of_request(tmp_path: Path, partner: Partner) -> None:
    (tmp_path / "f").write_text("x")
    partner.submit("digest", ([bytes(tmp_path / "f")], 1024))
    partner.submit("syncfs", [bytes(tmp_path)])
    assert [op for op, _ in partner.answers(until="digest")] == ["digest"]
    assert [op for op, _ in partner.answers()] == ["syncfs"]


def test_it_reports_the_first_failure_of_a_request_and_goes_on_with_the_next(
    tmp_path: Path, partner: Partner
) -> None:
    (tmp_path / "taken").write_text("somebody's")
    (tmp_path / ".t").write_text("staged")
    (tmp_path / ".u").write_text("staged")
    partner.submit("rename", [(bytes(tmp_path / ".t"), bytes(tmp_path / "taken"), True)])
    partner.submit("create", [(bytes(tmp_path / "no" / "such" / ".t"), b"x", 0o644, None)])
    partner.submit("create", [(bytes(tmp_path / ".ok"), b"x", 0o644, None)])
    partner.submit("rename", [(bytes(tmp_path / ".u"), bytes(tmp_path / "ok"), False)])
    (rename, refused), (_, missing), (_, fine), (_, replaced) = partner.answers()
    assert rename == "rename" and refused[0] == errno.EEXIST
    assert refused[2:] == (bytes(tmp_path / "taken"), APPEARED), "a target that appeared"
    assert (tmp_path / "taken").read_text() == "somebody's"
    assert missing is not None and missing[0] == errno.ENOENT
    assert fine is None and (tmp_path / ".ok").read_bytes() == b"x"
    assert replaced is None and (tmp_path / "ok").read_text() == "staged"


def test_it_copies_a_source_only_while_it_holds_the_planned_bytes(
    tmp_path: Path, partner: Partner
) -> None:
    """The bytes of a big apply's sources never cross the pipe: the partner reads each
    itself, and refuses one edited (or grown past the limit) since it was planned."""
    source = tmp_path / "source"
    source.write_bytes(b"planned\n")
    planned = hashlib.sha256(b"planned\n").hexdigest()
    copy = (bytes(source), planned, 1024, None)

    def create(temp: str, content: Content) -> Any:
        partner.submit("create", [(bytes(tmp_path / temp), content, 0o600, None)])
        [(_, answer)] = partner.answers()
        return answer

    assert create(".t1", copy) is None
    assert (tmp_path / ".t1").read_bytes() == b"planned\n"
    assert (tmp_path / ".t1").stat().st_mode & 0o777 == 0o600
    source.write_bytes(b"edited since\n")
    assert create(".t2", copy) == (0, "changed after the plan was computed", bytes(source), CHANGED)
    source.write_bytes(b"planned\n")
    oversized = create(".t3", (bytes(source), planned, 4, None))
    assert oversized is not None and oversized[2:] == (bytes(source), CHANGED)
    assert not (tmp_path / ".t2").exists() and not (tmp_path / ".t3").exists()


def test_it_trusts_a_source_still_at_the_stat_its_digest_was_recorded_under(
    tmp_path: Path, partner: Partner
) -> None:
    """The stat cache's rule, which the plan itself trusted: a source whose stat is the
    one its digest was recorded under is not hashed again; any other stat is."""
    source = tmp_path / "source"
    source.write_bytes(b"planned\n")
    st = source.stat()
    key = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
    unhashed = "0" * 64  # what no bytes hash to: only the stat can vouch for them

    def create(temp: str, vouched: tuple[int, int, int, int]) -> Any:
        content = (bytes(source), unhashed, 1024, vouched)
        partner.submit("create", [(bytes(tmp_path / temp), content, 0o600, None)])
        [(_, answer)] = partner.answers()
        return answer

    assert create(".t1", key) is None
    assert (tmp_path / ".t1").read_bytes() == b"planned\n"
    moved = (key[0], key[1] + 1, key[2], key[3])
    assert create(".t2", moved) == (
        0,
        "changed after the plan was computed",
        bytes(source),
        CHANGED,
    )
    assert not (tmp_path / ".t2").exists()


def test_it_never_replaces_a_file_it_was_asked_to_create(tmp_path: Path, partner: Partner) -> None:
    (tmp_path / ".t").write_text("planted")
    partner.submit("create", [(bytes(tmp_path / ".t"), b"mine", 0o644, None)])
    [(_, failure)] = partner.answers()
    assert failure is not None and failure[0] == errno.EEXIST
    assert failure[3] == "", "a temp name taken is no target appearing"
    assert (tmp_path / ".t").read_text() == "planted"


def test_once_stopped_it_is_gone_and_says_so(tmp_path: Path, partner: Partner) -> None:
    partner.abort()
    assert not partner.up and not partner.busy
    with pytest.raises(PartnerGone):
        partner.submit("create", [(bytes(tmp_path / ".t"), b"x", 0o644, None)])
    assert not (tmp_path / ".t").exists()


def test_a_partner_that_dies_holding_a_request_is_reported_not_waited_on(
    tmp_path: Path, partner: Partner
) -> None:
    big = [(bytes(tmp_path / f".t{i}"), b"x" * 4096, 0o644, None) for i in range(2000)]
    partner.submit("create", big)
    partner._process.kill()  # type: ignore[union-attr]  # as the OOM killer would
    with pytest.raises(PartnerGone):
        partner.answers()
    assert not partner.up

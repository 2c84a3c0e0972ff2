"""Sources read ahead by a second process: used only where the parent's own read
would give the same answer, never trusted past an edit, and never left running."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from trueup.fs import AHEAD_SHARE, ReadOnlyFS, StatCache, sha256_bytes
from trueup.readahead import MIN_FILES, ReadAhead, start_early, take_early

pytestmark = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="a read-ahead is only started with two cores"
)


# Enough that the share read ahead (all but the first 1/AHEAD_SHARE) is worth a process.
COUNT = 2 * MIN_FILES


def sources(folder: Path, count: int = COUNT, age_s: float = 10) -> list[str]:
    """``count`` files old enough for their stat to be trusted."""
    folder.mkdir(parents=True, exist_ok=True)
    past = time.time_ns() - int(age_s * 1e9)
    paths = []
    for i in range(count):
        path = folder / f"s{i:04d}.txt"
        path.write_bytes(f"source {i}\n".encode() * (i % 7 + 1))
        os.utime(path, ns=(past, past))
        paths.append(str(path))
    return paths


def reading(paths: list[str], fs: ReadOnlyFS | None = None, wait: bool = True) -> ReadOnlyFS:
    """A read-ahead of ``paths``, by default waited for until it has read them all."""
    fs = fs or ReadOnlyFS(StatCache())
    fs.read_ahead("/nowhere/profile.toml", lambda: paths)  # a profile none was started for
    assert fs.cache.ahead is not None
    assert not wait or fs.cache.ahead.ready(timeout=30)
    return fs


def test_the_first_share_is_left_to_this_process_which_never_waits_for_it(
    tmp_path: Path,
) -> None:
    paths = sources(tmp_path / "src")
    fs = reading(paths, wait=False)
    first = paths[: len(paths) // AHEAD_SHARE]
    for path in first:  # read here, while the second process reads the rest
        assert fs.digest_file(path) == sha256_bytes(Path(path).read_bytes())
    assert fs.cache.ahead is not None and not fs.cache.ahead.paths & set(first)
    fs.stop_read_ahead()


def test_one_lookup_learns_every_digest_the_second_process_read(tmp_path: Path) -> None:
    paths = sources(tmp_path / "src")
    fs = reading(paths)
    assert fs.digest_file(paths[-1]) == sha256_bytes(Path(paths[-1]).read_bytes())
    assert fs.cache.ahead is None  # spent
    for path in paths[len(paths) // AHEAD_SHARE :]:
        assert fs.cache.entries[path][1] == sha256_bytes(Path(path).read_bytes())
    # Only digests cross the pipe: whoever writes a source reads it (WritableFS.copy).
    assert not fs.cache.contents


def test_a_source_edited_after_it_was_read_ahead_is_read_again(tmp_path: Path) -> None:
    paths = sources(tmp_path / "src")
    fs = reading(paths)
    fs.cache.ahead.drain(fs.cache)  # type: ignore[union-attr]
    edited = Path(paths[-5])
    edited.write_bytes(b"edited meanwhile\n")
    assert fs.digest_file(edited) == sha256_bytes(b"edited meanwhile\n")
    assert fs.read_expected(edited, sha256_bytes(b"edited meanwhile\n")) == b"edited meanwhile\n"


def test_files_too_new_to_trust_by_their_stat_are_not_learned(tmp_path: Path) -> None:
    paths = sources(tmp_path / "src", age_s=0)
    fs = reading(paths)
    assert fs.digest_file(paths[-1]) == sha256_bytes(Path(paths[-1]).read_bytes())
    assert fs.cache.entries.keys() <= {paths[-1]}


def test_links_folders_missing_and_oversized_files_are_left_to_the_parent(
    tmp_path: Path,
) -> None:
    paths = sources(tmp_path / "src")
    big = Path(paths[-2])
    big.write_bytes(b"x" * 100)
    link = tmp_path / "link"
    link.symlink_to(paths[-3])
    odd = [str(link), str(tmp_path / "src"), str(tmp_path / "gone"), "a\0b"]
    fs = reading([*paths, *odd], ReadOnlyFS(StatCache(), max_file_bytes=64))
    fs.digest_file(paths[-1])
    assert str(link) not in fs.cache.entries
    assert str(big) not in fs.cache.entries
    assert str(tmp_path / "src") not in fs.cache.entries
    assert paths[-4] in fs.cache.entries


def test_a_lookup_outside_what_was_asked_does_not_wait_for_it(tmp_path: Path) -> None:
    paths = sources(tmp_path / "src")
    other = tmp_path / "other.txt"
    other.write_bytes(b"other")
    fs = reading(paths)
    fs.digest_file(other)
    assert fs.cache.ahead is not None
    fs.stop_read_ahead()


def test_a_dead_second_process_only_costs_the_parent_its_own_reads(tmp_path: Path) -> None:
    paths = sources(tmp_path / "src")
    fs = reading(paths, wait=False)
    ahead = fs.cache.ahead
    assert ahead is not None
    ahead._process.kill()  # type: ignore[union-attr]
    ahead._process.wait()  # type: ignore[union-attr]
    assert fs.digest_file(paths[-7]) == sha256_bytes(Path(paths[-7]).read_bytes())
    assert fs.cache.ahead is None


def test_stopping_it_reaps_the_second_process(tmp_path: Path) -> None:
    fs = reading(sources(tmp_path / "src"), wait=False)
    process = fs.cache.ahead._process  # type: ignore[union-attr]
    assert process is not None
    fs.stop_read_ahead()
    assert process.returncode is not None
    fs.stop_read_ahead()  # twice is harmless


def test_few_sources_are_read_by_the_parent_alone(tmp_path: Path) -> None:
    assert ReadAhead.start(sources(tmp_path / "src", MIN_FILES - 1), 1 << 20) is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="only Linux grows a pipe")
def test_its_answer_flows_through_a_pipe_grown_to_hold_it(tmp_path: Path) -> None:
    import fcntl

    from trueup.fsops import PIPE_BYTES

    fs = reading(sources(tmp_path / "src"), wait=False)
    process = fs.cache.ahead._process  # type: ignore[union-attr]
    assert process is not None and process.stdout is not None
    # Not 64 KiB: a digest a file of 10,000 (1.5 MB) would cross in dozens of round trips.
    assert fcntl.fcntl(process.stdout.fileno(), fcntl.F_GETPIPE_SZ) == PIPE_BYTES
    fs.stop_read_ahead()


def profile_of(folder: Path, paths: list[str], suffix: str) -> Path:
    """A profile in ``folder`` declaring ``paths`` as sources, relative to it."""
    resources = [
        {"id": f"r{i}", "kind": "file", "target": f"t/{i}", "source": os.path.relpath(p, folder)}
        for i, p in enumerate(paths)
    ]
    profile = folder / f"profile{suffix}"
    if suffix == ".json":
        profile.write_text(json.dumps({"profile": {"id": "p", "name": "P"}, "resource": resources}))
    else:
        rows = "".join(
            f'[[resource]]\nid = "{r["id"]}"\nkind = "file"\ntarget = "{r["target"]}"\n'
            f'source = "{r["source"]}"\n'
            for r in resources
        )
        profile.write_text(f'[profile]\nid = "p"\nname = "P"\n{rows}')
    return profile


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_read_ahead_started_early_parses_the_profile_itself_and_reads_every_source(
    tmp_path: Path, suffix: str
) -> None:
    paths = sources(tmp_path / "src")
    profile = str(profile_of(tmp_path, paths, suffix))
    start_early(profile)
    fs = ReadOnlyFS(StatCache())

    def unasked() -> list[str]:
        raise AssertionError("taken over: the sources need not be listed again")

    fs.read_ahead(profile, unasked)
    ahead = fs.cache.ahead
    assert ahead is not None and ahead.wanted(paths[0]) and ahead.ready(timeout=30)
    assert fs.digest_file(paths[0]) == sha256_bytes(Path(paths[0]).read_bytes())
    for path in paths:  # the first third too: it had a head start
        assert fs.cache.entries[path][1] == sha256_bytes(Path(path).read_bytes())
    assert take_early(profile) is None, "taken over once"


def test_an_early_read_ahead_of_a_profile_it_cannot_parse_reads_nothing(tmp_path: Path) -> None:
    paths = sources(tmp_path / "src")
    broken = tmp_path / "broken.json"
    broken.write_text(profile_of(tmp_path, paths, ".json").read_text()[:-10])
    yaml = tmp_path / "profile.yaml"
    yaml.write_text(profile_of(tmp_path, paths, ".json").read_text())  # JSON is YAML too
    for profile in (str(broken), str(yaml)):
        start_early(profile)
        ahead = take_early(profile)
        assert ahead is not None and ahead.ready(timeout=30)
        cache = StatCache()
        ahead.drain(cache)
        assert not cache.entries


def test_an_early_read_ahead_nobody_takes_over_is_stopped_with_the_first_read_ahead(
    tmp_path: Path,
) -> None:
    paths = sources(tmp_path / "src")
    profile = str(profile_of(tmp_path, paths, ".json"))
    fs = ReadOnlyFS(StatCache())
    for load in (
        lambda: fs.read_ahead(str(tmp_path / "another.json"), lambda: paths),  # another profile
        fs.stop_read_ahead,  # a profile read from its cache: nothing is read ahead for it
    ):
        early = start_early(profile)
        assert early is not None and early._process is not None
        process = early._process
        load()
        assert process.returncode is not None, "stopped and reaped"
        assert take_early(profile) is None
    fs.stop_read_ahead()


def test_an_early_read_ahead_reads_no_source_outside_where_the_profile_may_read(
    tmp_path: Path,
) -> None:
    """Refused at load, so never read ahead either: not through ``..``, nor through a
    folder inside the profile's that is a link to one outside."""
    outside = sources(tmp_path / "outside")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "linked").symlink_to(tmp_path / "outside")
    linked = [str(tmp_path / "p" / "linked" / Path(path).name) for path in outside]
    for declared in (outside, linked):
        profile = str(profile_of(tmp_path / "p", declared, ".json"))
        start_early(profile)
        ahead = take_early(profile)
        assert ahead is not None and ahead.ready(timeout=30)
        cache = StatCache()
        ahead.drain(cache)
        assert not cache.entries


def test_a_read_ahead_reads_sources_in_a_folder_the_profile_allows(tmp_path: Path) -> None:
    paths = sources(tmp_path / "outside")
    (tmp_path / "p").mkdir()
    profile = profile_of(tmp_path / "p", paths, ".json")
    document = json.loads(profile.read_text())
    document["profile"]["allow_sources_outside"] = ["../outside"]
    profile.write_text(json.dumps(document))
    start_early(str(profile))
    ahead = take_early(str(profile))
    assert ahead is not None and ahead.ready(timeout=30)
    cache = StatCache()
    ahead.drain(cache)
    assert set(cache.entries) == set(paths)

"""What a follower keeps: membership and credential, verified blobs, laid-out revisions."""

from __future__ import annotations

import hashlib
import json
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import keyring
import pytest
from keyring.backend import KeyringBackend
from keyring.backends import fail

from trueup.errors import UsageError
from trueup.source import SourceUnreachable
from trueup.source.follower import FollowerHome, Membership
from trueup.source.wire import Revision, manifest_for

MEMBER = Membership("laptop", "f1", "https://127.0.0.1:1", "sha256:t", "sha256:s", [], "", "now")


class MemoryKeyring(KeyringBackend):
    """A keyring backend that exists: what a desktop session has."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.values.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.values[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.values.pop((service, username), None)


# Defining a backend registers it with keyring, which would then choose it for every
# later test in this process that expects no backend (org secrets): unregistered.
KeyringBackend._classes.discard(MemoryKeyring)


@contextmanager
def backend(ring: KeyringBackend) -> Iterator[None]:
    previous = keyring.get_keyring()
    keyring.set_keyring(ring)
    try:
        yield
    finally:
        keyring.set_keyring(previous)


def test_with_a_keyring_backend_the_credential_goes_there(tmp_path: Path) -> None:
    ring = MemoryKeyring()
    with backend(ring):
        home = FollowerHome(tmp_path)
        kept = home.keep(MEMBER, "secret-credential")
        assert kept.credential_in == "keyring"
        assert ring.values == {("trueup-follower", "f1"): "secret-credential"}
        assert not (tmp_path / "follow/credential").exists()
        assert home.credential(home.membership()) == "secret-credential"


def test_without_a_keyring_backend_the_credential_is_a_0600_file(tmp_path: Path) -> None:
    with backend(fail.Keyring()):  # a headless server's keyring: none
        home = FollowerHome(tmp_path)
        kept = home.keep(MEMBER, "secret-credential")
    assert kept.credential_in == "file"
    credential = tmp_path / "follow/credential"
    assert stat.S_IMODE(credential.stat().st_mode) == 0o600
    assert home.credential(home.membership()) == "secret-credential"
    assert "secret-credential" not in (tmp_path / "follow/follower.json").read_text()
    credential.unlink()
    with pytest.raises(UsageError, match="credential of follower 'laptop' is gone"):
        home.credential(kept)


def test_a_machine_that_follows_nothing_is_told_how(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="follows no source") as caught:
        FollowerHome(tmp_path).membership()
    assert caught.value.hint is not None and "trueup follow INVITE" in caught.value.hint


def revision_with(data: bytes, executable: bool = False) -> Revision:
    digest = hashlib.sha256(data).hexdigest()
    entry = {
        "resource": {"id": "a", "kind": "file", "target": "a", "source": "files/a"},
        "files": {"files/a": ["file", digest, len(data), executable]},
    }
    manifest = manifest_for({"id": "p", "name": "P", "groups": []}, [entry], 1, None, "now")
    return Revision(manifest, "sig", (entry,))


def test_a_blob_enters_the_cache_only_whole_and_as_named(tmp_path: Path) -> None:
    home = FollowerHome(tmp_path)
    good = hashlib.sha256(b"data").hexdigest()
    home.partial(good).write_bytes(b"da")  # cut short
    with pytest.raises(SourceUnreachable, match="other content"):
        home.admit(good)
    assert not (home.blobs / good).exists() and not home.partial(good).exists()
    home.partial(good).write_bytes(b"data")
    home.admit(good)
    assert (home.blobs / good).read_bytes() == b"data"


def test_a_revision_is_laid_out_as_a_profile_from_verified_blobs(tmp_path: Path) -> None:
    home = FollowerHome(tmp_path)
    revision = revision_with(b"hello\n", executable=True)
    assert home.missing(revision) == {hashlib.sha256(b"hello\n").hexdigest(): 6}
    digest = next(iter(home.missing(revision)))
    home.partial(digest).write_bytes(b"hello\n")
    home.admit(digest)
    profile = home.lay_out(revision)
    document = json.loads(profile.read_text())
    assert document["resource"] == [revision.entries[0]["resource"]]
    assert (profile.parent / "files/a").read_bytes() == b"hello\n"
    assert (profile.parent / "files/a").stat().st_mode & 0o100
    home.hold(revision, '"1-x"')
    assert home.held_tag() == '"1-x"'
    held = home.held()
    assert held is not None and held[0].entries == revision.entries


def test_a_cached_blob_altered_on_disk_is_discarded_not_laid_out(tmp_path: Path) -> None:
    home = FollowerHome(tmp_path)
    revision = revision_with(b"hello\n")
    digest = next(iter(home.missing(revision)))
    home.blobs.mkdir(parents=True)
    (home.blobs / digest).write_bytes(b"evil\n")
    with pytest.raises(SourceUnreachable, match="altered on this disk"):
        home.lay_out(revision)
    assert not (home.blobs / digest).exists()

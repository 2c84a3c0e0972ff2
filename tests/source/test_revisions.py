"""Publishing: a profile becomes a signed, immutable revision with its sources as blobs."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from trueup.engine import Engine
from trueup.errors import UsageError
from trueup.source.admin import SourceAdmin
from trueup.source.keys import verify_signature
from trueup.source.revisions import draft
from trueup.source.store import SourceStore
from trueup.state.db import Database

PROFILE = """
[profile]
id = "team"
name = "Team"
groups = ["laptops"]

[[resource]]
id = "notes"
kind = "file"
target = "notes.md"
source = "./files/notes.md"
groups = ["laptops"]

[[resource]]
id = "skill"
kind = "skill"
target = "skills/review"
source = "skills/review"
"""


def make(tmp_path: Path, text: str = PROFILE) -> Path:
    folder = tmp_path / "profile"
    (folder / "files").mkdir(parents=True)
    (folder / "skills/review/scripts").mkdir(parents=True)
    (folder / "files/notes.md").write_text("notes\n")
    (folder / "skills/review/SKILL.md").write_text("review\n")
    script = folder / "skills/review/scripts/run.sh"
    script.write_text("echo ok\n")
    script.chmod(0o755)
    (folder / "team.toml").write_text(text)
    return folder / "team.toml"


def test_sources_become_blobs_at_paths_inside_the_revision(tmp_path: Path) -> None:
    made = draft(make(tmp_path), 1 << 20)
    notes, skill = made.entries
    assert notes["resource"]["source"] == "files/notes.md"
    digest = hashlib.sha256(b"notes\n").hexdigest()
    assert notes["files"] == {"files/notes.md": ["file", digest, 6, False]}
    assert skill["files"]["skills/review/scripts/run.sh"][3] is True
    assert made.blobs[digest] == b"notes\n"
    assert made.profile == {"id": "team", "name": "Team", "groups": ["laptops"]}


def test_sources_outside_the_profiles_folder_are_refused(tmp_path: Path) -> None:
    text = PROFILE.replace(
        'groups = ["laptops"]\n', 'groups = ["laptops"]\nallow_sources_outside = [".."]\n', 1
    )
    with pytest.raises(UsageError, match="allow_sources_outside"):
        draft(make(tmp_path, text), 1 << 20)


def test_a_secret_value_spelt_out_is_never_published(tmp_path: Path) -> None:
    text = (
        PROFILE
        + '\n[[resource]]\nid = "key"\nkind = "file"\ntarget = "k"\ncontent = "s3cret"\nsecret = true\n'
    )
    with pytest.raises(UsageError, match="spells out a secret value"):
        draft(make(tmp_path, text), 1 << 20)


def test_publish_signs_numbers_and_dedupes(engine: Engine, tmp_path: Path) -> None:
    admin = SourceAdmin(engine)
    admin.init(["127.0.0.1"])
    path = make(tmp_path)
    first = admin.publish(path, "first")
    assert (first.revision.seq, first.new_blobs, first.unchanged) == (1, 3, False)
    key = admin.keys.public_key()
    assert verify_signature(key, first.revision.signature, first.revision.signed_bytes())
    assert admin.publish(path, None).unchanged
    (path.parent / "files/notes.md").write_text("edited\n")
    second = admin.publish(path, "edit")
    assert (second.revision.seq, second.new_blobs) == (2, 1)
    stored = SourceStore(engine.store).revision(2)
    assert stored is not None and stored.manifest == second.revision.manifest
    events = [row[0] for row in engine.store.db.execute("SELECT event FROM audit ORDER BY seq")]
    assert events == ["source.initialised", "source.published", "source.published"]


def test_a_source_publishes_one_profile(engine: Engine, tmp_path: Path) -> None:
    admin = SourceAdmin(engine)
    admin.init(["127.0.0.1"])
    admin.publish(make(tmp_path), None)
    other = make(tmp_path / "other", PROFILE.replace('id = "team"', 'id = "other"'))
    with pytest.raises(UsageError, match="publishes profile 'team', not 'other'"):
        admin.publish(other, None)


def test_publishing_before_init_says_how(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no source yet") as caught:
        SourceAdmin(engine).publish(make(tmp_path), None)
    assert caught.value.hint == "run: trueup source init"


def test_published_revisions_and_blobs_cannot_be_changed(store_url: str, tmp_path: Path) -> None:
    from trueup.settings import Settings

    engine = Engine(Settings(data=tmp_path / "data", state_url=store_url, actor="t"))
    admin = SourceAdmin(engine)
    admin.init(["127.0.0.1"])
    admin.publish(make(tmp_path), None)
    db = Database(store_url)
    try:
        for statement in (
            "UPDATE source_revisions SET signature = 'x'",
            "DELETE FROM source_revisions",
            "UPDATE source_blobs SET size = 0",
            "DELETE FROM source_blobs",
        ):
            with pytest.raises(Exception, match="immutable"):
                db.execute(statement)
    finally:
        db.close()
        engine.close()

"""Where trueup keeps its state and what limits it works under."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from pathlib import Path

from trueup.errors import UsageError, os_problem
from trueup.fsops import DEFAULT_MAX_FILE_BYTES
from trueup.private import make_folders

# Actions per durability barrier (one file-system sync, two journal commits).
# Barriers cost a near-constant time each, so a 10,000-file apply pays for 5
# instead of 40; a signal restores at most one batch of in-flight actions.
DEFAULT_BATCH_SIZE = 2048


def data_dir() -> Path:
    """``TRUEUP_DATA``, else the platform's user data directory."""
    explicit = os.environ.get("TRUEUP_DATA")
    if explicit:
        return Path(explicit).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("trueup", appauthor=False))


@dataclass(frozen=True)
class Settings:
    data: Path
    state_url: str
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    actor: str = ""
    # Actions per durability barrier (one file-system sync, two journal commits).
    batch_size: int = DEFAULT_BATCH_SIZE

    @property
    def embedded_state(self) -> bool:
        """Whether the state store is the default SQLite file in the data folder."""
        return self.state_url == _embedded_url(self.data)

    def open_data(self) -> None:
        """Create the data folder when the embedded store lives there, as any command may.

        An explicit ``--state`` path's folder must exist (a typo is an error),
        but the default one is trueup's own to make. A ``TRUEUP_DATA`` that
        cannot be a folder (a file is there, no permission) is named as such.
        """
        if not self.embedded_state:
            return
        try:
            make_folders(self.data)  # 0700: only its owner reads the state and rollback copies
        except OSError as exc:
            problem = (
                "is not a folder" if self.data.exists() else f"cannot be created: {os_problem(exc)}"
            )
            raise UsageError(
                f"the data folder {self.data} {problem}, so the state store in it cannot be used",
                hint="point TRUEUP_DATA at a folder trueup may create and write to "
                "(or --state / TRUEUP_STATE at a store elsewhere)",
            ) from None

    @classmethod
    def from_env(
        cls, state: str | None = None, max_file_bytes: int | None = None, actor: str | None = None
    ) -> Settings:
        data = data_dir()
        url = state or os.environ.get("TRUEUP_STATE") or _embedded_url(data)
        return cls(
            data=data,
            state_url=url,
            max_file_bytes=max_file_bytes or DEFAULT_MAX_FILE_BYTES,
            actor=actor or os.environ.get("TRUEUP_ACTOR") or _os_user(),
            batch_size=_positive_env("TRUEUP_BATCH_SIZE", DEFAULT_BATCH_SIZE),
        )


def _positive_env(name: str, default: int) -> int:
    """A whole number > 0 from the environment, or a usage error naming the variable."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(f"{name}={text!r} is not a whole number above 0", hint=f"unset {name}")
    return value


def _embedded_url(data: Path) -> str:
    return f"sqlite:///{data / 'state.db'}"


def _os_user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return f"uid-{os.getuid()}"

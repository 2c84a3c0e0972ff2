"""Where a secret a provider shows only once (an OIDC client secret) is kept.

The OS keyring when a backend works; otherwise a file readable only by its
owner (0600, in a 0700 folder) under the trueup data directory. The state
store only ever holds the reference this module returns, never the value.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from urllib.parse import quote

from trueup.redact import register_secret

SERVICE = "trueup"


class SecretStore:
    def __init__(self, data_dir: Path) -> None:
        self.folder = data_dir / "secrets"
        self._keyring: bool | None = None

    def put(self, name: str, value: str) -> str:
        """Store ``value`` under ``name``; returns the reference to record."""
        register_secret(value)
        if self._keyring_works():
            try:
                import keyring

                keyring.set_password(SERVICE, name, value)
                return f"keyring:{SERVICE}/{name}"
            except Exception:
                self._keyring = False
        self._write_file(name, value)
        return f"file:{name}"

    def get(self, ref: str) -> str | None:
        scheme, _, name = ref.partition(":")
        value: str | None = None
        if scheme == "keyring":
            with contextlib.suppress(Exception):
                import keyring

                value = keyring.get_password(SERVICE, name.removeprefix(f"{SERVICE}/"))
        elif scheme == "file":
            path = self._path(name)
            with contextlib.suppress(OSError):
                value = path.read_text(encoding="utf-8")
        if value:
            register_secret(value)
        return value or None

    def forget(self, ref: str) -> None:
        """Remove the secret ``ref`` names, if it is still there.

        Called once what it opened is deleted: a client secret of an app that
        no longer exists is of no use to anyone but somebody who finds it.
        """
        scheme, _, name = ref.partition(":")
        if scheme == "keyring":
            with contextlib.suppress(Exception):
                import keyring

                keyring.delete_password(SERVICE, name.removeprefix(f"{SERVICE}/"))
        elif scheme == "file":
            self._path(name).unlink(missing_ok=True)

    def has(self, ref: str | None) -> bool:
        return bool(ref) and self.get(ref or "") is not None

    def find(self, name: str) -> str | None:
        """The reference of a secret stored under ``name``, wherever ``put`` put it.

        For a secret stored and then not recorded (the process stopped in between):
        its name is all that is known of it.
        """
        refs = [f"file:{name}"]
        if self._keyring_works():
            refs.insert(0, f"keyring:{SERVICE}/{name}")
        return next((ref for ref in refs if self.has(ref)), None)

    def _keyring_works(self) -> bool:
        if self._keyring is None:
            try:
                import keyring
                from keyring.backends import fail

                backend = keyring.get_keyring()
                self._keyring = not isinstance(backend, fail.Keyring) and backend.priority > 0
            except Exception:
                self._keyring = False
        return self._keyring

    def _path(self, name: str) -> Path:
        return self.folder / quote(name, safe="")

    def _write_file(self, name: str, value: str) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        path = self._path(name)
        temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, value.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)

"""A keyring backend that never answers in time (PYTHON_KEYRING_BACKEND=slow_keyring.Slow)."""

from __future__ import annotations

import time

from keyring.backend import KeyringBackend


class Slow(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        time.sleep(60)
        super().__init__()

    def get_password(self, service: str, username: str) -> str | None:
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        pass

    def delete_password(self, service: str, username: str) -> None:
        pass

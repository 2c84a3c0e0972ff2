"""In-memory provider state with optional JSON persistence.

Every fake keeps its data as plain JSON-ready dicts so one code path serves
the API, the ``GET /_fake/state`` dump and the optional ``state_file`` that
lets a served fake survive restarts (``trueup fakes serve --state-dir``).
Access goes through a re-entrant lock because the server thread and the
test thread (seeding helpers) touch the same objects.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

JSON = dict[str, Any]


class JsonStore:
    """Base class: subclasses define `_initial` and mutate `data` inside `_write`."""

    #: Bumped when the on-disk layout changes; a mismatching file is ignored.
    schema_version = 1

    def __init__(self, state_file: str | os.PathLike[str] | None = None) -> None:
        self._lock = threading.RLock()
        self.state_file = Path(state_file) if state_file is not None else None
        loaded = self._load()
        self.data: JSON = loaded if loaded is not None else self._initial()
        self._save()

    def _initial(self) -> JSON:
        raise NotImplementedError

    def _load(self) -> JSON | None:
        if self.state_file is None or not self.state_file.exists():
            return None
        raw = json.loads(self.state_file.read_text(encoding="utf-8"))
        if not isinstance(raw, dict) or raw.get("schema_version") != self.schema_version:
            return None
        data = raw.get("data")
        return data if isinstance(data, dict) else None

    def _save(self) -> None:
        """Atomically rewrite the state file (write to a temp file, then rename)."""
        if self.state_file is None:
            return
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        payload = json.dumps(
            {"schema_version": self.schema_version, "data": self.data}, indent=1, sort_keys=True
        )
        fd, tmp = tempfile.mkstemp(prefix=".fake-", dir=self.state_file.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(tmp, self.state_file)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @contextmanager
    def _read(self) -> Iterator[JSON]:
        with self._lock:
            yield self.data

    @contextmanager
    def _write(self) -> Iterator[JSON]:
        """Hold the lock for a mutation and persist afterwards (even on error)."""
        with self._lock:
            try:
                yield self.data
            finally:
                self._save()

    def reset(self) -> None:
        """Forget everything: back to the freshly seeded initial state."""
        with self._write():
            self.data = self._initial()

    def dump(self) -> JSON:
        """A deep copy of the raw state, for debugging and ``GET /_fake/state``."""
        with self._read() as data:
            return copy.deepcopy(data)

    def seed(self, payload: JSON) -> JSON:
        """Provider-specific seeding over HTTP (``POST /_fake/seed``)."""
        raise ValueError("this fake has nothing to seed")

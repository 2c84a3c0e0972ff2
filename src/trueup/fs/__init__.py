"""Every file-system effect goes through here: a read-only view that observation is
handed (view.py), and a writer that wraps one for apply (writer.py)."""

from trueup.fs.view import (
    ABSENT_OUTCOME,
    MAX_TREE_DEPTH,
    OVERSIZED_DIGEST,
    TEMP_MARK,
    Entry,
    FileTooLargeError,
    ReadOnlyFS,
    sha256_bytes,
)
from trueup.fs.writer import TargetAppeared, WritableFS

__all__ = [
    "ABSENT_OUTCOME",
    "MAX_TREE_DEPTH",
    "OVERSIZED_DIGEST",
    "TEMP_MARK",
    "Entry",
    "FileTooLargeError",
    "ReadOnlyFS",
    "TargetAppeared",
    "WritableFS",
    "sha256_bytes",
]

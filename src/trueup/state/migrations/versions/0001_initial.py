"""The first schema: runs (the lock), the journal, applied records, drift, the stat cache.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ACTIVE = "status IN ('running', 'interrupted')"


def upgrade() -> None:
    op.create_table(
        "runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("target_key", sa.Text, nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("outcome", sa.String(32)),
        sa.Column("plan_digest", sa.String(64)),
        sa.Column("declaration", sa.Text),
        sa.Column("host", sa.Text, nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("actor", sa.Text, nullable=False),
        sa.Column("started_at", sa.Text, nullable=False),
        sa.Column("finished_at", sa.Text),
        sa.Column("message", sa.Text),
    )
    # The lock: at most one unfinished run per target, enforced by the database.
    op.create_index(
        "runs_one_active_per_target",
        "runs",
        ["target_key"],
        unique=True,
        sqlite_where=sa.text(ACTIVE),
        postgresql_where=sa.text(ACTIVE),
    )
    op.create_index("runs_by_target", "runs", ["target_key", "started_at"])
    op.create_table(
        "run_actions",
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("resource_id", sa.Text, nullable=False),
        sa.Column("action", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("rollback_ref", sa.Text),
        sa.Column("evidence", sa.Text),
        sa.Column("message", sa.Text),
        sa.Column("updated_at", sa.Text, nullable=False),
    )
    op.create_table(
        "journal",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("at", sa.Text, nullable=False),
        sa.Column("detail", sa.Text),
    )
    op.create_index("journal_by_run", "journal", ["run_id", "id"])
    op.create_table(
        "applied_resources",
        sa.Column("target_key", sa.Text, primary_key=True),
        sa.Column("resource_id", sa.Text, primary_key=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("digest", sa.String(64)),
        sa.Column("resource", sa.Text, nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("revision", sa.Text, nullable=False),
        sa.Column("applied_at", sa.Text, nullable=False),
    )
    op.create_table(
        "drift",
        sa.Column("target_key", sa.Text, primary_key=True),
        sa.Column("resource_id", sa.Text, primary_key=True),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("observed_digest", sa.String(64)),
        sa.Column("applied_digest", sa.String(64)),
        sa.Column("desired_digest", sa.String(64)),
        sa.Column("detected_at", sa.Text, nullable=False),
    )
    op.create_table(
        "revisions",
        sa.Column("id", sa.Text, primary_key=True),
        sa.Column("declaration_id", sa.Text, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
    )
    # Per host: with a shared PostgreSQL store, paths on two machines are unrelated.
    op.create_table(
        "stat_cache",
        sa.Column("host", sa.Text, primary_key=True),
        sa.Column("path", sa.Text, primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("mtime_ns", sa.BigInteger, nullable=False),
        sa.Column("ino", sa.BigInteger, nullable=False),
        sa.Column("ctime_ns", sa.BigInteger, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("recorded_ns", sa.BigInteger, nullable=False),
    )


def downgrade() -> None:
    for table in ("stat_cache", "revisions", "drift", "applied_resources", "journal"):
        op.drop_table(table)
    op.drop_table("run_actions")
    op.drop_index("runs_by_target", "runs")
    op.drop_index("runs_one_active_per_target", "runs")
    op.drop_table("runs")

"""Journal a batch's actions running, then succeeded, in one row each time.

Revision ID: 0005
Revises: 0004

A first apply of 10,000 files journaled every action three times (pending,
running, succeeded), rewriting each action's row in full every time, which
was a tenth of its main process's time. An action is still inserted pending,
one row each; a batch of them moves to running, and then to succeeded with
each action's verification evidence, in one ``run_batches`` row. An action
whose own row still says pending takes its status, rollback reference and
evidence from the batch that covers it (``Store.run_actions``); anything
that happens to one action alone (failed, restored, skipped) is written on
its own row and wins.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_batches",
        sa.Column("run_id", sa.String(64), sa.ForeignKey("runs.id"), primary_key=True),
        sa.Column("first_seq", sa.Integer, primary_key=True),
        sa.Column("last_seq", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("manifest", sa.Text),
        sa.Column("evidence", sa.Text),
        sa.Column("updated_at", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_batches")

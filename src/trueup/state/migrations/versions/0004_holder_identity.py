"""Runs name their holder process exactly: its boot and start time, not only its pid.

Revision ID: 0004
Revises: 0003

A pid alone is reused: after a reboot or a container restart, the pid of a
killed run may belong to another process, and the run would look alive, and
block its target, forever. ``holder`` is what the system says about the
holding process (the boot id and the process's start time, where the OS
tells them), so a reused pid is told apart from the holder.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("holder", sa.Text))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("holder")

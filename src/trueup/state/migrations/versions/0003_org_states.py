"""Org states: what the last apply of each org left (service ids, failed fields).

Revision ID: 0003
Revises: 0002

One row per org target: the provider scope ids (``serviceIds``), the
checkpoints of the last run, the declared fields it could not make true
(``failedFields``) and ``lastApplied`` (when, and the digest of the declared
org). Per-resource ids live in ``applied_resources``; this is the org-level
summary ``trueup org status`` reads without contacting any provider.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "org_states",
        sa.Column("target_key", sa.Text, primary_key=True),
        sa.Column("org_id", sa.Text, nullable=False),
        sa.Column("service_ids", sa.Text, nullable=False),
        sa.Column("checkpoints", sa.Text, nullable=False),
        sa.Column("failed_fields", sa.Text, nullable=False),
        sa.Column("last_applied_at", sa.Text),
        sa.Column("declared_digest", sa.String(64)),
        sa.Column("run_id", sa.String(64)),
        sa.Column("outcome", sa.String(32)),
        sa.Column("updated_at", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("org_states")

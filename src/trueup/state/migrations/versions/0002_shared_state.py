"""Shared state: queued jobs on runs (steps, checkpoints, leases), audit, grants, tokens.

Revision ID: 0002
Revises: 0001

Jobs stay rows of ``runs`` so that the lock keeps its one definition: at most
one active row per target, where a queued job and a failed job (waiting for a
person to fix and resume it) are active too.

The audit table is append-only: a trigger refuses UPDATE and DELETE (and
TRUNCATE on PostgreSQL), and each row's hash covers the previous row's hash,
so tampering by someone who disables the trigger is still detected.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

OLD_ACTIVE = "status IN ('running', 'interrupted')"
ACTIVE = "status IN ('queued', 'running', 'interrupted', 'failed')"
JOBS = "steps IS NOT NULL AND status IN ('queued', 'running')"

_PG_REFUSE = """
CREATE FUNCTION trueup_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING
        MESSAGE = 'the audit log is append-only: ' || TG_OP || ' refused',
        ERRCODE = 'restrict_violation';
END
$$
"""


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("steps", sa.Text))
        batch.add_column(sa.Column("checkpoints", sa.Text))
        batch.add_column(sa.Column("failure", sa.Text))
        batch.add_column(sa.Column("lease_owner", sa.Text))
        batch.add_column(sa.Column("lease_expires_at", sa.Float(precision=53)))
        batch.add_column(sa.Column("attempts", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("updated_at", sa.Text))
        # The host a job must run on (a machine's root), or NULL for any worker.
        batch.add_column(sa.Column("affinity", sa.Text))
    op.drop_index("runs_one_active_per_target", "runs")
    op.create_index(
        "runs_one_active_per_target",
        "runs",
        ["target_key"],
        unique=True,
        sqlite_where=sa.text(ACTIVE),
        postgresql_where=sa.text(ACTIVE),
    )
    # What a worker scans: the queue and the leases that may expire.
    op.create_index(
        "runs_job_queue",
        "runs",
        ["status", "started_at"],
        sqlite_where=sa.text(JOBS),
        postgresql_where=sa.text(JOBS),
    )

    op.create_table(
        "audit",
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("at", sa.Text, nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("actor", sa.Text, nullable=False),
        sa.Column("target", sa.Text, nullable=False),
        sa.Column("target_key", sa.Text, nullable=False),
        sa.Column("plan_digest", sa.String(64)),
        sa.Column("run_id", sa.String(64)),
        sa.Column("detail", sa.Text),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False, unique=True),
    )
    op.create_index("audit_by_target", "audit", ["target_key", "seq"])
    if op.get_context().dialect.name == "postgresql":
        op.execute(_PG_REFUSE)
        op.execute(
            "CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit "
            "FOR EACH ROW EXECUTE FUNCTION trueup_audit_append_only()"
        )
        op.execute(
            "CREATE TRIGGER audit_no_truncate BEFORE TRUNCATE ON audit "
            "FOR EACH STATEMENT EXECUTE FUNCTION trueup_audit_append_only()"
        )
    else:
        for verb in ("UPDATE", "DELETE"):
            op.execute(
                f"CREATE TRIGGER audit_append_only_{verb.lower()} BEFORE {verb} ON audit "
                f"BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: {verb} refused'); END"
            )

    op.create_table(
        "grants",
        sa.Column("actor", sa.Text, primary_key=True),
        sa.Column("permission", sa.String(16), primary_key=True),
        sa.Column("target_glob", sa.Text, primary_key=True),
        sa.Column("created_by", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
    )
    op.create_table(
        "actor_tokens",
        sa.Column("actor", sa.Text, primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_by", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("actor_tokens")
    op.drop_table("grants")
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP TABLE audit")
        op.execute("DROP FUNCTION trueup_audit_append_only()")
    else:
        op.drop_table("audit")
    op.drop_index("runs_job_queue", "runs")
    op.drop_index("runs_one_active_per_target", "runs")
    op.create_index(
        "runs_one_active_per_target",
        "runs",
        ["target_key"],
        unique=True,
        sqlite_where=sa.text(OLD_ACTIVE),
        postgresql_where=sa.text(OLD_ACTIVE),
    )
    with op.batch_alter_table("runs") as batch:
        for column in (
            "affinity",
            "updated_at",
            "attempts",
            "lease_expires_at",
            "lease_owner",
            "failure",
            "checkpoints",
            "steps",
        ):
            batch.drop_column(column)

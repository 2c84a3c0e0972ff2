"""A source's revisions, blobs, followers, invitations and follower reports.

Revision ID: 0006
Revises: 0005

Revisions are immutable, as the audit log is: triggers refuse UPDATE and
DELETE, and followers check each one's signature besides. Blobs are
content-addressed, so a row never needs to change either. Followers and
invitations hold the sha256 of their secrets only: a copy of the store
enrolls nobody and impersonates no follower.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_PG_REFUSE = """
CREATE FUNCTION trueup_revisions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING
        MESSAGE = 'published revisions are immutable: ' || TG_OP || ' refused',
        ERRCODE = 'restrict_violation';
END
$$
"""


def upgrade() -> None:
    op.create_table(
        "source_revisions",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("id", sa.Text, nullable=False, unique=True),
        sa.Column("profile_id", sa.Text, nullable=False),
        sa.Column("manifest", sa.Text, nullable=False),
        sa.Column("signature", sa.Text, nullable=False),
        sa.Column("entries", sa.Text, nullable=False),
        sa.Column("published_by", sa.Text, nullable=False),
        sa.Column("published_at", sa.Text, nullable=False),
    )
    op.create_table(
        "source_blobs",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "source_followers",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("name", sa.Text, nullable=False, unique=True),
        sa.Column("groups", sa.Text, nullable=False),
        sa.Column("credential_digest", sa.String(64), nullable=False, unique=True),
        sa.Column("enrolled_at", sa.Text, nullable=False),
        sa.Column("revoked_at", sa.Text),
        sa.Column("revoked_by", sa.Text),
    )
    op.create_table(
        "source_invitations",
        sa.Column("digest", sa.String(64), primary_key=True),
        sa.Column("groups", sa.Text, nullable=False),
        sa.Column("expires_at", sa.Float(precision=53), nullable=False),
        sa.Column("created_by", sa.Text, nullable=False),
        sa.Column("created_at", sa.Text, nullable=False),
        sa.Column("used_by", sa.String(32)),
        sa.Column("used_at", sa.Text),
    )
    op.create_table(
        "source_reports",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("follower_id", sa.String(32), nullable=False),
        sa.Column("revision_id", sa.Text, nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("outcome", sa.String(32), nullable=False),
        sa.Column("detail", sa.Text, nullable=False),
        sa.Column("reported_at", sa.Text, nullable=False),
    )
    op.create_index("source_reports_by_follower", "source_reports", ["follower_id", "id"])
    if op.get_context().dialect.name == "postgresql":
        op.execute(_PG_REFUSE)
        for table in ("source_revisions", "source_blobs"):
            op.execute(
                f"CREATE TRIGGER {table}_immutable BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION trueup_revisions_immutable()"
            )
    else:
        for table in ("source_revisions", "source_blobs"):
            for verb in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_immutable_{verb.lower()} BEFORE {verb} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, 'published revisions are immutable: "
                    f"{verb} refused'); END"
                )


def downgrade() -> None:
    for table in (
        "source_reports",
        "source_invitations",
        "source_followers",
        "source_blobs",
        "source_revisions",
    ):
        op.drop_table(table)
    if op.get_context().dialect.name == "postgresql":
        op.execute("DROP FUNCTION trueup_revisions_immutable()")

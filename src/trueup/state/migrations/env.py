"""Alembic environment: runs the migrations on the connection trueup hands in.

Offline (``sql=True``) it renders the DDL as a script instead, for a DBA to
review and run where trueup's own role may not change the schema.
"""

from __future__ import annotations

from alembic import context

if context.is_offline_mode():
    context.configure(
        dialect_name=context.config.attributes["dialect"],
        literal_binds=True,
        target_metadata=None,
        transactional_ddl=True,
    )
else:
    connection = context.config.attributes["connection"]
    context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

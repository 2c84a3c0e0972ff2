BEGIN;

CREATE TABLE alembic_version (
    version_num VARCHAR(32) NOT NULL, 
    CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

-- Running upgrade  -> 0001

CREATE TABLE runs (
    id VARCHAR(64) NOT NULL, 
    target_key TEXT NOT NULL, 
    target TEXT NOT NULL, 
    status VARCHAR(16) NOT NULL, 
    outcome VARCHAR(32), 
    plan_digest VARCHAR(64), 
    declaration TEXT, 
    host TEXT NOT NULL, 
    pid INTEGER NOT NULL, 
    actor TEXT NOT NULL, 
    started_at TEXT NOT NULL, 
    finished_at TEXT, 
    message TEXT, 
    PRIMARY KEY (id)
);

CREATE UNIQUE INDEX runs_one_active_per_target ON runs (target_key) WHERE status IN ('running', 'interrupted');

CREATE INDEX runs_by_target ON runs (target_key, started_at);

CREATE TABLE run_actions (
    run_id VARCHAR(64) NOT NULL, 
    seq INTEGER NOT NULL, 
    resource_id TEXT NOT NULL, 
    action TEXT NOT NULL, 
    status VARCHAR(16) NOT NULL, 
    rollback_ref TEXT, 
    evidence TEXT, 
    message TEXT, 
    updated_at TEXT NOT NULL, 
    PRIMARY KEY (run_id, seq), 
    FOREIGN KEY(run_id) REFERENCES runs (id)
);

CREATE TABLE journal (
    id INTEGER NOT NULL, 
    run_id VARCHAR(64) NOT NULL, 
    event VARCHAR(32) NOT NULL, 
    at TEXT NOT NULL, 
    detail TEXT, 
    PRIMARY KEY (id), 
    FOREIGN KEY(run_id) REFERENCES runs (id)
);

CREATE INDEX journal_by_run ON journal (run_id, id);

CREATE TABLE applied_resources (
    target_key TEXT NOT NULL, 
    resource_id TEXT NOT NULL, 
    kind VARCHAR(32) NOT NULL, 
    digest VARCHAR(64), 
    resource TEXT NOT NULL, 
    detail TEXT NOT NULL, 
    revision TEXT NOT NULL, 
    applied_at TEXT NOT NULL, 
    PRIMARY KEY (target_key, resource_id)
);

CREATE TABLE drift (
    target_key TEXT NOT NULL, 
    resource_id TEXT NOT NULL, 
    summary TEXT NOT NULL, 
    observed_digest VARCHAR(64), 
    applied_digest VARCHAR(64), 
    desired_digest VARCHAR(64), 
    detected_at TEXT NOT NULL, 
    PRIMARY KEY (target_key, resource_id)
);

CREATE TABLE revisions (
    id TEXT NOT NULL, 
    declaration_id TEXT NOT NULL, 
    seq INTEGER NOT NULL, 
    digest VARCHAR(64) NOT NULL, 
    created_at TEXT NOT NULL, 
    PRIMARY KEY (id)
);

CREATE TABLE stat_cache (
    host TEXT NOT NULL, 
    path TEXT NOT NULL, 
    size BIGINT NOT NULL, 
    mtime_ns BIGINT NOT NULL, 
    ino BIGINT NOT NULL, 
    ctime_ns BIGINT NOT NULL, 
    digest VARCHAR(64) NOT NULL, 
    recorded_ns BIGINT NOT NULL, 
    PRIMARY KEY (host, path)
);

INSERT INTO alembic_version (version_num) VALUES ('0001') RETURNING version_num;

-- Running upgrade 0001 -> 0002

ALTER TABLE runs ADD COLUMN steps TEXT;

ALTER TABLE runs ADD COLUMN checkpoints TEXT;

ALTER TABLE runs ADD COLUMN failure TEXT;

ALTER TABLE runs ADD COLUMN lease_owner TEXT;

ALTER TABLE runs ADD COLUMN lease_expires_at FLOAT;

ALTER TABLE runs ADD COLUMN attempts INTEGER DEFAULT '0' NOT NULL;

ALTER TABLE runs ADD COLUMN updated_at TEXT;

ALTER TABLE runs ADD COLUMN affinity TEXT;

DROP INDEX runs_one_active_per_target;

CREATE UNIQUE INDEX runs_one_active_per_target ON runs (target_key) WHERE status IN ('queued', 'running', 'interrupted', 'failed');

CREATE INDEX runs_job_queue ON runs (status, started_at) WHERE steps IS NOT NULL AND status IN ('queued', 'running');

CREATE TABLE audit (
    seq BIGINT NOT NULL, 
    at TEXT NOT NULL, 
    event VARCHAR(64) NOT NULL, 
    outcome VARCHAR(16) NOT NULL, 
    reason TEXT, 
    actor TEXT NOT NULL, 
    target TEXT NOT NULL, 
    target_key TEXT NOT NULL, 
    plan_digest VARCHAR(64), 
    run_id VARCHAR(64), 
    detail TEXT, 
    prev_hash VARCHAR(64) NOT NULL, 
    hash VARCHAR(64) NOT NULL, 
    PRIMARY KEY (seq), 
    UNIQUE (hash)
);

CREATE INDEX audit_by_target ON audit (target_key, seq);

CREATE TRIGGER audit_append_only_update BEFORE UPDATE ON audit BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: UPDATE refused'); END;

CREATE TRIGGER audit_append_only_delete BEFORE DELETE ON audit BEGIN SELECT RAISE(ABORT, 'the audit log is append-only: DELETE refused'); END;

CREATE TABLE grants (
    actor TEXT NOT NULL, 
    permission VARCHAR(16) NOT NULL, 
    target_glob TEXT NOT NULL, 
    created_by TEXT NOT NULL, 
    created_at TEXT NOT NULL, 
    PRIMARY KEY (actor, permission, target_glob)
);

CREATE TABLE actor_tokens (
    actor TEXT NOT NULL, 
    token_hash VARCHAR(64) NOT NULL, 
    created_by TEXT NOT NULL, 
    created_at TEXT NOT NULL, 
    PRIMARY KEY (actor), 
    UNIQUE (token_hash)
);

UPDATE alembic_version SET version_num='0002' WHERE alembic_version.version_num = '0001';

-- Running upgrade 0002 -> 0003

CREATE TABLE org_states (
    target_key TEXT NOT NULL, 
    org_id TEXT NOT NULL, 
    service_ids TEXT NOT NULL, 
    checkpoints TEXT NOT NULL, 
    failed_fields TEXT NOT NULL, 
    last_applied_at TEXT, 
    declared_digest VARCHAR(64), 
    run_id VARCHAR(64), 
    outcome VARCHAR(32), 
    updated_at TEXT NOT NULL, 
    PRIMARY KEY (target_key)
);

UPDATE alembic_version SET version_num='0003' WHERE alembic_version.version_num = '0002';

-- Running upgrade 0003 -> 0004

ALTER TABLE runs ADD COLUMN holder TEXT;

UPDATE alembic_version SET version_num='0004' WHERE alembic_version.version_num = '0003';

-- Running upgrade 0004 -> 0005

CREATE TABLE run_batches (
    run_id VARCHAR(64) NOT NULL, 
    first_seq INTEGER NOT NULL, 
    last_seq INTEGER NOT NULL, 
    status VARCHAR(16) NOT NULL, 
    manifest TEXT, 
    evidence TEXT, 
    updated_at TEXT NOT NULL, 
    PRIMARY KEY (run_id, first_seq), 
    FOREIGN KEY(run_id) REFERENCES runs (id)
);

UPDATE alembic_version SET version_num='0005' WHERE alembic_version.version_num = '0004';

COMMIT;


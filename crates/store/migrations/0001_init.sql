-- agentloop schema v1. Journal rows key on the integer session key, not the
-- 36-byte session id, so per-step rows stay small.

CREATE TABLE sessions (
    key        INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    agent      TEXT    NOT NULL,
    status     TEXT    NOT NULL,
    started_at TEXT    NOT NULL,
    updated_at TEXT    NOT NULL,
    -- SessionMeta as JSON: counters, termination, next node.
    meta       TEXT    NOT NULL
);

-- The latest full state; older ones are deleted when a new one is written.
CREATE TABLE snapshots (
    session INTEGER NOT NULL,
    step    INTEGER NOT NULL,
    state   TEXT    NOT NULL,
    PRIMARY KEY (session, step)
);

-- One entry per step since the latest snapshot: the node to run next (NULL:
-- the graph ended) and the JSON Patch of what the step changed (NULL:
-- nothing, or the snapshot covers it). The newest entry says where the
-- session is, so the sessions row is only rewritten when more changed.
-- WITHOUT ROWID keeps it one b-tree: one page per commit, not two.
CREATE TABLE steps (
    session INTEGER NOT NULL,
    step    INTEGER NOT NULL,
    next    TEXT,
    patch   TEXT,
    PRIMARY KEY (session, step)
) WITHOUT ROWID;

-- Model and tool calls, keyed for exactly-once replay.
CREATE TABLE calls (
    session INTEGER NOT NULL,
    step    INTEGER NOT NULL,
    idx     INTEGER NOT NULL,
    record  TEXT    NOT NULL,
    PRIMARY KEY (session, step, idx)
) WITHOUT ROWID;

-- Events, numbered per session. Iteration records are read from the
-- iteration start and complete events, not kept twice.
CREATE TABLE events (
    session INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    step    INTEGER NOT NULL,
    name    TEXT    NOT NULL,
    payload TEXT    NOT NULL,
    at      TEXT    NOT NULL,
    PRIMARY KEY (session, seq)
) WITHOUT ROWID;

-- No index on (session, step): only a replayed step counts its events, and
-- scanning one session's events then is cheaper than one more page per commit.

CREATE TABLE interrupts (
    session  INTEGER NOT NULL,
    id       TEXT    NOT NULL,
    step     INTEGER NOT NULL,
    answered INTEGER NOT NULL DEFAULT 0,
    record   TEXT    NOT NULL,
    PRIMARY KEY (session, id)
) WITHOUT ROWID;

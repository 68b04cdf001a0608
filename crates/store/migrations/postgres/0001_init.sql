-- agentloop's Postgres schema v1. Everything lives in the schema `agentloop`,
-- so it cannot clash with an application's own tables in the same database.
-- The tables mirror the SQLite ones; what only a shared store needs (the
-- queue, steering) is here from the start.

-- Journal rows name their session by id: Postgres has no use for the
-- integer keys SQLite appends by, and one lookup less per commit.
CREATE TABLE agentloop.sessions (
    id         TEXT        PRIMARY KEY,
    -- Insertion order, to list sessions started in the same instant.
    key        BIGSERIAL   NOT NULL,
    agent      TEXT        NOT NULL,
    status     TEXT        NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    -- SessionMeta as JSON: counters, termination, next node.
    meta       TEXT        NOT NULL,
    -- Set while the session waits for (or is run by) a worker; workers take
    -- the oldest first.
    queued_at  TIMESTAMPTZ
);
CREATE INDEX sessions_queue ON agentloop.sessions (queued_at) WHERE queued_at IS NOT NULL;

CREATE TABLE agentloop.snapshots (
    session TEXT   NOT NULL,
    step    BIGINT NOT NULL,
    state   TEXT   NOT NULL,
    PRIMARY KEY (session, step)
);

-- One entry per step since the latest snapshot (see the SQLite schema).
CREATE TABLE agentloop.steps (
    session  TEXT   NOT NULL,
    step     BIGINT NOT NULL,
    next     TEXT,
    patch    TEXT,
    progress TEXT,
    PRIMARY KEY (session, step)
);

CREATE TABLE agentloop.calls (
    session TEXT    NOT NULL,
    step    BIGINT  NOT NULL,
    idx     INTEGER NOT NULL,
    record  TEXT    NOT NULL,
    PRIMARY KEY (session, step, idx)
);

CREATE TABLE agentloop.events (
    session TEXT   NOT NULL,
    seq     BIGINT NOT NULL,
    step    BIGINT NOT NULL,
    name    TEXT   NOT NULL,
    payload TEXT   NOT NULL,
    at      TEXT   NOT NULL,
    PRIMARY KEY (session, seq)
);

CREATE TABLE agentloop.interrupts (
    session  TEXT    NOT NULL,
    id       TEXT    NOT NULL,
    step     BIGINT  NOT NULL,
    answered BOOLEAN NOT NULL DEFAULT false,
    record   TEXT    NOT NULL,
    PRIMARY KEY (session, id)
);

-- Who runs each session. The row outlives its holder, so the epoch only
-- grows: a new holder takes epoch + 1, and every step commit must still
-- find its own epoch. `until` is on the database's clock, the one clock all
-- workers share.
CREATE TABLE agentloop.leases (
    session TEXT        PRIMARY KEY,
    epoch   BIGINT      NOT NULL,
    host    TEXT        NOT NULL,
    pid     BIGINT      NOT NULL,
    started BIGINT      NOT NULL,
    until   TIMESTAMPTZ NOT NULL,
    since   TIMESTAMPTZ NOT NULL,
    token   TEXT        NOT NULL
);

-- Pause, resume and terminate, as requests numbered per database; the
-- process that runs the session obeys the newest.
CREATE TABLE agentloop.steering (
    seq     BIGSERIAL   PRIMARY KEY,
    session TEXT        NOT NULL,
    request TEXT        NOT NULL,
    at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX steering_session ON agentloop.steering (session, seq);

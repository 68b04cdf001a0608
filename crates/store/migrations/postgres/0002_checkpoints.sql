-- agentloop's Postgres schema v2: checkpoints to rewind or fork a session,
-- and the workspace contents they name (see the SQLite schema v5).
CREATE TABLE agentloop.checkpoints (
    session TEXT   NOT NULL,
    step      BIGINT  NOT NULL,
    iteration INTEGER NOT NULL,
    record    TEXT    NOT NULL,
    PRIMARY KEY (session, step)
);

CREATE TABLE agentloop.blobs (
    hash  TEXT  PRIMARY KEY,
    bytes BYTEA NOT NULL
);

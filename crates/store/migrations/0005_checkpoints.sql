-- agentloop schema v5: checkpoints to rewind or fork a session, and the
-- workspace contents they name.

-- A session's state and its workspace's manifest after a step
-- (agentloop_core::checkpoint::Checkpoint as JSON). Never compacted.
CREATE TABLE checkpoints (
    session INTEGER NOT NULL,
    step      INTEGER NOT NULL,
    -- The iteration the step was in, to list checkpoints by iteration.
    iteration INTEGER NOT NULL,
    record    TEXT    NOT NULL,
    PRIMARY KEY (session, step)
);

-- File contents by SHA-256, shared by every checkpoint that names them.
CREATE TABLE blobs (
    hash  TEXT PRIMARY KEY,
    bytes BLOB NOT NULL
);

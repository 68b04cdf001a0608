-- agentloop schema v4: the queue workers take sessions from, and steering
-- requests for a session another process runs.

-- Unix milliseconds at which the session was queued; NULL when it is not
-- waiting for (or being run by) a worker.
ALTER TABLE sessions ADD COLUMN queued_at INTEGER;

-- Pause, resume and terminate, numbered; the process that runs the session
-- obeys the newest.
CREATE TABLE steering (
    seq     INTEGER PRIMARY KEY,
    session TEXT    NOT NULL,
    request TEXT    NOT NULL,
    at      TEXT    NOT NULL
);
CREATE INDEX steering_session ON steering (session, seq);

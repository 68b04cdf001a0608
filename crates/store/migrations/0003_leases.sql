-- agentloop schema v3: who runs each session. A process takes a session's
-- lease before it writes a step and gives it up when its run ends; the
-- epoch grows with every new holder and each step commit must still find
-- its own, so a process that lost the session cannot write to it again.
CREATE TABLE leases (
    session TEXT    PRIMARY KEY,
    epoch   INTEGER NOT NULL,
    -- Which process: host name, process id and the process's start time
    -- (clock ticks since boot), so a reused pid is not taken for the holder.
    host    TEXT    NOT NULL,
    pid     INTEGER NOT NULL,
    started INTEGER NOT NULL,
    -- Unix milliseconds: a holder on another host that has not renewed by
    -- then is gone.
    until   INTEGER NOT NULL,
    since   TEXT    NOT NULL,
    -- Which store of that process (one process may open several).
    token   TEXT    NOT NULL
);

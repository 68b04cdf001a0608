-- agentloop schema v2: steps and events keyed by one integer,
-- id = session << 32 | step (or seq). A WITHOUT ROWID table is an index
-- b-tree, and SQLite's quick append — one new page when the rightmost leaf
-- is full — exists only for integer keys: appending to an index b-tree
-- rebalances the leaf with its siblings and rewrites their parent, so one
-- step commit in seven wrote four or five pages instead of one. Queries
-- select a session by its id range; `session` and `step`/`seq` stay as
-- plain columns for whoever reads the file with sqlite3.
--
-- A step entry also holds the session's counters (`progress`, JSON) when
-- they changed and the session row was not rewritten: the row is another
-- page per commit, so the runner rewrites it only now and then; loading a
-- session reads the newest entries after it.

CREATE TABLE steps_v2 (
    id      INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    step    INTEGER NOT NULL,
    next    TEXT,
    patch   TEXT,
    progress TEXT
);
INSERT INTO steps_v2 (id, session, step, next, patch)
    SELECT (session << 32) | step, session, step, next, patch FROM steps;
DROP TABLE steps;
ALTER TABLE steps_v2 RENAME TO steps;

CREATE TABLE events_v2 (
    id      INTEGER PRIMARY KEY,
    session INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    step    INTEGER NOT NULL,
    name    TEXT    NOT NULL,
    payload TEXT    NOT NULL,
    at      TEXT    NOT NULL
);
INSERT INTO events_v2 (id, session, seq, step, name, payload, at)
    SELECT (session << 32) | seq, session, seq, step, name, payload, at FROM events;
DROP TABLE events;
ALTER TABLE events_v2 RENAME TO events;

"""Seconds a session's models were busy, from its journal.

Answers decoded together are journaled as one model call each, with
overlapping times, so the calls' durations are merged as intervals: time
in which any call was running counts once.

    python3 benchsuite/model_seconds.py DATA_DIR/agentloop.sqlite
"""

import json
import sqlite3
import sys
from datetime import datetime


def started(text):
    """An RFC 3339 time with up to nanoseconds, as the journal writes it."""
    head, _, rest = text.rstrip("Z").partition(".")
    micros = (rest + "000000")[:6] if rest else "0"
    return datetime.fromisoformat(head).timestamp() + int(micros) / 1e6


def busy_seconds(intervals):
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def main(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    intervals = []
    for (text,) in db.execute("SELECT record FROM calls"):
        record = json.loads(text)
        if record.get("kind") == "model" and record.get("durationMs") is not None:
            start = started(record["startedAt"])
            intervals.append((start, start + record["durationMs"] / 1000))
    print(f"{busy_seconds(intervals):.1f}")


if __name__ == "__main__":
    main(sys.argv[1])

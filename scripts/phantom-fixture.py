#!/usr/bin/env python3
"""Turns a PhantomWiki instance into `agentloop-bench research`'s fixture.

Made once, committed, so the bench needs neither Prolog nor phantom-wiki:

    pip install phantom-wiki==1.0.3           # needs Debian's swi-prolog-nox
    pw-generate --seed 1 --question-depth 10 --num-family-trees 10 \
        --max-family-tree-size 50 --article-format json --question-format json \
        --output-dir OUT
    scripts/phantom-fixture.py OUT crates/bench/data/research/phantom

Articles keep their title and text (the Prolog facts are dropped) and go to
crates/retrieval/data/phantom-wiki.json, which the `phantom-wiki` corpus is
built from; the questions go to DST. Each
question keeps its id, text, gold answer set and difficulty (as `hops`);
its supporting titles are the people its solution traces pass through; one
question in three is in the tuning set, the rest are held out.
"""
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
articles = json.load(open(f"{src}/articles.json"))
titles = {a["title"] for a in articles}
here = __file__.rsplit("/scripts/", 1)[0]
json.dump([{"title": a["title"], "article": a["article"]} for a in articles], open(f"{here}/crates/retrieval/data/phantom-wiki.json", "w"), indent=0)
out = []
for i, q in enumerate(json.load(open(f"{src}/questions.json"))):
    if not q["answer"]:
        continue
    support = set()
    for trace in json.loads(q.get("solution_traces") or "[]"):
        support.update(v for v in trace.values() if v in titles)
    out.append({
        "id": q["id"],
        "question": q["question"],
        "answers": sorted(set(q["answer"])),
        "support": sorted(support),
        "hops": q["difficulty"],
        "type": q["type"],
        "set": "tuning" if i % 3 == 0 else "heldout",
    })
json.dump(out, open(f"{dst}/questions.json", "w"), indent=0)
print(f"{len(articles)} articles, {len(out)} questions")

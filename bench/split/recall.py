#!/usr/bin/env python3
"""Recall of the probed vector search (vectors by cluster, what the widget scores) against the
exhaustive scan, on a split index with vector shards.

    bench/split/recall.py DOCENT SPLIT_ENTRY QUESTIONS.txt NPROBE... [-- SEARCH ARGS...]

For every question and every NPROBE: the overlap of the top 10 sections of `docent search
--nprobe N` with those of the exhaustive search (`docent search`, every vector), for the vector
list alone (`--mode vector`) and for the fused hybrid list. Prints the mean R@10 overlap.
"""
import json, subprocess, sys

args = sys.argv[1:]
extra = args[args.index('--') + 1:] if '--' in args else []
args = args[:args.index('--')] if '--' in args else args
docent, entry, qfile, probes = args[0], args[1], args[2], [int(p) for p in args[3:]]
questions = [l.strip() for l in open(qfile, encoding='utf-8') if l.strip()]


def top(q, mode, nprobe=None):
    cmd = [docent, 'search', entry, q, '--json', '--top', '10', '--floor', '0', '--mode', mode, *extra]
    if nprobe is not None:
        cmd += ['--nprobe', str(nprobe)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"docent search failed for {q!r}: {r.stderr}")
    return [json.loads(l)['url'] for l in r.stdout.splitlines() if l.startswith('{')]


print("| nprobe | vector R@10 overlap | hybrid R@10 overlap |")
print("|---|---|---|")
exact = {m: [top(q, m) for q in questions] for m in ('vector', 'hybrid')}
for p in probes:
    row = []
    for m in ('vector', 'hybrid'):
        got = [top(q, m, p) for q in questions]
        share = [len(set(g) & set(e)) / max(1, len(e)) for g, e in zip(got, exact[m])]
        row.append(sum(share) / len(share))
    print(f"| {p} | {row[0]:.3f} | {row[1]:.3f} |")

#!/usr/bin/env python3
"""Bytes a reader's browser downloads before each answer, one-file index vs split index.

    bench/split/bytes.py DOCENT ONE_FILE_INDEX SPLIT_ENTRY QUESTIONS.txt [SEARCH ARGS...]

For every question (one per line): the split entry (first question only; later ones have it)
plus the shards `docent search --shards` names (postings of the question's terms, vector shards
of its nearest clusters with vectors by cluster, texts of its hits), each gzip -9 as a CDN
would send it. SEARCH ARGS go to `docent search` (e.g. `--embed-base-url URL` for a hybrid
index, `--nprobe N`). Shards already fetched by earlier questions are not
counted again. Prints a table and the median; the one-file figure is the whole file, gzipped.
"""
import gzip, json, os, statistics, subprocess, sys

docent, one, entry, qfile = sys.argv[1:5]
extra = sys.argv[5:]
gz = lambda p: len(gzip.compress(open(p, 'rb').read(), 9))
folder = os.path.dirname(os.path.abspath(entry))
questions = [l.strip() for l in open(qfile, encoding='utf-8') if l.strip()]
entry_gz, one_gz = gz(entry), gz(one)
have, first, later, cold = set(), None, [], []
print(f"one-file index: {one_gz / 1000:.0f} KB gz; split entry: {entry_gz / 1000:.0f} KB gz")
print("| question | postings | vectors | texts | new shards KB gz | cold (entry + its shards) KB gz |")
print("|---|---|---|---|---|---|")
for q in questions:
    r = subprocess.run([docent, 'search', entry, q, '--shards', *extra], capture_output=True, text=True)
    line = [l for l in r.stderr.splitlines() if l.startswith('{"postings"')]
    if r.returncode != 0 or not line:
        sys.exit(f"docent search failed for {q!r}: {r.stderr}")
    d = json.loads(line[-1])
    names = d['postings'] + d.get('vectors', []) + d['texts']
    own = sum(gz(os.path.join(folder, n)) for n in names)
    new = sum(gz(os.path.join(folder, n)) for n in names if n not in have)
    have.update(names)
    cold.append(entry_gz + own)
    if first is None:
        first = entry_gz + own
    else:
        later.append(new)
    print(f"| {q} | {len(d['postings'])} | {len(d.get('vectors', []))} | {len(d['texts'])} | {new / 1000:.1f} | {(entry_gz + own) / 1000:.0f} |")
print()
print(f"first question: {first / 1000:.0f} KB gz (one file: {one_gz / 1000:.0f} KB gz)")
print(f"any question on a cold page, median: {statistics.median(cold) / 1000:.0f} KB gz, max {max(cold) / 1000:.0f}")
if later:
    print(f"each later question, median new bytes: {statistics.median(later) / 1000:.1f} KB gz")

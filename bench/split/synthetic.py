#!/usr/bin/env python3
"""Write a synthetic docs site of N Markdown pages (for byte counts of big indexes).

    bench/split/synthetic.py N OUT_DIR

Each page has a title and 3-6 sections of 60-200 words drawn from a fixed 6,000-word
vocabulary with a Zipf-like distribution (so term statistics look like prose), plus a code
identifier or two. Deterministic: the same N gives the same site.
"""
import os, random, sys

n, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(42)
syll = ["ka", "lo", "mi", "ne", "tor", "ven", "sa", "ri", "pu", "gen", "dal", "xo", "bre", "chi", "fu", "ly", "qua", "ste", "win", "zor"]
vocab = sorted({"".join(rng.choice(syll) for _ in range(rng.randint(2, 4))) for _ in range(9000)})[:6000]
rng.shuffle(vocab)
weights = [1 / (i + 1) ** 0.9 for i in range(len(vocab))]
os.makedirs(out, exist_ok=True)
for p in range(n):
    words = lambda k: " ".join(rng.choices(vocab, weights, k=k))
    lines = [f"# {words(3).title()}", ""]
    for s in range(rng.randint(3, 6)):
        lines += [f"## {words(2).title()} {s}", ""]
        body = words(rng.randint(60, 200)).split()
        for i in range(12, len(body), 15):
            body[i] += "."
        lines += [" ".join(body), "", f"Set `{rng.choice(vocab)}_{rng.choice(vocab)}` to enable it.", ""]
    d = os.path.join(out, f"s{p // 500:02d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"page{p}.md"), "w") as f:
        f.write("\n".join(lines))

#!/usr/bin/env python3
"""Build crates/core/src/lang/trigrams.txt: the character trigrams that tell English from
German, French, Spanish, Portuguese, Italian and Dutch, with their log-likelihood ratio.

Data: the translated messages of every program on a Debian machine (/usr/share/locale/<lang>/
LC_MESSAGES/*.mo, read with msgunfmt from gettext): the English source strings (msgid) against
their translations (msgstr). UI strings are short, like questions typed into a chat box.

Model: every word of a text (letters only, two or more, lowercased; tokens that look like code
are skipped, as in crates/core/src/lang/mod.rs) gives the trigrams of "^word$". A trigram seen
at least MIN_COUNT times in both languages together, whose log ratio
ln(P(g | English) / P(g | other)) is at least MIN_ABS away from 0, is kept, as round(16 × ratio)
clamped to an i8 and rounded to a multiple of 8 (half a unit of ln: the same decisions on the
question sets, 40 % fewer bytes gzipped), written as one line per weight: `weight trigram…`. Run: python3 eval/lang-id/train.py (BENCHMARKS.md §2.0.35 has the figures).
"""
import collections, glob, json, math, re, subprocess, sys
from pathlib import Path

LANGS = ["de", "fr", "es", "pt", "pt_BR", "it", "nl"]
MIN_COUNT, MIN_ABS, SCALE, STEP = 300, 1.5, 16, 8
OUT = Path(__file__).resolve().parents[2] / "crates/core/src/lang/trigrams.txt"


def entries(mo):
    raw = subprocess.run(["msgunfmt", mo], capture_output=True, timeout=60).stdout
    try:
        po = raw.decode("utf-8")
    except UnicodeDecodeError:
        return []  # a catalogue in another encoding
    out, cur, key = [], {"msgid": [], "msgstr": []}, None
    for line in po.splitlines() + ['msgid ""']:
        if line.startswith("msgid "):
            out.append(("".join(cur["msgid"]), "".join(cur["msgstr"])))
            cur, key, line = {"msgid": [], "msgstr": []}, "msgid", line[6:]
        elif line.startswith("msgstr"):
            key, line = "msgstr", line.split(" ", 1)[1] if " " in line else ""
        elif line.startswith("msgid_plural"):
            key = None
            continue
        elif not line.startswith('"'):
            continue
        if key and line.startswith('"'):
            try:
                cur[key].append(json.loads(line))
            except ValueError:
                pass
    return [(a, b) for a, b in out if a and b and a != b]


def clean(t):
    t = re.sub(r"%\d*\$?[-+ #0]*\d*(\.\d+)?[a-zA-Z]", "", t)
    t = re.sub(r"\{[^}]*\}|<[^>]*>|&[a-z]+;", "", t)
    return t.replace("_", "").replace("&", "")


def words(t):
    out = []
    for tok in t.split():
        core = tok.strip("?!.,;:()\"'¿¡«»")
        if not core or re.search(r"[_/@.:=<>()\[\]{}\d#$`]", core) or re.search(r"[a-z][A-Z]", core):
            continue
        out += [w for w in re.findall(r"[^\W\d_]+", core.lower()) if len(w) >= 2]
    return out


def grams(w):
    w = "^" + w + "$"
    return [w[i : i + 3] for i in range(len(w) - 2)]


def main():
    en, other, seen = collections.Counter(), collections.Counter(), set()
    for lang in LANGS:
        for mo in sorted(glob.glob(f"/usr/share/locale/{lang}/LC_MESSAGES/*.mo")):
            for a, b in entries(mo):
                if a not in seen:
                    seen.add(a)
                    en.update(g for w in words(clean(a)) for g in grams(w))
                other.update(g for w in words(clean(b)) for g in grams(w))
    ne, no = sum(en.values()), sum(other.values())
    if ne < 100_000 or no < 100_000:
        sys.exit(f"too little text ({ne} English, {no} other trigrams): install gettext and some translated packages")
    table = {}
    for g in set(en) | set(other):
        a, b = en[g], other[g]
        if a + b < MIN_COUNT:
            continue
        lr = math.log((a + 1) / (ne + 1)) - math.log((b + 1) / (no + 1))
        if abs(lr) >= MIN_ABS:
            w = max(-127, min(127, round(lr * SCALE)))
            table[g] = max(-127, min(127, round(w / STEP) * STEP))
    by_weight = collections.defaultdict(list)
    for g, w in table.items():
        by_weight[w].append(g)
    lines = [f"{w} " + " ".join(sorted(gs, key=str.encode)) for w, gs in sorted(by_weight.items())]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT}: {len(table)} trigrams in {len(lines)} weights, from {ne} English and {no} other trigram occurrences")


if __name__ == "__main__":
    main()

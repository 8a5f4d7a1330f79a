#!/usr/bin/env python3
"""Make typo'd copies of the answerable English questions of open eval sets (issue 25/28).

One typing mistake per question, in its longest plain word of 5+ letters: a letter dropped,
two neighbours swapped, a letter doubled, or a letter replaced by a keyboard neighbour; never
the first letter (people rarely get that wrong, and docent does not look there). Deterministic
(seeded by the question), so the sets can be rebuilt exactly:

    python3 eval/typos/make.py edition rustdoc starlight mkdocs-material jest pinia

writes eval/typos/<set>.jsonl with the same gold sections. Written by a rule, before any search
was run on them: a test of robustness, not a set anyone tuned on.
"""
import hashlib, json, random, re, sys
from pathlib import Path

NEAR = {
    'q': 'wa', 'w': 'qes', 'e': 'wrd', 'r': 'etf', 't': 'ryg', 'y': 'tuh', 'u': 'yij', 'i': 'uok',
    'o': 'ipl', 'p': 'ol', 'a': 'qsz', 's': 'adwx', 'd': 'sfe', 'f': 'dgr', 'g': 'fht', 'h': 'gjy',
    'j': 'hku', 'k': 'jli', 'l': 'ko', 'z': 'xa', 'x': 'zcs', 'c': 'xvd', 'v': 'cbf', 'b': 'vng',
    'n': 'bmh', 'm': 'nj',
}


def typo(word, rng):
    i = rng.randrange(1, len(word) - 1) if len(word) > 2 else 1
    kind = rng.choice(['drop', 'swap', 'double', 'near'])
    if kind == 'drop':
        return word[:i] + word[i + 1:]
    if kind == 'swap' and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 'double':
        return word[:i] + word[i] + word[i:]
    c = word[i].lower()
    return word[:i] + rng.choice(NEAR.get(c, c)) + word[i + 1:]


def main():
    root = Path(__file__).resolve().parent
    for name in sys.argv[1:]:
        out = []
        for line in (root.parent / f'{name}.jsonl').read_text().splitlines():
            q = json.loads(line)
            if not q.get('gold') or q.get('kind') == 'non-english' or q.get('history'):
                continue
            words = [w for w in re.findall(r'(?<![`\w])[A-Za-z]+(?![`\w])', q['question']) if len(w) >= 5]
            if not words:
                continue
            word = max(words, key=len)
            rng = random.Random(hashlib.sha256(q['question'].encode()).digest())
            bad = typo(word, rng)
            if bad == word:
                continue
            t = dict(q)
            t['question'] = re.sub(rf'(?<![`\w]){word}(?![`\w])', bad, q['question'], count=1)
            t['kind'] = 'typo'
            out.append(json.dumps(t, ensure_ascii=False))
        (root / f'{name}.jsonl').write_text('\n'.join(out) + '\n')
        print(f'{name}: {len(out)} questions')


if __name__ == '__main__':
    main()

import os
"""Score static-encoder configs through docent eval --query-vectors."""
import json, subprocess, sys, time, itertools
from static import *
D = os.environ.get("DOCENT", "target/release-native/docent")
E = os.environ.get("DOCENT_EVAL_OUT", "target/eval")

def docent(corpus, mode="hybrid", qv=None, floor=None, extra=()):
    cmd = [D, "eval", f"{E}/{corpus}.local.idx", f"eval/{corpus}.jsonl", "--mode", mode, "--json", *extra]
    if qv: cmd += ["--query-vectors", qv]
    if floor is not None: cmd += ["--floor", str(floor)]
    r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    o = r["overall"]
    ne = r["per_kind"].get("non-english", {}).get("recall_at_5")
    return dict(R5=round(o["recall_at_5"], 3), R10=round(o["recall_at_10"], 3), MRR=round(o["mrr"], 3),
                abst=f'{o["correct_abstains"]}/{o["unanswerable"]}', fabst=f'{o["false_abstains"]}/{o["answerable"]}',
                ne=None if ne is None else round(ne, 2),
                para=round(r["per_kind"].get("paraphrase", {}).get("recall_at_5", 0), 3))

def score(corpus, enc, tag, floors=(0, None)):
    qt = query_texts(corpus)
    qv = enc.encode(qt)
    path = f"{DATA}/{corpus}.{tag}.qvecs.jsonl"
    write_qvecs(path, qt, qv)
    return {f: docent(corpus, qv=path, floor=f) for f in floors}

if __name__ == "__main__":
    pass

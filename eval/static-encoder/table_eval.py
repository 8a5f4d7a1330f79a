"""Train sentence-trained static tables (train_table.py) and score their question vectors through
docent's real pipeline (`docent eval --query-vectors`), next to lexical and real MiniLM hybrid.

  python3 table_eval.py SETS VARIANTS [--general-only] [--epochs N] [--ridge R] [--lr L] [--vw W]

SETS: comma-separated eval sets (their *.local.idx in DOCENT_EVAL_OUT). VARIANTS: comma-separated
`d<dims>-<sif|learn>-b<bits>` (b0 = float rows), e.g. d384-sif-b0,d64-learn-b4. Each set's table
is trained on the general texts plus that set's own texts (unless --general-only); every bits
setting of one (dims, weights) reuses one training. Prints one JSON line per (set, run)."""
import argparse, json, os, subprocess, sys, time
import numpy as np
from common import *
from train_table import Table, load_pairs

D = os.environ.get("DOCENT", "target/release-native/docent")
E = os.environ.get("DOCENT_EVAL_OUT", "target/eval")

def docent(corpus, mode="hybrid", qv=None, floor=0, extra=()):
    cmd = [D, "eval", f"{E}/{corpus}.local.idx", f"eval/{corpus}.jsonl", "--mode", mode, "--json", *extra]
    if qv: cmd += ["--query-vectors", qv]
    if floor is not None: cmd += ["--floor", str(floor)]
    r = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    o = r["overall"]
    return dict(R5=round(o["recall_at_5"], 3), R10=round(o["recall_at_10"], 3), MRR=round(o["mrr"], 3),
                fabst=f'{o["false_abstains"]}/{o["answerable"]}')

def minilm_qvecs(corpus):
    p = f"{DATA}/{corpus}.minilm.qvecs.npy"
    if not os.path.exists(p):
        np.save(p, embed(query_texts(corpus)))
    return np.load(p)

def baselines(corpus):
    p = f"{DATA}/{corpus}.baselines.json"
    if not os.path.exists(p):
        json.dump({"lexical": docent(corpus, "lexical"), "hybrid": docent(corpus)}, open(p, "w"))
    return json.load(open(p))

def parse(v):
    d, w, b = v.split("-")
    return int(d[1:]), w, int(b[1:])

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("sets"); ap.add_argument("variants")
    ap.add_argument("--general-only", action="store_true")
    ap.add_argument("--epochs", type=int, default=8)
    ap.add_argument("--ridge", type=float, default=1e-3)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--vw", type=float, default=None)
    ap.add_argument("--tag", default="")
    ap.add_argument("--texts", default="general,{c}",
                    help="training text sets, {c} = the eval set (e.g. general,general2,general.q,{c},{c}.q)")
    a = ap.parse_args()
    log = lambda m: print(m, file=sys.stderr, flush=True)
    general = None
    for c in a.sets.split(","):
        base = baselines(c)
        qt = query_texts(c)
        qm = minilm_qvecs(c)
        print(json.dumps({"corpus": c, "run": "lexical", **base["lexical"]}), flush=True)
        print(json.dumps({"corpus": c, "run": "hybrid", **base["hybrid"]}), flush=True)
        names = ["general"] if a.general_only else [n.format(c=c) for n in a.texts.split(",")]
        if a.general_only and general is not None:
            T, Y = None, None
        else:
            T, Y = load_pairs(names)
        trained = {}
        for v in a.variants.split(","):
            d, w, bits = parse(v)
            key = (d, w)
            if key not in trained:
                if a.general_only and general is not None and key in general:
                    trained[key] = general[key]
                else:
                    log(f"{c}: training d={d} weights={w} on {len(T)} texts ({'+'.join(names)})")
                    trained[key] = Table(d, w).train(T, Y, epochs=a.epochs, lr=a.lr, ridge=a.ridge, log=log)
                    if a.general_only:
                        general = general or {}
                        general[key] = trained[key]
            t = trained[key].quantised(bits)
            t0 = time.time(); qv = t.encode(qt); enc_ms = (time.time() - t0) / len(qt) * 1000
            qcos = float(np.mean([np.dot(x, y) for x, y in zip(qv, qm) if np.linalg.norm(x) > 0]))
            path = f"{DATA}/{c}.{v}{a.tag}.qvecs.jsonl"
            write_qvecs(path, qt, qv)
            extra = () if a.vw is None else ("--vector-weight", str(a.vw))
            r = docent(c, qv=path, extra=extra)
            gap = base["hybrid"]["R5"] - base["lexical"]["R5"]
            closed = None if gap <= 0 else round((r["R5"] - base["lexical"]["R5"]) / gap * 100)
            print(json.dumps({"corpus": c, "run": v + a.tag + ("-general" if a.general_only else ""), **r,
                              "gap_closed_pct": closed, "q_cos_minilm": round(qcos, 3),
                              "train_s": round(trained[key].train_seconds), "encode_ms": round(enc_ms, 3)}), flush=True)
            if os.environ.get("SAVE_TABLES"):
                np.savez(f"{DATA}/{c}.{v}{a.tag}.table.npz", E=t.E, w=t.w, M=t.M, b=t.b,
                         codes=getattr(t, "codes", np.zeros(0)), scale=getattr(t, "scale", np.zeros(0)))

"""A static table trained for RANKING (issue 26, session 25): train_table.py's table with a KL term
between MiniLM's and the table's softmax over the site's own chunk vectors, scored through
`docent eval --query-vectors` next to lexical and real MiniLM hybrid.

  python3 rank_eval.py SETS [--T 0.05,0.1] [--cos 0,1] [--epochs 3] [--w 0.3,1] [--bits 8]
                       [--warm 3] [--rank-texts "{c},{c}.q"] [--tag -x]

Per set and per (T, cos, w, epochs): the table starts at the distilled rows (or, with --warm N, at
session 24's cosine-only table after N epochs, then fine-tuned on --rank-texts alone) and is trained on
--texts (cosine term, weight --cos) while the texts in --rank-texts (pseudo-questions: the site's
sentences / headings / windows and heading questions, texts.py; never an eval question) also get
the ranking term (weight --w): KL(softmax(y.D/T) || softmax(v.D/T)), D = the site's float MiniLM
chunk vectors (embed_corpora.py -> {set}.docvecs.npy). --cos 0 is ranking only.
Prints one JSON line per (set, run): hybrid R@5 / R@10 / MRR@10 at --floor 0, the question
vectors' mean cosine with MiniLM's (q_cos) and how many of MiniLM's top 10 chunks the static
vector's top 10 shares over the set's query texts (top10, float chunk vectors; a diagnostic only).
The question vectors go to {set}.rank-{run}.qvecs.jsonl; SAVE_TABLES=1 also keeps the table as
{set}.rank-{run}.table.npz."""
import argparse, json, os, sys
import numpy as np
from common import *
from train_table import Table, load_pairs
from table_eval import docent, baselines, minilm_qvecs

def top10_overlap(qv, qm, D):
    a = np.argsort(-(qv @ D.T), 1)[:, :10]
    b = np.argsort(-(qm @ D.T), 1)[:, :10]
    return float(np.mean([len(set(x) & set(y)) / 10 for x, y in zip(a, b)]))

def warm_table(c, a, T_, Y, log):
    """The cosine-only table (session 24's training) after a.warm epochs, cached per set."""
    p = f"{DATA}/{c}.cos{a.warm}.table.npz"
    t = Table(384, "sif")
    if os.path.exists(p):
        z = np.load(p); t.E, t.b = z["E"].copy(), z["b"].copy()
    else:
        log(f"{c}: cosine-only warm start, {a.warm} epochs on {len(T_)} texts")
        t.train(T_, Y, epochs=a.warm, lr=a.lr, ridge=a.ridge, log=log)
        np.savez(p, E=t.E, b=t.b)
    return t

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("sets")
    ap.add_argument("--T", default="0.05")
    ap.add_argument("--cos", default="1")
    ap.add_argument("--epochs", default="3")
    ap.add_argument("--w", default="1")
    ap.add_argument("--ridge", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--bits", type=int, default=8)
    ap.add_argument("--texts", default="general,general.q,{c},{c}.q")
    ap.add_argument("--rank-texts", default="{c},{c}.q")
    ap.add_argument("--tag", default="", help="appended to the run name (and its files)")
    ap.add_argument("--mode", default="hybrid", help="also 'vector' to score the vector list alone")
    ap.add_argument("--warm", type=int, default=0,
                    help="start from the cosine-only table trained N epochs on --texts (cached as "
                         "{set}.cos{N}.table.npz) and fine-tune on --rank-texts only for --epochs")
    a = ap.parse_args()
    log = lambda m: print(m, file=sys.stderr, flush=True)
    for c in a.sets.split(","):
        base = baselines(c)
        qt, qm = query_texts(c), minilm_qvecs(c)
        D = np.load(f"{DATA}/{c}.docvecs.npy").astype(np.float32)
        print(json.dumps({"corpus": c, "run": "lexical", **base["lexical"]}), flush=True)
        print(json.dumps({"corpus": c, "run": "hybrid", **base["hybrid"],
                          "top10": 1.0}), flush=True)
        names = [n.format(c=c) for n in a.texts.split(",")]
        ranked = {n.format(c=c) for n in a.rank_texts.split(",")}
        T_, Y, on = [], [], []
        for n in names:
            t, y = load_pairs([n])
            T_ += t; Y.append(y); on += [n in ranked] * len(t)
        Y = np.concatenate(Y); on = np.array(on)
        for ep in map(int, a.epochs.split(",")):
            for temp in map(float, a.T.split(",")):
                for cw, wk in [(x, y) for x in map(float, a.cos.split(",")) for y in map(float, a.w.split(","))]:
                    run = f"T{temp:g}-cos{cw:g}-w{wk:g}-e{ep}-b{a.bits}{a.tag}"
                    log(f"{c} {run}: {len(T_)} texts, {on.sum()} with the ranking term, {len(D)} chunks")
                    if a.warm:
                        t = warm_table(c, a, T_, Y, log)
                        sel = np.flatnonzero(on)
                        Tt, Yt, ont = [T_[i] for i in sel], Y[sel], on[sel]
                        run = f"warm{a.warm}-" + run
                    else:
                        t, Tt, Yt, ont = Table(384, "sif"), T_, Y, on
                    rank = dict(D=D, on=ont, T=temp, w=wk, cos=cw) if wk > 0 else None
                    t = t.train(Tt, Yt, epochs=ep, lr=a.lr, ridge=a.ridge, log=log, rank=rank)
                    t = t.quantised(a.bits)
                    qv = t.encode(qt)
                    qcos = float(np.mean([np.dot(x, y) for x, y in zip(qv, qm) if np.linalg.norm(x) > 0]))
                    path = f"{DATA}/{c}.rank-{run}.qvecs.jsonl"
                    write_qvecs(path, qt, qv)
                    out = {"corpus": c, "run": run}
                    for mode in a.mode.split(","):
                        r = docent(c, mode, qv=path)
                        out.update(r if mode == "hybrid" else {f"{mode}_{k}": v for k, v in r.items()})
                    gap = base["hybrid"]["R5"] - base["lexical"]["R5"]
                    out.update(gap_closed_pct=None if gap <= 0 else round((out["R5"] - base["lexical"]["R5"]) / gap * 100),
                               q_cos_minilm=round(qcos, 3), top10=round(top10_overlap(qv, qm, D), 3),
                               train_s=round(t.train_seconds))
                    print(json.dumps(out), flush=True)
                    if os.environ.get("SAVE_TABLES"):
                        np.savez(f"{DATA}/{c}.rank-{run}.table.npz", E=t.E, w=t.w, M=t.M, b=t.b,
                                 codes=getattr(t, "codes", np.zeros(0)), scale=getattr(t, "scale", np.zeros(0)))

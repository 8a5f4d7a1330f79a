"""Simulate "the static vector only reranks BM25's top N" (issue 26, session 25) in Python; docent
has no such mode (it would be a retrieve.rs change).

  python3 rerank_sim.py SETS QVECS_TAG[,TAG...] [--top 20] [--k 60] [--bits 1]

For each question: BM25's top N sections from `docent search --mode lexical --top N --floor 0
--json` (with --history for follow-ups), each section scored by the largest cosine of the question
vector with its chunks' float MiniLM vectors ({set}.docvecs.npy), then reordered. QVECS_TAG names
{set}.{TAG}.qvecs.jsonl (e.g. rank-T0.05-cos1-w1-e3-b8); "minilm" uses MiniLM's own question
vectors. Two orders: "cos" (by the cosine alone) and "rrf" (1/(k + BM25 rank) + 1/(k + cosine
rank), both ranks within the top N). Sections below N keep BM25's order; the vector of a follow-up
is its own text's (docent also embeds the last history turn; not simulated). Prints one JSON line
per (set, tag, order) with R@5 / R@10 / MRR@10 over answerable questions, and "lexical" (BM25's
order unchanged), which should reproduce `docent eval --mode lexical --floor 0`."""
import argparse, json, os, subprocess, tempfile
from collections import defaultdict
import numpy as np
from common import *

D_ = os.environ.get("DOCENT", "target/release-native/docent")
E_ = os.environ.get("DOCENT_EVAL_OUT", "target/eval")

def lexical_lists(corpus, n):
    cache = f"{DATA}/{corpus}.bm25top{n}.json"
    if os.path.exists(cache):
        return json.load(open(cache))
    out = []
    for q in questions(corpus):
        cmd = [D_, "search", "--mode", "lexical", "--top", str(n), "--floor", "0", "--json"]
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(q.get("history", []), f)
        if q.get("history"):
            cmd += ["--history", f.name]
        cmd += ["--", f"{E_}/{corpus}.local.idx", q["question"]]     # a question may start with "--"
        r = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        os.unlink(f.name)
        out.append([json.loads(l)["url"] for l in r.splitlines() if l.strip()])
    json.dump(out, open(cache, "w"))
    return out

def metrics(ranks):
    a = len(ranks)
    return dict(R5=round(sum(r is not None and r <= 5 for r in ranks) / a, 3),
                R10=round(sum(r is not None and r <= 10 for r in ranks) / a, 3),
                MRR=round(sum(1 / r for r in ranks if r is not None and r <= 10) / a, 3))

def rank_of(lst, gold, ns):
    for i, u in enumerate(lst):
        page = u.split("#")[0]        # a gold without an anchor is a page: any of its sections counts
        if u in gold or f"{ns}/{u}" in gold or page in gold or f"{ns}/{page}" in gold:
            return i + 1
    return None

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("sets"); ap.add_argument("tags")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--k", type=float, default=60)
    ap.add_argument("--bits", type=int, default=32, help="1: chunk vectors as the binary index keeps "
                    "them, mean + s * sign(v - mean) with s = mean |v - mean| (approximation)")
    a = ap.parse_args()
    for c in a.sets.split(","):
        cs = chunks(c)
        D = np.load(f"{DATA}/{c}.docvecs.npy").astype(np.float32)
        if a.bits == 1:
            mu = D.mean(0)
            D = mu + np.abs(D - mu).mean(1, keepdims=True) * np.sign(D - mu)
            D /= np.linalg.norm(D, axis=1, keepdims=True)
        ns = cs[0]["namespace"]
        sec = defaultdict(list)
        for i, ch in enumerate(cs):
            sec[ch["url"] + ("#" + ch["anchor"] if ch.get("anchor") else "")].append(i)
        qs = questions(c)
        lists = lexical_lists(c, a.top)
        ans = [i for i, q in enumerate(qs) if q["gold"]]
        print(json.dumps({"corpus": c, "run": "lexical",
                          **metrics([rank_of(lists[i], set(qs[i]["gold"]), ns) for i in ans])}), flush=True)
        for tag in a.tags.split(","):
            if tag == "minilm":
                vec = dict(zip(query_texts(c), np.load(f"{DATA}/{c}.minilm.qvecs.npy")))
            else:
                vec = {}
                for l in open(f"{DATA}/{c}.{tag}.qvecs.jsonl"):
                    r = json.loads(l); vec[r["text"]] = np.array(r["vector"], np.float32)
            for order in ("cos", "rrf"):
                ranks = []
                for i in ans:
                    lst = lists[i][:a.top]
                    v = vec[qs[i]["question"]]
                    cos = [max(float(D[j] @ v) for j in sec.get(u, [])) if sec.get(u) else -1 for u in lst]
                    vr = {u: r for r, u in enumerate(sorted(lst, key=lambda u: -cos[lst.index(u)]))}
                    if order == "cos":
                        new = sorted(lst, key=lambda u: vr[u])
                    else:
                        new = sorted(lst, key=lambda u: -(1 / (a.k + lst.index(u) + 1) + 1 / (a.k + vr[u] + 1)))
                    ranks.append(rank_of(new + lists[i][a.top:], set(qs[i]["gold"]), ns))
                print(json.dumps({"corpus": c, "run": f"{tag}/{order}{a.top}" + (f"-k{a.k:g}" if order == "rrf" else "") + ("-b1" if a.bits == 1 else ""), **metrics(ranks)}), flush=True)

import sys, json
from run import *
corpora = sys.argv[1].split(",")
for c in corpora:
    qv = {json.loads(l)['text']: np.array(json.loads(l)['vector']) for l in open(f'{DATA}/{c}.minilm.qvecs.jsonl')}
    rows = {"lexical": {f: docent(c, "lexical", floor=f) for f in (0, None)},
            "proxy-hybrid": {f: docent(c, "hybrid", floor=f) for f in (0, None)}}
    dense = {"proxy-hybrid": dense_eval(c, qv)}
    base = Encoder(c, weight="zipf", fit="chunk", common=5000, ridge=0.1)
    rows["static-384-f32"] = score(c, base, "v384")
    dense["static-384-f32"] = dense_eval(c, dict(zip(query_texts(c), base.encode(query_texts(c)))))
    for d, b in [(128, 4), (64, 4), (64, 8)]:
        enc = Compressed(base, d, b, "docs")
        rows[f"static-d{d}-b{b}"] = score(c, enc, f"d{d}b{b}")
        dense[f"static-d{d}-b{b}"] = dense_eval(c, dict(zip(query_texts(c), enc.encode(query_texts(c)))))
    for k, v in rows.items():
        print(json.dumps({"corpus": c, "run": k, "floor0": v[0], "default": v[None], "dense": dense.get(k)}), flush=True)

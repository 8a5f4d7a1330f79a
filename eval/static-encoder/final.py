import sys, json
from run import *
from general import fitted
for c in sys.argv[1].split(","):
    rows = {}
    rows["lexical"] = {f: docent(c, "lexical", floor=f) for f in (0, None)}
    rows["proxy-hybrid"] = {f: docent(c, "hybrid", floor=f) for f in (0, None)}
    enc = Encoder(c, weight="zipf", common=5000)
    enc.W = fitted(also_site=c)
    qt = query_texts(c)
    def run(e, tag, vw):
        path = f"{DATA}/{c}.{tag}.qvecs.jsonl"; write_qvecs(path, qt, e.encode(qt))
        extra = () if vw is None else ("--vector-weight", str(vw))
        return {f: docent(c, qv=path, floor=f, extra=extra) for f in (0, None)}
    rows["static-384-f32 vw1"] = run(enc, "s384", None)
    rows["static-384-f32 vw0.5"] = run(enc, "s384", 0.5)
    for d, b in [(128, 4), (64, 4)]:
        rows[f"static-d{d}-b{b} vw0.5"] = run(Compressed(enc, d, b, "docs"), f"d{d}b{b}", 0.5)
    rows["site-only-map-384 vw0.5"] = run(Encoder(c, weight="zipf", fit="chunk", common=5000, ridge=0.1), "site384", 0.5)
    for k, v in rows.items():
        print(json.dumps({"corpus": c, "run": k, "floor0": v[0], "default": v[None]}), flush=True)

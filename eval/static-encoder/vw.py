import sys
from run import *
from general import fitted
for c in sys.argv[1].split(","):
    enc = Encoder(c, weight="zipf", common=5000)
    enc.W = fitted(also_site=c)
    qt = query_texts(c); path = f"{DATA}/{c}.gs.qvecs.jsonl"; write_qvecs(path, qt, enc.encode(qt))
    for w in [None, 0.5, 0.7, 1.5]:
        extra = () if w is None else ("--vector-weight", str(w))
        print(c, "general+site vw", w, docent(c, qv=path, floor=0, extra=extra), flush=True)

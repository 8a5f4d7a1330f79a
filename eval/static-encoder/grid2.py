import sys, time
from run import *
corpora = sys.argv[1].split(",")
for c in corpora:
    base = Encoder(c, weight="zipf", fit="chunk", common=5000)
    for dims, bits, basis in [(128, 8, "docs"), (64, 8, "docs"), (64, 4, "docs"), (48, 4, "docs"), (32, 8, "docs"), (64, 8, "tokens"), (128, 4, "docs")]:
        enc = Compressed(base, dims, bits, basis)
        qt = query_texts(c)
        qv = dict(zip(qt, enc.encode(qt)))
        s = score(c, enc, "grid2")
        print(f"post-map {basis} d{dims} b{bits} {c:8s} dense={dense_eval(c, qv)} f0={s[0]}", flush=True)

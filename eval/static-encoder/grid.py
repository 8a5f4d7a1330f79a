import sys, time
from run import *
corpora = sys.argv[1].split(",")
configs = {
  "full384-none":        dict(weight="none"),
  "full384-zipf":        dict(weight="zipf"),
  "full384-idf":         dict(weight="idf"),
  "full384-sif":         dict(weight="sif"),
  "full384-logrank":     dict(weight="logrank"),
  "full384-zipf-center": dict(weight="zipf", center_tokens=True),
  "pca128-zipf":         dict(weight="zipf", dims=128),
  "full384-zipf-map-chunk":     dict(weight="zipf", fit="chunk"),
  "full384-zipf-map-chunk+head+sent": dict(weight="zipf", fit="chunk+head+sent"),
  "pca128-zipf-map-all":  dict(weight="zipf", dims=128, fit="chunk+head+sent"),
  "c-zipf-map-chunk": dict(weight="zipf", fit="chunk", center_tokens=True),
  "zipf-map-chunk-r0.1": dict(weight="zipf", fit="chunk", ridge=0.1),
  "zipf-map-chunk-r10": dict(weight="zipf", fit="chunk", ridge=10),
  "zipf-map-chunk+head": dict(weight="zipf", fit="chunk+head"),
  "sif-map-chunk": dict(weight="sif", fit="chunk"),
  "idf-map-chunk": dict(weight="idf", fit="chunk"),
  "none-map-chunk": dict(weight="none", fit="chunk"),
  "pca256-zipf-map-chunk": dict(weight="zipf", fit="chunk", dims=256),
  "pca128-zipf-map-chunk": dict(weight="zipf", fit="chunk", dims=128),
  "pca64-zipf-map-chunk": dict(weight="zipf", fit="chunk", dims=64),
  "b8-zipf-map-chunk": dict(weight="zipf", fit="chunk", bits=8),
  "b4-zipf-map-chunk": dict(weight="zipf", fit="chunk", bits=4),
  "v5k-zipf-map-chunk": dict(weight="zipf", fit="chunk", common=5000),
  "v10k-zipf-map-chunk": dict(weight="zipf", fit="chunk", common=10000),
  "v0-zipf-map-chunk": dict(weight="zipf", fit="chunk", common=0),
  "v5k-pca128-b8": dict(weight="zipf", fit="chunk", common=5000, dims=128, bits=8),
  "v5k-pca64-b8": dict(weight="zipf", fit="chunk", common=5000, dims=64, bits=8),
  "v5k-pca64-b4": dict(weight="zipf", fit="chunk", common=5000, dims=64, bits=4),
  "v5k-pca32-b8": dict(weight="zipf", fit="chunk", common=5000, dims=32, bits=8),
  "v2k-pca64-b4": dict(weight="zipf", fit="chunk", common=2000, dims=64, bits=4),
  "v5k-r0.01": dict(weight="zipf", fit="chunk", common=5000, ridge=0.01),
}
sel = sys.argv[2].split(",") if len(sys.argv) > 2 else list(configs)
for name in sel:
    for c in corpora:
        t0 = time.time()
        enc = Encoder(c, **configs[name])
        qv = dict(zip(query_texts(c), enc.encode(query_texts(c))))
        s = score(c, enc, "grid")
        print(f"{name:36s} {c:8s} dense={dense_eval(c, qv)} f0={s[0]} def={s[None]} ({time.time()-t0:.0f}s)", flush=True)

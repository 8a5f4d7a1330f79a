"""A general map (fitted once on the tuning corpora's chunks, shipped with docent) instead of a
per-site one."""
import sys, json
from run import *
fit_on = ["python", "git"]
def fitted(ridge=0.1, also_site=None):
    T = token_table(); V = T.shape[0]
    base = Encoder("python", weight="zipf", common=None)   # keep all: weights only
    X, Y = [], []
    for c in fit_on + ([also_site] if also_site else []):
        D = np.load(f"{DATA}/{c}.docvecs.npy")
        for i, ch in enumerate(chunks(c)):
            X.append(base.pool(embedding_input(ch))); Y.append(D[i])
    X = np.array(X); Y = np.array(Y)
    Xb = np.hstack([X, np.ones((len(X), 1), np.float32)])
    A = Xb.T @ Xb + ridge * len(X) / 1000 * np.eye(Xb.shape[1])
    return np.linalg.solve(A, Xb.T @ Y)
if __name__ == "__main__":
  W = fitted()
  for c in sys.argv[1].split(","):
      enc = Encoder(c, weight="zipf", common=5000)
      enc.W = W
      s = score(c, enc, "general")
      qt = query_texts(c)
      print(c, "general-map-384", "f0", s[0], "dense", dense_eval(c, dict(zip(qt, enc.encode(qt)))), flush=True)
      # general map + the site's own chunks in the fit (more data for small sites)
      enc.W = fitted(also_site=c)
      s = score(c, enc, "general+site")
      print(c, "general+site-384", "f0", s[0], "dense", dense_eval(c, dict(zip(qt, enc.encode(qt)))), flush=True)

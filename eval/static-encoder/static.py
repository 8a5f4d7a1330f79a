"""The static query encoder prototype: token table (+ PCA, quantisation, pruning, weights) and an
optional linear map to the doc space fitted on the site's own chunks."""
import re, numpy as np
from common import *

FIRST_WORD = 1996  # BERT uncased vocab: whole words from here on, roughly by frequency

_T = None
def token_table():
    global _T
    if _T is None:
        _T = np.load(f"{DATA}/token_vectors.npy")
    return _T

_ids_cache = {}
def ids(text):
    r = _ids_cache.get(text)
    if r is None:
        r = tok()(text, add_special_tokens=False, truncation=False)["input_ids"]
        _ids_cache[text] = r
    return r

def site_df(corpus):
    """document frequency of each token id over the site's chunks (embedding input)."""
    df = np.zeros(tok().vocab_size, dtype=np.int64)
    cs = chunks(corpus)
    for c in cs:
        for t in set(ids(embedding_input(c))):
            df[t] += 1
    return df, len(cs)

SENT = re.compile(r"(?<=[.!?:])\s+|\n+")

class Encoder:
    def __init__(self, corpus, dims=None, bits=None, common=None, weight="sif", sif_a=1e-3,
                 fit="none", ridge=1.0, center_tokens=False, drop_stop=False):
        self.corpus = corpus
        V = tok().vocab_size
        T = token_table().copy()
        if center_tokens:
            T = T - T[FIRST_WORD:].mean(0)
        df, n = site_df(corpus)
        self.df, self.n = df, n
        # vocabulary: the site's tokens + the `common` most frequent English words
        keep = df > 0
        if common is not None:
            keep[FIRST_WORD:FIRST_WORD + common] = True
            keep[:FIRST_WORD] &= True
        else:
            keep[:] = True
        keep[[tok().cls_token_id, tok().sep_token_id, tok().pad_token_id, tok().unk_token_id]] = False
        self.keep = keep
        # weights
        rank = np.arange(V, dtype=np.float64) - FIRST_WORD + 1
        rank[rank < 1] = 1  # punctuation, single characters: treat as frequent
        if weight == "none":
            w = np.ones(V)
        elif weight == "zipf":     # SIF on a Zipf prior from the vocab order
            p = 1.0 / (rank * np.log(1.78 * V))
            w = sif_a / (sif_a + p)
        elif weight == "logrank":  # model2vec
            w = np.log1p(rank)
        elif weight == "idf":      # the site's own idf; unseen tokens get the max
            idf = np.log((n + 1) / (df + 0.5))
            w = idf
        elif weight == "sif":      # SIF: site frequency mixed with the Zipf prior
            p_site = df / max(n, 1)
            p_zipf = 1.0 / (rank * np.log(1.78 * V))
            p = 0.5 * p_site / 20 + 0.5 * p_zipf
            w = sif_a / (sif_a + p)
        self.w = w.astype(np.float32)
        if drop_stop:
            self.w[FIRST_WORD:FIRST_WORD + 100] = 0
        self.w[:FIRST_WORD][np.array([not tok().convert_ids_to_tokens(i).isalnum() for i in range(FIRST_WORD)])] = 0
        # PCA over the kept rows
        rows = T[keep]
        self.mu = rows.mean(0)
        if dims is not None and dims < 384:
            u, s, vt = np.linalg.svd(rows - self.mu, full_matrices=False)
            self.P = vt[:dims].T  # 384 x dims
        else:
            self.P = None
        R = (T - self.mu) @ self.P if self.P is not None else T
        if bits:
            scale = np.abs(R).max(1, keepdims=True) / (2 ** (bits - 1) - 1)
            R = np.round(R / np.maximum(scale, 1e-12)) * scale
        R[~keep] = 0
        self.R = R.astype(np.float32)
        self.dims = R.shape[1]
        self.W = None
        if fit != "none":
            self.fit(fit, ridge)

    def pool(self, text):
        t = [i for i in ids(text) if self.keep[i]]
        if not t:
            return np.zeros(self.dims, dtype=np.float32)
        t = np.array(t)
        w = self.w[t]
        if w.sum() <= 0:
            return np.zeros(self.dims, dtype=np.float32)
        return (self.R[t] * w[:, None]).sum(0) / w.sum()

    def fit(self, how, ridge):
        cs = chunks(self.corpus)
        Y = np.load(f"{DATA}/{self.corpus}.docvecs.npy")
        X, T = [], []
        for i, c in enumerate(cs):
            texts = []
            if "chunk" in how:
                texts.append(embedding_input(c))
            if "head" in how:
                texts.append(" ".join(c["breadcrumb"][-2:]) or c["title"])
            if "sent" in how:
                ss = [s for s in SENT.split(c["text"]) if len(s.split()) >= 4][:8]
                texts.extend(ss)
            for t in texts:
                X.append(self.pool(t)); T.append(Y[i])
        X = np.array(X); T = np.array(T)
        Xb = np.hstack([X, np.ones((len(X), 1), np.float32)])
        A = Xb.T @ Xb + ridge * len(X) / 1000 * np.eye(Xb.shape[1])
        self.W = np.linalg.solve(A, Xb.T @ T)
        self.npairs = len(X)

    def encode(self, texts):
        out = []
        for t in texts:
            v = self.pool(t)
            if self.W is not None:
                v = np.append(v, 1.0) @ self.W
            elif self.P is not None:
                v = v @ self.P.T + self.mu
            n = np.linalg.norm(v)
            out.append(v / n if n > 0 else v)
        return np.array(out, dtype=np.float32)

def dense_eval(corpus, qvecs_by_text, k=(5, 10)):
    """Vector-only section recall and MRR@10 with float doc vectors (a quick proxy, not docent's)."""
    cs = chunks(corpus)
    D = np.load(f"{DATA}/{corpus}.docvecs.npy")
    sec = [(c["namespace"], c["url"], c["anchor"]) for c in cs]
    res = {f"R@{x}": 0 for x in k}; res["MRR"] = 0; n = 0
    for q in questions(corpus):
        if not q["gold"] or q.get("kind") == "followup":
            continue
        n += 1
        s = D @ qvecs_by_text[q["question"]]
        seen = []
        rank = None
        for i in np.argsort(-s):
            if sec[i] not in seen:
                seen.append(sec[i])
                ns, url, a = sec[i]
                if any(g in (f"{url}#{a}", f"{ns}/{url}#{a}") if "#" in g else g in (url, f"{ns}/{url}") for g in q["gold"]):
                    rank = len(seen); break
            if len(seen) >= 10:
                break
        for x in k:
            res[f"R@{x}"] += rank is not None and rank <= x
        res["MRR"] += 1 / rank if rank else 0
    return {a: round(b / n, 3) for a, b in res.items()}

class Compressed:
    """Fold the map into per-token vectors in the doc space, then keep `dims` coordinates of them
    on a basis (`basis`: 'docs' = principal directions of the site's doc vectors, 'tokens' = of the
    folded token vectors), quantised to `bits` per coordinate with one scale per token."""
    def __init__(self, enc, dims=64, bits=8, basis="docs"):
        self.enc = enc
        Wx, b = enc.W[:-1], enc.W[-1]
        keep = enc.keep
        G = enc.R @ Wx                                      # V x 384, zero rows for dropped tokens
        if basis == "docs":
            Y = np.load(f"{DATA}/{enc.corpus}.docvecs.npy")
            mu = Y.mean(0)
            _, _, vt = np.linalg.svd(Y - mu, full_matrices=False)
        else:
            wk = enc.w[keep][:, None]
            mu = (G[keep] * wk).sum(0) / wk.sum()
            _, _, vt = np.linalg.svd((G[keep] - mu) * np.sqrt(wk), full_matrices=False)
        B = vt[:dims].T                                     # 384 x dims
        C = (G - mu) @ B
        if bits:
            scale = np.abs(C).max(1, keepdims=True) / (2 ** (bits - 1) - 1)
            C = np.round(C / np.maximum(scale, 1e-12)) * scale
        C[~keep] = 0
        self.C, self.B, self.off = C.astype(np.float32), B, mu + b   # pooled G = pooled C @ B.T + mu
        self.dims = dims
    def encode(self, texts):
        e = self.enc
        out = []
        for t in texts:
            tt = [i for i in ids(t) if e.keep[i]]
            w = e.w[tt] if tt else np.zeros(0)
            if not tt or w.sum() <= 0:
                out.append(np.zeros(384, np.float32)); continue
            c = (self.C[tt] * w[:, None]).sum(0) / w.sum()
            v = c @ self.B.T + self.off
            out.append(v / np.linalg.norm(v))
        return np.array(out, np.float32)

"""A static query table TRAINED on sentences (tokenlearn / POTION-style), issue 26, session 24.

Each text's vector is the weighted mean of its WordPiece pieces' rows, times a map:
    v(text) = (sum_i w[p_i] E[p_i] / sum_i w[p_i]) @ M + b,   then normalised
and E (and optionally w, M, b) are fitted with Adam so that v(text) has the largest cosine with
the text's real all-MiniLM-L6-v2 vector (mean pooling, normalised) over short texts: the site's
own headings, sentences and windows plus general English docs (texts.py). E starts at the
distilled rows (token_vectors.py: each piece alone through MiniLM, centred) and a ridge term
pulls it toward them; pieces that occur in no training text keep the distilled row.

Variants (Table.train arguments):
  d=384            rows in MiniLM's space, M fixed to the identity (only b learned)
  d=32/48/64/...   rows trained directly in d coordinates with a learned d x 384 map M,
                   initialised from the principal directions of the distilled rows
  weights="sif"    fixed SIF weights on a Zipf prior (session 15); "learn": one learned
                   positive scalar per piece, initialised at SIF
  bits=8/4         rows quantised after training (symmetric, one scale per row)
"""
import json, math, os, sys, time, gzip, hashlib
import numpy as np, torch
from common import *

FIRST_WORD = 1996
MAXLEN = 64

def zipf_sif(V, a=1e-3):
    rank = np.arange(V, dtype=np.float64) - FIRST_WORD + 1
    rank[rank < 1] = 1
    p = 1.0 / (rank * np.log(1.78 * V))
    w = a / (a + p)
    t = tok()
    for i in range(FIRST_WORD):
        if not t.convert_ids_to_tokens(i).isalnum():
            w[i] = 0
    for s in (t.cls_token_id, t.sep_token_id, t.pad_token_id, t.unk_token_id):
        w[s] = 0
    return w.astype(np.float32)

def encode_ids(texts):
    return [r[:MAXLEN] for r in tok()(texts, add_special_tokens=False, truncation=False)["input_ids"]]

def load_pairs(names):
    T, Y = [], []
    for n in names:
        T += json.load(open(f"{DATA}/{n}.texts.json"))
        Y.append(np.load(f"{DATA}/{n}.textvecs.npy").astype(np.float32))
    return T, np.concatenate(Y)

def pad(batch_ids):
    L = max(1, max(len(x) for x in batch_ids))
    a = np.zeros((len(batch_ids), L), np.int64)
    m = np.zeros((len(batch_ids), L), np.float32)
    for i, x in enumerate(batch_ids):
        a[i, :len(x)] = x; m[i, :len(x)] = 1
    return torch.from_numpy(a), torch.from_numpy(m)

def rank_kl(v, y, rank):
    """Mean KL(teacher || student) between softmax over the chunks of MiniLM's vector y and of the
    table's vector v (normalised), temperature rank["T"]."""
    D, T = rank["Dt"], rank["T"]
    vn = torch.nn.functional.normalize(v, dim=-1)
    p = torch.log_softmax(y @ D.T / T, dim=-1)
    q = torch.log_softmax(vn @ D.T / T, dim=-1)
    return (p.exp() * (p - q)).sum(-1).mean()

class Table:
    def __init__(self, d=384, weights="sif"):
        V = tok().vocab_size
        T = np.load(f"{DATA}/token_vectors.npy")
        mu = T[FIRST_WORD:].mean(0)
        E0 = T - mu
        E0 /= np.sqrt((E0[FIRST_WORD:] ** 2).sum(1).mean())     # rows of norm ~1
        self.d, self.weights = d, weights
        self.w0 = zipf_sif(V)
        if d < 384:
            _, _, vt = np.linalg.svd(E0[FIRST_WORD:], full_matrices=False)
            P = vt[:d]                                            # d x 384
            self.E0 = (E0 @ P.T).astype(np.float32)
            self.M = P.astype(np.float32)
        else:
            self.E0 = E0.astype(np.float32)
            self.M = np.eye(384, dtype=np.float32)
        self.E = self.E0.copy()
        self.w = self.w0.copy()
        self.b = np.zeros(384, np.float32)

    def train(self, texts, Y, epochs=8, lr=3e-3, ridge=1e-3, bs=256, seed=0, log=None, rank=None):
        """rank (session 25): None, or dict(D=chunk vectors N x 384 (float MiniLM, normalised),
        on=bool array over texts (which texts get the ranking term), T=temperature, w=its weight,
        cos=weight of the cosine term). The ranking term is KL(softmax(y.D/T) || softmax(v.D/T))
        between MiniLM's and the table's distribution over the site's own chunks."""
        g = torch.Generator().manual_seed(seed)
        ids = encode_ids(texts)
        seen = np.unique(np.concatenate([np.array(x, np.int64) for x in ids if x]))
        remap = np.full(len(self.E), -1, np.int64); remap[seen] = np.arange(len(seen))
        cid = [remap[np.array(x, np.int64)] if x else np.zeros(0, np.int64) for x in ids]
        E = torch.nn.Parameter(torch.from_numpy(self.E[seen].copy()))
        E0 = torch.from_numpy(self.E0[seen])
        w0 = torch.from_numpy(self.w0[seen])
        s = torch.nn.Parameter(torch.log(torch.expm1(w0.clamp(min=1e-4))))   # softplus^-1
        M = torch.nn.Parameter(torch.from_numpy(self.M.copy()))
        b = torch.nn.Parameter(torch.from_numpy(self.b.copy()))     # zeros unless warm-started
        params = [E, b] + ([M] if self.d < 384 else []) + ([s] if self.weights == "learn" else [])
        opt = torch.optim.Adam(params, lr=lr)
        Yt = torch.from_numpy(Y)
        n = len(texts)
        hold = torch.randperm(n, generator=g)[: max(1, n // 50)]
        holdset = set(hold.tolist())
        train_idx = torch.tensor([i for i in range(n) if i not in holdset])
        zero_w = (w0 == 0)
        if rank is not None:
            rank["Dt"] = torch.from_numpy(np.asarray(rank["D"], np.float32))
        def forward(bi):
            a, m = pad([cid[i] for i in bi])
            ww = torch.nn.functional.softplus(s) if self.weights == "learn" else w0
            ww = torch.where(zero_w, torch.zeros_like(ww), ww)
            wt = ww[a] * m
            pooled = (E[a] * wt.unsqueeze(-1)).sum(1) / wt.sum(1, keepdim=True).clamp(min=1e-6)
            return pooled @ M + b
        t0 = time.time()
        steps = 0
        for ep in range(epochs):
            perm = train_idx[torch.randperm(len(train_idx), generator=g)]
            tot = 0.0
            for k in range(0, len(perm), bs):
                bi = perm[k:k + bs].tolist()
                v = forward(bi)
                loss = (1 - torch.nn.functional.cosine_similarity(v, Yt[bi], dim=-1)).mean()
                tot += loss.item() * len(bi); steps += 1
                if rank is not None:
                    pos = [k for k, i in enumerate(bi) if rank["on"][i]]
                    kl = rank_kl(v[pos], Yt[[bi[k] for k in pos]], rank) if pos else 0.0
                    loss = rank["cos"] * loss + rank["w"] * kl
                reg = ridge * ((E - E0) ** 2).sum(1).mean()
                opt.zero_grad(); (loss + reg).backward(); opt.step()
            with torch.no_grad():
                hv = forward(hold.tolist())
                hc = torch.nn.functional.cosine_similarity(hv, Yt[hold], dim=-1).mean().item()
                hk = ""
                if rank is not None:
                    pos = [k for k, i in enumerate(hold.tolist()) if rank["on"][i]]
                    hk = f"  held-out KL {rank_kl(hv[pos], Yt[hold[pos]], rank).item():.4f}" if pos else ""
            if log:
                log(f"  epoch {ep + 1}: train cos {1 - tot / len(perm):.4f}  held-out cos {hc:.4f}{hk}  {time.time() - t0:.0f}s")
        self.E[seen] = E.detach().numpy()
        if self.weights == "learn":
            ww = torch.nn.functional.softplus(s).detach().numpy()
            ww[self.w0[seen] == 0] = 0
            self.w[seen] = ww
        self.M = M.detach().numpy(); self.b = b.detach().numpy()
        self.train_seconds = time.time() - t0
        self.seen = seen
        return self

    def quantised(self, bits):
        """A copy with rows quantised to `bits` (symmetric, f16 scale per row), weights to u8."""
        q = Table.__new__(Table); q.__dict__.update(self.__dict__)
        if bits:
            lv = 2 ** (bits - 1) - 1
            scale = np.abs(self.E).max(1, keepdims=True) / lv
            scale = scale.astype(np.float16).astype(np.float32)
            codes = np.round(self.E / np.maximum(scale, 1e-12)).clip(-lv, lv)
            q.codes, q.scale = codes.astype(np.int8), scale
            q.E = (codes * scale).astype(np.float32)
        wmax = self.w.max()
        q.wq = np.round(self.w / wmax * 255).astype(np.uint8)
        q.w = q.wq.astype(np.float32) / 255 * wmax
        q.M = self.M.astype(np.float16).astype(np.float32)
        q.b = self.b.astype(np.float16).astype(np.float32)
        return q

    def encode(self, texts):
        out = np.zeros((len(texts), 384), np.float32)
        for j, x in enumerate(encode_ids(texts)):
            x = np.array(x, np.int64)
            if len(x) == 0: continue
            w = self.w[x]
            if w.sum() <= 0: continue
            v = (self.E[x] * w[:, None]).sum(0) / w.sum() @ self.M + self.b
            out[j] = v / np.linalg.norm(v)
        return out

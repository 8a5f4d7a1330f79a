"""Per-token vectors, model2vec-style: MiniLM on [CLS] tok [SEP] alone, mean pooling."""
import numpy as np, torch, time
from common import *
t0 = time.time()
tk = tok(); m = model()
V = tk.vocab_size
cls, sep = tk.cls_token_id, tk.sep_token_id
out = np.zeros((V, 384), dtype=np.float32)
with torch.no_grad():
    for s in range(0, V, 1024):
        ids = torch.arange(s, min(V, s + 1024))
        inp = torch.stack([torch.full_like(ids, cls), ids, torch.full_like(ids, sep)], 1)
        h = m(input_ids=inp, attention_mask=torch.ones_like(inp)).last_hidden_state
        out[s:s+len(ids)] = h.mean(1).numpy()
np.save(f"{DATA}/token_vectors.npy", out)
print("done", time.time() - t0)

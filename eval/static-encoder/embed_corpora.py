"""Float MiniLM vectors of every chunk (the index's doc vectors before quantisation) and of every
question text (what the proxy / local embedder gives docent)."""
import sys, time, numpy as np
from common import *
for corpus in sys.argv[1:]:
    t0 = time.time()
    cs = chunks(corpus)
    np.save(f"{DATA}/{corpus}.docvecs.npy", embed([embedding_input(c) for c in cs]))
    qt = query_texts(corpus)
    qv = embed(qt)
    write_qvecs(f"{DATA}/{corpus}.minilm.qvecs.jsonl", qt, qv)
    print(corpus, len(cs), "chunks", len(qt), "query texts", round(time.time() - t0), "s", flush=True)

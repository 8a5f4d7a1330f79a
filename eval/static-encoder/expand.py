"""Index-time expansion: each chunk gets the k vocabulary words whose one-word query vector
(static rows through the general+site map) is nearest its MiniLM vector, scored lexical-only
through docent eval --expand-terms."""
import sys, json
from run import *
from general import fitted

def word_rows(enc):
    V = tok().vocab_size
    words = []
    for i in np.nonzero(enc.keep)[0]:
        t = tok().convert_ids_to_tokens(int(i))
        if i >= FIRST_WORD + 100 and t.isalpha() and len(t) >= 3 and not t.startswith("##"):
            words.append((int(i), t))
    return words

def expansion(c, how="mapped"):
    enc = Encoder(c, weight="zipf", common=5000)
    words = word_rows(enc)
    ids_ = np.array([i for i, _ in words])
    if how == "mapped":
        enc.W = fitted(also_site=c)
        Wx, b = enc.W[:-1], enc.W[-1]
        Q = enc.R[ids_] @ Wx + b
    else:  # raw rows, centred
        T = token_table()
        Q = T[ids_] - T[FIRST_WORD:].mean(0)
    Q /= np.linalg.norm(Q, axis=1, keepdims=True)
    D = np.load(f"{DATA}/{c}.docvecs.npy")
    S = D @ Q.T
    return words, S

def write(c, words, S, k, path):
    cs = chunks(c)
    with open(path, "w") as f:
        for j, ch in enumerate(cs):
            have = set(ids(embedding_input(ch)))
            order = np.argsort(-S[j])
            terms = []
            for o in order:
                i, t = words[o]
                if i not in have:
                    terms.append(t)
                if len(terms) >= k:
                    break
            f.write(json.dumps({"chunk": ch["chunk"], "terms": " ".join(terms)}) + "\n")

if __name__ == "__main__":
    corpora = sys.argv[1].split(","); hows = sys.argv[2].split(",") if len(sys.argv) > 2 else ["mapped"]
    ks = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else [5, 10, 20]
    for c in corpora:
        empty = f"{DATA}/{c}.expand0.jsonl"; open(empty, "w").close()
        print(c, "lexical, no expansion (rewritten index)", docent(c, "lexical", floor=0, extra=("--expand-terms", empty)), flush=True)
        for how in hows:
            words, S = expansion(c, how)
            for k in ks:
                path = f"{DATA}/{c}.expand-{how}-{k}.jsonl"
                write(c, words, S, k, path)
                print(c, f"lexical + {k} {how} terms", docent(c, "lexical", floor=0, extra=("--expand-terms", path)), flush=True)

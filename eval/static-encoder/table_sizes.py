"""Bytes of a trained table (table_eval.py with SAVE_TABLES=1): the whole table gz, and what one
question fetches when rows are fetched by need from static shard files keyed by a hash of the
piece's text (so the widget needs no vocabulary: it hashes each piece of the question, fetches
those shards in one round, and finds the piece in the shard).

A row in a shard: piece text (u8 length + UTF-8), weight u8, scale f16, d coordinates at `bits`
(f16 when bits = 0). The map (d x 384, f16) and offset (384, f16) are one small extra file.

  python3 table_sizes.py CORPUS VARIANT [ROWS_PER_SHARD,...]"""
import gzip, hashlib, struct, sys
import numpy as np
from common import *
from train_table import encode_ids, FIRST_WORD

def row_bytes(piece, w, scale, row, bits):
    p = piece.encode()
    out = bytes([len(p)]) + p + bytes([int(w)])
    if bits == 0:
        return out + row.astype(np.float16).tobytes()
    out += np.float16(scale).tobytes()
    c = row.astype(np.int16)
    if bits == 8:
        return out + c.astype(np.int8).tobytes()
    u = (c + 8).astype(np.uint8)                       # 4 bits: -7..7 -> 1..15
    if len(u) % 2: u = np.append(u, 0)
    return out + (u[0::2] | (u[1::2] << 4)).astype(np.uint8).tobytes()

def shard_of(piece, n):
    return int.from_bytes(hashlib.blake2s(piece.encode(), digest_size=4).digest(), "little") % n

if __name__ == "__main__":
    corpus, variant = sys.argv[1], sys.argv[2]
    per = [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "16,64,256").split(",")]
    bits = int(variant.split("-")[2][1:])
    z = np.load(f"{DATA}/{corpus}.{variant}.table.npz")
    t = tok()
    V = t.vocab_size
    wq = np.round(z["w"] / z["w"].max() * 255)
    live = [i for i in range(V) if wq[i] > 0]
    if bits:
        codes, scale = z["codes"], z["scale"][:, 0]
    else:
        codes, scale = z["E"], np.zeros(V)
    rows = {i: row_bytes(t.convert_ids_to_tokens(i), wq[i], scale[i], codes[i], bits) for i in live}
    gz = lambda b: len(gzip.compress(b, 9))
    mapb = z["M"].astype(np.float16).tobytes() + z["b"].astype(np.float16).tobytes()
    # pruned: the site's pieces + the 5,000 most frequent words (session 15's vocabulary)
    site = set()
    for ids in encode_ids([c["text"] for c in chunks(corpus)] + [" ".join(c["breadcrumb"]) for c in chunks(corpus)]):
        site.update(ids)
    pruned = [i for i in live if i in site or FIRST_WORD <= i < FIRST_WORD + 5000]
    print(f"{corpus} {variant}: map+offset {len(mapb)} B, gz {gz(mapb)} B")
    print(f"  whole table, {len(live)} rows: raw {sum(len(rows[i]) for i in live)} B, gz {gz(b''.join(rows[i] for i in live))} B")
    print(f"  pruned (site pieces + 5,000 words), {len(pruned)} rows: gz {gz(b''.join(rows[i] for i in pruned))} B")
    qs = [encode_ids([q])[0] for q in query_texts(corpus)]
    npieces = [len({i for i in q if i in rows}) for q in qs]
    print(f"  distinct live pieces per question: median {int(np.median(npieces))}, p90 {int(np.percentile(npieces, 90))}, max {max(npieces)}")
    for r in per:
        n = max(1, len(live) // r)
        shards = {}
        for i in live:
            shards.setdefault(shard_of(t.convert_ids_to_tokens(i), n), []).append(rows[i])
        sz = {k: gz(b"".join(v)) for k, v in shards.items()}
        perq = [sum(sz[s] for s in {shard_of(t.convert_ids_to_tokens(i), n) for i in q if i in rows}) for q in qs]
        nsh = [len({shard_of(t.convert_ids_to_tokens(i), n) for i in q if i in rows}) for q in qs]
        print(f"  {n} shards of ~{r} rows (median shard {int(np.median(list(sz.values())))} B gz): per question "
              f"median {int(np.median(perq))} B, p90 {int(np.percentile(perq, 90))} B, max {max(perq)} B, "
              f"{int(np.median(nsh))} files (median) + the map once")

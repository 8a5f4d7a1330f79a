"""Bytes of the encoder file (the layout of crates/core/src/static_embed.rs) per corpus, raw and gz."""
import sys, gzip, struct
from static import *
def file_bytes(rows, coords, bits, dims=384, vocab_blob=b""):
    n = 4 + 4*5 + 8 + 4 + len("sentence-transformers/all-MiniLM-L6-v2") + 4 + len(vocab_blob)
    n += rows + 4*rows + 4*coords*dims + 4*dims + (rows*coords*bits + 7)//8
    return n
for c in sys.argv[1].split(","):
    df, n = site_df(c)
    keep = df > 0; keep[FIRST_WORD:FIRST_WORD+5000] = True
    keep[[tok().cls_token_id, tok().sep_token_id, tok().pad_token_id, tok().unk_token_id]] = False
    ids_ = np.nonzero(keep)[0]
    blob = "\n".join(tok().convert_ids_to_tokens(ids_.tolist())).encode()
    rng = np.random.default_rng(0)
    for coords, bits in [(64, 4), (128, 4), (384, 8)]:
        raw = bytearray(b"DCSQ" + b"\0"*(4*5+8+4) + b"sentence-transformers/all-MiniLM-L6-v2" + b"\0"*4 + blob)
        rows = len(ids_)
        raw += rng.integers(0, 256, rows, dtype=np.uint8).tobytes()                 # weights
        raw += rng.normal(size=rows).astype(np.float32).tobytes()                    # scales
        raw += rng.normal(size=coords*384 + 384).astype(np.float32).tobytes()        # basis+offset
        # levels: roughly Gaussian coordinates quantised to `bits` (what gz sees)
        top = 2**(bits-1)-1
        C = rng.normal(size=(rows, coords)); C = np.round(C / np.abs(C).max(1, keepdims=True) * top).astype(np.int8)
        if bits == 4:
            u = (C & 0xF).astype(np.uint8).reshape(-1); u = np.append(u, np.zeros(len(u) % 2, np.uint8))
            raw += (u[0::2] | (u[1::2] << 4)).tobytes()
        else:
            raw += C.tobytes()
        gz = len(gzip.compress(bytes(raw), 9))
        print(f"{c:16s} rows {rows:5d} coords {coords:3d} bits {bits}: {len(raw)/1024:7.1f} KiB raw, {gz/1024:7.1f} KiB gz, vocab blob {len(blob)/1024:.1f} KiB")

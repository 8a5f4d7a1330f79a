"""docent's answer / hedge / decline rule for English questions (crates/core/src/search.rs,
`search` after fusion; default floor 0.5), re-run on the `signals` `docent eval --json` reports
per question, with the cosine optionally rescaled about MiniLM's off-topic baseline (0.01):
`outcome(signals, scale)`. With scale 1 it reproduced all 1,342 English outcomes of the binary
it was checked against (BENCHMARKS.md §2.0.17). Keep it in step with search.rs if the rule
changes: COSINE_* in `cosine_confidence`, KNOWN_* in `known_confidence`, DECLINE_SHARE,
HEDGE_FACTOR, WORDS_APART, COVERAGE_NOT_DECLINED, COVERAGE_ANSWERED."""
import json,sys
def cc(c):
    if c>=0.20: v=0.5+(c-0.20)/0.30*0.5
    else: v=(c-0.06)/0.14*0.5
    return max(0,min(1,v))
def kc(k):
    if k>=0.7: v=0.5+(k-0.7)/0.3*0.5
    else: v=(k-0.3)/0.4*0.5
    return max(0,min(1,v))
def outcome(s, scale=1.0, speaks=True, anisotropic=False):
    """'answered', 'uncertain' or 'declined' (None for a question not judged). `anisotropic`:
    the index's model is (embedding.off_topic_cosine >= 0.5), so its cosine never vouches
    against the words-apart rule (session 25)."""
    c=s['top_cosine']; 
    if c is not None: c=0.01+(c-0.01)*scale
    if not speaks: return None
    cv=cc(c) if c is not None else None
    kv=kc(s['known']) if s['known'] is not None else None
    if s['follow_up'] and kv is not None: conf=kv
    elif cv is not None and kv is not None: conf=min(cv,kv)
    else: conf=cv if cv is not None else (kv or 0)
    wa=(not s['follow_up']) and s['together'] is not None and s['together']<=1 and (anisotropic or cv is None or cv<0.75)
    cov=s['coverage'] or 0
    if (conf<0.3 or (conf<0.75 and wa)) and not cov>=0.6: return 'declined'
    if conf<0.75 and not (cov>=0.5 and cv is not None and cv>=0.5): return 'uncertain'
    return 'answered'

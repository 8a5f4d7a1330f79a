"""Short training texts for a sentence-trained static table (tokenlearn-style), and their MiniLM
vectors (mean pooling, normalised: what the index and the proxy make).

  python3 texts.py site CORPUS...   # from the site's own chunks: headings, heading + first
                                    # sentence, sentences, 5-20 word windows
  python3 texts.py general          # general English docs on this machine that are no eval set
                                    # (Debian's nodejs API docs + other /usr/share/doc HTML)

Writes {DATA}/{name}.texts.json and {DATA}/{name}.textvecs.npy."""
import glob, gzip, html, json, random, re, sys, time
import numpy as np
from common import *

SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|\n\s*\n")
CODE = re.compile(r"```.*?```", re.S)
WORD = re.compile(r"[A-Za-z]")

def clean(t):
    t = CODE.sub(" ", t)
    t = re.sub(r"<[^>]+>", " ", t)
    t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", t)      # markdown links
    t = re.sub(r"[*_#>|]+", " ", t)
    return t

def sentences(t):
    out = []
    for para in re.split(r"\n\s*\n", clean(t)):
        para = " ".join(para.split())
        for s in SENT.split(para):
            s = s.strip()
            n = len(s.split())
            if 3 <= n <= 40 and len(WORD.findall(s)) >= 8:
                out.append(s)
    return out

def windows(sents, rng, k):
    """k windows of 5-20 words cut from the concatenated sentences."""
    words = " ".join(sents).split()
    out = []
    for _ in range(k):
        if len(words) < 6:
            break
        n = rng.randint(5, 20)
        i = rng.randrange(0, max(1, len(words) - n))
        out.append(" ".join(words[i:i + n]))
    return out

def site_texts(corpus, rng):
    ts = []
    for c in chunks(corpus):
        heads = [h for h in c["breadcrumb"] if h] or [c["title"]]
        ss = sentences(c["text"])
        ts.append(heads[-1])
        if len(heads) > 1:
            ts.append(" ".join(heads[-2:]))
        if ss:
            ts.append(heads[-1] + ". " + ss[0])
        ts.extend(ss)
        ts.extend(windows(ss, rng, max(1, len(ss) // 2)))
    return ts

def general_texts(rng, cap=int(os.environ.get("GENERAL_CAP", "12000"))):
    ts = []
    for p in sorted(glob.glob("/usr/share/doc/nodejs/api/*.md")):
        if p.endswith("/all.md"):
            continue
        src = open(p, errors="ignore").read()
        heads = [h.strip("# `") for h in re.findall(r"^#{1,4} .+$", src, re.M)]
        ts.extend(h for h in heads if len(WORD.findall(h)) >= 4)
        ss = sentences(src)
        ts.extend(ss)
        ts.extend(windows(ss, rng, len(ss) // 3))
    # other HTML manuals on the machine (not python, git or postgresql: those are eval corpora)
    for p in sorted(glob.glob("/usr/share/doc/**/*.html", recursive=True)):
        if re.search(r"python|git|postgres|nodejs", p) or not os.path.isfile(p):
            continue
        src = open(p, errors="ignore").read()
        src = re.sub(r"<(script|style|pre)[^>]*>.*?</\1>", " ", src, flags=re.S | re.I)
        src = html.unescape(re.sub(r"</?(p|div|h\d|li|br|tr|dd|dt)[^>]*>", "\n\n", src, flags=re.I))
        ss = sentences(src)
        ts.extend(ss)
        ts.extend(windows(ss, rng, len(ss) // 4))
    ts = list(dict.fromkeys(ts))
    rng.shuffle(ts)
    return ts[:cap]

TEMPLATES = ["How do I {l}?", "What is {h}?", "How does {h} work?", "how to {l}", "{h}?",
             "Can I {l}?", "Where is {h} explained?", "What does {h} do?", "{l} not working",
             "Is there a way to {l}?", "How do I use {h} in {p}?", "{p}: {l}"]

def heading_questions(heads, rng, k=3):
    """Question-shaped texts made from headings with generic templates (no eval question is read):
    they teach the table what question words do to MiniLM's vector."""
    out = []
    for p, h in heads:
        h = re.sub(r"^[\d.]+\s+", "", h).strip(" `:")
        if len(WORD.findall(h)) < 3:
            continue
        for t in rng.sample(TEMPLATES, k):
            out.append(t.format(h=h, l=h[0].lower() + h[1:], p=p or "the docs"))
    return out

def site_headings(corpus):
    hs = []
    for c in chunks(corpus):
        for h in c["breadcrumb"][1:] or [c["title"]]:
            hs.append((c["title"], h))
    return list(dict.fromkeys(hs))

def general_headings():
    hs = []
    for p in sorted(glob.glob("/usr/share/doc/nodejs/api/*.md")):
        if p.endswith("/all.md"):
            continue
        src = open(p, errors="ignore").read()
        title = (re.findall(r"^# (.+)$", src, re.M) or [""])[0].strip()
        hs += [(title, h.strip("# `")) for h in re.findall(r"^#{2,4} .+$", src, re.M)]
    return list(dict.fromkeys(hs))

if __name__ == "__main__":
    rng = random.Random(26)
    if sys.argv[1] == "general":
        jobs = [("general", None)]
    elif sys.argv[1] == "general2":        # the next GENERAL2_CAP general texts after the first GENERAL_CAP
        jobs = [("general2", None)]
    elif sys.argv[1] == "questions":       # heading questions: general.q and <corpus>.q
        jobs = [(f"{c}.q", c) for c in sys.argv[2:]]
    else:
        jobs = [(c, c) for c in sys.argv[2:]]
    for name, corpus in jobs:
        t0 = time.time()
        if name == "general":
            ts = general_texts(rng)
        elif name == "general2":
            cap = int(os.environ.get("GENERAL_CAP", "12000"))
            ts = general_texts(rng, cap + int(os.environ.get("GENERAL2_CAP", "16000")))[cap:]
        elif name.endswith(".q"):
            heads = general_headings() if corpus == "general" else site_headings(corpus)
            ts = list(dict.fromkeys(heading_questions(heads, rng)))
            rng.shuffle(ts); ts = ts[:int(os.environ.get("Q_CAP", "3000"))]
            corpus = None
        else:
            ts = list(dict.fromkeys(site_texts(corpus, rng)))
        cap = int(os.environ.get("SITE_CAP", "8000"))
        if corpus is not None and len(ts) > cap:
            rng.shuffle(ts); ts = ts[:cap]
        json.dump(ts, open(f"{DATA}/{name}.texts.json", "w"))
        if os.environ.get("NO_EMBED"):
            print(name, len(ts), "texts"); continue
        np.save(f"{DATA}/{name}.textvecs.npy", embed(ts, bs=128, max_len=64).astype(np.float16))
        print(name, len(ts), "texts", round(time.time() - t0), "s", flush=True)

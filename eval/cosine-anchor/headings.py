"""Section headings asked as questions (BENCHMARKS.md §2.0.17): up to 150 per corpus, as
`{"question": heading, "gold": []}` lines for `docent eval --floor 0 --json`, whose per-question
`signals.top_cosine` gives the on-topic anchor (their median).

    python3 eval/cosine-anchor/headings.py OUT_DIR

Corpora: the Markdown ones under eval/corpora/, the Rust toolchain's edition guide and rustdoc
book, Python's and git's HTML docs (the same folders scripts/eval indexes)."""
import glob, html, json, os, random, re, subprocess, sys

out = sys.argv[1]
rust = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
rust += "/share/doc/rust/html"
md = {c: f"eval/corpora/{c}/docs" for c in ["starlight", "mkdocs-material", "jest", "pinia"]}
html_sets = {
    "edition": glob.glob(f"{rust}/edition-guide/**/*.html", recursive=True),
    "rustdoc": glob.glob(f"{rust}/rustdoc/**/*.html", recursive=True),
    "python": [f for d in ["howto", "tutorial", "faq"]
               for f in glob.glob(f"/usr/share/doc/python3-doc/html/{d}/**/*.html", recursive=True)],
    "git": glob.glob("/usr/share/doc/git-doc/git*.html") + ["/usr/share/doc/git-doc/user-manual.html"],
}


def write(corpus, hs):
    hs = [h for h in hs if len(h.split()) >= 2 and len(h) < 120 and not h.startswith("<")]
    hs = sorted(set(hs))
    random.Random(7).shuffle(hs)
    with open(os.path.join(out, f"hq.{corpus}.jsonl"), "w") as o:
        for h in hs[:150]:
            o.write(json.dumps({"question": h, "gold": []}) + "\n")
    print(corpus, min(150, len(hs)))


os.makedirs(out, exist_ok=True)
for corpus, root in md.items():
    hs = []
    for dp, _, files in os.walk(root):
        if "/zh" in dp or "node_modules" in dp:
            continue
        for f in files:
            if f.endswith((".md", ".mdx")):
                for line in open(os.path.join(dp, f), errors="ignore"):
                    m = re.match(r"^#{2,3}\s+(.+?)\s*(\{#.*\})?$", line)
                    if m:
                        hs.append(m.group(1))
    write(corpus, hs)
for corpus, files in html_sets.items():
    hs = []
    for p in files:
        t = open(p, errors="ignore").read()
        for m in re.finditer(r"<h[23][^>]*>(.*?)</h[23]>", t, re.S):
            h = html.unescape(re.sub("<[^>]+>", "", m.group(1))).replace("¶", "").strip()
            hs.append(re.sub(r"^[\d.]+\s+", "", h))
    write(corpus, hs)

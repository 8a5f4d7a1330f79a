"""Dump every chunk of an eval index (as `docent inspect --page --json` prints it) to JSON lines."""
import json, os, subprocess, sys
from common import DATA
D = os.environ.get("DOCENT", "target/release-native/docent")
for corpus in sys.argv[1:]:
    idx = f"{os.environ.get('DOCENT_EVAL_OUT', 'target/eval')}/{corpus}.local.idx"
    secs = subprocess.run([D, "inspect", idx, "--sections"], capture_output=True, text=True, check=True).stdout
    pages = []
    for line in secs.splitlines():
        ref = line.split("\t")[0]
        ns, rest = ref.split("/", 1)
        url = rest.split("#")[0]
        if url not in pages:
            pages.append(url)
    out = open(f"{DATA}/{corpus}.chunks.jsonl", "w")
    n = 0
    for url in pages:
        r = subprocess.run([D, "inspect", idx, "--page", url, "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            print(corpus, url, r.stderr.strip()[:200], file=sys.stderr); continue
        for l in r.stdout.splitlines():
            out.write(l + "\n"); n += 1
    print(corpus, len(pages), "pages", n, "chunk lines")

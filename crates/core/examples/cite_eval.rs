//! Precision and recall of the citation check's "not found in [n]" marker (BENCHMARKS.md,
//! "Citation check"), and its time per answer.
//!
//! ```sh
//! cargo run --release -p docent-core --example cite_eval -- [EVAL_DIR] [INDEX_DIR] [SETS]
//! ```
//!
//! EVAL_DIR holds the eval sets (`eval/`), INDEX_DIR their lexical indexes as `scripts/eval`
//! writes them (`target/eval/<set>.none.idx`); SETS is a comma-separated list (default: the
//! validation sets). For every answerable question the first gold entry that names a section
//! of the index gives a section (each section once). Its sentences (5–60 words, at most
//! [`PER_SECTION`]) cited as `[1]` against that section are the supported cases; the same
//! sentences with one number, flag, identifier or negation changed, and the sentences of the
//! next section (another question's, cited against this one), are the unsupported cases. A case
//! is flagged when the check marks it. Per kind, precision pairs each changed sentence with its
//! original (the original flagged is a false positive); overall precision counts every case.
//! Time per answer: one answer per section of all its cases (about 6–20 sentences), checked
//! against five sources (this section and the next four), the sources' reading included.

use docent_core::cite::sentences::split;
use docent_core::cite::{check_answer, Evidence, LexicalChecker, Verdict};
use docent_core::format::Index;
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

/// At most this many sentences per section.
const PER_SECTION: usize = 6;

const KINDS: [&str; 5] = ["number", "flag", "identifier", "negation", "other section"];

#[derive(Default, Clone, Copy)]
struct Tally {
    /// Changed sentences (or other-section ones).
    n: usize,
    /// ... that were flagged.
    flagged: usize,
    /// Their originals flagged (false positives), for the per-kind precision.
    originals_flagged: usize,
}

#[derive(Default)]
struct Totals {
    supported: usize,
    supported_flagged: usize,
    kinds: BTreeMap<&'static str, Tally>,
    times_us: Vec<f64>,
    warm_us: Vec<f64>,
    answer_sentences: Vec<usize>,
    source_bytes: Vec<usize>,
    misses: BTreeMap<&'static str, Vec<String>>,
    false_positives: Vec<String>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let eval_dir = args.first().map_or("eval", String::as_str).to_string();
    let index_dir = args.get(1).map_or("target/eval", String::as_str).to_string();
    let sets = args
        .get(2)
        .map_or("starlight,mkdocs-material,edition,rustdoc,pg", String::as_str)
        .to_string();
    let verbose = std::env::var_os("CITE_EVAL_VERBOSE").is_some();
    let mut all = Totals::default();
    println!("| set | sections | supported (flagged) | number | flag | identifier | negation | other section |");
    println!("|---|---|---|---|---|---|---|---|");
    for set in sets.split(',') {
        match run_set(set, &eval_dir, &index_dir) {
            Ok(t) => {
                print_row(set, &t);
                merge(&mut all, t);
            }
            Err(e) => eprintln!("{set}: {e}"),
        }
    }
    print_row("all", &all);
    println!();
    println!("| kind | cases | recall | precision (vs. its originals) |");
    println!("|---|---|---|---|");
    let (mut tp, mut n) = (0, 0);
    for k in KINDS {
        let t = all.kinds.get(k).copied().unwrap_or_default();
        tp += t.flagged;
        n += t.n;
        println!(
            "| {k} | {} | {} | {} |",
            t.n,
            pct(t.flagged, t.n),
            pct(t.flagged, t.flagged + t.originals_flagged)
        );
    }
    println!(
        "| **all unsupported** | {n} | {} | {} (against {} supported, {} flagged) |",
        pct(tp, n),
        pct(tp, tp + all.supported_flagged),
        all.supported,
        all.supported_flagged
    );
    let quantiles = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        let q = |p: f64| {
            v.get(((v.len().max(1) - 1) as f64 * p).round() as usize).copied().unwrap_or(0.0)
        };
        format!("median {:.0} µs, p95 {:.0} µs, max {:.0} µs", q(0.5), q(0.95), q(1.0))
    };
    let mean = |v: &[usize]| v.iter().sum::<usize>() as f64 / v.len().max(1) as f64;
    println!(
        "\ntime per answer ({} answers of {:.1} cited sentences on average, five sources of {:.1} KB together):\n  cold: {}\n  warm: {}",
        all.times_us.len(),
        mean(&all.answer_sentences),
        mean(&all.source_bytes) / 1024.0,
        quantiles(&all.times_us),
        quantiles(&all.warm_us)
    );
    if verbose {
        for (k, v) in &all.misses {
            println!("\nmissed {k} ({}):", v.len());
            for m in v.iter().take(8) {
                println!("  - {m}");
            }
        }
        println!("\nfalse positives ({}):", all.false_positives.len());
        for m in all.false_positives.iter().take(12) {
            println!("  - {m}");
        }
    }
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "–".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / b as f64)
    }
}

fn print_row(set: &str, t: &Totals) {
    let cell = |k: &str| {
        let x = t.kinds.get(k).copied().unwrap_or_default();
        format!("{}/{}", x.flagged, x.n)
    };
    println!(
        "| {set} | {} | {} ({}) | {} | {} | {} | {} | {} |",
        t.times_us.len(),
        t.supported,
        t.supported_flagged,
        cell("number"),
        cell("flag"),
        cell("identifier"),
        cell("negation"),
        cell("other section")
    );
}

fn merge(all: &mut Totals, t: Totals) {
    all.supported += t.supported;
    all.supported_flagged += t.supported_flagged;
    for (k, v) in t.kinds {
        let a = all.kinds.entry(k).or_default();
        a.n += v.n;
        a.flagged += v.flagged;
        a.originals_flagged += v.originals_flagged;
    }
    all.times_us.extend(t.times_us);
    all.warm_us.extend(t.warm_us);
    all.answer_sentences.extend(t.answer_sentences);
    all.source_bytes.extend(t.source_bytes);
    for (k, v) in t.misses {
        all.misses.entry(k).or_default().extend(v);
    }
    all.false_positives.extend(t.false_positives);
}

/// Same rule as `docent eval`: `ns/url#anchor`, `url#anchor`, or a page (`ns/url`).
fn gold_matches(gold: &str, namespace: &str, url: &str, anchor: &str) -> bool {
    let link = if anchor.is_empty() { url.to_string() } else { format!("{url}#{anchor}") };
    if gold.contains('#') {
        gold == link || gold == format!("{namespace}/{link}")
    } else {
        gold == url || (!namespace.is_empty() && gold == format!("{namespace}/{url}"))
    }
}

fn run_set(set: &str, eval_dir: &str, index_dir: &str) -> Result<Totals, String> {
    let jsonl = std::fs::read_to_string(format!("{eval_dir}/{set}.jsonl"))
        .map_err(|e| format!("{eval_dir}/{set}.jsonl: {e}"))?;
    let bytes = std::fs::read(format!("{index_dir}/{set}.none.idx"))
        .map_err(|e| format!("{index_dir}/{set}.none.idx: {e} (run scripts/eval first)"))?;
    let index = Index::from_bytes(bytes).map_err(|e| e.to_string())?;
    let chunks: Vec<_> = (0..index.len()).map(|i| index.chunk(i)).collect();
    // One text per gold section: its chunks in order.
    let mut sections: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let gold: Vec<&str> = v["gold"]
            .as_array()
            .map(|a| a.iter().filter_map(|g| g.as_str()).collect())
            .unwrap_or_default();
        for g in gold {
            let ids: Vec<usize> = (0..chunks.len())
                .filter(|&i| {
                    let c = &chunks[i];
                    gold_matches(g, &c.namespace, &c.url, &c.anchor)
                })
                .collect();
            // A page-only gold entry matches every section of the page: take the first one with
            // sentences to check (a DocBook page starts with a navigation-only section).
            let mut by_section: Vec<(u32, Vec<usize>)> = Vec::new();
            for i in ids {
                let sec = index.section_of(i);
                match by_section.iter_mut().find(|x| x.0 == sec) {
                    Some(x) => x.1.push(i),
                    None => by_section.push((sec, vec![i])),
                }
            }
            let Some((section, ids)) = by_section.into_iter().find(|(_, ids)| {
                let text: Vec<&str> = ids.iter().map(|&i| chunks[i].text.trim()).collect();
                !sentences(&text.join("\n\n")).is_empty()
            }) else {
                continue;
            };
            if seen.insert(section) {
                let text: Vec<&str> = ids.iter().map(|&i| chunks[i].text.trim()).collect();
                sections.push(text.join("\n\n"));
            }
            break;
        }
    }
    let evidence: Vec<Evidence> =
        sections.iter().enumerate().map(|(i, s)| Evidence::new(i + 1, s.as_str())).collect();
    let picked: Vec<Vec<String>> = sections.iter().map(|s| sentences(s)).collect();
    let checker = LexicalChecker::default();
    let mut t = Totals::default();
    let flagged = |answer: &str, ev: &Evidence| -> bool {
        check_answer(answer, std::slice::from_ref(ev), &checker)
            .iter()
            .any(|c| matches!(c.verdict, Verdict::Unsupported(_)))
    };
    for (i, ev) in evidence.iter().enumerate() {
        let n = ev.n;
        let mut answer_parts = Vec::new();
        for s in &picked[i] {
            let supported = format!("{s} [{n}]");
            let original_flagged = flagged(&supported, ev);
            t.supported += 1;
            if original_flagged {
                t.supported_flagged += 1;
                let why = check_answer(&supported, std::slice::from_ref(ev), &checker);
                t.false_positives
                    .push(format!("{supported} {:?}", why.first().map(|c| &c.verdict)));
            }
            answer_parts.push(supported);
            for (kind, changed) in perturbations(s) {
                let a = format!("{changed} [{n}]");
                let f = flagged(&a, ev);
                let k = t.kinds.entry(kind).or_default();
                k.n += 1;
                k.flagged += f as usize;
                k.originals_flagged += original_flagged as usize;
                if !f {
                    t.misses.entry(kind).or_default().push(a.clone());
                }
                answer_parts.push(a);
            }
        }
        // Other section: the next section's sentences, cited against this one.
        let j = (i + 1) % sections.len();
        if j != i {
            for s in &picked[j] {
                let a = format!("{s} [{n}]");
                let f = flagged(&a, ev);
                let k = t.kinds.entry("other section").or_default();
                k.n += 1;
                k.flagged += f as usize;
                if !f {
                    t.misses.entry("other section").or_default().push(a.clone());
                }
            }
        }
        // Timing: the whole answer against five sources, sources read included; cold (the
        // word memo cleared first) and warm (read again, as when sources recur).
        if !answer_parts.is_empty() {
            let answer = answer_parts.join(" ").replace(&format!("[{n}]"), "[1]");
            let texts: Vec<(usize, &str)> = (0..5.min(sections.len()))
                .map(|k| (k + 1, sections[(i + k) % sections.len()].as_str()))
                .collect();
            for warm in [false, true] {
                // The best of three runs: the machine is shared, and a pause is not the check's.
                let mut us = f64::MAX;
                let mut checked = Vec::new();
                for _ in 0..3 {
                    if !warm {
                        docent_core::cite::claims::clear_memo();
                    }
                    let start = Instant::now();
                    let ev: Vec<Evidence> =
                        texts.iter().map(|&(n, s)| Evidence::new(n, s)).collect();
                    checked = check_answer(&answer, &ev, &checker);
                    std::hint::black_box(&checked);
                    us = us.min(start.elapsed().as_secs_f64() * 1e6);
                }
                if warm {
                    t.warm_us.push(us);
                } else {
                    t.times_us.push(us);
                    t.answer_sentences.push(checked.len());
                    t.source_bytes.push(texts.iter().map(|x| x.1.len()).sum());
                }
            }
        }
    }
    Ok(t)
}

/// The section's prose sentences worth checking: 5–60 words, ending like a sentence, at most
/// [`PER_SECTION`] of them.
fn sentences(section: &str) -> Vec<String> {
    split(section)
        .into_iter()
        .filter(|s| s.cites.is_empty())
        .filter_map(|s| section.get(s.range))
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|s| {
            let words = s.split_whitespace().count();
            (5..=60).contains(&words) && s.ends_with(['.', '!', '?']) && !s.contains('|')
        })
        .take(PER_SECTION)
        .collect()
}

/// The sentence with one number, flag, identifier or negation changed (each kind it has).
fn perturbations(s: &str) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(x) = change_number(s) {
        out.push(("number", x));
    }
    if let Some(x) = change_flag(s) {
        out.push(("flag", x));
    }
    if let Some(x) = change_identifier(s) {
        out.push(("identifier", x));
    }
    if let Some(x) = flip_negation(s) {
        out.push(("negation", x));
    }
    out
}

/// Words of `s` with their byte ranges.
fn words(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        if c.is_whitespace() {
            if let Some(b) = start.take() {
                out.push((b, &s[b..i]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(b) = start {
        out.push((b, &s[b..]));
    }
    out
}

fn replace_at(s: &str, at: usize, old: &str, new: &str) -> String {
    format!("{}{}{}", &s[..at], new, &s[at + old.len()..])
}

/// The first number standing alone (`8080`, `1.2.3`, `10MB`; not `utf8`): its last digit + 1.
fn change_number(s: &str) -> Option<String> {
    for (at, w) in words(s) {
        let core = w.trim_start_matches(['(', '"', '`', '*', '[', '~']);
        let off = at + (w.len() - core.len());
        let core = core.strip_prefix('v').unwrap_or(core);
        let off = if w[off - at..].starts_with('v') { off + 1 } else { off };
        if !core.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let digits = core
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
            .unwrap_or(core.len());
        let num = core[..digits].trim_end_matches(['.', ',']);
        let last = num.rfind(|c: char| c.is_ascii_digit())?;
        let d = num.as_bytes()[last] - b'0';
        let mut changed = num.to_string();
        changed.replace_range(last..last + 1, &(((d + 1) % 10).to_string()));
        return Some(replace_at(s, off, num, &changed));
    }
    None
}

/// The first `--flag` or `-x`: `--a-b` → `--a`, `--a` → `--a-all`, `-x` → the next letter.
fn change_flag(s: &str) -> Option<String> {
    for (at, w) in words(s) {
        let core = w.trim_start_matches(['(', '"', '`', '*']);
        let off = at + (w.len() - core.len());
        let end = core
            .char_indices()
            .skip(1)
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '-'))
            .map_or(core.len(), |(i, _)| i);
        let flag = core[..end].trim_end_matches('-');
        if let Some(name) = flag.strip_prefix("--") {
            if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                continue;
            }
            let new = match name.rfind('-') {
                Some(p) => format!("--{}", &name[..p]),
                None => format!("--{name}-all"),
            };
            return Some(replace_at(s, off, flag, &new));
        }
        if let Some(l) = flag.strip_prefix('-') {
            if l.len() == 1 && l.as_bytes()[0].is_ascii_alphabetic() {
                let c = l.as_bytes()[0];
                let next = if c == b'z' || c == b'Z' { c - 1 } else { c + 1 };
                return Some(replace_at(s, off, flag, &format!("-{}", next as char)));
            }
        }
    }
    None
}

/// The first code span or code-like word (`snake_case`, `a.b`, `a::b`, `camelCase`): its last
/// letter run gains or loses an `s`.
fn change_identifier(s: &str) -> Option<String> {
    let mut candidates: Vec<(usize, &str)> = Vec::new();
    if let Some(open) = s.find('`') {
        if let Some(len) = s[open + 1..].find('`') {
            let inner = &s[open + 1..open + 1 + len];
            if !inner.contains(char::is_whitespace) && inner.contains(char::is_alphabetic) {
                candidates.push((open + 1, inner));
            }
        }
    }
    for (at, w) in words(s) {
        let core = w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
        let Some(off) = w.find(core).map(|p| at + p) else { continue };
        let camel = core
            .chars()
            .zip(core.chars().skip(1))
            .any(|(a, b)| a.is_lowercase() && b.is_uppercase());
        let dotted = core.split('.').filter(|p| p.chars().any(char::is_alphabetic)).count() >= 2
            && !core.contains("e.g")
            && !core.contains("i.e");
        if !core.is_empty() && (core.contains('_') || core.contains("::") || camel || dotted) {
            candidates.push((off, core));
        }
    }
    candidates.sort_by_key(|c| c.0);
    let &(at, ident) = candidates.first()?;
    let end = ident.rfind(|c: char| c.is_alphabetic())? + 1;
    let mut changed = ident.to_string();
    if ident[..end].ends_with('s') && end > 3 {
        changed.remove(end - 1);
    } else {
        changed.insert(end, 's');
    }
    Some(replace_at(s, at, ident, &changed))
}

/// Remove a negation (`not`, `n't`, `never`, a leading `No`) or add one after the first
/// auxiliary verb.
fn flip_negation(s: &str) -> Option<String> {
    let s = s.replace('’', "'");
    let lower = format!(" {}", s.to_ascii_lowercase());
    for (neg, pos) in [
        (" cannot ", " can "),
        (" can't ", " can "),
        (" won't ", " will "),
        (" doesn't ", " does "),
        (" don't ", " do "),
        (" didn't ", " did "),
        (" isn't ", " is "),
        (" aren't ", " are "),
        (" not ", " "),
        (" never ", " always "),
        (" no ", " some "),
    ] {
        if let Some(p) = lower.find(neg) {
            let at = p.saturating_sub(1);
            let (old, new) = if p == 0 { (&neg[1..], &pos[1..]) } else { (neg, pos) };
            let out = replace_at(&s, at, old, new);
            return Some(capitalise(&out));
        }
    }
    if claims_negated(&s) {
        return None;
    }
    for aux in [" is ", " are ", " can ", " must ", " should ", " will ", " does ", " do ", " was "]
    {
        if let Some(p) = lower.find(aux).filter(|&p| p > 0) {
            let with = if aux == " can " { " cannot ".to_string() } else { format!("{aux}not ") };
            return Some(replace_at(&s, p - 1, aux, &with));
        }
    }
    None
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Any other negating word the flip above does not undo (`nothing`, `none`, `nor`, ...).
fn claims_negated(s: &str) -> bool {
    docent_core::cite::claims::is_negated(s)
}

//! `docent index --split`: an entry file plus shards that `docent search`, `eval` and
//! `inspect` read like the one-file index, and rebuilds that leave unchanged shards alone.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn docent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_docent")).args(args).output().expect("run docent")
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("docent-split-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn shards(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with("index-"))
        .collect();
    v.sort();
    v
}

/// docent's own docs, copied so a test can change a page.
fn site(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
    let dst = dir.join("site");
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            std::fs::copy(&p, dst.join(p.file_name().unwrap())).unwrap();
        }
    }
    dst
}

#[test]
fn a_split_index_searches_like_the_one_file_index() {
    let d = tmp("same");
    let src = site(&d);
    let (one, split) = (d.join("one/index.bin"), d.join("split/index.bin"));
    std::fs::create_dir_all(one.parent().unwrap()).unwrap();
    std::fs::create_dir_all(split.parent().unwrap()).unwrap();
    let s = src.to_str().unwrap();
    ok(docent(&["index", s, "--out", one.to_str().unwrap(), "-q"]));
    let out =
        ok(docent(&["index", s, "--out", split.to_str().unwrap(), "--split", "always", "-q"]));
    assert!(out.contains("split    entry"), "{out}");
    let names = shards(split.parent().unwrap());
    assert!(
        names.iter().any(|n| n.starts_with("index-p-"))
            && names.iter().any(|n| n.starts_with("index-t-"))
    );
    for q in ["how do I run the proxy with redis", "what is stored about readers", "max_tokens"] {
        for extra in [&[][..], &["--url-prefix", "widget"], &["--top", "12", "--floor", "0"]] {
            let search = |index: &Path| {
                let mut args = vec!["search", index.to_str().unwrap(), q, "--json"];
                args.extend(extra);
                ok(docent(&args))
            };
            let (a, b) = (search(&one), search(&split));
            assert_eq!(a, b, "{q} {extra:?}");
            assert!(!a.is_empty());
        }
    }
    // What a browser would fetch for a question: a few shards, not all of them.
    let o = docent(&["search", split.to_str().unwrap(), "redis store", "--shards"]);
    let line = String::from_utf8_lossy(&o.stderr).lines().last().unwrap_or_default().to_string();
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    let fetched = v["postings"].as_array().unwrap().len() + v["texts"].as_array().unwrap().len();
    assert!(fetched > 0 && fetched < names.len(), "{fetched} of {}", names.len());
    let ins = ok(docent(&["inspect", split.to_str().unwrap()]));
    assert!(ins.contains("postings shards") && ins.contains("text shards"), "{ins}");
    assert!(ins.contains("outline") && !ins.contains("chunk records  "), "{ins}");
    // What inspect counts is the one file's; its pages and sections read alike.
    let both = |args: &[&str]| {
        let run = |index: &Path| {
            let mut a = vec!["inspect", index.to_str().unwrap()];
            a.extend(args);
            ok(docent(&a))
        };
        (run(&one), run(&split))
    };
    let (a, b) = both(&[]);
    let counts = |s: &str| {
        s.lines()
            .filter(|l| {
                ["pages ", "chunks ", "tokens "].iter().any(|k| l.starts_with(&format!("  {k}")))
            })
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(counts(&a).len(), 3, "{a}");
    assert_eq!(counts(&a), counts(&b));
    let (a, b) = both(&["--sections"]);
    assert_eq!(a, b);
    assert!(a.lines().count() > 20, "{a}");
    let (a, b) = both(&["--page", "widget.html", "--json"]);
    assert_eq!(a, b);
    assert!(a.contains("\"breadcrumb\""), "{a}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_rebuild_rewrites_only_changed_shards_and_removes_stale_ones() {
    let d = tmp("rebuild");
    let src = site(&d);
    let out = d.join("index.bin");
    let (s, o) = (src.to_str().unwrap(), out.to_str().unwrap());
    ok(docent(&["index", s, "--out", o, "--split", "always", "-q"]));
    let first = shards(&d);
    let again = ok(docent(&["index", s, "--out", o, "--split", "always", "-q"]));
    assert!(again.contains("(0 written"), "{again}");
    assert_eq!(shards(&d), first);
    // One page changes: a few shards are new, the rest keep their names, the old ones go. The
    // last page, so no other page's chunk numbers shift (that renames more shards: see
    // docs/index-format.md), whatever the docs hold.
    let mut pages: Vec<PathBuf> =
        std::fs::read_dir(&src).unwrap().map(|e| e.unwrap().path()).collect();
    pages.sort();
    let page = pages.pop().unwrap();
    let name = page.file_stem().unwrap().to_str().unwrap().to_string();
    let text = std::fs::read_to_string(&page).unwrap();
    std::fs::write(&page, format!("{text}\n\n## Zebras\n\nZebras are not supported.\n")).unwrap();
    let changed = ok(docent(&["index", s, "--out", o, "--split", "always", "-q"]));
    let now = shards(&d);
    let kept = now.iter().filter(|n| first.contains(n)).count();
    assert!(kept * 2 > now.len(), "most shards unchanged: {kept} of {} ({changed})", now.len());
    assert!(now.len() < first.len() + 6 && !changed.contains(" 0 old removed"), "{changed}");
    let hit = ok(docent(&["search", o, "are zebras supported", "--json"]));
    assert!(hit.contains(&name), "{hit}");
    // Back to one file: the shards are removed.
    ok(docent(&["index", s, "--out", o, "-q"]));
    assert!(shards(&d).is_empty());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_shard_damaged_on_disk_is_repaired_by_a_rebuild() {
    // The reader of a damaged shard is told to rebuild; the rebuild skipped every shard whose
    // name and length matched, so the damage stayed.
    let d = tmp("damaged");
    let src = site(&d);
    let out = d.join("index.bin");
    let (s, o) = (src.to_str().unwrap(), out.to_str().unwrap());
    ok(docent(&["index", s, "--out", o, "--split", "always", "-q"]));
    let shard = d.join(&shards(&d)[0]);
    let mut bytes = std::fs::read(&shard).unwrap();
    let good = bytes.clone();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&shard, &bytes).unwrap();
    let again = ok(docent(&["index", s, "--out", o, "--split", "always", "-q"]));
    assert!(again.contains("(1 written"), "{again}");
    assert_eq!(std::fs::read(&shard).unwrap(), good);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_missing_shard_says_to_keep_the_folder_together() {
    let d = tmp("missing");
    let src = site(&d);
    let out = d.join("index.bin");
    ok(docent(&[
        "index",
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--split",
        "always",
        "-q",
    ]));
    let victim = shards(&d).into_iter().find(|n| n.starts_with("index-t-")).unwrap();
    std::fs::remove_file(d.join(&victim)).unwrap();
    let o = docent(&["search", out.to_str().unwrap(), "proxy"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&victim) && err.contains("next to the index file"), "{err}");
    let o = docent(&[
        "index",
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--split",
        "sometimes",
    ]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("never, always or auto"));
    let _ = std::fs::remove_dir_all(&d);
}

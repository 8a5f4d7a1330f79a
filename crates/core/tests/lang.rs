//! The language guess on whole question sets: eval/lang-id/questions.jsonl (220 questions a
//! reader might type, 140 in six other languages, 80 in English with words those languages
//! share) and every English question of the open eval sets.

use docent_core::lang::looks_non_english;

fn lines(path: &str) -> Vec<serde_json::Value> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path);
    std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn short_questions_in_other_languages_are_told_from_english() {
    let rows = lines("eval/lang-id/questions.jsonl");
    let (mut found, mut other, mut english_flagged) = (0, 0, Vec::new());
    for r in &rows {
        let q = r["q"].as_str().unwrap();
        if r["lang"] == "en" {
            if looks_non_english(q) {
                english_flagged.push(q.to_string());
            }
        } else {
            other += 1;
            found += looks_non_english(q) as usize;
        }
    }
    assert!(english_flagged.is_empty(), "{english_flagged:?}");
    // 84 by function words alone; 103 with the trigram table (BENCHMARKS.md §2.0.35).
    assert!(found >= 100, "{found} of {other} recognised");
}

#[test]
fn english_eval_questions_stay_english() {
    let mut flagged = Vec::new();
    for set in [
        "rust-docs",
        "python",
        "git",
        "pg",
        "edition",
        "rustdoc",
        "starlight",
        "mkdocs-material",
        "jest",
        "pinia",
    ] {
        for r in lines(&format!("eval/{set}.jsonl")) {
            let q = r["question"].as_str().unwrap();
            // rust-docs holds one off-topic question in German ("Wie backe ich…"): not English.
            if r["kind"] != "non-english" && !q.starts_with("Wie ") && looks_non_english(q) {
                flagged.push(q.to_string());
            }
        }
    }
    assert!(flagged.is_empty(), "{flagged:?}");
}

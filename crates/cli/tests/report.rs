//! `docent report` as a user runs it: from an analytics file to one HTML page.

use std::process::{Command, Output};

fn docent(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_docent")).args(args).output().expect("run docent")
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("docent-report-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_report_is_written_from_the_analytics_file_and_junk_lines_are_skipped() {
    let d = tmp("ok");
    let log = d.join("analytics.jsonl");
    std::fs::write(
        &log,
        concat!(
            r#"{"v":1,"type":"question","ts":1764000000,"question":"does docent collect data about readers","outcome":"uncertain","sections":[{"url":"/privacy#stored","title":"Privacy"}],"index":"aa"}"#, "\n",
            r#"{"v":1,"type":"question","ts":1764000100,"question":"what data does docent collect about my readers","outcome":"declined","sections":[{"url":"/privacy","title":"Privacy"}],"index":"aa"}"#, "\n",
            r#"{"v":1,"type":"question","ts":1764000200,"question":"install with npm","outcome":"answered","sections":[{"url":"/install","title":"Install"}],"index":"aa"}"#, "\n",
            "not json\n",
            r#"{"v":1,"type":"feedback","ts":1764000300,"rating":"down","question":"install with npm","answer":"Run it.","sources":["/install"]}"#, "\n",
            r#"{"v":1,"type":"question","ts":17640"#,
        ),
    )
    .unwrap();
    let out = d.join("site/report.html");
    let o = docent(&[
        "report",
        log.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--site",
        "Demo",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("skipped 2 line(s)") && err.contains("line 4"), "{err}");
    assert!(
        err.contains("3 questions (1 answered, 1 uncertain, 1 declined), 1 feedback votes"),
        "{err}"
    );
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("What readers asked · Demo"));
    assert!(html.contains("2 question(s)"), "the two data questions form one group");
    assert!(html.contains("Answers marked not helpful"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_missing_file_or_no_source_says_what_to_do() {
    let o = docent(&["report", "/nonexistent/analytics.jsonl"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot read the analytics file") && err.contains("[analytics] path"),
        "{err}"
    );
    let o = docent(&["report"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--redis"));
}

#[test]
fn a_record_with_an_impossible_time_is_skipped_not_fatal() {
    let d = tmp("ts");
    let log = d.join("analytics.jsonl");
    std::fs::write(
        &log,
        concat!(
            r#"{"v":1,"type":"question","ts":1764000000,"question":"install with npm","outcome":"answered"}"#, "\n",
            r#"{"v":1,"type":"question","ts":18446744073709551615,"question":"q","outcome":"declined"}"#, "\n",
            r#"{"v":1,"type":"question","ts":1,"question":"q","outcome":"declined"}"#, "\n",
        ),
    )
    .unwrap();
    let out = d.join("report.html");
    let o = docent(&["report", log.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("skipped 2 line(s)") && err.contains("implausible (first: line 2)"),
        "{err}"
    );
    assert!(err.contains("1 questions (1 answered"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_report_never_writes_over_its_records_or_a_file_it_did_not_write() {
    let d = tmp("out");
    let log = d.join("analytics.jsonl");
    let records =
        r#"{"v":1,"type":"question","ts":1764000000,"question":"install","outcome":"answered"}"#;
    std::fs::write(&log, records).unwrap();
    let log_s = log.to_str().unwrap();
    let other_spelling = d.join(".").join("analytics.jsonl");
    for out in [log_s, other_spelling.to_str().unwrap()] {
        for extra in [&[][..], &["--force"][..]] {
            let o = docent(&[&["report", log_s, "--out", out][..], extra].concat());
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{err}");
            assert!(err.contains("is the analytics file this report reads"), "{err}");
            assert!(err.contains("give another file"), "{err}");
        }
    }
    assert_eq!(std::fs::read_to_string(&log).unwrap(), records, "the records are intact");

    let page = d.join("index.html");
    std::fs::write(&page, "<!doctype html>\n<title>Home</title>").unwrap();
    let o = docent(&["report", log_s, "--out", page.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("not a page written by `docent report`") && err.contains("--force"));
    assert!(std::fs::read_to_string(&page).unwrap().contains("Home"));
    let o = docent(&["report", log_s, "--out", page.to_str().unwrap(), "--force"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // An earlier report is written over without --force, and so is an empty file.
    let o = docent(&["report", log_s, "--out", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let empty = d.join("empty.html");
    std::fs::write(&empty, "").unwrap();
    let o = docent(&["report", log_s, "--out", empty.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read_to_string(&empty).unwrap().contains("What readers asked"));
    let _ = std::fs::remove_dir_all(&d);
}

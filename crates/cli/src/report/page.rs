//! The report page: one self-contained HTML file (inline CSS and SVG, no script), light and
//! dark, readable without colour (every figure is also written as text or a table). Everything
//! readers typed is escaped.

use std::collections::HashMap;
use std::fmt::Write as _;

use docent_core::render::escape_html;
use docent_proxy::chat::civil_date;

use super::cluster::Cluster;
use super::records::{Outcome, Question, RecordSet};

/// Most groups of unanswered questions shown.
pub const MAX_GROUPS: usize = 25;
/// Example questions per group.
pub const EXAMPLES: usize = 5;
/// Most "not helpful" answers shown.
pub const MAX_DOWN: usize = 50;
/// Most pages in the "most shown" table.
pub const MAX_PAGES: usize = 20;
/// Most bars in the timeline: a day each up to 90 days, a week each up to 400 weeks, and
/// longer periods past that (the span is the records' to choose, however they were checked).
pub const MAX_BARS: u64 = 400;

/// What the page shows.
pub struct Report<'a> {
    /// Site name.
    pub site: &'a str,
    /// Where the records came from.
    pub from: &'a str,
    /// The records.
    pub set: &'a RecordSet,
    /// The uncertain and declined questions, in the order `clusters` index them.
    pub gaps: &'a [&'a Question],
    /// Older uncertain and declined questions left out of `gaps` (see `MAX_GROUPED`).
    pub ungrouped: usize,
    /// Groups of `gaps`, biggest first.
    pub clusters: &'a [Cluster],
    /// Unix seconds.
    pub generated: u64,
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    escape_html(s, &mut o);
    o
}

/// `text` linked to `url` when `url` is a web page (http(s) or a path); anything else readers
/// sent (`javascript:`, `data:`, a protocol-relative `//host`, which a report opened from disk
/// would resolve to a `file://` share) is written as plain text.
fn link(url: &str, text: &str) -> String {
    use docent_core::render::{classify_url, UrlKind};
    match classify_url(url) {
        Some(UrlKind::Fragment | UrlKind::Relative) => {}
        Some(UrlKind::Absolute { origin }) if !origin.starts_with("//") => {}
        _ => return esc(text),
    }
    format!("<a href=\"{}\">{}</a>", esc(url), esc(text))
}

fn day(ts: u64) -> String {
    civil_date((ts / 86_400) as i64)
}

fn pct(n: usize, of: usize) -> String {
    if of == 0 {
        "–".into()
    } else {
        format!("{:.0} %", n as f64 * 100.0 / of as f64)
    }
}

fn page_of(url: &str) -> &str {
    url.split('#').next().unwrap_or(url)
}

const CSS: &str = "
:root{color-scheme:light dark;--fg:#1b1b1f;--muted:#55555f;--bg:#fff;--card:#f4f4f6;--line:#d6d6dc;
--answered:#2e7d32;--uncertain:#a15c00;--declined:#c62828}
@media (prefers-color-scheme:dark){:root{--fg:#ececf1;--muted:#b4b4bd;--bg:#16161a;--card:#222228;--line:#3a3a44;
--answered:#66bb6a;--uncertain:#ffb74d;--declined:#ef7b7b}}
body{font:15px/1.5 system-ui,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:62rem;padding:1.5rem}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.2rem;margin-top:2.2rem;border-bottom:1px solid var(--line);padding-bottom:.3rem}
.muted{color:var(--muted)}.cards{display:flex;flex-wrap:wrap;gap:.8rem;margin:1rem 0;padding:0;list-style:none}
.cards li{background:var(--card);border-radius:8px;padding:.6rem .9rem;min-width:8rem}
.cards b{display:block;font-size:1.4rem}
.answered{color:var(--answered)}.uncertain{color:var(--uncertain)}.declined{color:var(--declined)}
svg .answered{fill:var(--answered)}svg .uncertain{fill:var(--uncertain)}svg .declined{fill:var(--declined)}
svg text{fill:var(--muted);font-size:11px}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.group{background:var(--card);border-radius:8px;padding:.7rem 1rem;margin:.8rem 0}
.group h3{font-size:1rem;margin:0 0 .3rem}.group ul{margin:.3rem 0 .3rem 1.2rem;padding:0}
.legend span{margin-right:1rem}blockquote{margin:.3rem 0;padding-left:.8rem;border-left:3px solid var(--line);white-space:pre-wrap}
a{color:inherit}
";

/// Whether a file that starts with `head` is a page [`render`] wrote (so `docent report` may
/// write over it): its doctype, then its title within the first kilobyte.
pub fn is_report(head: &[u8]) -> bool {
    let head = &head[..head.len().min(1024)];
    head.starts_with(b"<!doctype html>\n")
        && head.windows(REPORT_TITLE.len()).any(|w| w == REPORT_TITLE.as_bytes())
}

const REPORT_TITLE: &str = "<title>What readers asked · ";

/// The whole page.
pub fn render(r: &Report) -> String {
    let set = r.set;
    let total = set.questions.len();
    let mut h = String::with_capacity(16 * 1024);
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         {REPORT_TITLE}{site}</title><style>{CSS}</style></head><body><main>\
         <h1>What readers asked</h1><p class=\"muted\">{site} · ",
        site = esc(r.site)
    );
    match (set.questions.first(), set.questions.last()) {
        (Some(a), Some(b)) => {
            let _ = write!(h, "{} to {}", day(a.ts), day(b.ts));
        }
        _ => h.push_str("no questions recorded yet"),
    }
    let _ = write!(h, " · generated {} from {}</p>", day(r.generated), esc(r.from));
    summary(&mut h, set, total);
    if set.indexes.len() > 1 {
        let _ = write!(
            h,
            "<p class=\"muted\">The docs were re-indexed {} time(s) in this period: outcomes before and after a change are counted together.</p>",
            set.indexes.len() - 1
        );
    }
    timeline(&mut h, set);
    gaps(&mut h, r);
    not_helpful(&mut h, set);
    pages(&mut h, set);
    h.push_str(
        "<h2>About this report</h2><p class=\"muted\">Made by <code>docent report</code> from the \
         records <code>docent serve</code> keeps with <code>[analytics]</code> on. A record holds \
         the question, its outcome, the sections it landed on, the index checksum and the time: \
         no IP address, no cookie and no reader or session id. \"Uncertain\" questions were \
         answered with a note that the docs may not cover them; \"declined\" ones got \"the \
         docs don't cover this\".</p></main></body></html>\n",
    );
    h
}

fn summary(h: &mut String, set: &RecordSet, total: usize) {
    let up = set.feedback.iter().filter(|f| f.up).count();
    let down = set.feedback.len() - up;
    let _ =
        write!(h, "<ul class=\"cards\" aria-label=\"Summary\"><li><b>{total}</b>questions</li>");
    for o in Outcome::ALL {
        let n = set.count(o);
        let _ = write!(
            h,
            "<li><b class=\"{name}\">{p}</b>{name} ({n})</li>",
            name = o.name(),
            p = pct(n, total)
        );
    }
    let _ = write!(h, "<li><b>{up} / {down}</b>helpful / not helpful</li></ul>");
}

/// Stacked bars per day (per week past 90 days, per longer periods past [`MAX_BARS`] weeks), and
/// the same figures as a table.
fn timeline(h: &mut String, set: &RecordSet) {
    h.push_str("<h2>Over time</h2>");
    let (Some(first), Some(last)) = (set.questions.first(), set.questions.last()) else {
        h.push_str("<p>No questions yet.</p>");
        return;
    };
    let (d0, d1) = (first.ts / 86_400, last.ts / 86_400);
    let step = if d1 - d0 > 90 { ((d1 - d0) / MAX_BARS + 1).max(7) } else { 1 };
    let buckets = ((d1 - d0) / step + 1) as usize;
    let mut counts = vec![[0usize; 3]; buckets];
    for q in &set.questions {
        let b = ((q.ts / 86_400 - d0) / step) as usize;
        counts[b.min(buckets - 1)][q.outcome as usize] += 1;
    }
    let max = counts.iter().map(|c| c.iter().sum::<usize>()).max().unwrap_or(1).max(1);
    let (w, ht, left, bottom) = (720.0f64, 180.0f64, 34.0f64, 22.0f64);
    let bw = (w - left) / buckets as f64;
    let (period, unit) = match step {
        1 => ("day".to_string(), String::new()),
        7 => ("week".to_string(), "week of ".to_string()),
        n => (format!("{n} days"), format!("{n} days from ")),
    };
    let _ = write!(
        h,
        "<p class=\"legend\"><span class=\"answered\">■ answered</span><span class=\"uncertain\">■ uncertain</span><span class=\"declined\">■ declined</span></p>\
         <svg viewBox=\"0 0 {w} {ht}\" width=\"100%\" role=\"img\" aria-labelledby=\"tl-title\"><title id=\"tl-title\">Questions per {} by outcome; the table below has the figures</title>\
         <text x=\"0\" y=\"12\">{max}</text><text x=\"0\" y=\"{}\">0</text>",
        period,
        ht - bottom
    );
    for (i, c) in counts.iter().enumerate() {
        let x = left + i as f64 * bw;
        let mut y = ht - bottom;
        for o in Outcome::ALL {
            let n = c[o as usize];
            if n == 0 {
                continue;
            }
            let bh = n as f64 / max as f64 * (ht - bottom - 8.0);
            y -= bh;
            let _ = write!(
                h,
                "<rect class=\"{}\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{bh:.1}\"><title>{unit}{}: {n} {}</title></rect>",
                o.name(),
                (bw * 0.8).max(1.0),
                day((d0 + i as u64 * step) * 86_400),
                o.name()
            );
        }
    }
    let _ = write!(
        h,
        "<text x=\"{left}\" y=\"{}\">{}</text><text x=\"{w}\" y=\"{}\" text-anchor=\"end\">{}</text></svg>",
        ht - 6.0,
        day(d0 * 86_400),
        ht - 6.0,
        day(d1 * 86_400)
    );
    let _ = write!(
        h,
        "<details><summary>The figures</summary><table><thead><tr><th scope=\"col\">{}</th><th scope=\"col\">answered</th><th scope=\"col\">uncertain</th><th scope=\"col\">declined</th></tr></thead><tbody>",
        if step == 1 { "day" } else { unit.trim_end() }
    );
    for (i, c) in counts.iter().enumerate() {
        if c.iter().sum::<usize>() == 0 {
            continue;
        }
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            day((d0 + i as u64 * step) * 86_400),
            c[0],
            c[1],
            c[2]
        );
    }
    h.push_str("</tbody></table></details>");
}

fn gaps(h: &mut String, r: &Report) {
    h.push_str("<h2>What the docs could not answer</h2>");
    if r.gaps.is_empty() {
        h.push_str("<p>Every recorded question was answered with confidence.</p>");
        return;
    }
    let _ = write!(
        h,
        "<p class=\"muted\">{} uncertain or declined questions in {} group(s) of similar questions, biggest first{}. The pages they landed near are where an answer would most likely belong.</p>",
        r.gaps.len() + r.ungrouped,
        r.clusters.len(),
        if r.ungrouped > 0 {
            format!(" (the latest {} grouped, {} older ones not)", r.gaps.len(), r.ungrouped)
        } else {
            String::new()
        }
    );
    for c in r.clusters.iter().take(MAX_GROUPS) {
        let qs: Vec<&Question> = c.members.iter().filter_map(|&i| r.gaps.get(i).copied()).collect();
        let declined = qs.iter().filter(|q| q.outcome == Outcome::Declined).count();
        // The same question asked again is one example with a count.
        let mut distinct: Vec<(&str, usize)> = Vec::new();
        for q in &qs {
            let text = q.question.trim();
            match distinct.iter_mut().find(|(d, _)| d.eq_ignore_ascii_case(text)) {
                Some(d) => d.1 += 1,
                None => distinct.push((text, 1)),
            }
        }
        let times = |n: usize| {
            if n > 1 {
                format!(" <span class=\"muted\">(×{n})</span>")
            } else {
                String::new()
            }
        };
        let (head, head_n) = distinct.first().copied().unwrap_or(("", 0));
        let _ = write!(
            h,
            "<section class=\"group\"><h3>{} question(s): “{}”{}</h3><p class=\"muted\"><span class=\"declined\">{declined} declined</span>, <span class=\"uncertain\">{} uncertain</span></p><ul>",
            qs.len(),
            esc(head),
            times(head_n),
            qs.len() - declined
        );
        for (q, n) in distinct.iter().skip(1).take(EXAMPLES - 1) {
            let _ = write!(h, "<li>{}{}</li>", esc(q), times(*n));
        }
        h.push_str("</ul>");
        let mut near: HashMap<&str, (usize, &str)> = HashMap::new();
        for q in &qs {
            if let Some((url, title)) = q.sections.first() {
                near.entry(url.as_str()).or_insert((0, title.as_str())).0 += 1;
            }
        }
        let mut near: Vec<_> = near.into_iter().collect();
        near.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
        if !near.is_empty() {
            h.push_str("<p>Landed near: ");
            for (i, (url, (n, title))) in near.iter().take(3).enumerate() {
                let _ = write!(
                    h,
                    "{}{} ({n})",
                    if i > 0 { ", " } else { "" },
                    link(url, if title.is_empty() { url } else { title })
                );
            }
            h.push_str("</p>");
        }
        h.push_str("</section>");
    }
}

fn not_helpful(h: &mut String, set: &RecordSet) {
    h.push_str("<h2>Answers marked not helpful</h2>");
    let down: Vec<_> = set.feedback.iter().rev().filter(|f| !f.up).take(MAX_DOWN).collect();
    if down.is_empty() {
        h.push_str("<p>None.</p>");
        return;
    }
    for f in down {
        let answer: String = f.answer.chars().take(400).collect();
        let more = if f.answer.chars().count() > 400 { "…" } else { "" };
        let _ = write!(
            h,
            "<section class=\"group\"><h3>{}</h3><p class=\"muted\">{}</p><blockquote>{}{more}</blockquote>",
            esc(if f.question.is_empty() { "(question not sent)" } else { &f.question }),
            day(f.ts),
            esc(&answer)
        );
        if !f.sources.is_empty() {
            h.push_str("<p>Sources: ");
            for (i, s) in f.sources.iter().enumerate() {
                let _ = write!(h, "{}{}", if i > 0 { ", " } else { "" }, link(s, s));
            }
            h.push_str("</p>");
        }
        h.push_str("</section>");
    }
}

fn pages(h: &mut String, set: &RecordSet) {
    h.push_str("<h2>Pages most shown as sources</h2>");
    let mut count: HashMap<&str, (usize, &str)> = HashMap::new();
    for q in &set.questions {
        let mut seen: Vec<&str> = Vec::new();
        for (url, title) in &q.sections {
            let p = page_of(url);
            if !seen.contains(&p) {
                seen.push(p);
                count.entry(p).or_insert((0, title.as_str())).0 += 1;
            }
        }
    }
    if count.is_empty() {
        h.push_str("<p>None yet.</p>");
        return;
    }
    let mut rows: Vec<_> = count.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
    h.push_str("<table><thead><tr><th scope=\"col\">page</th><th scope=\"col\">questions</th></tr></thead><tbody>");
    for (url, (n, title)) in rows.into_iter().take(MAX_PAGES) {
        let _ = write!(
            h,
            "<tr><td>{} <span class=\"muted\">{}</span></td><td class=\"n\">{n}</td></tr>",
            link(url, if title.is_empty() { url } else { title }),
            esc(url)
        );
    }
    h.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::super::{cluster, records};
    use super::*;

    /// The page for these record lines, its uncertain and declined questions grouped by words.
    fn render_lines(lines: &[String], site: &str) -> String {
        let set = records::parse(lines, None, 1_764_100_000);
        let gaps: Vec<&Question> =
            set.questions.iter().filter(|q| q.outcome != Outcome::Answered).collect();
        let texts: Vec<String> = gaps.iter().map(|q| q.question.clone()).collect();
        let clusters = cluster::cluster(&texts, cluster::Grouping::Words);
        render(&Report {
            site,
            from: "a.jsonl",
            set: &set,
            gaps: &gaps,
            ungrouped: 0,
            clusters: &clusters,
            generated: 1764200000,
        })
    }

    #[test]
    fn the_page_shows_outcomes_groups_and_escapes_what_readers_typed() {
        let lines: Vec<String> = [
            r#"{"type":"question","ts":1764000000,"question":"proxy setup behind a firewall <script>x</script>","outcome":"declined","sections":[{"url":"/proxy#a","title":"Proxy"}]}"#,
            r#"{"type":"question","ts":1764090000,"question":"proxy setup for a firewall","outcome":"uncertain","sections":[{"url":"/proxy#b","title":"Proxy"}]}"#,
            r#"{"type":"question","ts":1764100000,"question":"install","outcome":"answered","sections":[{"url":"/install","title":"Install"}]}"#,
            r#"{"type":"feedback","ts":1764100001,"rating":"down","question":"install","answer":"<img src=x onerror=1>","sources":["/install"]}"#,
        ]
        .map(String::from)
        .to_vec();
        let html = render_lines(&lines, "Docs & co");
        assert!(!html.contains("<script>") && !html.contains("<img"), "escaped");
        assert!(html.contains("&lt;script&gt;") && html.contains("Docs &amp; co"));
        assert!(html.contains("2 question(s)"), "the two proxy questions form one group");
        assert!(html.contains("Landed near: <a href=\"/proxy#a\">Proxy</a> (1)"));
        assert!(html.contains("33 %"), "one in three answered");
        assert!(html.contains("<title>2025-11-24: 1 declined</title>"), "{html}");
        assert!(html.contains("Answers marked not helpful</h2><section"));
        let csp = "content=\"default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\"";
        assert!(html.contains(csp), "no script runs, even if an escape is ever missed");
        assert!(is_report(html.as_bytes()), "a later report may write over it");
        assert!(!is_report(lines.join("\n").as_bytes()) && !is_report(b"<!doctype html>\n<p>"));
    }

    #[test]
    fn urls_readers_sent_become_links_only_to_web_pages() {
        let lines: Vec<String> = [
            r#"{"type":"question","ts":1764000000,"question":"q one","outcome":"declined","sections":[{"url":"javascript:alert(document.domain)","title":"Click"}]}"#,
            r#"{"type":"question","ts":1764000001,"question":"q two","outcome":"answered","sections":[{"url":"//evil.example/share","title":"Share"},{"url":"https://docs.example/a#b","title":"A"}]}"#,
            r#"{"type":"feedback","ts":1764000002,"rating":"down","question":"q","answer":"a","sources":["jav&#x61;script:alert(1)","/guide#x"]}"#,
        ]
        .map(String::from)
        .to_vec();
        let html = render_lines(&lines, "s");
        let hrefs: Vec<&str> =
            html.split("href=\"").skip(1).filter_map(|s| s.split('"').next()).collect();
        assert_eq!(hrefs, ["/guide#x", "https://docs.example/a"], "{html}");
        assert!(html.contains("javascript:alert(document.domain)"), "shown as text");
    }

    #[test]
    fn an_empty_log_still_makes_a_page() {
        let set = records::parse(&[], None, 1_764_100_000);
        let html = render(&Report {
            site: "s",
            from: "f",
            set: &set,
            gaps: &[],
            ungrouped: 0,
            clusters: &[],
            generated: 0,
        });
        assert!(html.contains("no questions recorded yet") && html.contains("No questions yet."));
    }

    #[test]
    fn a_span_of_centuries_is_drawn_in_a_bounded_number_of_bars() {
        let q = |ts| Question {
            ts,
            question: "q".into(),
            outcome: Outcome::Answered,
            sections: vec![],
        };
        let page = |set: &RecordSet| {
            render(&Report {
                site: "s",
                from: "f",
                set,
                gaps: &[],
                ungrouped: 0,
                clusters: &[],
                generated: 0,
            })
        };
        let html = page(&RecordSet { questions: vec![q(0), q(u64::MAX)], ..Default::default() });
        assert_eq!(html.matches("<rect ").count(), 2);
        assert!(html.len() < 64 * 1024, "{} bytes", html.len());
        let twelve_years = vec![q(1_400_000_000), q(1_764_000_000)];
        let html = page(&RecordSet { questions: twelve_years, ..Default::default() });
        assert!(html.contains("Questions per 11 days") && html.contains("11 days from"), "{html}");
        let two_years = vec![q(1_700_000_000), q(1_764_000_000)];
        let html = page(&RecordSet { questions: two_years, ..Default::default() });
        assert!(html.contains("Questions per week") && html.contains(">week of<"), "{html}");
    }
}

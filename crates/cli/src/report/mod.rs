//! `docent report`: what readers asked and what the docs could not answer, as one static HTML
//! page, from the `[analytics]` records `docent serve` keeps (a JSON-lines file or its Redis
//! list).
//!
//! - [`records`]: reading and checking the records;
//! - [`cluster`]: grouping declined and uncertain questions by meaning;
//! - [`page`]: the HTML (self-contained: no script, no external file).

pub mod cluster;
pub mod page;
pub mod records;

use std::io::Read as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

use crate::query::{embed_texts, load_index, query_embedder, EmbedAccess, ModeArg};

/// Most uncertain and declined questions grouped, the latest: grouping compares each question
/// with every group so far, so its time grows with the square of their number (5,000 distinct
/// ones take 2 s), and whoever can post to `/v1/events` chooses that number.
pub const MAX_GROUPED: usize = 10_000;

/// The uncertain and declined questions to group (the latest [`MAX_GROUPED`], oldest first),
/// and how many older ones are left out.
pub fn to_group(set: &records::RecordSet) -> (Vec<&records::Question>, usize) {
    let mut gaps: Vec<&records::Question> =
        set.questions.iter().filter(|q| q.outcome != records::Outcome::Answered).collect();
    let older = gaps.len().saturating_sub(MAX_GROUPED);
    gaps.drain(..older);
    (gaps, older)
}

/// Arguments of `docent report`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  docent report analytics.jsonl --out report.html
  docent report analytics.jsonl --index public/docent.idx --days 30 --out report.html
  docent report --redis redis://127.0.0.1:6379 --out report.html

The records come from `docent serve` with [analytics] enabled (see docs/proxy.md). With --index,
questions are grouped by the index's own embedding model; without it (or for a lexical index), by
the words they share.")]
pub struct ReportArgs {
    /// The analytics file (JSON lines) written by `docent serve` ([analytics] path).
    #[arg(value_name = "ANALYTICS.jsonl")]
    pub file: Option<PathBuf>,
    /// Read the records from this Redis instead ([analytics] redis = true).
    #[arg(long, value_name = "URL", conflicts_with = "file")]
    pub redis: Option<String>,
    /// The Redis list's key: `<[limits] store_prefix>:analytics`.
    #[arg(long, value_name = "KEY", default_value = "docent:analytics")]
    pub key: String,
    /// Group questions by this index's embedding model (the one the site serves).
    #[arg(long, value_name = "INDEX")]
    pub index: Option<PathBuf>,
    /// Only the last N days.
    #[arg(long, value_name = "N")]
    pub days: Option<u32>,
    /// Where to write the page.
    #[arg(long, short, value_name = "FILE", default_value = "docent-report.html")]
    pub out: PathBuf,
    /// Write over --out even when it is not a page `docent report` wrote.
    #[arg(long)]
    pub force: bool,
    /// The site's name, in the page title.
    #[arg(long, value_name = "NAME", default_value = "the documentation")]
    pub site: String,
    /// Embedding access (for an index built with --embed openai).
    #[command(flatten)]
    pub access: EmbedAccess,
}

/// Whether `a` and `b` name one file (through links, `..` or another spelling).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        if let (Ok(a), Ok(b)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return (a.dev(), a.ino()) == (b.dev(), b.ino());
        }
    }
    matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b)
}

/// Refuse an --out whose writing would destroy something: the analytics file being read
/// (always), or an existing file that is neither empty nor a page `docent report` wrote
/// (unless `force`): `--out index.html` in a site's folder is a slip, not a wish.
fn check_out(out: &Path, input: Option<&Path>, force: bool) -> anyhow::Result<()> {
    if !out.exists() {
        return Ok(());
    }
    if input.is_some_and(|i| same_file(i, out)) {
        anyhow::bail!(
            "--out {} is the analytics file this report reads: writing the page there would \
             destroy the records; give another file, e.g. --out docent-report.html",
            out.display()
        );
    }
    if out.is_dir() {
        anyhow::bail!(
            "--out {} is a folder; give a file in it, e.g. --out {}",
            out.display(),
            out.join("docent-report.html").display()
        );
    }
    if force {
        return Ok(());
    }
    let mut head = Vec::with_capacity(1024);
    std::fs::File::open(out).and_then(|f| f.take(1024).read_to_end(&mut head)).with_context(
        || format!("cannot read {} to check it is an earlier report", out.display()),
    )?;
    if !head.is_empty() && !page::is_report(&head) {
        anyhow::bail!(
            "--out {} exists and is not a page written by `docent report`; give another file, \
             or add --force to write over it",
            out.display()
        );
    }
    Ok(())
}

/// Run `docent report`.
pub fn run(a: ReportArgs) -> anyhow::Result<()> {
    check_out(&a.out, a.file.as_deref(), a.force)?;
    let (lines, from) = match (&a.file, &a.redis) {
        (Some(f), _) => (records::read_file(f)?, f.display().to_string()),
        (None, Some(url)) => {
            (records::read_redis(url, &a.key)?, format!("{} {}", records::shown_url(url), a.key))
        }
        (None, None) => anyhow::bail!("give the analytics file `docent serve` writes ([analytics] path), or --redis URL for [analytics] redis = true"),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let since = a.days.map(|d| now.saturating_sub(u64::from(d) * 86_400));
    let set = records::parse(&lines, since, now);
    if set.skipped > 0 {
        eprintln!(
            "docent report: skipped {} line(s) that are not analytics records or whose time is \
             implausible (first: line {})",
            set.skipped,
            set.first_skipped.unwrap_or(0)
        );
    }
    let (gaps, ungrouped) = to_group(&set);
    let texts: Vec<String> = gaps.iter().map(|q| q.question.clone()).collect();
    let grouping = match &a.index {
        Some(p) => {
            let index = load_index(p)?;
            match query_embedder(&index, ModeArg::Hybrid, &a.access)? {
                Some(e) => {
                    let vs = embed_texts(e.as_ref(), &texts)
                        .context("cannot embed the questions to group them; drop --index to group them by their words")?;
                    let off = index.header().embedding.off_topic_cosine.unwrap_or(0.0);
                    cluster::Grouping::Vectors {
                        vectors: vs,
                        threshold: cluster::vector_threshold(off),
                    }
                }
                None => cluster::Grouping::Words,
            }
        }
        None => cluster::Grouping::Words,
    };
    let clusters = cluster::cluster(&texts, grouping);
    let html = page::render(&page::Report {
        site: &a.site,
        from: &from,
        set: &set,
        gaps: &gaps,
        ungrouped,
        clusters: &clusters,
        generated: now,
    });
    if let Some(dir) = a.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the folder {}", dir.display()))?;
    }
    std::fs::write(&a.out, html)
        .with_context(|| format!("cannot write the report to {}", a.out.display()))?;
    eprintln!(
        "docent report: {} questions ({} answered, {} uncertain, {} declined), {} feedback votes → {}",
        set.questions.len(),
        set.count(records::Outcome::Answered),
        set.count(records::Outcome::Uncertain),
        set.count(records::Outcome::Declined),
        set.feedback.len(),
        a.out.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_questions_groups_only_the_latest() {
        let lines: Vec<String> = (0..MAX_GROUPED + 3)
            .map(|i| {
                format!(
                    r#"{{"type":"question","ts":{},"question":"q{i}","outcome":"declined","index":"{i:016x}"}}"#,
                    1_764_000_000 + i
                )
            })
            .collect();
        let set = records::parse(&lines, None, 1_764_100_000);
        assert_eq!(set.indexes.len(), MAX_GROUPED + 3);
        let (grouped, older) = to_group(&set);
        assert_eq!((grouped.len(), older), (MAX_GROUPED, 3));
        assert_eq!(grouped[0].question, "q3");
    }
}

//! `docent llms`: the docs for AI agents as files, from the same sources as `docent index`:
//! `llms.txt` (the llmstxt.org format: title, summary, sections of links with one-line
//! descriptions), `llms-full.txt` (every page as clean Markdown) and one `.md` per page.

mod compose;
mod links;

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use clap::Args;
use docent_core::source::clean::clean_page_with;

use crate::index::{list_files, page_url, settings_from_args, IndexArgs, SiteArgs, SourceIncludes};
pub use compose::{llms_full, llms_txt, md_path, Doc, Site, MAX_LLMS_TXT_CHARS};

/// Arguments of `docent llms`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "Examples:
  docent llms docs --out public
  docent llms docs/.vitepress/dist --out docs/.vitepress/dist --base-url https://docs.example.com --clean-urls
  docent llms --config docent.toml --out public --title \"Acme\" --summary \"Acme is a ...\"

Writes OUT/llms.txt, OUT/llms-full.txt and OUT/<page url>.md for every page (configuration.html
→ configuration.html.md, guide/intro → guide/intro.md), headings as `## Title {#anchor}`.
Sources, --base-url, --clean-urls, globs and namespaces work as for `docent index` (and come
from docent.toml's [index] section when not given). Publish OUT at the site's root.")]
pub struct LlmsArgs {
    /// Sources and how their pages get URLs and namespaces (as for `docent index`).
    #[command(flatten)]
    pub site: SiteArgs,
    /// Output folder (the site's public root).
    #[arg(long, short, value_name = "DIR")]
    pub out: PathBuf,
    /// Site title for llms.txt (default: the home page's title).
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    /// One-paragraph summary for llms.txt (default: the home page's description).
    #[arg(long, value_name = "TEXT")]
    pub summary: Option<String>,
}

/// What `docent llms` wrote.
#[derive(Debug, Clone, Default)]
pub struct LlmsReport {
    /// Pages written (one `.md` each).
    pub pages: usize,
    /// Pages skipped (noindex, redirects).
    pub skipped: usize,
    /// Characters of llms.txt.
    pub llms_txt_chars: usize,
    /// Characters of llms-full.txt.
    pub full_chars: usize,
}

/// `docent llms`.
pub fn run(args: LlmsArgs) -> anyhow::Result<()> {
    let out = args.out.clone();
    let r = write_llms(args)?;
    outln!(
        "wrote {} (llms.txt {} chars, llms-full.txt {} chars, {} page .md files{})",
        out.display(),
        r.llms_txt_chars,
        r.full_chars,
        r.pages,
        if r.skipped > 0 { format!(", {} pages skipped", r.skipped) } else { String::new() }
    );
    Ok(())
}

/// Read the sources and write the files (see the module docs).
pub fn write_llms(args: LlmsArgs) -> anyhow::Result<LlmsReport> {
    let index_args = IndexArgs {
        site: args.site.clone(),
        out: Some(args.out.join("llms.txt")),
        quiet: true,
        ..IndexArgs::default()
    };
    let settings = settings_from_args(index_args)?;
    let mut docs = Vec::new();
    let mut report = LlmsReport::default();
    let mut includes: std::collections::HashMap<PathBuf, SourceIncludes> = Default::default();
    for (file, namespace, flavor, source) in list_files(&settings)? {
        let bytes = std::fs::read(&file.path)
            .with_context(|| format!("cannot read {}", file.path.display()))?;
        let content = String::from_utf8_lossy(&bytes);
        if !includes.contains_key(&source.path) {
            let inc = SourceIncludes::new(&source.path)
                .with_include_root(settings.include_root.as_deref())?;
            includes.insert(source.path.clone(), inc);
        }
        let inc = &includes[&source.path];
        let Some(page) = clean_page_with(file.kind, &content, flavor, &file.rel, inc)? else {
            report.skipped += 1;
            continue;
        };
        let url = page_url(&settings, source, &file, flavor, &content);
        docs.push(Doc { rel: file.rel.clone(), url, namespace, page });
    }
    if docs.is_empty() {
        bail!("no pages to write: every page was skipped (noindex or redirects)");
    }
    links::relink(&mut docs, settings.base_url.as_deref());
    let site = Site {
        title: args.title.clone(),
        summary: args.summary.clone(),
        base_url: settings.base_url.clone(),
        fallback_title: folder_name(&settings.sources[0].path),
    };
    std::fs::create_dir_all(&args.out).with_context(|| {
        format!(
            "cannot create the output folder {}; check the path and its permissions",
            args.out.display()
        )
    })?;
    for d in &docs {
        write(&args.out.join(md_path(d, settings.base_url.as_deref())), &compose::page_md(d))?;
    }
    let txt = llms_txt(&site, &docs);
    let full = llms_full(&site, &docs);
    write(&args.out.join("llms.txt"), &txt)?;
    write(&args.out.join("llms-full.txt"), &full)?;
    report.pages = docs.len();
    report.llms_txt_chars = txt.chars().count();
    report.full_chars = full.chars().count();
    Ok(report)
}

fn folder_name(p: &Path) -> String {
    std::fs::canonicalize(p)
        .ok()
        .and_then(|c| c.file_name().map(|n| n.to_string_lossy().to_string()))
        .unwrap_or_else(|| "Documentation".into())
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

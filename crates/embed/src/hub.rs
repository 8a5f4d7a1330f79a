//! Downloading a sentence-transformers model from the Hugging Face hub into the hub's own cache
//! layout, so `--embed local` works on a machine with no Python and no model yet.
//!
//! ```text
//! GET {endpoint}/{org}/{name}/resolve/{revision}/{file}
//!   X-Repo-Commit: the commit the revision points to
//!   ETag / X-Linked-Etag: the git blob id, or for LFS files (the weights) their sha256
//! {cache}/models--{org}--{name}/blobs/{etag}                  the file, checked
//! {cache}/models--{org}--{name}/snapshots/{commit}/{file}     a link to the blob (or a copy)
//! {cache}/models--{org}--{name}/refs/{revision}               the commit
//! ```
//!
//! A file is first written as `blobs/{etag}.incomplete`; an interrupted download resumes from
//! there with a `Range` request. LFS files are checked against their sha256 (the ETag) and every
//! file against its announced length. `HF_HUB_OFFLINE=1` (or [`HubOptions::offline`]) never
//! touches the network. `HF_ENDPOINT` points at a mirror (tests use a local server).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use sha2::{Digest, Sha256};

use crate::EmbedError;

/// The hub's default address.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// Files a sentence-transformers folder needs; the first three are required.
const FILES: &[(&str, bool)] = &[
    ("config.json", true),
    ("tokenizer.json", true),
    ("model.safetensors", true),
    ("modules.json", false),
    ("sentence_bert_config.json", false),
    ("config_sentence_transformers.json", false),
    ("1_Pooling/config.json", false),
];

/// Where and how to download.
#[derive(Debug, Clone)]
pub struct HubOptions {
    /// The hub (default `$HF_ENDPOINT`, else [`DEFAULT_ENDPOINT`]).
    pub endpoint: String,
    /// The cache root (default: `$HF_HUB_CACHE`, `$HF_HOME/hub`, `~/.cache/huggingface/hub`).
    pub cache: PathBuf,
    /// The branch, tag or commit (default `main`).
    pub revision: String,
    /// Use only what is cached (default: `HF_HUB_OFFLINE` is set to 1/true).
    pub offline: bool,
    /// Per-request timeout for connecting and between bytes.
    pub timeout: Duration,
}

impl HubOptions {
    /// The defaults from the environment; `None` when no cache folder can be named (no HOME).
    pub fn from_env() -> Option<HubOptions> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let cache = env("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| env("HF_HOME").map(|h| PathBuf::from(h).join("hub")))
            .or_else(|| env("HOME").map(|h| PathBuf::from(h).join(".cache/huggingface/hub")))?;
        Some(HubOptions {
            endpoint: env("HF_ENDPOINT").unwrap_or_else(|| DEFAULT_ENDPOINT.into()),
            cache,
            revision: "main".into(),
            offline: env("HF_HUB_OFFLINE")
                .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
            timeout: Duration::from_secs(30),
        })
    }
}

/// The snapshot folder of `repo` (`org/name`) in the cache, downloading what is missing. The
/// error names the repository, the file and what to do.
pub fn download_model(repo: &str, opts: &HubOptions) -> Result<PathBuf, EmbedError> {
    if repo.split('/').count() != 2 || repo.split('/').any(|p| p.is_empty() || p == "..") {
        return Err(EmbedError::Config(format!(
            "{repo:?} is not a Hugging Face model id: write it as org/name, e.g. sentence-transformers/all-MiniLM-L6-v2"
        )));
    }
    let root = opts.cache.join(format!("models--{}", repo.replace('/', "--")));
    if let Some(snap) = cached_snapshot(&root, &opts.revision) {
        return Ok(snap);
    }
    if opts.offline {
        return Err(EmbedError::Download {
            model: repo.to_string(),
            reason: format!(
                "offline (HF_HUB_OFFLINE or --offline) and it is not in the cache {}",
                opts.cache.display()
            ),
        });
    }
    let repo = repo.to_string();
    let opts = opts.clone();
    // Its own thread and runtime: callers may be inside a runtime or on a plain thread.
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| EmbedError::Inference(format!("cannot start the async runtime: {e}")))?;
        rt.block_on(fetch_all(&repo, &root, &opts))
    })
    .join()
    .unwrap_or_else(|_| Err(EmbedError::Inference("the download thread panicked".into())))
}

/// The snapshot `refs/{revision}` names, when it holds every required file.
fn cached_snapshot(root: &Path, revision: &str) -> Option<PathBuf> {
    let commit = std::fs::read_to_string(root.join("refs").join(revision)).ok()?;
    let snap = root.join("snapshots").join(commit.trim());
    FILES.iter().filter(|(_, req)| *req).all(|(f, _)| snap.join(f).is_file()).then_some(snap)
}

async fn fetch_all(repo: &str, root: &Path, opts: &HubOptions) -> Result<PathBuf, EmbedError> {
    let fail = |reason: String| EmbedError::Download { model: repo.to_string(), reason };
    let client = reqwest::Client::builder()
        .connect_timeout(opts.timeout)
        .read_timeout(opts.timeout)
        .build()
        .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
    // HEAD without following redirects: the hub answers an LFS file's HEAD with a redirect
    // that carries the file's sha256 (X-Linked-Etag) and size; the CDN behind it does not.
    let head_client = reqwest::Client::builder()
        .connect_timeout(opts.timeout)
        .read_timeout(opts.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| fail(format!("cannot build the HTTP client: {e}")))?;
    let mut commit: Option<String> = None;
    let mut fetched = Vec::new();
    for (file, required) in FILES {
        let url = format!(
            "{}/{repo}/resolve/{}/{file}",
            opts.endpoint.trim_end_matches('/'),
            opts.revision
        );
        match fetch_file(&head_client, &client, &url, root).await {
            Ok(Some((c, blob))) => {
                if commit.as_ref().is_some_and(|prev| prev != &c) {
                    return Err(fail(format!(
                        "the revision {} moved while downloading ({} then {c}); run again",
                        opts.revision,
                        commit.unwrap_or_default()
                    )));
                }
                commit = Some(c);
                fetched.push((*file, blob));
            }
            Ok(None) if !required => {}
            Ok(None) => return Err(fail(format!("{url} does not exist (HTTP 404): is {repo} a sentence-transformers model with model.safetensors?"))),
            Err(reason) => return Err(fail(format!("{url}: {reason}"))),
        }
    }
    let commit = commit.unwrap_or_else(|| opts.revision.clone());
    let snap = root.join("snapshots").join(&commit);
    for (file, blob) in fetched {
        let link = snap.join(file);
        let parent = link.parent().unwrap_or(&snap);
        std::fs::create_dir_all(parent)
            .map_err(|e| fail(format!("cannot create {}: {e}", parent.display())))?;
        let _ = std::fs::remove_file(&link);
        link_or_copy(&blob, &link)
            .map_err(|e| fail(format!("cannot place {}: {e}", link.display())))?;
    }
    let refs = root.join("refs");
    std::fs::create_dir_all(&refs)
        .map_err(|e| fail(format!("cannot create {}: {e}", refs.display())))?;
    std::fs::write(refs.join(&opts.revision), &commit)
        .map_err(|e| fail(format!("cannot write refs/{}: {e}", opts.revision)))?;
    Ok(snap)
}

/// A relative symlink as the hub's own client makes (a copy where links are not allowed).
fn link_or_copy(blob: &Path, link: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        let depth = link.parent().map(|p| p.components().count()).unwrap_or(0);
        let root_depth =
            blob.parent().and_then(Path::parent).map(|p| p.components().count()).unwrap_or(0);
        let mut rel = PathBuf::new();
        for _ in 0..depth.saturating_sub(root_depth) {
            rel.push("..");
        }
        rel.push("blobs");
        rel.push(blob.file_name().unwrap_or_default());
        if std::os::unix::fs::symlink(&rel, link).is_ok() {
            return Ok(());
        }
    }
    std::fs::copy(blob, link).map(|_| ())
}

/// Downloads one file into `blobs/` (resuming a partial one): `Some((commit, blob path))`, or
/// `None` on 404. The error says what went wrong.
async fn fetch_file(
    head_client: &reqwest::Client,
    client: &reqwest::Client,
    url: &str,
    root: &Path,
) -> Result<Option<(String, PathBuf)>, String> {
    // Ask for the file's identity first (the hub answers HEAD with a redirect for LFS files and
    // the ETag of the content in X-Linked-Etag).
    let head = head_client.head(url).send().await.map_err(|e| reach(&e))?;
    if head.status() == reqwest::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    if !(head.status().is_success() || head.status().is_redirection()) {
        return Err(format!("HTTP {}", head.status()));
    }
    let h = head.headers();
    let get = |k: &str| {
        h.get(k)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.trim_matches('"').trim_start_matches("W/").trim_matches('"').to_string())
    };
    let etag = get("x-linked-etag")
        .or_else(|| get("etag"))
        .filter(|e| !e.is_empty() && !e.contains(['/', '\\', '.']))
        .ok_or("the server sent no ETag: is this a Hugging Face hub (or a mirror of one)?")?;
    let commit = get("x-repo-commit")
        .filter(|c| !c.is_empty() && !c.contains(['/', '\\', '.']))
        .ok_or("the server sent no X-Repo-Commit")?;
    let size: Option<u64> =
        get("x-linked-size").or_else(|| get("content-length")).and_then(|s| s.parse().ok());
    let blobs = root.join("blobs");
    std::fs::create_dir_all(&blobs)
        .map_err(|e| format!("cannot create {}: {e}", blobs.display()))?;
    let blob = blobs.join(&etag);
    if blob.is_file() {
        return Ok(Some((commit, blob)));
    }
    let partial = blobs.join(format!("{etag}.incomplete"));
    let have = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
    let mut req = client.get(url);
    if have > 0 {
        req = req.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let resp = req.send().await.map_err(|e| reach(&e))?;
    let status = resp.status();
    let append = status == reqwest::StatusCode::PARTIAL_CONTENT && have > 0;
    if !(status.is_success()) {
        return Err(format!("HTTP {status}"));
    }
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(&partial)
        .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk =
            chunk.map_err(|e| format!("the download broke off ({e}); run again to resume it"))?;
        out.write_all(&chunk).map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    }
    out.flush().map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    drop(out);
    let got = std::fs::metadata(&partial).map(|m| m.len()).unwrap_or(0);
    if let Some(size) = size.filter(|&s| s != got) {
        if got > size {
            let _ = std::fs::remove_file(&partial);
        }
        return Err(format!("got {got} of {size} bytes; run again to resume the download"));
    }
    // LFS files (the weights) are named by their sha256: check it.
    if etag.len() == 64 && etag.bytes().all(|b| b.is_ascii_hexdigit()) {
        let sum =
            sha256_file(&partial).map_err(|e| format!("cannot read {}: {e}", partial.display()))?;
        if !sum.eq_ignore_ascii_case(&etag) {
            let _ = std::fs::remove_file(&partial);
            return Err(format!("checksum mismatch: sha256 {sum}, the hub says {etag}; the damaged file was removed, run again"));
        }
    }
    std::fs::rename(&partial, &blob)
        .map_err(|e| format!("cannot move {} into place: {e}", blob.display()))?;
    Ok(Some((commit, blob)))
}

fn reach(e: &reqwest::Error) -> String {
    format!("cannot reach the hub ({e}); check the network (or HF_ENDPOINT), or put the model folder in place yourself and set DOCENT_MODEL_DIR")
}

fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h)?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

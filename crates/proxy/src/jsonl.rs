//! Append-only JSON-lines files (feedback, audit log), written by a background thread so
//! request handlers never block on disk.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Mutex;

/// A JSONL file that lines are appended to.
#[derive(Debug)]
pub struct JsonlWriter {
    path: PathBuf,
    tx: Mutex<mpsc::Sender<String>>,
}

impl JsonlWriter {
    /// Open (create, append) `path` and start the writer thread. Fails when the file can't be opened.
    pub fn open(path: &Path) -> std::io::Result<JsonlWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let (tx, rx) = mpsc::channel::<String>();
        let p = path.to_path_buf();
        std::thread::Builder::new().name("docent-jsonl".into()).spawn(move || {
            while let Ok(line) = rx.recv() {
                let mut buf = line;
                // Batch whatever else is queued.
                while let Ok(more) = rx.try_recv() {
                    buf.push_str(&more);
                }
                if let Err(e) = file.write_all(buf.as_bytes()).and_then(|_| file.flush()) {
                    tracing::error!(path = %p.display(), error = %e, "cannot append to JSONL file");
                }
            }
        })?;
        Ok(JsonlWriter { path: path.to_path_buf(), tx: Mutex::new(tx) })
    }

    /// Queue one record (one line).
    pub fn append(&self, value: &serde_json::Value) {
        let mut line = value.to_string();
        line.push('\n');
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        if tx.send(line).is_err() {
            tracing::error!(path = %self.path.display(), "JSONL writer thread is gone");
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

//! Append-only JSON-lines files (feedback, audit log, analytics), written by a background
//! thread so request handlers never block on disk.
//!
//! Neither memory nor disk may grow without end because of them: lines wait in a queue of at
//! most [`QUEUE_LINES`] (a stalled disk drops new lines instead of holding them in memory), and
//! a file stops growing at its size cap (measured on the file itself before every write, so a
//! log rotated with `copytruncate` takes lines again). Every dropped line is counted in
//! `docent_log_lines_dropped_total{log, reason}` and logged once per episode.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use crate::metrics::Metrics;

/// Most lines waiting for the writer thread; more are dropped until the disk catches up.
pub const QUEUE_LINES: usize = 4_096;

/// Why a line was not written (the `reason` label of the metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// The file is at its size cap.
    Full,
    /// [`QUEUE_LINES`] lines are already waiting: the disk is not keeping up.
    Backlog,
}

impl Dropped {
    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Dropped::Full => "full",
            Dropped::Backlog => "backlog",
        }
    }
}

/// A JSONL file that lines are appended to.
#[derive(Debug)]
pub struct JsonlWriter {
    path: PathBuf,
    /// Which log this is: the `log` label of the metric ("audit", "feedback", "analytics").
    log: &'static str,
    tx: mpsc::SyncSender<String>,
    /// Set by the writer thread while the file is at its cap.
    full: Arc<AtomicBool>,
    /// Whether the current backlog episode was logged (cleared by the writer thread).
    backlog_warned: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
}

impl JsonlWriter {
    /// Open (create, append) `path` and start the writer thread; the file takes lines while it
    /// is under `max_bytes` (`None`: no cap). Fails when the file can't be opened.
    pub fn open(
        path: &Path,
        log: &'static str,
        max_bytes: Option<u64>,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<JsonlWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let (tx, rx) = mpsc::sync_channel::<String>(QUEUE_LINES);
        let full = Arc::new(AtomicBool::new(false));
        let backlog_warned = Arc::new(AtomicBool::new(false));
        let thread = Writer {
            file,
            path: path.to_path_buf(),
            log,
            max_bytes,
            full: full.clone(),
            backlog_warned: backlog_warned.clone(),
            metrics: metrics.clone(),
        };
        std::thread::Builder::new().name("docent-jsonl".into()).spawn(move || thread.run(rx))?;
        Ok(JsonlWriter { path: path.to_path_buf(), log, tx, full, backlog_warned, metrics })
    }

    /// Queue one record (one line). `Err` says why it was dropped (already counted and logged).
    pub fn append(&self, value: &serde_json::Value) -> Result<(), Dropped> {
        if self.full.load(Ordering::Relaxed) {
            self.metrics.log_line_dropped(self.log, Dropped::Full.label(), 1);
            return Err(Dropped::Full);
        }
        let mut line = value.to_string();
        line.push('\n');
        match self.tx.try_send(line) {
            Ok(()) => Ok(()),
            Err(mpsc::TrySendError::Full(_)) => {
                self.metrics.log_line_dropped(self.log, Dropped::Backlog.label(), 1);
                if !self.backlog_warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(path = %self.path.display(), queued = QUEUE_LINES, "the {} log's disk is not keeping up; new lines are dropped until it does (docent_log_lines_dropped_total)", self.log);
                }
                Err(Dropped::Backlog)
            }
            Err(mpsc::TrySendError::Disconnected(_)) => {
                tracing::error!(path = %self.path.display(), "JSONL writer thread is gone");
                Err(Dropped::Backlog)
            }
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The writer thread's side.
struct Writer {
    file: std::fs::File,
    path: PathBuf,
    log: &'static str,
    max_bytes: Option<u64>,
    full: Arc<AtomicBool>,
    backlog_warned: Arc<AtomicBool>,
    metrics: Arc<Metrics>,
}

impl Writer {
    fn run(mut self, rx: mpsc::Receiver<String>) {
        loop {
            // While the file is full the request side sends nothing, so look at the file
            // every second to see whether it was rotated.
            let next = if self.full.load(Ordering::Relaxed) {
                rx.recv_timeout(std::time::Duration::from_secs(1))
            } else {
                rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
            };
            let line = match next {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.over_cap(0);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            let mut buf = line;
            let mut lines = 1u64;
            // Batch whatever else is queued.
            while let Ok(more) = rx.try_recv() {
                buf.push_str(&more);
                lines += 1;
            }
            self.backlog_warned.store(false, Ordering::Relaxed);
            if self.over_cap(buf.len() as u64) {
                self.metrics.log_line_dropped(self.log, Dropped::Full.label(), lines);
                continue;
            }
            if let Err(e) = self.file.write_all(buf.as_bytes()).and_then(|_| self.file.flush()) {
                tracing::error!(path = %self.path.display(), error = %e, "cannot append to JSONL file");
            }
        }
    }

    /// Whether `more` bytes would take the file past its cap; keeps `full` (and its one
    /// warning) in step with the file, which may have been truncated since.
    fn over_cap(&self, more: u64) -> bool {
        let Some(max) = self.max_bytes else { return false };
        let len = self.file.metadata().map(|m| m.len()).unwrap_or(0);
        let over = len.saturating_add(more) > max;
        if !over {
            self.full.store(false, Ordering::Relaxed);
        } else if !self.full.swap(true, Ordering::Relaxed) {
            tracing::warn!(path = %self.path.display(), max_bytes = max, "the {} log reached [serve] log_max_mb; new lines are dropped until it is rotated (move it away and restart, or truncate it)", self.log);
        }
        over
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("docent-jsonl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("log.jsonl")
    }

    fn wait_for(mut f: impl FnMut() -> bool) {
        for _ in 0..200 {
            if f() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    #[test]
    fn the_file_stops_at_its_cap_and_takes_lines_again_once_truncated() {
        let path = temp("cap");
        let metrics = Arc::new(Metrics::default());
        let w = JsonlWriter::open(&path, "feedback", Some(100), metrics.clone()).unwrap();
        let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        // Each line is 22 bytes: four fit under 100, the fifth would not.
        for i in 0..4 {
            w.append(&json!({"n": 1000 + i, "x": "abcd"})).unwrap();
        }
        wait_for(|| size() == 88);
        assert_eq!(size(), 88);
        let _ = w.append(&json!({"n": 2000, "x": "abcd"}));
        wait_for(|| w.full.load(Ordering::Relaxed));
        assert_eq!(w.append(&json!({"n": 2001, "x": "abcd"})), Err(Dropped::Full));
        assert_eq!(size(), 88, "nothing past the cap");
        let dropped = metrics
            .counter("docent_log_lines_dropped_total", &[("log", "feedback"), ("reason", "full")]);
        assert_eq!(dropped, 2);
        // Rotated with copytruncate: the writer sees the file shrink and takes lines again.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        wait_for(|| !w.full.load(Ordering::Relaxed));
        w.append(&json!({"n": 3000, "x": "abcd"})).unwrap();
        wait_for(|| size() == 22);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"n\":3000,\"x\":\"abcd\"}\n");
    }

    #[test]
    fn a_stalled_writer_drops_lines_instead_of_queueing_them_without_end() {
        let path = temp("backlog");
        let metrics = Arc::new(Metrics::default());
        // A writer whose thread is stopped: its receiver is held, never read.
        let (tx, rx) = mpsc::sync_channel::<String>(QUEUE_LINES);
        let w = JsonlWriter {
            path: path.clone(),
            log: "audit",
            tx,
            full: Arc::new(AtomicBool::new(false)),
            backlog_warned: Arc::new(AtomicBool::new(false)),
            metrics: metrics.clone(),
        };
        for i in 0..QUEUE_LINES {
            w.append(&json!({ "n": i })).unwrap();
        }
        assert_eq!(w.append(&json!({"n": "one more"})), Err(Dropped::Backlog));
        assert_eq!(
            metrics.counter(
                "docent_log_lines_dropped_total",
                &[("log", "audit"), ("reason", "backlog")]
            ),
            1
        );
        drop(rx);
    }
}

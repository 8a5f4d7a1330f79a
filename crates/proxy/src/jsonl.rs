//! Append-only JSON-lines files (feedback, audit log, analytics), written by a background
//! thread so request handlers never block on disk.
//!
//! Neither memory nor disk may grow without end because of them: lines wait in a queue of at
//! most [`QUEUE_LINES`] (a stalled disk drops new lines instead of holding them in memory), and
//! a file stops growing at its [`Cap`] (bytes for the feedback and audit logs, records for the
//! analytics file), checked against the file itself before every write, so a log rotated with
//! `copytruncate` takes lines again. Every dropped line is counted in
//! `docent_log_lines_dropped_total{log, reason}` and logged once per episode.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};

use crate::metrics::Metrics;

/// Most lines waiting for the writer thread; more are dropped until the disk catches up.
pub const QUEUE_LINES: usize = 4_096;

/// How big a file may grow. The lines already in it when the proxy starts count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// No cap.
    None,
    /// At most this many bytes (`[serve] log_max_mb`).
    Bytes(u64),
    /// At most this many lines (`[analytics] max_records`).
    Lines(u64),
}

impl Cap {
    /// The setting that sets it, for the "file is full" warning.
    fn setting(self) -> String {
        match self {
            Cap::None => String::new(),
            Cap::Bytes(b) => format!("[serve] log_max_mb ({} MiB)", b >> 20),
            Cap::Lines(n) => format!("[analytics] max_records ({n} records)"),
        }
    }
}

/// Why a line was not written (the `reason` label of the metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// The file is at its cap.
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
    /// Lines queued and not yet written or dropped by the writer thread.
    pending: Arc<AtomicUsize>,
    metrics: Arc<Metrics>,
}

impl JsonlWriter {
    /// Open (create, append) `path` and start the writer thread; the file takes lines while it
    /// is under `cap`. Fails when the file can't be opened or read.
    pub fn open(
        path: &Path,
        log: &'static str,
        cap: Cap,
        metrics: Arc<Metrics>,
    ) -> std::io::Result<JsonlWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        let (tx, rx) = mpsc::sync_channel::<String>(QUEUE_LINES);
        let full = Arc::new(AtomicBool::new(false));
        let backlog_warned = Arc::new(AtomicBool::new(false));
        let pending = Arc::new(AtomicUsize::new(0));
        let mut thread = Writer {
            file,
            path: path.to_path_buf(),
            log,
            cap,
            len: 0,
            lines: 0,
            full: full.clone(),
            backlog_warned: backlog_warned.clone(),
            pending: pending.clone(),
            metrics: metrics.clone(),
        };
        thread.measure()?;
        std::thread::Builder::new().name("docent-jsonl".into()).spawn(move || thread.run(rx))?;
        Ok(JsonlWriter {
            path: path.to_path_buf(),
            log,
            tx,
            full,
            backlog_warned,
            pending,
            metrics,
        })
    }

    /// Wait until every line queued so far is on disk (or dropped), for at most `within`;
    /// false when lines are still waiting then. Shutdown calls it, so the last answers' audit
    /// lines are not lost when the process exits.
    pub fn flush(&self, within: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + within;
        while self.pending.load(Ordering::Acquire) > 0 {
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        true
    }

    /// Queue one record (one line). `Err` says why it was dropped (already counted and logged).
    pub fn append(&self, value: &serde_json::Value) -> Result<(), Dropped> {
        if self.full.load(Ordering::Relaxed) {
            self.metrics.log_line_dropped(self.log, Dropped::Full.label(), 1);
            return Err(Dropped::Full);
        }
        let mut line = value.to_string();
        line.push('\n');
        // Counted before it is sent, so the writer never takes it off before it is on.
        self.pending.fetch_add(1, Ordering::AcqRel);
        let sent = self.tx.try_send(line);
        if sent.is_err() {
            self.pending.fetch_sub(1, Ordering::AcqRel);
        }
        match sent {
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
    cap: Cap,
    /// The file's length as this thread last saw or left it: another length means someone
    /// else changed the file (a rotation), and its lines are counted again.
    len: u64,
    /// Lines in the file (counted only for [`Cap::Lines`]).
    lines: u64,
    full: Arc<AtomicBool>,
    backlog_warned: Arc<AtomicBool>,
    pending: Arc<AtomicUsize>,
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
            let first = match next {
                Ok(line) => line,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.rotated() {
                        self.full.store(false, Ordering::Relaxed);
                    }
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            };
            // Batch whatever else is queued.
            let mut batch = vec![first];
            while let Ok(more) = rx.try_recv() {
                batch.push(more);
            }
            self.backlog_warned.store(false, Ordering::Relaxed);
            self.write(&batch);
            self.pending.fetch_sub(batch.len(), Ordering::AcqRel);
        }
    }

    /// Write what fits of `batch` under the cap; count and report the rest.
    fn write(&mut self, batch: &[String]) {
        self.rotated();
        let fit = self.fitting(batch);
        if fit < batch.len() {
            self.metrics.log_line_dropped(
                self.log,
                Dropped::Full.label(),
                (batch.len() - fit) as u64,
            );
            if !self.full.swap(true, Ordering::Relaxed) {
                tracing::warn!(path = %self.path.display(), "the {} log holds what {} allows; new lines are dropped until it is rotated (truncate it, or move it away and restart)", self.log, self.cap.setting());
            }
        } else {
            self.full.store(false, Ordering::Relaxed);
        }
        if fit == 0 {
            return;
        }
        let buf = batch[..fit].concat();
        match self.file.write_all(buf.as_bytes()).and_then(|_| self.file.flush()) {
            Ok(()) => {
                self.len += buf.len() as u64;
                self.lines += fit as u64;
            }
            Err(e) => {
                tracing::error!(path = %self.path.display(), error = %e, "cannot append to JSONL file");
            }
        }
    }

    /// How many of `batch`'s lines, from the first, fit under the cap.
    fn fitting(&self, batch: &[String]) -> usize {
        match self.cap {
            Cap::None => batch.len(),
            Cap::Lines(max) => {
                batch.len().min(max.saturating_sub(self.lines).try_into().unwrap_or(usize::MAX))
            }
            Cap::Bytes(max) => {
                let mut len = self.len;
                batch
                    .iter()
                    .take_while(|l| {
                        len = len.saturating_add(l.len() as u64);
                        len <= max
                    })
                    .count()
            }
        }
    }

    /// Whether the file is not as this thread left it (truncated, or written by someone else);
    /// if so its length, and for a line cap its lines, are measured again.
    fn rotated(&mut self) -> bool {
        let len = self.file.metadata().map(|m| m.len()).unwrap_or(self.len);
        if len == self.len {
            return false;
        }
        if let Err(e) = self.measure() {
            tracing::error!(path = %self.path.display(), error = %e, "cannot read the JSONL file to count its lines");
        }
        true
    }

    /// Take the file's length and, for a line cap, count its lines.
    fn measure(&mut self) -> std::io::Result<()> {
        self.len = self.file.metadata()?.len();
        if let Cap::Lines(_) = self.cap {
            use std::io::BufRead;
            let mut r = std::io::BufReader::new(std::fs::File::open(&self.path)?);
            let mut n = 0u64;
            loop {
                let buf = r.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                n += buf.iter().filter(|&&b| b == b'\n').count() as u64;
                let len = buf.len();
                r.consume(len);
            }
            self.lines = n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A log file in a folder removed when the returned guard drops.
    fn temp() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        (dir, path)
    }

    /// An "audit" writer whose thread is stopped: the receiver it returns is held, never read.
    fn stalled_writer(path: &Path, metrics: Arc<Metrics>) -> (JsonlWriter, mpsc::Receiver<String>) {
        let (tx, rx) = mpsc::sync_channel::<String>(QUEUE_LINES);
        let w = JsonlWriter {
            path: path.to_path_buf(),
            log: "audit",
            tx,
            full: Arc::new(AtomicBool::new(false)),
            backlog_warned: Arc::new(AtomicBool::new(false)),
            pending: Arc::new(AtomicUsize::new(0)),
            metrics,
        };
        (w, rx)
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
        let (_dir, path) = temp();
        let metrics = Arc::new(Metrics::default());
        let w = JsonlWriter::open(&path, "feedback", Cap::Bytes(100), metrics.clone()).unwrap();
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
    fn a_line_cap_counts_the_lines_already_there_and_again_after_a_rotation() {
        let (_dir, path) = temp();
        std::fs::write(&path, "{\"old\":1}\n{\"old\":2}\n").unwrap();
        let metrics = Arc::new(Metrics::default());
        let w = JsonlWriter::open(&path, "analytics", Cap::Lines(3), metrics.clone()).unwrap();
        let count = || std::fs::read_to_string(&path).unwrap_or_default().lines().count();
        for i in 0..3 {
            let _ = w.append(&json!({ "n": i }));
        }
        wait_for(|| w.full.load(Ordering::Relaxed));
        assert_eq!(count(), 3, "two old lines and one new");
        let dropped = || {
            metrics.counter(
                "docent_log_lines_dropped_total",
                &[("log", "analytics"), ("reason", "full")],
            )
        };
        assert_eq!(dropped(), 2);
        // Rotated with copytruncate: three lines fit again.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
        wait_for(|| !w.full.load(Ordering::Relaxed));
        for i in 0..4 {
            let _ = w.append(&json!({ "m": i }));
        }
        wait_for(|| count() == 3 && dropped() == 3);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"m\":0}\n{\"m\":1}\n{\"m\":2}\n");
    }

    #[test]
    fn flush_returns_once_every_queued_line_is_on_disk() {
        let (_dir, path) = temp();
        let w = JsonlWriter::open(&path, "audit", Cap::None, Arc::new(Metrics::default())).unwrap();
        for i in 0..2_000 {
            w.append(&json!({ "n": i, "pad": "x".repeat(200) })).unwrap();
        }
        assert!(w.flush(std::time::Duration::from_secs(10)));
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2_000);
        // A stalled writer: flush gives up at its deadline.
        let (stalled, _rx) = stalled_writer(&path, Arc::new(Metrics::default()));
        stalled.append(&json!({"n": "waits"})).unwrap();
        assert!(!stalled.flush(std::time::Duration::from_millis(50)));
    }

    #[test]
    fn a_stalled_writer_drops_lines_instead_of_queueing_them_without_end() {
        let (_dir, path) = temp();
        let metrics = Arc::new(Metrics::default());
        let (w, rx) = stalled_writer(&path, metrics.clone());
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

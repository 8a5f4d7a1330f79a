//! A real `redis-server` on loopback with its own port and data folder (never the system
//! service), and `docent-proxy` replica processes. Outside CI a test skips when redis-server is
//! missing; in CI (`CI` set) it fails, since scripts/setup installs it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A free loopback port (bound and released; good enough for tests on one machine).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A private folder under the system temp folder, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new empty folder named after `what`.
    pub fn new(what: &str) -> TempDir {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("docent-{what}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A redis-server started for one test.
pub struct RedisServer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    child: Option<Child>,
    dir: TempDir,
}

/// Start a redis-server, or `None` (test skipped) when it is not installed outside CI.
pub fn redis_server() -> Option<RedisServer> {
    let installed = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        if std::env::var_os("CI").is_some() {
            panic!("redis-server is not installed; scripts/setup installs it (apt-get install redis-server)");
        }
        eprintln!("skipping: redis-server not installed (bash scripts/setup, or apt-get install redis-server)");
        return None;
    }
    let mut r = RedisServer { port: free_port(), child: None, dir: TempDir::new("redis") };
    r.start();
    Some(r)
}

impl RedisServer {
    /// The `[limits] store` URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// (Re)start the server on its port and folder; waits until it answers PING.
    pub fn start(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(&self.dir.0)
            .args(["--logfile", "redis.log"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self.ping() {
                return;
            }
            assert!(Instant::now() < deadline, "redis-server did not answer on port {}", self.port);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether it answers `PING` right now.
    pub fn ping(&self) -> bool {
        use std::io::{Read, Write};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }

    /// Freeze the server (SIGSTOP): connections stay open and nothing answers, as with a Redis
    /// stalled by a long command or a full disk. [`RedisServer::resume`] undoes it.
    #[allow(dead_code)]
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Let a paused server run again (SIGCONT).
    #[allow(dead_code)]
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        if let Some(c) = &self.child {
            let ok = Command::new("kill").arg(sig).arg(c.id().to_string()).status();
            assert!(ok.is_ok_and(|s| s.success()), "kill {sig} redis-server");
        }
    }

    /// Kill the server (SIGKILL) and wait for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One `docent-proxy` process.
pub struct Replica {
    /// Its address.
    pub addr: SocketAddr,
    child: Option<Child>,
    _dir: TempDir,
}

impl Replica {
    /// Start the `docent-proxy` binary with `config` (a docent.toml text) on a free port and
    /// wait until `/healthz` answers.
    pub async fn start(config: &str) -> Replica {
        let dir = TempDir::new("replica");
        let cfg = dir.0.join("docent.toml");
        std::fs::write(&cfg, config).unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let log = std::fs::File::create(dir.0.join("log")).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_docent-proxy"))
            .arg("--config")
            .arg(&cfg)
            .arg("--listen")
            .arg(addr.to_string())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("docent-proxy starts");
        let mut r = Replica { addr, child: Some(child), _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = reqwest::Client::new();
        loop {
            if client.get(r.url("/healthz")).send().await.is_ok() {
                return r;
            }
            if let Some(Ok(Some(status))) = r.child.as_mut().map(Child::try_wait) {
                panic!("docent-proxy exited with {status}: {}", r.log());
            }
            assert!(Instant::now() < deadline, "docent-proxy did not start: {}", r.log());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `http://addr{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._dir.0.join("log")).unwrap_or_default()
    }

    /// Kill it (SIGKILL: no cleanup of any kind, like a crashed host).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Its `/metrics` text.
    pub async fn metrics(&self) -> String {
        reqwest::get(self.url("/metrics")).await.unwrap().text().await.unwrap()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

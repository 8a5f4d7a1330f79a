//! What the proxy's integration test files share: a real `serve` on a loopback port.

use std::net::SocketAddr;

use docent_proxy::{serve, Config};

/// A `docent_proxy::serve` running on 127.0.0.1; `stop` ends it gracefully.
pub struct Running {
    pub addr: SocketAddr,
    pub stop: Option<tokio::sync::oneshot::Sender<()>>,
    pub task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// Start `serve` with `cfg` on a free loopback port.
pub async fn start_proxy(cfg: Config) -> Running {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(cfg, l, async move {
        let _ = rx.await;
    }));
    Running { addr, stop: Some(tx), task }
}

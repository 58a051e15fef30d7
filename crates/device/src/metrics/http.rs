//! A minimal HTTP/1.1 responder for the scrape: `GET /metrics` gets the text, anything else
//! a 404. Each request has deadlines to arrive and to be taken, and a bounded head, so a
//! client that trickles bytes, sends a huge head or never reads holds a task for seconds
//! and a few KiB, not for ever.

use crate::stop::stopped;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Time a client has to send its request head, and then to take the answer.
const READ_DEADLINE: Duration = Duration::from_secs(5);
const WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// Longest request head read; a longer one is answered as it stands (most likely a 404).
const MAX_HEAD: usize = 8192;
/// Scrapes served at once; a connection past them is closed at once (a scraper retries at
/// its next interval). Each holds a task and a few KiB for at most the deadlines above.
pub const MAX_SCRAPES: usize = 32;

/// The content type of `prometheus_client::encoding::text`'s exposition.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Makes the scrape's text; runs on a blocking thread (it reads the engine's stats).
pub type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Serves scrapes on `listener` until `stop`.
pub async fn serve(listener: TcpListener, render: Render, mut stop: watch::Receiver<bool>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_SCRAPES));
    loop {
        let sock = tokio::select! {
            r = listener.accept() => match r {
                Ok((sock, _)) => sock,
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped(&mut stop) => return,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            drop(sock);
            continue;
        };
        let render = render.clone();
        tokio::spawn(async move {
            answer(sock, render).await;
            drop(slot);
        });
    }
}

async fn answer(mut sock: TcpStream, render: Render) {
    let Some(head) = read_head(&mut sock).await else {
        return;
    };
    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
    let (status, content_type, body) = if line.starts_with(b"GET /metrics ") {
        match tokio::task::spawn_blocking(move || render()).await {
            Ok(text) => ("200 OK", CONTENT_TYPE, text),
            Err(_) => ("500 Internal Server Error", "text/plain", String::new()),
        }
    } else {
        ("404 Not Found", "text/plain", "try /metrics\n".to_string())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    let write = async {
        sock.write_all(head.as_bytes()).await?;
        sock.write_all(body.as_bytes()).await?;
        sock.shutdown().await
    };
    let _ = tokio::time::timeout(WRITE_DEADLINE, write).await;
}

/// The request head, up to its blank line or `MAX_HEAD` bytes; `None` if the client left or
/// missed the deadline.
async fn read_head(sock: &mut TcpStream) -> Option<Vec<u8>> {
    let mut req = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let read = tokio::time::timeout(READ_DEADLINE, async {
        while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < MAX_HEAD {
            match sock.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => req.extend_from_slice(&chunk[..n]),
            }
        }
        true
    })
    .await;
    matches!(read, Ok(true)).then_some(req)
}

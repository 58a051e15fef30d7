//! The write side of a connection: completions, batched into few writes, each under a
//! deadline, with a last guard on their size.

use crate::dispatch::Shared;
use bytes::BytesMut;
use cerberus_proto::{Response, Status, HEADER_LEN};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, OwnedSemaphorePermit};

pub(super) async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<(Response, Option<OwnedSemaphorePermit>)>,
    timeout: Duration,
    shared: Arc<Shared>,
) {
    let mut out = BytesMut::new();
    let mut written = Vec::new();
    let max_body = shared.config.reply_bytes_bound();
    while let Some((r, permit)) = rx.recv().await {
        encode(&r, &mut out, max_body);
        written.push(permit);
        // Batch what is ready into one write.
        while out.len() < (1 << 20) {
            match rx.try_recv() {
                Ok((r, permit)) => {
                    encode(&r, &mut out, max_body);
                    written.push(permit);
                }
                Err(_) => break,
            }
        }
        let write = async {
            wr.write_all(&out).await?;
            wr.flush().await
        };
        match tokio::time::timeout(timeout, write).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return,
            Err(_) => {
                shared.metrics.write_timeouts.inc();
                tracing::debug!("closing a connection that does not take its replies");
                return;
            }
        }
        // Written: the commands' permits go back, the reading side may take more.
        written.clear();
        out.clear();
        if out.capacity() > 4 << 20 {
            // One large reply does not keep its buffer for the life of the connection.
            out = BytesMut::new();
        }
    }
    let _ = wr.shutdown().await;
}

/// Appends `r`'s frame to `out`; a reply whose body would exceed `max_body` (the device's
/// `max_reply_bytes`: a last guard, every command bounds its answer before building it) is
/// replaced by a `ReplyTooLarge` error.
fn encode(r: &Response, out: &mut BytesMut, max_body: u32) {
    let mark = out.len();
    let failure = match r.encode(out) {
        Ok(()) if out.len() - mark - HEADER_LEN <= max_body as usize => None,
        Ok(()) => Some((
            Status::ReplyTooLarge,
            format!(
                "the reply is {} bytes; this device replies with at most {max_body} bytes \
                 (max_reply_bytes)",
                out.len() - mark - HEADER_LEN
            ),
        )),
        Err(e) => Some((
            Status::InternalError,
            format!("completion could not be encoded: {e}"),
        )),
    };
    if let Some((status, message)) = failure {
        out.truncate(mark);
        let fallback = Response::error(r.cid, r.nsid, r.opcode, status, message);
        // A short error message always encodes.
        let _ = fallback.encode(out);
    }
}

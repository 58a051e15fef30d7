//! Opening a queue and bringing its controller up, as a host driver does: Fabrics Connect
//! (in-band authentication when the target asks: `auth`), the controller's registers
//! through Property Get/Set, CC.EN and CSTS.RDY.

use super::auth;
use super::error::{ok, NvmeError, Result};
use super::queue::{NvmeQueue, QUEUE_ENTRIES};
use super::target::NvmeTarget;
use bytes::Bytes;
use cerberus_proto::nvme::fabrics_command as fabrics;
use cerberus_proto::nvme::{connect_data, property, CONNECT_ATR};

/// Opens a queue of `target`'s subsystem `subnqn` and connects it (`qid` 0: a new
/// controller, with a keep-alive timeout of `kato_ms`, 0 for none).
pub(super) async fn connect_queue(
    t: &NvmeTarget,
    subnqn: &str,
    qid: u16,
    cntlid: u16,
    kato_ms: u32,
) -> Result<(NvmeQueue, u16)> {
    let mut q = NvmeQueue::open(&t.addr, t.digests).await?;
    let data = connect_data([7; 16], cntlid, subnqn, &t.hostnqn);
    let sqsize = u32::from(QUEUE_ENTRIES - 1);
    let sqe = fabrics(0x01, u32::from(qid) << 16, sqsize, kato_ms);
    let (cqe, _) = ok(q.command(sqe, Bytes::from(data), true, 0).await?)?;
    if cqe.dw0 & CONNECT_ATR != 0 {
        auth::authenticate(&mut q, t, subnqn, qid).await?;
    }
    Ok((q, cqe.dw0 as u16))
}

/// Reads a controller register (CAP, VS, CC, CSTS) on an admin queue.
pub(super) async fn property_get(q: &mut NvmeQueue, offset: u32) -> Result<u64> {
    let eight = u32::from(offset == property::CAP);
    let sqe = fabrics(0x04, eight, offset, 0);
    let (cqe, _) = ok(q.command(sqe, Bytes::new(), true, 0).await?)?;
    Ok(u64::from(cqe.dw0) | u64::from(cqe.dw1) << 32)
}

/// Writes a 4-byte controller register on an admin queue.
pub(super) async fn property_set(q: &mut NvmeQueue, offset: u32, value: u32) -> Result<()> {
    let sqe = fabrics(0x00, 0, offset, value);
    ok(q.command(sqe, Bytes::new(), true, 0).await?)?;
    Ok(())
}

/// Enables the controller behind an admin queue (CC.EN with every command set) and waits
/// for CSTS.RDY.
pub(super) async fn enable(admin: &mut NvmeQueue) -> Result<()> {
    property_get(admin, property::VS).await?;
    property_get(admin, property::CAP).await?;
    // EN, CSS 110b (all I/O command sets), IOSQES 6, IOCQES 4.
    property_set(admin, property::CC, 1 | 0b110 << 4 | 6 << 16 | 4 << 20).await?;
    wait_csts(admin, 0x1, 0x1).await
}

/// Waits (up to a second) for CSTS & `mask` == `want`.
pub(super) async fn wait_csts(q: &mut NvmeQueue, mask: u64, want: u64) -> Result<()> {
    for _ in 0..100 {
        if property_get(q, property::CSTS).await? & mask == want {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Err(NvmeError::NotReady)
}

//! The device's vendor command pair (`docs/protocol.md`, "Over NVMe/TCP: vendor commands"):
//! Submit carries one native request frame; once it completes, Fetch (naming the native
//! command's id) brings its response frame back. Fetch waits for Submit's completion so
//! that the pair holds whether the target completes a queue's commands in order or not.

use super::error::{NvmeError, Result};
use super::queue::{data_pointer, NvmeQueue};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{Cqe, Pdu, Sqe, VENDOR_FETCH, VENDOR_SUBMIT};

/// The two completions of a pair and the data Fetch brought.
pub struct VendorReply {
    /// Submit's completion (DW0: the kept response's length).
    pub submit: Cqe,
    /// Fetch's completion (DW0: the response's length); None when Submit failed.
    pub fetch: Option<Cqe>,
    /// The response frame (empty unless Fetch succeeded).
    pub data: Bytes,
}

impl NvmeQueue {
    /// Runs native request `frame` (for namespace `nsid`, its native command id `native_cid`)
    /// as a Submit, in the capsule if it is at most `in_capsule` bytes (else through the
    /// target's R2T), then a Fetch of at most `buffer` bytes.
    pub async fn vendor_pair(
        &mut self,
        nsid: u32,
        native_cid: u32,
        frame: Bytes,
        in_capsule: u32,
        buffer: u32,
    ) -> Result<VendorReply> {
        let submit = self.send_submit(nsid, &frame, in_capsule).await?;
        let cqe = loop {
            match self.recv().await? {
                Pdu::R2T {
                    cccid,
                    ttag,
                    r2to,
                    r2tl,
                } if cccid == submit => self.write_data(&frame, cccid, ttag, r2to, r2tl).await?,
                Pdu::CapsuleResp { cqe } if cqe.cid == submit => break cqe,
                other => return Err(NvmeError::Unexpected(format!("{:?}", other.pdu_type()))),
            }
        };
        if !cqe.status.is_success() {
            return Ok(VendorReply {
                submit: cqe,
                fetch: None,
                data: Bytes::new(),
            });
        }
        let fetch = self.send_fetch(nsid, native_cid, buffer).await?;
        let mut got = BytesMut::new();
        loop {
            match self.recv().await? {
                Pdu::C2HData {
                    cccid, datao, data, ..
                } if cccid == fetch
                    && datao as usize == got.len()
                    && got.len() + data.len() <= buffer as usize =>
                {
                    got.extend_from_slice(&data)
                }
                Pdu::CapsuleResp { cqe: f } if f.cid == fetch => {
                    return Ok(VendorReply {
                        submit: cqe,
                        fetch: Some(f),
                        data: got.freeze(),
                    })
                }
                other => return Err(NvmeError::Unexpected(format!("{:?}", other.pdu_type()))),
            }
        }
    }

    /// Sends a Submit of `frame` without waiting; its command id. The caller answers its
    /// R2T with [`NvmeQueue::write_data`] if the frame is longer than `in_capsule`.
    pub async fn send_submit(&mut self, nsid: u32, frame: &Bytes, in_capsule: u32) -> Result<u16> {
        let len = u32::try_from(frame.len())
            .map_err(|_| NvmeError::Unexpected("a frame over 4 GiB".into()))?;
        let inline = len <= in_capsule;
        let mut sqe = Sqe {
            opcode: VENDOR_SUBMIT,
            nsid,
            cid: self.take_cid(),
            dptr: data_pointer(len, inline),
            ..Sqe::default()
        };
        sqe.cdw[0] = len;
        let data = if inline { frame.clone() } else { Bytes::new() };
        self.send(&Pdu::CapsuleCmd { sqe, data }).await?;
        Ok(sqe.cid)
    }

    /// Sends a Fetch of the response to native command `native_cid`, into at most `buffer`
    /// bytes, without waiting; its command id.
    pub async fn send_fetch(&mut self, nsid: u32, native_cid: u32, buffer: u32) -> Result<u16> {
        let mut sqe = Sqe {
            opcode: VENDOR_FETCH,
            nsid,
            cid: self.take_cid(),
            dptr: data_pointer(buffer, false),
            ..Sqe::default()
        };
        sqe.cdw[0] = buffer;
        sqe.cdw[1] = native_cid;
        self.send(&Pdu::CapsuleCmd {
            sqe,
            data: Bytes::new(),
        })
        .await?;
        Ok(sqe.cid)
    }
}

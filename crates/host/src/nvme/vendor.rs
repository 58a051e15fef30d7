//! The device's vendor command pair (`docs/protocol.md`, "Over NVMe/TCP: vendor commands"):
//! Submit carries one native request frame, Fetch brings its response frame back. Both are
//! sent in one write, so a native command costs one round trip on the queue.

use super::queue::{data_pointer, NvmeQueue};
use super::{NvmeError, Result};
use bytes::{Bytes, BytesMut};
use cerberus_proto::nvme::{Cqe, Pdu, Sqe, VENDOR_FETCH, VENDOR_SUBMIT};

/// The two completions of a pair and the data Fetch brought.
pub struct VendorReply {
    /// Submit's completion (DW0: the kept response's length).
    pub submit: Cqe,
    /// Fetch's completion (DW0: the response's length).
    pub fetch: Cqe,
    /// The response frame (empty unless Fetch succeeded).
    pub data: Bytes,
}

impl NvmeQueue {
    /// Sends native request `frame` for namespace `nsid` (the frame's own nsid) as a Submit,
    /// in the capsule if it is at most `in_capsule` bytes (else through the target's R2T),
    /// and a Fetch of at most `buffer` bytes right behind it.
    pub async fn vendor_pair(
        &mut self,
        nsid: u32,
        frame: Bytes,
        in_capsule: u32,
        buffer: u32,
    ) -> Result<VendorReply> {
        let (submit, fetch) = self.send_pair(nsid, &frame, in_capsule, buffer).await?;
        self.gather(&frame, submit, fetch, buffer).await
    }

    /// Sends a pair without waiting for it (the target answers a queue's commands in
    /// order, so pairs may follow each other); the command ids of its Submit and Fetch.
    /// The caller answers the Submit's R2T with [`NvmeQueue::write_data`] if the frame is
    /// longer than `in_capsule`.
    pub async fn send_pair(
        &mut self,
        nsid: u32,
        frame: &Bytes,
        in_capsule: u32,
        buffer: u32,
    ) -> Result<(u16, u16)> {
        let len = u32::try_from(frame.len())
            .map_err(|_| NvmeError::Unexpected("a frame over 4 GiB".into()))?;
        let inline = len <= in_capsule;
        let mut submit = Sqe {
            opcode: VENDOR_SUBMIT,
            nsid,
            cid: self.take_cid(),
            dptr: data_pointer(len, inline),
            ..Sqe::default()
        };
        submit.cdw[0] = len;
        let mut fetch = Sqe {
            opcode: VENDOR_FETCH,
            nsid,
            cid: self.take_cid(),
            dptr: data_pointer(buffer, false),
            ..Sqe::default()
        };
        fetch.cdw[0] = buffer;
        let mut out = BytesMut::new();
        let capsule = if inline { frame.clone() } else { Bytes::new() };
        Pdu::CapsuleCmd {
            sqe: submit,
            data: capsule,
        }
        .encode(self.digests, &mut out);
        Pdu::CapsuleCmd {
            sqe: fetch,
            data: Bytes::new(),
        }
        .encode(self.digests, &mut out);
        self.send_raw(&out).await?;
        Ok((submit.cid, fetch.cid))
    }

    /// Reads the pair's PDUs: R2Ts for Submit's frame, Fetch's data (within `buffer`), and
    /// the two completions in order.
    async fn gather(
        &mut self,
        frame: &Bytes,
        submit: u16,
        fetch: u16,
        buffer: u32,
    ) -> Result<VendorReply> {
        let mut got = BytesMut::new();
        let mut submitted = None;
        loop {
            match self.recv().await? {
                Pdu::R2T {
                    cccid,
                    ttag,
                    r2to,
                    r2tl,
                } if cccid == submit => self.write_data(frame, cccid, ttag, r2to, r2tl).await?,
                Pdu::C2HData {
                    cccid, datao, data, ..
                } if cccid == fetch
                    && datao as usize == got.len()
                    && got.len() + data.len() <= buffer as usize =>
                {
                    got.extend_from_slice(&data)
                }
                Pdu::CapsuleResp { cqe } if cqe.cid == submit && submitted.is_none() => {
                    submitted = Some(cqe)
                }
                Pdu::CapsuleResp { cqe } if cqe.cid == fetch => {
                    let Some(submit) = submitted else {
                        return Err(NvmeError::Unexpected("Fetch completed first".into()));
                    };
                    return Ok(VendorReply {
                        submit,
                        fetch: cqe,
                        data: got.freeze(),
                    });
                }
                other => return Err(NvmeError::Unexpected(format!("{:?}", other.pdu_type()))),
            }
        }
    }
}

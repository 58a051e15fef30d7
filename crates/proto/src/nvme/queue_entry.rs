//! Submission (64 bytes) and completion (16 bytes) queue entries, little-endian, as the NVMe
//! base specification lays them out. The fields a command set gives meaning to (CDW2-3,
//! CDW10-15, the data pointer) are kept as words; the commands' own decoders read them.

use bytes::{Buf, BufMut};

/// Bytes of a submission queue entry.
pub const SQE_LEN: usize = 64;
/// Bytes of a completion queue entry.
pub const CQE_LEN: usize = 16;

/// A submission queue entry (a command).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sqe {
    /// Opcode (for a Fabrics command, 0x7F, with the command type in `fctype`: byte 4).
    pub opcode: u8,
    /// Fused operation (bits 0-1) and PRP or SGL use (bits 6-7).
    pub flags: u8,
    /// Command identifier, echoed by the completion.
    pub cid: u16,
    /// Namespace identifier (command dword 1).
    pub nsid: u32,
    /// Command dwords 2 and 3 (the KV command set's key bytes 8-15 among others).
    pub cdw2: u32,
    /// Command dword 3.
    pub cdw3: u32,
    /// Metadata pointer (dwords 4-5).
    pub mptr: u64,
    /// Data pointer (dwords 6-9): an SGL descriptor over a fabric.
    pub dptr: [u8; 16],
    /// Command dwords 10 to 15.
    pub cdw: [u32; 6],
}

impl Sqe {
    /// Reads an entry from the first [`SQE_LEN`] bytes of `b` (`None` if shorter).
    pub fn decode(mut b: &[u8]) -> Option<Sqe> {
        if b.len() < SQE_LEN {
            return None;
        }
        let mut sqe = Sqe {
            opcode: b.get_u8(),
            flags: b.get_u8(),
            cid: b.get_u16_le(),
            nsid: b.get_u32_le(),
            cdw2: b.get_u32_le(),
            cdw3: b.get_u32_le(),
            mptr: b.get_u64_le(),
            ..Sqe::default()
        };
        b.copy_to_slice(&mut sqe.dptr);
        for w in &mut sqe.cdw {
            *w = b.get_u32_le();
        }
        Some(sqe)
    }

    /// Appends the entry's [`SQE_LEN`] bytes to `out`.
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_u8(self.opcode);
        out.put_u8(self.flags);
        out.put_u16_le(self.cid);
        out.put_u32_le(self.nsid);
        out.put_u32_le(self.cdw2);
        out.put_u32_le(self.cdw3);
        out.put_u64_le(self.mptr);
        out.put_slice(&self.dptr);
        for w in self.cdw {
            out.put_u32_le(w);
        }
    }

    /// Command dword `n` (10 to 15).
    pub fn cdw(&self, n: usize) -> u32 {
        self.cdw[n - 10]
    }
}

/// A completion's status field without its phase bit: status code type and status code, and
/// the do-not-retry and more bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NvmeStatus {
    /// Status code type (0 generic, 1 command specific, 2 media and data integrity, 3 path,
    /// 7 vendor specific).
    pub sct: u8,
    /// Status code within its type.
    pub sc: u8,
    /// More status information in the error log page.
    pub more: bool,
    /// Do not retry: the same command would fail again.
    pub dnr: bool,
}

impl NvmeStatus {
    /// Success.
    pub const SUCCESS: NvmeStatus = NvmeStatus {
        sct: 0,
        sc: 0,
        more: false,
        dnr: false,
    };

    /// A failure of type `sct` and code `sc`, not to be retried.
    pub fn error(sct: u8, sc: u8) -> NvmeStatus {
        NvmeStatus {
            sct,
            sc,
            more: false,
            dnr: true,
        }
    }

    /// Whether it says the command succeeded.
    pub fn is_success(&self) -> bool {
        self.sct == 0 && self.sc == 0
    }

    /// The 16-bit status field (phase bit 0 clear; over a fabric there is no phase).
    pub fn to_field(self) -> u16 {
        (u16::from(self.sc) << 1)
            | (u16::from(self.sct & 0x7) << 9)
            | (u16::from(self.more) << 14)
            | (u16::from(self.dnr) << 15)
    }

    /// The status of a 16-bit status field.
    pub fn from_field(f: u16) -> NvmeStatus {
        NvmeStatus {
            sc: ((f >> 1) & 0xFF) as u8,
            sct: ((f >> 9) & 0x7) as u8,
            more: f & (1 << 14) != 0,
            dnr: f & (1 << 15) != 0,
        }
    }
}

/// A completion queue entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    /// Command specific dword 0 (Retrieve: the value's size).
    pub dw0: u32,
    /// Command specific dword 1.
    pub dw1: u32,
    /// Submission queue head pointer.
    pub sqhd: u16,
    /// Submission queue identifier.
    pub sqid: u16,
    /// The command's identifier.
    pub cid: u16,
    /// Its status.
    pub status: NvmeStatus,
}

impl Cqe {
    /// Reads an entry from the first [`CQE_LEN`] bytes of `b` (`None` if shorter).
    pub fn decode(mut b: &[u8]) -> Option<Cqe> {
        if b.len() < CQE_LEN {
            return None;
        }
        Some(Cqe {
            dw0: b.get_u32_le(),
            dw1: b.get_u32_le(),
            sqhd: b.get_u16_le(),
            sqid: b.get_u16_le(),
            cid: b.get_u16_le(),
            status: NvmeStatus::from_field(b.get_u16_le()),
        })
    }

    /// Appends the entry's [`CQE_LEN`] bytes to `out`.
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_u32_le(self.dw0);
        out.put_u32_le(self.dw1);
        out.put_u16_le(self.sqhd);
        out.put_u16_le(self.sqid);
        out.put_u16_le(self.cid);
        out.put_u16_le(self.status.to_field());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_at_their_offsets() {
        let sqe = Sqe {
            opcode: 0x02,
            flags: 0x40,
            cid: 0x1234,
            nsid: 7,
            cdw2: 0xAABBCCDD,
            cdw3: 0x11223344,
            mptr: 0,
            dptr: [9; 16],
            cdw: [10, 11, 12, 13, 14, 15],
        };
        let mut b = Vec::new();
        sqe.encode(&mut b);
        assert_eq!(b.len(), SQE_LEN);
        assert_eq!(&b[2..4], &[0x34, 0x12]);
        assert_eq!(&b[40..44], &10u32.to_le_bytes()); // CDW10 at byte 40
        assert_eq!(Sqe::decode(&b), Some(sqe));
        assert_eq!(sqe.cdw(11), 11);
        assert_eq!(Sqe::decode(&b[..63]), None);

        let cqe = Cqe {
            dw0: 4096,
            dw1: 0,
            sqhd: 3,
            sqid: 1,
            cid: 0x1234,
            status: NvmeStatus::error(1, 0x87),
        };
        let mut b = Vec::new();
        cqe.encode(&mut b);
        assert_eq!(b.len(), CQE_LEN);
        // KV "key does not exist": type 1, code 0x87, do not retry.
        assert_eq!(
            u16::from_le_bytes([b[14], b[15]]),
            (0x87 << 1) | (1 << 9) | (1 << 15)
        );
        assert_eq!(Cqe::decode(&b), Some(cqe));
        assert!(NvmeStatus::SUCCESS.is_success() && !cqe.status.is_success());
    }
}

//! The admin commands an NVMe/TCP target answers, read out of their entries (NVMe Base
//! 2.x): Identify (CNS in CDW10 bits 7:0, CNTID in 31:16, CSI in CDW11 bits 31:24), Get Log
//! Page (LID in CDW10 bits 7:0, the dword count NUMDU:NUMDL 0-based in CDW11 bits 15:0 and
//! CDW10 bits 31:16, the byte offset LPOU:LPOL in CDW12-13), Set/Get Features (FID in CDW10
//! bits 7:0, the value in CDW11), Asynchronous Event Request, Keep Alive.

use super::queue_entry::{NvmeStatus, Sqe};

pub const GET_LOG_PAGE: u8 = 0x02;
pub const IDENTIFY: u8 = 0x06;
pub const SET_FEATURES: u8 = 0x09;
pub const GET_FEATURES: u8 = 0x0A;
pub const ASYNC_EVENT_REQUEST: u8 = 0x0C;
pub const KEEP_ALIVE: u8 = 0x18;

/// An admin command's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminCommand {
    /// Identify: which data structure, for which controller, command set and namespace.
    Identify {
        /// Controller or Namespace Structure.
        cns: u8,
        /// Controller identifier.
        cntid: u16,
        /// Command Set Identifier.
        csi: u8,
        /// The namespace (the entry's NSID).
        nsid: u32,
    },
    /// Get Log Page: part of a log page.
    GetLogPage {
        /// Log Page Identifier.
        lid: u8,
        /// Byte offset into the page (a multiple of 4).
        offset: u64,
        /// Bytes asked for: (NUMD + 1) x 4, 4 to 16 GiB.
        len: u64,
    },
    /// Set Features: a feature's new value.
    SetFeatures {
        /// Feature Identifier.
        fid: u8,
        /// CDW11: the value.
        value: u32,
    },
    /// Get Features: a feature's value.
    GetFeatures {
        /// Feature Identifier.
        fid: u8,
    },
    /// Asynchronous Event Request: held until an event.
    AsyncEventRequest,
    /// Keep Alive: restarts the keep-alive timer.
    KeepAlive,
}

impl AdminCommand {
    /// Reads an admin command out of `sqe`; `None` for an opcode not listed here (the
    /// caller answers "Invalid Command Opcode"); `Err` with the status to answer for a
    /// field the specification forbids (a log page offset not dword-aligned).
    pub fn decode(sqe: &Sqe) -> Result<Option<AdminCommand>, NvmeStatus> {
        let (cdw10, cdw11) = (sqe.cdw(10), sqe.cdw(11));
        let low = (cdw10 & 0xFF) as u8;
        Ok(Some(match sqe.opcode {
            IDENTIFY => AdminCommand::Identify {
                cns: low,
                cntid: (cdw10 >> 16) as u16,
                csi: (cdw11 >> 24) as u8,
                nsid: sqe.nsid,
            },
            GET_LOG_PAGE => {
                let numd = u64::from(cdw11 & 0xFFFF) << 16 | u64::from(cdw10 >> 16);
                let offset = u64::from(sqe.cdw(12)) | u64::from(sqe.cdw(13)) << 32;
                if offset % 4 != 0 {
                    return Err(NvmeStatus::error(0, 0x02)); // Invalid Field in Command
                }
                AdminCommand::GetLogPage {
                    lid: low,
                    offset,
                    len: (numd + 1) * 4,
                }
            }
            SET_FEATURES => AdminCommand::SetFeatures {
                fid: low,
                value: cdw11,
            },
            GET_FEATURES => AdminCommand::GetFeatures { fid: low },
            ASYNC_EVENT_REQUEST => AdminCommand::AsyncEventRequest,
            KEEP_ALIVE => AdminCommand::KeepAlive,
            _ => return Ok(None),
        }))
    }

    /// Writes the command into `sqe` (cid, data pointer: the caller's).
    pub fn encode(&self, sqe: &mut Sqe) {
        let (opcode, cdw10, cdw11) = match *self {
            AdminCommand::Identify {
                cns,
                cntid,
                csi,
                nsid,
            } => {
                sqe.nsid = nsid;
                let cdw10 = u32::from(cns) | u32::from(cntid) << 16;
                (IDENTIFY, cdw10, u32::from(csi) << 24)
            }
            AdminCommand::GetLogPage { lid, offset, len } => {
                let numd = (len / 4).saturating_sub(1);
                sqe.cdw[2] = offset as u32;
                sqe.cdw[3] = (offset >> 32) as u32;
                let cdw10 = u32::from(lid) | ((numd & 0xFFFF) as u32) << 16;
                (GET_LOG_PAGE, cdw10, ((numd >> 16) & 0xFFFF) as u32)
            }
            AdminCommand::SetFeatures { fid, value } => (SET_FEATURES, u32::from(fid), value),
            AdminCommand::GetFeatures { fid } => (GET_FEATURES, u32::from(fid), 0),
            AdminCommand::AsyncEventRequest => (ASYNC_EVENT_REQUEST, 0, 0),
            AdminCommand::KeepAlive => (KEEP_ALIVE, 0, 0),
        };
        sqe.opcode = opcode;
        sqe.cdw[0] = cdw10;
        sqe.cdw[1] = cdw11;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_log_page_reads_numd_and_the_offset_across_dwords() {
        let mut sqe = Sqe {
            opcode: GET_LOG_PAGE,
            ..Sqe::default()
        };
        // LID 70h, NUMDL 0x00FF, NUMDU 0x0001, LPOL 1024, LPOU 1.
        sqe.cdw[0] = 0x70 | 0x00FF << 16;
        sqe.cdw[1] = 0x0001;
        sqe.cdw[2] = 1024;
        sqe.cdw[3] = 1;
        let want = AdminCommand::GetLogPage {
            lid: 0x70,
            offset: 1 << 32 | 1024,
            len: (0x1_00FF + 1) * 4,
        };
        assert_eq!(AdminCommand::decode(&sqe), Ok(Some(want.clone())));
        let mut again = Sqe::default();
        want.encode(&mut again);
        assert_eq!(again, sqe);
        sqe.cdw[2] = 1026;
        assert_eq!(AdminCommand::decode(&sqe), Err(NvmeStatus::error(0, 0x02)));
    }

    #[test]
    fn identify_reads_cns_cntid_and_csi() {
        let mut sqe = Sqe {
            opcode: IDENTIFY,
            nsid: 3,
            ..Sqe::default()
        };
        sqe.cdw[0] = 0x05 | 0x0007 << 16;
        sqe.cdw[1] = 0x01 << 24;
        let id = AdminCommand::Identify {
            cns: 5,
            cntid: 7,
            csi: 1,
            nsid: 3,
        };
        assert_eq!(AdminCommand::decode(&sqe), Ok(Some(id)));
        sqe.opcode = 0x7E;
        assert_eq!(AdminCommand::decode(&sqe), Ok(None));
    }
}

//! NVMe over Fabrics commands (opcode 0x7F, the command type in byte 4 of the entry): Connect
//! (its 1,024 bytes of data: host identifier, controller id, subsystem and host NQNs),
//! Property Get and Property Set (the controller's registers over a fabric), Disconnect,
//! Authentication Send and Receive (their messages: `auth`).

use super::queue_entry::{NvmeStatus, Sqe};

/// The Fabrics commands' opcode.
pub const FABRICS_OPCODE: u8 = 0x7F;
/// Bytes of a Connect command's data.
pub const CONNECT_DATA_LEN: usize = 1024;
/// Bytes an NQN field takes (NUL-padded UTF-8).
pub const NQN_FIELD_LEN: usize = 256;
/// The well-known NQN of a discovery controller.
pub const DISCOVERY_NQN: &str = "nqn.2014-08.org.nvmexpress.discovery";

/// The subsystem NQN a device answers to unless its configuration names another
/// (`[nvme] subnqn`): the default of the device, the CLI and the Python package alike.
pub const DEFAULT_SUBNQN: &str = "nqn.2026-11.dev.cerberus:kv";

/// Controller property offsets.
pub mod property {
    /// Controller capabilities (8 bytes).
    pub const CAP: u32 = 0x00;
    /// Version (4 bytes).
    pub const VS: u32 = 0x08;
    /// Controller configuration (4 bytes).
    pub const CC: u32 = 0x14;
    /// Controller status (4 bytes).
    pub const CSTS: u32 = 0x1C;
}

/// A Fabrics command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FabricsCommand {
    /// Opens a queue: the admin queue (`qid` 0, `cntlid` 0xFFFF: any controller) or an I/O
    /// queue of the controller the admin Connect answered.
    Connect {
        /// Record format (0).
        recfmt: u16,
        /// Queue id.
        qid: u16,
        /// Submission queue size, 0-based.
        sqsize: u16,
        /// Connect attributes.
        cattr: u8,
        /// Keep-alive timeout, milliseconds (0: none).
        kato_ms: u32,
        /// The host's identifier.
        hostid: [u8; 16],
        /// The controller asked for.
        cntlid: u16,
        /// The subsystem's NQN.
        subnqn: String,
        /// The host's NQN.
        hostnqn: String,
    },
    /// Reads a property: 4 bytes, or 8 with `eight`.
    PropertyGet {
        /// An 8-byte property.
        eight: bool,
        /// Its offset.
        offset: u32,
    },
    /// Writes a property.
    PropertySet {
        /// An 8-byte property.
        eight: bool,
        /// Its offset.
        offset: u32,
        /// The value.
        value: u64,
    },
    /// Closes the queue.
    Disconnect,
    /// Authentication Send: an authentication message (`data`, TL bytes of the capsule).
    AuthSend {
        /// Security protocol (E9h: DH-HMAC-CHAP).
        secp: u8,
        /// SPSP1 and SPSP0 (as a little-endian u16: 0x0101 for DH-HMAC-CHAP).
        spsp: u16,
        /// The message.
        data: Vec<u8>,
    },
    /// Authentication Receive: the controller's next message, in at most `al` bytes.
    AuthReceive {
        /// Security protocol.
        secp: u8,
        /// SPSP1 and SPSP0.
        spsp: u16,
        /// Allocation length.
        al: u32,
    },
}

/// Connect's status for bad data or parameters (command specific, "Connect Invalid
/// Parameters").
pub fn connect_invalid_parameters() -> NvmeStatus {
    NvmeStatus::error(1, 0x82)
}

impl FabricsCommand {
    /// Reads a Fabrics command from `sqe` and its in-capsule `data`; `Ok(None)` for another
    /// opcode, `Err` with the status to answer for a malformed one (an unknown command type
    /// is "Invalid Command Opcode").
    pub fn decode(sqe: &Sqe, data: &[u8]) -> Result<Option<FabricsCommand>, NvmeStatus> {
        if sqe.opcode != FABRICS_OPCODE {
            return Ok(None);
        }
        let fctype = (sqe.nsid & 0xFF) as u8;
        let (cdw10, cdw11) = (sqe.cdw(10), sqe.cdw(11));
        Ok(Some(match fctype {
            0x01 => {
                if data.len() < CONNECT_DATA_LEN {
                    return Err(connect_invalid_parameters());
                }
                let mut hostid = [0u8; 16];
                hostid.copy_from_slice(&data[..16]);
                FabricsCommand::Connect {
                    recfmt: (cdw10 & 0xFFFF) as u16,
                    qid: (cdw10 >> 16) as u16,
                    sqsize: (cdw11 & 0xFFFF) as u16,
                    cattr: ((cdw11 >> 16) & 0xFF) as u8,
                    kato_ms: sqe.cdw(12),
                    hostid,
                    cntlid: u16::from_le_bytes([data[16], data[17]]),
                    subnqn: nqn(&data[256..512])?,
                    hostnqn: nqn(&data[512..768])?,
                }
            }
            0x04 => FabricsCommand::PropertyGet {
                eight: cdw10 & 0x7 == 1,
                offset: cdw11,
            },
            0x00 => FabricsCommand::PropertySet {
                eight: cdw10 & 0x7 == 1,
                offset: cdw11,
                value: u64::from(sqe.cdw(12)) | (u64::from(sqe.cdw(13)) << 32),
            },
            0x08 => FabricsCommand::Disconnect,
            0x05 => {
                // TL bytes of in-capsule data; at most what came.
                let tl = usize::try_from(cdw11).unwrap_or(usize::MAX);
                if tl == 0 || tl > data.len() {
                    return Err(NvmeStatus::error(0, 0x02));
                }
                FabricsCommand::AuthSend {
                    secp: (cdw10 >> 24) as u8,
                    spsp: ((cdw10 >> 8) & 0xFFFF) as u16,
                    data: data[..tl].to_vec(),
                }
            }
            0x06 => FabricsCommand::AuthReceive {
                secp: (cdw10 >> 24) as u8,
                spsp: ((cdw10 >> 8) & 0xFFFF) as u16,
                al: cdw11,
            },
            _ => return Err(NvmeStatus::error(0, 0x01)),
        }))
    }
}

/// An NQN field: UTF-8 up to the first NUL, 1 to 223 bytes as the spec bounds it.
fn nqn(field: &[u8]) -> Result<String, NvmeStatus> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let s = std::str::from_utf8(&field[..end]).map_err(|_| connect_invalid_parameters())?;
    if s.is_empty() || s.len() > 223 {
        return Err(connect_invalid_parameters());
    }
    Ok(s.to_string())
}

/// A Fabrics command of type `fctype` (byte 4 of the entry) with CDW10-12, for an
/// initiator and for tests (its command id and data pointer are the sender's to set).
pub fn fabrics_command(fctype: u8, cdw10: u32, cdw11: u32, cdw12: u32) -> Sqe {
    let mut sqe = Sqe {
        opcode: FABRICS_OPCODE,
        nsid: u32::from(fctype),
        ..Sqe::default()
    };
    sqe.cdw[0] = cdw10;
    sqe.cdw[1] = cdw11;
    sqe.cdw[2] = cdw12;
    sqe
}

/// An Authentication Send (`fctype` 05h, `len`: TL) or Receive (06h, `len`: AL) of
/// DH-HMAC-CHAP, for an initiator (its data pointer is the initiator's to set).
pub fn auth_command(fctype: u8, len: u32) -> Sqe {
    let spsp = u32::from(super::auth::SECP_DHCHAP) << 24 | u32::from(super::auth::SPSP_DHCHAP) << 8;
    fabrics_command(fctype, spsp, len, 0)
}

/// A Connect command's data (the host's side), for an initiator and for tests.
pub fn connect_data(hostid: [u8; 16], cntlid: u16, subnqn: &str, hostnqn: &str) -> Vec<u8> {
    let mut d = vec![0u8; CONNECT_DATA_LEN];
    d[..16].copy_from_slice(&hostid);
    d[16..18].copy_from_slice(&cntlid.to_le_bytes());
    let put = |d: &mut [u8], at: usize, s: &str| {
        let n = s.len().min(NQN_FIELD_LEN - 1);
        d[at..at + n].copy_from_slice(&s.as_bytes()[..n]);
    };
    put(&mut d, 256, subnqn);
    put(&mut d, 512, hostnqn);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fabrics(fctype: u8) -> Sqe {
        fabrics_command(fctype, 0, 0, 0)
    }

    #[test]
    fn connect_reads_its_entry_and_data() {
        let mut sqe = fabrics(0x01);
        sqe.cdw[0] = 3 << 16; // QID 3, RECFMT 0
        sqe.cdw[1] = 127 | (0x04 << 16);
        sqe.cdw[2] = 120_000;
        let data = connect_data([5; 16], 7, "nqn.2026-11.dev.cerberus:kv", "nqn.host:one");
        let cmd = FabricsCommand::decode(&sqe, &data).unwrap().unwrap();
        assert_eq!(
            cmd,
            FabricsCommand::Connect {
                recfmt: 0,
                qid: 3,
                sqsize: 127,
                cattr: 4,
                kato_ms: 120_000,
                hostid: [5; 16],
                cntlid: 7,
                subnqn: "nqn.2026-11.dev.cerberus:kv".into(),
                hostnqn: "nqn.host:one".into(),
            }
        );
        // Short data, or an empty NQN: invalid parameters, no panic.
        assert_eq!(
            FabricsCommand::decode(&sqe, &data[..1000]),
            Err(connect_invalid_parameters())
        );
        let empty = connect_data([0; 16], 0xFFFF, "", "h");
        assert_eq!(
            FabricsCommand::decode(&sqe, &empty),
            Err(connect_invalid_parameters())
        );
    }

    #[test]
    fn properties_and_other_types() {
        let mut get = fabrics(0x04);
        get.cdw[0] = 1;
        get.cdw[1] = property::CAP;
        assert_eq!(
            FabricsCommand::decode(&get, &[]),
            Ok(Some(FabricsCommand::PropertyGet {
                eight: true,
                offset: 0
            }))
        );
        let mut set = fabrics(0x00);
        set.cdw[1] = property::CC;
        set.cdw[2] = 0x0046_0001;
        assert_eq!(
            FabricsCommand::decode(&set, &[]),
            Ok(Some(FabricsCommand::PropertySet {
                eight: false,
                offset: 0x14,
                value: 0x0046_0001
            }))
        );
        assert_eq!(
            FabricsCommand::decode(&fabrics(0x08), &[]),
            Ok(Some(FabricsCommand::Disconnect))
        );
        // Authentication Send without its data; Receive with its allocation length.
        assert!(FabricsCommand::decode(&fabrics(0x05), &[]).is_err());
        let send = auth_command(0x05, 3);
        assert_eq!(
            FabricsCommand::decode(&send, &[1, 2, 3, 4]),
            Ok(Some(FabricsCommand::AuthSend {
                secp: 0xE9,
                spsp: 0x0101,
                data: vec![1, 2, 3]
            }))
        );
        assert!(FabricsCommand::decode(&send, &[1, 2]).is_err());
        assert_eq!(
            FabricsCommand::decode(&auth_command(0x06, 4096), &[]),
            Ok(Some(FabricsCommand::AuthReceive {
                secp: 0xE9,
                spsp: 0x0101,
                al: 4096
            }))
        );
        assert!(FabricsCommand::decode(&fabrics(0x07), &[]).is_err());
        assert_eq!(FabricsCommand::decode(&Sqe::default(), &[]), Ok(None));
    }
}

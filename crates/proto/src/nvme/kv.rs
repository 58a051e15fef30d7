//! The NVMe Key Value command set's I/O commands as they sit in a submission queue entry: the
//! key (1 to 16 bytes) in CDW2, CDW3, CDW14 and CDW15 (key bytes 0-3, 4-7, 8-11, 12-15), its
//! length in CDW11 bits 7:0 and the command's options in bits 15:8, the value's size (Store)
//! or the host buffer's (Retrieve, List) in CDW10; and the set's status codes.

use super::queue_entry::{NvmeStatus, Sqe};

/// Longest key the KV command set carries in a command.
pub const MAX_KV_KEY: usize = 16;

/// Store option: do not store if the key does not exist.
pub const STORE_ONLY_IF_PRESENT: u8 = 0x01;
/// Store option: do not store if the key exists.
pub const STORE_ONLY_IF_ABSENT: u8 = 0x02;

/// A KV command set I/O opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum KvOpcode {
    /// Stores a value (in-capsule data or through R2T).
    Store = 0x01,
    /// Reads a value into the host's buffer; the completion's DW0 holds the value's size.
    Retrieve = 0x02,
    /// Lists keys from a key on.
    List = 0x06,
    /// Deletes a key.
    Delete = 0x10,
    /// Whether a key exists.
    Exist = 0x14,
}

impl KvOpcode {
    /// The opcode of `b`, if it is one of the set's.
    pub fn from_u8(b: u8) -> Option<KvOpcode> {
        Some(match b {
            0x01 => KvOpcode::Store,
            0x02 => KvOpcode::Retrieve,
            0x06 => KvOpcode::List,
            0x10 => KvOpcode::Delete,
            0x14 => KvOpcode::Exist,
            _ => return None,
        })
    }
}

/// The KV command set's command-specific status codes (status code type 1).
pub mod kv_status {
    use super::NvmeStatus;

    /// The value is larger than the namespace takes.
    pub fn invalid_value_size() -> NvmeStatus {
        NvmeStatus::error(1, 0x85)
    }
    /// The key is empty or longer than the namespace takes.
    pub fn invalid_key_size() -> NvmeStatus {
        NvmeStatus::error(1, 0x86)
    }
    /// No value under the key.
    pub fn key_does_not_exist() -> NvmeStatus {
        NvmeStatus::error(1, 0x87)
    }
    /// A store that must not overwrite found the key.
    pub fn key_exists() -> NvmeStatus {
        NvmeStatus::error(1, 0x89)
    }
}

/// A KV command's key, 0 to [`MAX_KV_KEY`] bytes, kept in place: a command's key never
/// costs an allocation on either side of the wire.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct KvKey {
    len: u8,
    bytes: [u8; MAX_KV_KEY],
}

impl KvKey {
    /// `key`, if the KV command set carries it (at most [`MAX_KV_KEY`] bytes).
    pub fn new(key: &[u8]) -> Option<KvKey> {
        let mut bytes = [0u8; MAX_KV_KEY];
        bytes.get_mut(..key.len())?.copy_from_slice(key);
        Some(KvKey {
            len: key.len() as u8,
            bytes,
        })
    }
}

impl std::ops::Deref for KvKey {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl std::fmt::Debug for KvKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "KvKey({:?})", bytes::Bytes::copy_from_slice(self))
    }
}

/// A KV I/O command's fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvCommand {
    /// Which command.
    pub opcode: KvOpcode,
    /// The key (1 to [`MAX_KV_KEY`] bytes; List may name an empty start).
    pub key: KvKey,
    /// CDW10: the value's size (Store) or the host buffer's (Retrieve, List).
    pub size: u32,
    /// CDW11 bits 15:8: the command's options.
    pub options: u8,
}

impl KvCommand {
    /// Reads a KV command out of `sqe`; `Err` with the status to answer where the opcode is
    /// not the set's (`None`: not a KV command) or the key length is over 16.
    pub fn decode(sqe: &Sqe) -> Result<Option<KvCommand>, NvmeStatus> {
        let Some(opcode) = KvOpcode::from_u8(sqe.opcode) else {
            return Ok(None);
        };
        let cdw11 = sqe.cdw(11);
        let kl = (cdw11 & 0xFF) as usize;
        if kl > MAX_KV_KEY || (kl == 0 && opcode != KvOpcode::List) {
            return Err(kv_status::invalid_key_size());
        }
        let mut all = [0u8; MAX_KV_KEY];
        for (i, w) in [sqe.cdw2, sqe.cdw3, sqe.cdw(14), sqe.cdw(15)]
            .iter()
            .enumerate()
        {
            all[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        // Bytes past the key are not the key's: zeroed, so equal keys compare equal.
        all[kl..].fill(0);
        Ok(Some(KvCommand {
            opcode,
            key: KvKey {
                len: kl as u8,
                bytes: all,
            },
            size: sqe.cdw(10),
            options: ((cdw11 >> 8) & 0xFF) as u8,
        }))
    }

    /// Writes the command's fields into `sqe` (its opcode, key, size and options; the rest,
    /// cid, nsid and data pointer, are the caller's).
    pub fn encode(&self, sqe: &mut Sqe) {
        let (all, kl) = (self.key.bytes, usize::from(self.key.len));
        let word = |i: usize| u32::from_le_bytes([all[i], all[i + 1], all[i + 2], all[i + 3]]);
        sqe.opcode = self.opcode as u8;
        sqe.cdw2 = word(0);
        sqe.cdw3 = word(4);
        sqe.cdw[14 - 10] = word(8);
        sqe.cdw[15 - 10] = word(12);
        sqe.cdw[0] = self.size;
        sqe.cdw[1] = kl as u32 | (u32::from(self.options) << 8);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sit_in_cdw2_3_14_15_and_round_trip() {
        let cmd = KvCommand {
            opcode: KvOpcode::Store,
            key: KvKey::new(b"0123456789abcdef").unwrap(),
            size: 4096,
            options: STORE_ONLY_IF_ABSENT,
        };
        let mut sqe = Sqe::default();
        cmd.encode(&mut sqe);
        assert_eq!(sqe.cdw2.to_le_bytes(), *b"0123");
        assert_eq!(sqe.cdw3.to_le_bytes(), *b"4567");
        assert_eq!(sqe.cdw(14).to_le_bytes(), *b"89ab");
        assert_eq!(sqe.cdw(15).to_le_bytes(), *b"cdef");
        assert_eq!(sqe.cdw(11), 16 | (0x02 << 8));
        assert_eq!(KvCommand::decode(&sqe), Ok(Some(cmd)));
        let short = KvCommand {
            opcode: KvOpcode::Retrieve,
            key: KvKey::new(b"k1").unwrap(),
            size: 100,
            options: 0,
        };
        short.encode(&mut sqe);
        assert_eq!(KvCommand::decode(&sqe), Ok(Some(short)));
    }

    #[test]
    fn bad_key_lengths_and_other_opcodes() {
        let mut sqe = Sqe {
            opcode: KvOpcode::Retrieve as u8,
            ..Sqe::default()
        };
        sqe.cdw[1] = 17;
        assert_eq!(KvCommand::decode(&sqe), Err(kv_status::invalid_key_size()));
        sqe.cdw[1] = 0;
        assert_eq!(KvCommand::decode(&sqe), Err(kv_status::invalid_key_size()));
        sqe.opcode = KvOpcode::List as u8; // List may start at the first key
        assert!(KvCommand::decode(&sqe).unwrap().is_some());
        sqe.opcode = 0x80; // a vendor opcode: not the set's
        assert_eq!(KvCommand::decode(&sqe), Ok(None));
        assert_eq!(kv_status::key_does_not_exist().to_field() >> 9 & 7, 1);
    }
}

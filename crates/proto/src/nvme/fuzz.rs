//! What the command decoders promise for any bytes a host sends, in one function the fuzz
//! target `nvme_commands` and this crate's property test both run: no panic; an entry
//! re-encodes to the same bytes; a KV or admin command that decodes re-encodes to an entry
//! that decodes to it again; a Connect's NQNs stay within their bounds.

use super::admin::AdminCommand;
use super::auth::AuthMessage;
use super::fabrics::FabricsCommand;
use super::kv::{KvCommand, MAX_KV_KEY};
use super::queue_entry::{Sqe, SQE_LEN};

/// Reads `bytes` as a submission queue entry (the first 64 bytes) and the capsule's data
/// (the rest) through every decoder a target applies; panics if a promise above breaks.
/// True when one of the decoders took it (a KV, admin or Fabrics command, or an
/// authentication message).
#[doc(hidden)]
pub fn check_command_decoders(bytes: &[u8]) -> bool {
    let Some(sqe) = Sqe::decode(bytes) else {
        assert!(bytes.len() < SQE_LEN);
        return false;
    };
    let data = &bytes[SQE_LEN..];
    let mut again = Vec::with_capacity(SQE_LEN);
    sqe.encode(&mut again);
    assert_eq!(&again[..], &bytes[..SQE_LEN]);

    let mut decoded = false;
    if let Ok(Some(kv)) = KvCommand::decode(&sqe) {
        decoded = true;
        assert!(kv.key.len() <= MAX_KV_KEY);
        let mut e = sqe;
        kv.encode(&mut e);
        assert_eq!(KvCommand::decode(&e), Ok(Some(kv)));
    }
    if let Ok(Some(cmd)) = AdminCommand::decode(&sqe) {
        decoded = true;
        let mut e = Sqe::default();
        cmd.encode(&mut e);
        assert_eq!(AdminCommand::decode(&e), Ok(Some(cmd)));
    }
    if let Ok(Some(f)) = FabricsCommand::decode(&sqe, data) {
        decoded = true;
        if let FabricsCommand::Connect {
            subnqn, hostnqn, ..
        } = f
        {
            assert!(!subnqn.is_empty() && subnqn.len() <= 223);
            assert!(!hostnqn.is_empty() && hostnqn.len() <= 223);
        }
    }
    // An authentication message (Authentication Send's data, or any capsule's bytes): no
    // panic, and one that decodes encodes to bytes that decode to it again.
    if let Ok(Some(FabricsCommand::AuthSend { data, .. })) = FabricsCommand::decode(&sqe, data) {
        decoded |= check_auth_message(&data);
    }
    check_auth_message(data) || decoded
}

/// True when `bytes` decode as an authentication message.
fn check_auth_message(bytes: &[u8]) -> bool {
    if let Ok(m) = AuthMessage::decode(bytes) {
        if let AuthMessage::Negotiate {
            hashes, dhgroups, ..
        } = &m
        {
            assert!(hashes.len() <= 30 && dhgroups.len() <= 30);
        }
        assert_eq!(AuthMessage::decode(&m.encode()), Ok(m));
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Random entries (and capsule data) through the decoders: what the fuzz target
        /// checks, on every `cargo test`.
        #[test]
        fn random_entries_break_no_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..1200)) {
            let _ = check_command_decoders(&bytes);
        }

        /// The same, with the opcodes that reach a decoder's inner branches.
        #[test]
        fn random_entries_of_known_opcodes(
            opcode in prop::sample::select(vec![0x01u8, 0x02, 0x06, 0x09, 0x0A, 0x0C, 0x10, 0x14, 0x18, 0x7F]),
            fctype in prop::sample::select(vec![0x00u8, 0x01, 0x04, 0x05, 0x06, 0x08, 0x42]),
            mut bytes in proptest::collection::vec(any::<u8>(), 64..1200),
        ) {
            bytes[0] = opcode;
            bytes[4] = fctype;
            let _ = check_command_decoders(&bytes);
        }

        /// Authentication messages of every type id, random otherwise.
        #[test]
        fn random_auth_messages(
            kind in prop::sample::select(vec![(0u8, 0u8), (1, 1), (1, 2), (1, 3), (1, 4), (1, 0xF0), (1, 0xF1), (1, 9)]),
            mut bytes in proptest::collection::vec(any::<u8>(), 2..400),
        ) {
            bytes[0] = kind.0;
            bytes[1] = kind.1;
            let _ = check_auth_message(&bytes);
        }
    }
}

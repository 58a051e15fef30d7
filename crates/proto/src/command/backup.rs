//! Backup's body: the directory, as UTF-8 (`docs/protocol.md`, Backup).

use crate::error::ProtoError;
use bytes::{BufMut, BytesMut};

/// Longest directory a Backup names, in bytes of UTF-8 (Linux's `PATH_MAX`).
pub const MAX_BACKUP_PATH_LEN: usize = 4096;

fn check(dir: &[u8]) -> Result<(), ProtoError> {
    if dir.is_empty() || dir.len() > MAX_BACKUP_PATH_LEN {
        return Err(ProtoError::InvalidField(
            "backup directory of 1 to 4096 bytes",
        ));
    }
    if dir.contains(&0) {
        return Err(ProtoError::InvalidField(
            "backup directory holds a NUL byte",
        ));
    }
    Ok(())
}

pub(super) fn encode(out: &mut BytesMut, dir: &str) -> Result<(), ProtoError> {
    check(dir.as_bytes())?;
    out.put_slice(dir.as_bytes());
    Ok(())
}

/// The directory of a Backup body.
pub(super) fn decode(body: &[u8]) -> Result<String, ProtoError> {
    check(body)?;
    let dir = std::str::from_utf8(body)
        .map_err(|_| ProtoError::InvalidField("backup directory is not UTF-8"))?;
    Ok(dir.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_round_trips_and_bad_ones_are_refused() {
        let mut out = BytesMut::new();
        encode(&mut out, "/srv/backup-1").unwrap();
        assert_eq!(decode(&out).unwrap(), "/srv/backup-1");
        assert!(decode(b"").is_err());
        assert!(decode(b"a\0b").is_err());
        assert!(decode(&[0xff, 0xfe]).is_err());
        assert!(decode(&vec![b'a'; MAX_BACKUP_PATH_LEN + 1]).is_err());
    }
}

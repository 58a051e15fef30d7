//! The discovery log page (log 70h of a discovery controller, NVMe over Fabrics): a
//! 1,024-byte header (generation counter at 0, number of records at 8, record format at 16)
//! and one 1,024-byte entry per subsystem port a host may reach.

use std::net::SocketAddr;

/// Bytes of the header and of each entry.
pub const RECORD_LEN: usize = 1024;
/// The generation counter: the log is fixed while the device runs (its settings are read
/// at start), so a host reading it in pieces always sees the same one.
pub const GENERATION: u64 = 1;

/// Entry fields (byte offsets inside an entry).
pub mod entry {
    pub const TRTYPE: usize = 0;
    pub const ADRFAM: usize = 1;
    pub const SUBTYPE: usize = 2;
    pub const TREQ: usize = 3;
    pub const PORTID: usize = 4;
    pub const CNTLID: usize = 6;
    pub const ASQSZ: usize = 8;
    pub const TRSVCID: usize = 32;
    pub const SUBNQN: usize = 256;
    pub const TRADDR: usize = 512;
    pub const TSAS: usize = 768;
}

/// TRTYPE: TCP.
const TRTYPE_TCP: u8 = 3;
/// SUBTYPE: an NVM subsystem.
const SUBTYPE_NVM: u8 = 2;
/// TREQ: a secure channel not required (no TLS yet), SQ flow control not disabled.
const TREQ_NOT_REQUIRED: u8 = 0b10;

/// One port of an NVM subsystem, as a discovery entry lists it.
pub struct Port<'a> {
    pub subnqn: &'a str,
    pub addr: SocketAddr,
    /// Admin queue entries the subsystem accepts.
    pub asqsz: u16,
}

/// The whole log: header, then `ports` in order.
pub fn log_page(ports: &[Port<'_>]) -> Vec<u8> {
    let mut b = vec![0u8; RECORD_LEN * (1 + ports.len())];
    b[0..8].copy_from_slice(&GENERATION.to_le_bytes());
    b[8..16].copy_from_slice(&(ports.len() as u64).to_le_bytes());
    // RECFMT 0.
    for (i, p) in ports.iter().enumerate() {
        let e = &mut b[RECORD_LEN * (i + 1)..RECORD_LEN * (i + 2)];
        e[entry::TRTYPE] = TRTYPE_TCP;
        e[entry::ADRFAM] = if p.addr.is_ipv4() { 1 } else { 2 };
        e[entry::SUBTYPE] = SUBTYPE_NVM;
        e[entry::TREQ] = TREQ_NOT_REQUIRED;
        // One port: id 1.
        e[entry::PORTID..entry::PORTID + 2].copy_from_slice(&1u16.to_le_bytes());
        // The dynamic controller model: any controller.
        e[entry::CNTLID..entry::CNTLID + 2].copy_from_slice(&0xFFFFu16.to_le_bytes());
        e[entry::ASQSZ..entry::ASQSZ + 2].copy_from_slice(&p.asqsz.to_le_bytes());
        ascii(
            &mut e[entry::TRSVCID..entry::TRSVCID + 32],
            &p.addr.port().to_string(),
        );
        let nqn = p.subnqn.as_bytes();
        let n = nqn.len().min(256);
        e[entry::SUBNQN..entry::SUBNQN + n].copy_from_slice(&nqn[..n]);
        ascii(
            &mut e[entry::TRADDR..entry::TRADDR + 256],
            &p.addr.ip().to_string(),
        );
        // TSAS for TCP: SECTYPE 0, no security.
        e[entry::TSAS] = 0;
    }
    b
}

/// ASCII text padded with spaces, as the transport's address fields are.
fn ascii(field: &mut [u8], s: &str) {
    field.fill(b' ');
    let n = s.len().min(field.len());
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// The bytes a Get Log Page asks for: `len` bytes from `offset`, zeros past the page.
pub fn window(page: &[u8], offset: usize, len: usize) -> Option<Vec<u8>> {
    if offset > page.len() {
        return None;
    }
    let mut out = page[offset..page.len().min(offset.saturating_add(len))].to_vec();
    out.resize(len, 0);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_hold_their_fields_at_the_specified_offsets() {
        let ports = [Port {
            subnqn: "nqn.2026-11.dev.cerberus:kv",
            addr: "127.0.0.1:4420".parse().unwrap(),
            asqsz: 128,
        }];
        let b = log_page(&ports);
        assert_eq!(b.len(), 2048);
        assert_eq!(u64::from_le_bytes(b[0..8].try_into().unwrap()), GENERATION);
        assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 1);
        assert_eq!(&b[16..18], &[0, 0], "RECFMT");
        let e = &b[1024..];
        assert_eq!(&e[0..4], &[3, 1, 2, 0b10], "TRTYPE, ADRFAM, SUBTYPE, TREQ");
        assert_eq!(
            &e[4..10],
            &[1, 0, 0xFF, 0xFF, 128, 0],
            "PORTID CNTLID ASQSZ"
        );
        assert_eq!(&e[32..37], b"4420 ");
        assert!(e[256..].starts_with(b"nqn.2026-11.dev.cerberus:kv\0"));
        assert_eq!(&e[512..522], b"127.0.0.1 ");
        let v6 = log_page(&[Port {
            addr: "[::1]:4420".parse().unwrap(),
            ..ports[0]
        }]);
        assert_eq!(v6[1024 + 1], 2, "ADRFAM IPv6");
    }

    #[test]
    fn a_window_pages_through_the_log() {
        let page: Vec<u8> = (0..=255u8).collect();
        assert_eq!(window(&page, 0, 4), Some(vec![0, 1, 2, 3]));
        assert_eq!(window(&page, 254, 4), Some(vec![254, 255, 0, 0]));
        assert_eq!(window(&page, 256, 4), Some(vec![0; 4]));
        assert_eq!(window(&page, 257, 4), None);
    }
}

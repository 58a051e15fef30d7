//! The Identify data structures (4,096 bytes each) and the log pages, laid out as the NVMe
//! Base 2.x, NVMe over Fabrics and KV Command Set 1.0 specifications place their fields.

use super::controllers::Traffic;
use super::target::Target;

/// Bytes of every Identify data structure.
pub const IDENTIFY_LEN: usize = 4096;
/// Namespace sizes are counted in blocks of this (the one format described, LBADS 12).
const BLOCK: u64 = 4096;
/// Version 2.0.0 (VS and Identify's VER).
pub const VERSION_2_0: u32 = 0x0002_0000;
/// Highest queue entries (0-based MQES) and commands a queue may have outstanding.
pub const MAX_QUEUE_ENTRIES: u16 = 128;
/// The KV command set's identifier (CSI).
pub const CSI_KV: u8 = 1;
/// Keys the KV command set carries in an entry.
const KV_KEY_MAX: u16 = 16;

/// Writes `s` at `at`, padded with spaces to `len` (ASCII fields).
fn ascii(b: &mut [u8], at: usize, len: usize, s: &str) {
    let f = &mut b[at..at + len];
    f.fill(b' ');
    let n = s.len().min(len);
    f[..n].copy_from_slice(&s.as_bytes()[..n]);
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// The firmware revision: the crate's version.
fn firmware() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// CNS 01h: the controller (an I/O controller, or the discovery controller: no
/// namespaces, the well-known NQN).
pub fn controller(t: &Target, cntlid: u16, nn: u32, discovery: bool) -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_LEN];
    // VID and SSVID stay 0: no PCI vendor.
    ascii(&mut b, 4, 20, &format!("CERBERUS{cntlid:04X}"));
    ascii(&mut b, 24, 40, "Cerberus");
    ascii(&mut b, 64, 8, firmware());
    // MDTS: the largest transfer, as a power of two of 4 KiB pages: a whole value.
    let pages = (u64::from(t.shared.config.max_value_len) / BLOCK).max(1);
    b[77] = (63 - pages.leading_zeros()) as u8;
    put16(&mut b, 78, cntlid);
    put32(&mut b, 80, VERSION_2_0);
    b[111] = if discovery { 2 } else { 1 }; // CNTRLTYPE: discovery or I/O controller
    b[259] = 3; // AERL: 4 outstanding Async Event Requests (0-based)
    b[260] = 0x03; // FRMW: slot 1 read-only, one slot
    put16(&mut b, 320, 10); // KAS: keep-alive granularity 10 x 100 ms
    b[512] = 0x66; // SQES: 64-byte entries
    b[513] = 0x44; // CQES: 16-byte entries
                   // VWC: a volatile write cache (a completed Store is in the log, synced by a Flush or the
                   // engine's own syncs) unless every Store is synced before it completes; flush behavior
                   // 10b: a Flush must name a namespace, not FFFFFFFFh (`io.rs`, `flush_cache`).
    let vwc = !discovery && !t.config.sync_stores;
    b[525] = if vwc { 0x05 } else { 0 };
    put16(&mut b, 514, MAX_QUEUE_ENTRIES);
    put32(&mut b, 516, nn);
    // SGLS: SGLs supported, keyed data blocks, offsets in in-capsule data (what a fabric's
    // data pointer uses).
    put32(&mut b, 536, 0x0010_0005);
    let nqn = match discovery {
        true => cerberus_proto::nvme::DISCOVERY_NQN.as_bytes(),
        false => t.config.subnqn.as_bytes(),
    };
    b[768..768 + nqn.len()].copy_from_slice(nqn);
    // Fabrics: IOCCSZ (the entry and its in-capsule data) and IORCSZ in 16-byte units.
    put32(&mut b, 1792, (64 + t.config.in_capsule_bytes) / 16);
    put32(&mut b, 1796, 1);
    b[1803] = 1; // MSDBD: one SGL descriptor
    b
}

/// Bytes of namespace `nsid`: its capacity, or the file system's size when it has none;
/// and the bytes it uses.
fn sizes(t: &Target, nsid: u32) -> (u64, u64) {
    let space = t
        .shared
        .db
        .namespace(nsid)
        .and_then(|h| h.stats())
        .map(|s| s.space)
        .ok();
    let used = space.as_ref().map_or(0, |s| s.used_bytes);
    let cap = space
        .and_then(|s| s.capacity)
        .unwrap_or_else(|| fs_bytes(&t.shared.config.data_dir));
    (cap.max(used).max(BLOCK), used)
}

/// The size of the file system holding `dir` (0 if it cannot be read).
fn fs_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return 0;
    };
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated and `st` a valid out-parameter.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    st.f_blocks as u64 * st.f_frsize as u64
}

/// CNS 00h: the namespace as the NVM command set describes one (sizes in 4 KiB blocks, one
/// format). Hosts that do not know KV read sizes here, so they are never 0.
pub fn namespace(t: &Target, nsid: u32) -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_LEN];
    let (cap, used) = sizes(t, nsid);
    put64(&mut b, 0, cap / BLOCK); // NSZE
    put64(&mut b, 8, cap / BLOCK); // NCAP
    put64(&mut b, 16, used.div_ceil(BLOCK)); // NUSE
    b[25] = 0; // NLBAF: one format (0-based)
    b[130] = 12; // LBAF0.LBADS: 2^12 bytes
    b
}

/// CNS 05h, CSI 1: the KV namespace (NSZE and NUSE in bytes, one KV format: key and value
/// maximum lengths and the most keys).
pub fn kv_namespace(t: &Target, nsid: u32) -> Vec<u8> {
    let (cap, used) = sizes(t, nsid);
    kv_namespace_data(cap, used, t.shared.config.max_value_len)
}

/// The KV namespace data (KV Command Set 1.0): NSZE at 0, NUSE at 16, NKVF at 25 (0-based:
/// 0 is one format), KV format 0 at 72 (KML at +0, VML at +4, MNK at +8).
fn kv_namespace_data(cap: u64, used: u64, max_value_len: u32) -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_LEN];
    put64(&mut b, 0, cap);
    put64(&mut b, 16, used);
    b[25] = 0; // NKVF: one KV format (0-based)
    put16(&mut b, 72, KV_KEY_MAX); // KVF0.KML
    put32(&mut b, 76, max_value_len); // KVF0.VML
                                      // KVF0.MNK: as many keys as the smallest records would fill the capacity with.
    let least = u64::from(KV_KEY_MAX) + 1;
    put32(&mut b, 80, u32::try_from(cap / least).unwrap_or(u32::MAX));
    b
}

/// CNS 02h / 07h: the active namespaces above `after`, ascending, at most 1,024.
pub fn active_list(visible: &[u32], after: u32) -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_LEN];
    for (i, id) in visible
        .iter()
        .filter(|&&n| n > after)
        .take(1024)
        .enumerate()
    {
        put32(&mut b, i * 4, *id);
    }
    b
}

/// CNS 03h: the namespace's identification descriptors: its command set (CSI = KV) and a
/// namespace UUID made of the subsystem and the id, stable across restarts.
pub fn descriptors(t: &Target, nsid: u32) -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_LEN];
    // NIDT 03h (UUID), NIDL 16.
    b[0] = 0x03;
    b[1] = 16;
    let h = crc32c::crc32c(t.config.subnqn.as_bytes());
    put32(&mut b, 4, h);
    put32(&mut b, 8, 0x4345_5242); // "CERB"
    put32(&mut b, 16, nsid);
    // NIDT 04h (CSI), NIDL 1.
    b[20] = 0x04;
    b[21] = 1;
    b[24] = CSI_KV;
    b
}

/// CNS 1Ch: the I/O command set combinations; index 0 holds NVM (bit 0) and KV (bit 1).
pub fn command_set_profile() -> Vec<u8> {
    let mut b = vec![0u8; IDENTIFY_LEN];
    put64(&mut b, 0, 0b11);
    b
}

/// Log page 02h (SMART / health, 512 bytes): no warning, no temperature sensor, all spare
/// left; data units (thousands of 512-byte units, rounded up) and commands of this
/// controller only, as the base specification counts them (what its host moved): the
/// device's own figures would show one tenant another's traffic.
pub fn smart_log(t: &Traffic) -> Vec<u8> {
    let [read, written, reads, writes] = t.figures();
    smart_data(read, written, reads, writes)
}

/// The SMART / health page: available spare at 3, its threshold at 4, data units read at
/// 32 and written at 48, host read commands at 64 and write commands at 80 (16 bytes each).
fn smart_data(read: u64, written: u64, reads: u64, writes: u64) -> Vec<u8> {
    let mut b = vec![0u8; 512];
    b[3] = 100; // available spare
    b[4] = 10; // its threshold
    let units = |bytes: u64| u128::from(bytes.div_ceil(512_000));
    b[32..48].copy_from_slice(&units(read).to_le_bytes());
    b[48..64].copy_from_slice(&units(written).to_le_bytes());
    b[64..80].copy_from_slice(&u128::from(reads).to_le_bytes());
    b[80..96].copy_from_slice(&u128::from(writes).to_le_bytes());
    b
}

/// Log page 03h (firmware slots, 512 bytes): slot 1 active, holding this version.
pub fn firmware_log() -> Vec<u8> {
    let mut b = vec![0u8; 512];
    b[0] = 1; // AFI: slot 1
    ascii(&mut b, 8, 8, firmware());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    #[test]
    fn kv_namespace_fields_sit_at_the_kv_command_sets_offsets() {
        let b = kv_namespace_data(17 * 1000, 4096, 2 << 20);
        assert_eq!(
            u64::from_le_bytes(b[0..8].try_into().unwrap()),
            17_000,
            "NSZE"
        );
        assert_eq!(&b[8..16], &[0; 8], "reserved");
        assert_eq!(
            u64::from_le_bytes(b[16..24].try_into().unwrap()),
            4096,
            "NUSE"
        );
        assert_eq!(b[25], 0, "NKVF is 0-based: one format");
        assert_eq!(u16::from_le_bytes([b[72], b[73]]), 16, "KVF0.KML");
        assert_eq!(u32_at(&b, 76), 2 << 20, "KVF0.VML");
        assert_eq!(u32_at(&b, 80), 1000, "KVF0.MNK");
        assert!(b[88..].iter().all(|&x| x == 0), "no second format");
    }

    #[test]
    fn smart_and_firmware_fields_sit_at_the_base_specifications_offsets() {
        let fw = firmware_log();
        assert_eq!((fw.len(), fw[0]), (512, 1), "AFI: slot 1");
        assert_eq!(&fw[8..8 + firmware().len().min(8)], firmware().as_bytes());
        let b = smart_data(512_001, 512_000, 7, 9);
        assert_eq!((b.len(), b[0], b[3], b[4]), (512, 0, 100, 10));
        let u128_at = |at: usize| u128::from_le_bytes(b[at..at + 16].try_into().unwrap());
        assert_eq!(
            u128_at(32),
            2,
            "data units read: thousands of 512 B, rounded up"
        );
        assert_eq!(u128_at(48), 1, "data units written");
        assert_eq!(
            (u128_at(64), u128_at(80)),
            (7, 9),
            "host read and write commands"
        );
    }
}

//! Byte encodings shared by the on-disk formats: little-endian fixed ints, LEB128 varints,
//! and a bounds-checked cursor for decoding bytes that came from storage.

#[inline]
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Varint length prefix followed by the bytes.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

#[inline]
pub fn get_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

#[inline]
pub fn get_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A cursor that never reads past its slice; every getter returns `None` on short input.
pub struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Cursor { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn u8(&mut self) -> Option<u8> {
        let v = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(v)
    }

    pub fn u32(&mut self) -> Option<u32> {
        let v = get_u32(self.buf, self.pos)?;
        self.pos += 4;
        Some(v)
    }

    #[inline]
    pub fn varint(&mut self) -> Option<u64> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos)?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    pub fn varint_usize(&mut self) -> Option<usize> {
        usize::try_from(self.varint()?).ok()
    }

    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.buf.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }

    /// Varint length prefix followed by that many bytes.
    pub fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.varint_usize()?;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_roundtrip() {
        for v in [0u64, 1, 127, 128, 300, 1 << 32, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            let mut c = Cursor::new(&b);
            assert_eq!(c.varint(), Some(v));
            assert!(c.is_empty());
        }
    }

    #[test]
    fn short_input_is_none() {
        let mut c = Cursor::new(&[0x80, 0x80]);
        assert_eq!(c.varint(), None);
        let mut c = Cursor::new(&[5, 1, 2]);
        assert_eq!(c.bytes(), None);
        let mut c = Cursor::new(&[1, 2, 3]);
        assert_eq!(c.u32(), None);
    }
}

//! The protobuf wire format: varints, tags and length-delimited fields.

use super::ProtoError;

pub const VARINT: u8 = 0;
pub const FIXED64: u8 = 1;
pub const LEN: u8 = 2;
pub const FIXED32: u8 = 5;

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn put_tag(out: &mut Vec<u8>, number: u32, wire: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire));
}

pub fn put_len(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// One field read off the wire.
pub enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32,
    Len(&'a [u8]),
}

/// A cursor over a message's bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    fn varint(&mut self) -> Result<u64, ProtoError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&b, rest) = self.buf.split_first().ok_or(ProtoError::Truncated)?;
            self.buf = rest;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(ProtoError::Malformed("varint overflow".into()))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtoError> {
        if self.buf.len() < n {
            return Err(ProtoError::Truncated);
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next field, or `None` at the end.
    pub fn next_field(&mut self) -> Result<Option<(u32, Raw<'a>)>, ProtoError> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| ProtoError::Malformed(format!("invalid field number {}", key >> 3)))?;
        let raw = match (key & 7) as u8 {
            VARINT => Raw::Varint(self.varint()?),
            FIXED64 => {
                let b = self.take(8)?;
                Raw::Fixed64(u64::from_le_bytes(
                    b.try_into().map_err(|_| ProtoError::Truncated)?,
                ))
            }
            LEN => {
                let n = usize::try_from(self.varint()?).map_err(|_| ProtoError::Truncated)?;
                Raw::Len(self.take(n)?)
            }
            FIXED32 => {
                self.take(4)?;
                Raw::Fixed32
            }
            w => return Err(ProtoError::Malformed(format!("unsupported wire type {w}"))),
        };
        Ok(Some((number, raw)))
    }
}

/// Splits a packed repeated varint field.
pub fn packed_varints(bytes: &[u8]) -> Result<Vec<u64>, ProtoError> {
    let mut r = Reader { buf: bytes };
    let mut out = Vec::new();
    while !r.buf.is_empty() {
        out.push(r.varint()?);
    }
    Ok(out)
}

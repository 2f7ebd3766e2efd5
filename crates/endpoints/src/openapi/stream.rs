//! Documents serialized member by member, into their gzip encoder and hash as they go. A
//! document held whole as a JSON tree takes several times its serialized size (the v2
//! document about 14 MB for 3.8 MB of JSON); written member by member, only the member being
//! written is ever a tree, and the plain bytes are never whole.

use super::Compressed;
use bytes::Bytes;
use serde::Serialize;
use sha2::{Digest, Sha512};
use std::io::{self, Write};

/// How far the writer keeps ahead of the compressor. The compressor's output depends on how
/// its input is split when a call runs short of input: given at least this much, each call
/// stops because its output buffer (32 KiB) is full, as when the whole document is given at
/// once, so the gzip bytes are those one pass over the whole document gives. One call takes
/// in at most about 850 KB of these documents (measured; a call that took in everything
/// still makes a valid gzip stream, just not necessarily the same bytes).
const LEAD: usize = 1 << 20;

/// Bytes are handed to the compressor in steps of about this much beyond [`LEAD`], so that
/// moving the rest to the front of the buffer stays rare.
const STEP: usize = 256 << 10;

/// Where a document's plain bytes go: the gzip encoder (gziphandler's default level) and,
/// when the document is addressed by its hash, sha512.
pub(super) struct Sink {
    gzip: flate2::write::GzEncoder<Vec<u8>>,
    hash: Option<Sha512>,
    /// Written and not yet taken in by the compressor.
    pending: Vec<u8>,
    len: usize,
}

impl Sink {
    /// A sink that also hashes what it is given.
    pub(super) fn hashed() -> Self {
        Self::new(Some(Sha512::new()))
    }

    /// A sink that only compresses.
    pub(super) fn plain() -> Self {
        Self::new(None)
    }

    fn new(hash: Option<Sha512>) -> Self {
        Self {
            gzip: flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()),
            hash,
            // At its full size from the start: grown step by step, each smaller copy would
            // be left behind for the allocator to take back later.
            pending: Vec::with_capacity(LEAD.saturating_add(STEP.saturating_mul(2))),
            len: 0,
        }
    }

    /// Hands the compressor what it can take while [`LEAD`] bytes stay ahead of it.
    fn compress(&mut self) -> io::Result<()> {
        let mut taken = 0;
        while self.pending.len().saturating_sub(taken) >= LEAD {
            let rest = self.pending.get(taken..).unwrap_or_default();
            // One call of the compressor, as `write_all` makes them.
            let n = self.gzip.write(rest)?;
            if n == 0 {
                break;
            }
            taken = taken.saturating_add(n);
        }
        self.pending.drain(..taken);
        Ok(())
    }

    /// The gzip bytes and plain length, and the uppercase hex sha512 of the plain bytes
    /// (empty for a sink made with [`Sink::plain`]).
    pub(super) fn finish(mut self) -> io::Result<(Compressed, String)> {
        self.gzip.write_all(&self.pending)?;
        drop(std::mem::take(&mut self.pending));
        let mut gzip = self.gzip.finish()?;
        // Kept for the life of the snapshot: no spare capacity.
        gzip.shrink_to_fit();
        let hash = self
            .hash
            .map(|h| upper_hex(&h.finalize()))
            .unwrap_or_default();
        Ok((
            Compressed {
                gzip: Bytes::from(gzip),
                plain_len: self.len,
            },
            hash,
        ))
    }
}

impl Write for Sink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if let Some(hash) = &mut self.hash {
            hash.update(data);
        }
        self.len = self.len.saturating_add(data.len());
        self.pending.extend_from_slice(data);
        if self.pending.len() >= LEAD.saturating_add(STEP) {
            self.compress()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// gzip at the default level of bytes already whole.
pub(super) fn gzip(plain: &[u8]) -> io::Result<Bytes> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(plain)?;
    let mut gzip = enc.finish()?;
    gzip.shrink_to_fit();
    Ok(Bytes::from(gzip))
}

fn upper_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len().saturating_mul(2));
    for b in bytes {
        let _ = write!(out, "{b:02X}");
    }
    out
}

/// A JSON object written member by member, byte for byte as serde_json's compact serializer
/// writes a map with the same members in the same order.
pub(super) struct Object<'w, W: Write> {
    out: &'w mut W,
    empty: bool,
}

impl<'w, W: Write> Object<'w, W> {
    pub(super) fn begin(out: &'w mut W) -> io::Result<Self> {
        out.write_all(b"{")?;
        Ok(Self { out, empty: true })
    }

    /// Writes the next member's key; the caller writes its value to the writer returned.
    pub(super) fn key(&mut self, key: &str) -> io::Result<&mut W> {
        if !std::mem::replace(&mut self.empty, false) {
            self.out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *self.out, key)?;
        self.out.write_all(b":")?;
        Ok(&mut *self.out)
    }

    pub(super) fn member<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> io::Result<()> {
        let out = self.key(key)?;
        serde_json::to_writer(out, value)?;
        Ok(())
    }

    pub(super) fn end(self) -> io::Result<()> {
        self.out.write_all(b"}")
    }
}

//! SPDY/3.1 frames (draft-mbelshe-httpbis-spdy-00 §2.2, §2.6) and header blocks: the subset
//! kubelets and client-go's `spdystream` exchange. Header blocks are zlib streams with the
//! protocol's preset dictionary, one compression context per direction of a connection.

use bytes::{BufMut, Bytes, BytesMut};
use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

/// The largest frame payload (24-bit length).
pub const MAX_FRAME_LEN: usize = 0x00ff_ffff;
/// A header block larger than this (decompressed) is a protocol error.
const MAX_HEADER_BLOCK: usize = 1 << 20;

pub const FLAG_FIN: u8 = 0x01;

const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const SETTINGS: u16 = 4;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const HEADERS: u16 = 8;
const WINDOW_UPDATE: u16 = 9;

/// One frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    SynStream {
        stream_id: u32,
        fin: bool,
        headers: Vec<(String, String)>,
    },
    SynReply {
        stream_id: u32,
        fin: bool,
        headers: Vec<(String, String)>,
    },
    RstStream {
        stream_id: u32,
        status: u32,
    },
    Ping(u32),
    GoAway {
        last_stream_id: u32,
        status: u32,
    },
    Data {
        stream_id: u32,
        fin: bool,
        data: Bytes,
    },
    /// SETTINGS, HEADERS, WINDOW_UPDATE and unknown control frames: read and ignored, as
    /// spdystream ignores them.
    Ignored,
}

/// The SPDY/3 header compression dictionary (§2.6.10.1): length-prefixed names and values,
/// then a run of common text.
fn dictionary() -> Vec<u8> {
    const WORDS: [&str; 65] = [
        "options",
        "head",
        "post",
        "put",
        "delete",
        "trace",
        "accept",
        "accept-charset",
        "accept-encoding",
        "accept-language",
        "accept-ranges",
        "age",
        "allow",
        "authorization",
        "cache-control",
        "connection",
        "content-base",
        "content-encoding",
        "content-language",
        "content-length",
        "content-location",
        "content-md5",
        "content-range",
        "content-type",
        "date",
        "etag",
        "expect",
        "expires",
        "from",
        "host",
        "if-match",
        "if-modified-since",
        "if-none-match",
        "if-range",
        "if-unmodified-since",
        "last-modified",
        "location",
        "max-forwards",
        "pragma",
        "proxy-authenticate",
        "proxy-authorization",
        "range",
        "referer",
        "retry-after",
        "server",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "user-agent",
        "vary",
        "via",
        "warning",
        "www-authenticate",
        "method",
        "get",
        "status",
        "200 OK",
        "version",
        "HTTP/1.1",
        "url",
        "public",
        "set-cookie",
        "keep-alive",
        "origin",
    ];
    const TAIL: &str = concat!(
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417",
        "502504505203 Non-Authoritative Information204 No Content301 Moved Permanently",
        "400 Bad Request401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error",
        "501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct ",
        "Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,",
        "image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,",
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=",
        "iso-8859-1,utf-,*,enq=0.",
    );
    let mut out = Vec::with_capacity(1500);
    for w in WORDS {
        out.extend_from_slice(&u32::try_from(w.len()).unwrap_or_default().to_be_bytes());
        out.extend_from_slice(w.as_bytes());
    }
    out.extend_from_slice(TAIL.as_bytes());
    out
}

/// A protocol error (the connection is then closed).
#[derive(Debug)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "spdy: {}", self.0)
    }
}

impl std::error::Error for ProtocolError {}

fn err(s: impl Into<String>) -> ProtocolError {
    ProtocolError(s.into())
}

/// Encodes frames (owns the sending direction's compression context).
pub struct Encoder {
    z: Compress,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new()
    }
}

impl Encoder {
    pub fn new() -> Self {
        let mut z = Compress::new(Compression::default(), true);
        // Only a stream already under way refuses a dictionary.
        let _ = z.set_dictionary(&dictionary());
        Self { z }
    }

    fn header_block(&mut self, headers: &[(String, String)]) -> Result<Vec<u8>, ProtocolError> {
        let mut raw = BytesMut::new();
        raw.put_u32(u32::try_from(headers.len()).map_err(|_| err("too many headers"))?);
        for (name, value) in headers {
            let name = name.to_ascii_lowercase();
            raw.put_u32(u32::try_from(name.len()).map_err(|_| err("header too long"))?);
            raw.put_slice(name.as_bytes());
            raw.put_u32(u32::try_from(value.len()).map_err(|_| err("header too long"))?);
            raw.put_slice(value.as_bytes());
        }
        let mut out = Vec::with_capacity(raw.len().saturating_add(64));
        let mut input: &[u8] = &raw;
        loop {
            out.reserve(256);
            let before_in = self.z.total_in();
            self.z
                .compress_vec(input, &mut out, FlushCompress::Sync)
                .map_err(|e| err(format!("compressing headers: {e}")))?;
            let used =
                usize::try_from(self.z.total_in().saturating_sub(before_in)).unwrap_or_default();
            input = input.get(used..).unwrap_or_default();
            // A sync flush is complete once the input is consumed and room was left over.
            if input.is_empty() && out.len() < out.capacity() {
                return Ok(out);
            }
        }
    }

    fn control(kind: u16, flags: u8, payload: &[u8]) -> Result<Bytes, ProtocolError> {
        if payload.len() > MAX_FRAME_LEN {
            return Err(err("frame too large"));
        }
        let mut b = BytesMut::with_capacity(payload.len().saturating_add(8));
        b.put_u16(0x8003);
        b.put_u16(kind);
        b.put_u8(flags);
        let len = u32::try_from(payload.len()).unwrap_or_default();
        b.put_slice(len.to_be_bytes().get(1..).unwrap_or_default());
        b.put_slice(payload);
        Ok(b.freeze())
    }

    /// The bytes of one frame.
    pub fn encode(&mut self, frame: &Frame) -> Result<Bytes, ProtocolError> {
        let fin = |f: bool| if f { FLAG_FIN } else { 0 };
        match frame {
            Frame::SynStream {
                stream_id,
                fin: f,
                headers,
            } => {
                let block = self.header_block(headers)?;
                let mut p = BytesMut::with_capacity(block.len().saturating_add(10));
                p.put_u32(stream_id & 0x7fff_ffff);
                p.put_u32(0);
                p.put_u8(0);
                p.put_u8(0);
                p.put_slice(&block);
                Self::control(SYN_STREAM, fin(*f), &p)
            }
            Frame::SynReply {
                stream_id,
                fin: f,
                headers,
            } => {
                let block = self.header_block(headers)?;
                let mut p = BytesMut::with_capacity(block.len().saturating_add(4));
                p.put_u32(stream_id & 0x7fff_ffff);
                p.put_slice(&block);
                Self::control(SYN_REPLY, fin(*f), &p)
            }
            Frame::RstStream { stream_id, status } => {
                let mut p = BytesMut::with_capacity(8);
                p.put_u32(stream_id & 0x7fff_ffff);
                p.put_u32(*status);
                Self::control(RST_STREAM, 0, &p)
            }
            Frame::Ping(id) => Self::control(PING, 0, &id.to_be_bytes()),
            Frame::GoAway {
                last_stream_id,
                status,
            } => {
                let mut p = BytesMut::with_capacity(8);
                p.put_u32(last_stream_id & 0x7fff_ffff);
                p.put_u32(*status);
                Self::control(GOAWAY, 0, &p)
            }
            Frame::Data {
                stream_id,
                fin: f,
                data,
            } => {
                if data.len() > MAX_FRAME_LEN {
                    return Err(err("frame too large"));
                }
                let mut b = BytesMut::with_capacity(data.len().saturating_add(8));
                b.put_u32(stream_id & 0x7fff_ffff);
                b.put_u8(fin(*f));
                let len = u32::try_from(data.len()).unwrap_or_default();
                b.put_slice(len.to_be_bytes().get(1..).unwrap_or_default());
                b.put_slice(data);
                Ok(b.freeze())
            }
            Frame::Ignored => Ok(Bytes::new()),
        }
    }
}

/// Decodes frames from a byte buffer (owns the receiving direction's compression context).
pub struct Decoder {
    z: Decompress,
    dictionary: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new()
    }
}

fn be32(b: &[u8], at: usize) -> Result<u32, ProtocolError> {
    let s = b
        .get(at..at.saturating_add(4))
        .ok_or_else(|| err("short frame"))?;
    let mut a = [0u8; 4];
    a.copy_from_slice(s);
    Ok(u32::from_be_bytes(a))
}

impl Decoder {
    pub fn new() -> Self {
        Self {
            z: Decompress::new(true),
            dictionary: dictionary(),
        }
    }

    fn inflate(&mut self, block: &[u8]) -> Result<Vec<u8>, ProtocolError> {
        let mut out = Vec::with_capacity(block.len().saturating_mul(4).max(256));
        let mut input = block;
        loop {
            if out.len() == out.capacity() {
                out.reserve(out.capacity().max(256));
            }
            let before_in = self.z.total_in();
            let before_out = out.len();
            match self
                .z
                .decompress_vec(input, &mut out, FlushDecompress::Sync)
            {
                Ok(Status::StreamEnd) => return Ok(out),
                Ok(_) => {}
                Err(e) if e.needs_dictionary().is_some() => {
                    self.z
                        .set_dictionary(&self.dictionary)
                        .map_err(|e| err(format!("header dictionary: {e}")))?;
                }
                Err(e) => return Err(err(format!("decompressing headers: {e}"))),
            }
            let used =
                usize::try_from(self.z.total_in().saturating_sub(before_in)).unwrap_or_default();
            input = input.get(used..).unwrap_or_default();
            if out.len() > MAX_HEADER_BLOCK {
                return Err(err("header block too large"));
            }
            if input.is_empty() && out.len() < out.capacity() {
                return Ok(out);
            }
            if used == 0 && out.len() == before_out && out.len() < out.capacity() {
                return Err(err("header block does not decompress"));
            }
        }
    }

    fn headers(&mut self, block: &[u8]) -> Result<Vec<(String, String)>, ProtocolError> {
        let raw = self.inflate(block)?;
        let count = be32(&raw, 0)?;
        let mut at = 4usize;
        let mut out = Vec::new();
        for _ in 0..count {
            let mut field = || -> Result<String, ProtocolError> {
                let len = usize::try_from(be32(&raw, at)?).map_err(|_| err("bad length"))?;
                at = at.saturating_add(4);
                let end = at.saturating_add(len);
                let s = raw.get(at..end).ok_or_else(|| err("short header block"))?;
                at = end;
                Ok(String::from_utf8_lossy(s).into_owned())
            };
            let name = field()?;
            let value = field()?;
            out.push((name, value));
        }
        Ok(out)
    }

    /// Takes one whole frame off the front of `buf`; `None` until one is there.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, ProtocolError> {
        let Some(head) = buf.get(..8) else {
            return Ok(None);
        };
        let len = usize::try_from(be32(head, 4)? & 0x00ff_ffff).unwrap_or_default();
        let flags = head.get(4).copied().unwrap_or_default();
        let control = head.first().is_some_and(|b| b & 0x80 != 0);
        let word0 = be32(head, 0)?;
        if buf.len() < len.saturating_add(8) {
            return Ok(None);
        }
        let frame = buf.split_to(len.saturating_add(8)).freeze();
        let payload = frame.slice(8..);
        let fin = flags & FLAG_FIN != 0;
        if !control {
            return Ok(Some(Frame::Data {
                stream_id: word0 & 0x7fff_ffff,
                fin,
                data: payload,
            }));
        }
        let version = (word0 >> 16) & 0x7fff;
        if version != 3 {
            return Err(err(format!("unsupported version {version}")));
        }
        let kind = u16::try_from(word0 & 0xffff).unwrap_or_default();
        let stream_id = || be32(&payload, 0).map(|v| v & 0x7fff_ffff);
        Ok(Some(match kind {
            SYN_STREAM => Frame::SynStream {
                stream_id: stream_id()?,
                fin,
                headers: self.headers(payload.get(10..).unwrap_or_default())?,
            },
            SYN_REPLY => Frame::SynReply {
                stream_id: stream_id()?,
                fin,
                headers: self.headers(payload.get(4..).unwrap_or_default())?,
            },
            RST_STREAM => Frame::RstStream {
                stream_id: stream_id()?,
                status: be32(&payload, 4)?,
            },
            PING => Frame::Ping(be32(&payload, 0)?),
            GOAWAY => Frame::GoAway {
                last_stream_id: stream_id()?,
                status: be32(&payload, 4).unwrap_or_default(),
            },
            HEADERS => {
                // Keep the decompression context in step.
                self.headers(payload.get(4..).unwrap_or_default())?;
                Frame::Ignored
            }
            SETTINGS | WINDOW_UPDATE => Frame::Ignored,
            _ => Frame::Ignored,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_is_the_specs() {
        let d = dictionary();
        assert_eq!(d.len(), 1423);
        assert_eq!(d.get(..11), Some(&b"\0\0\0\x07options"[..]));
        assert!(d.ends_with(b"utf-,*,enq=0."));
    }

    #[test]
    fn frames_round_trip_with_compressed_headers() {
        let mut enc = Encoder::new();
        let mut dec = Decoder::new();
        let frames = [
            Frame::SynStream {
                stream_id: 1,
                fin: false,
                headers: vec![("streamtype".into(), "error".into())],
            },
            Frame::SynStream {
                stream_id: 3,
                fin: false,
                headers: vec![
                    ("streamtype".into(), "data".into()),
                    ("port".into(), "80".into()),
                ],
            },
            Frame::SynReply {
                stream_id: 3,
                fin: false,
                headers: vec![],
            },
            Frame::Data {
                stream_id: 3,
                fin: true,
                data: Bytes::from_static(b"hello"),
            },
            Frame::Ping(7),
            Frame::RstStream {
                stream_id: 5,
                status: 5,
            },
            Frame::GoAway {
                last_stream_id: 3,
                status: 0,
            },
        ];
        let mut buf = BytesMut::new();
        for f in &frames {
            buf.extend_from_slice(&enc.encode(f).unwrap());
        }
        // Fed a byte at a time, frames come out whole.
        let mut pending = BytesMut::new();
        let mut got = Vec::new();
        for b in buf.iter() {
            pending.put_u8(*b);
            while let Some(f) = dec.decode(&mut pending).unwrap() {
                got.push(f);
            }
        }
        assert_eq!(got, frames);
    }
}

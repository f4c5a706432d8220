//! The encoding: little-endian fixed-size fields, strings and blobs as a
//! `u64` length then the bytes, every message after its whole length
//! ([`LENGTH_HEADER`]).
use super::LENGTH_HEADER;

/// A message that does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed message: {0}")]
pub struct Malformed(pub String);

/// The whole length a message's first part says (its [`LENGTH_HEADER`]).
pub fn message_len(first: &[u8]) -> Result<u64, Malformed> {
    match first.get(..LENGTH_HEADER) {
        Some(header) => {
            let said = u64::from_le_bytes(header.try_into().expect("8 bytes"));
            if said < LENGTH_HEADER as u64 {
                return Err(Malformed(format!("its header says {said} bytes")));
            }
            Ok(said)
        }
        None => Err(Malformed(format!(
            "{} bytes, shorter than a length header",
            first.len()
        ))),
    }
}

/// Builds a message: its [`LENGTH_HEADER`], then the fields.
#[derive(Debug)]
pub struct Writer(Vec<u8>);

impl Default for Writer {
    fn default() -> Self {
        Self::new()
    }
}

impl Writer {
    /// An empty message (its length header still to be written).
    pub fn new() -> Self {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(&[0; LENGTH_HEADER]);
        Writer(bytes)
    }
    /// Append a `u32`.
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append an `i32`.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append a `u64`.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// Append a length-prefixed blob.
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }
    /// Append a length-prefixed string.
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }
    /// Append `n` zero bytes, with no length before them, for the caller
    /// to fill (a copy back's bytes, whose length the reader knows).
    pub fn raw_mut(&mut self, n: usize) -> &mut [u8] {
        let start = self.0.len();
        self.0.resize(start + n, 0);
        &mut self.0[start..]
    }
    /// The message, its length header written.
    pub fn finish(mut self) -> Vec<u8> {
        let len = self.0.len() as u64;
        self.0[..LENGTH_HEADER].copy_from_slice(&len.to_le_bytes());
        self.0
    }
}

/// Reads a message.
#[derive(Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Read the fields of `message`, after its length header, which must
    /// say its length.
    pub fn message(message: &'a [u8]) -> Result<Self, Malformed> {
        let said = message_len(message)?;
        if said != message.len() as u64 {
            return Err(Malformed(format!(
                "its header says {said} bytes, {} came",
                message.len()
            )));
        }
        Ok(Reader {
            rest: &message[LENGTH_HEADER..],
        })
    }
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], Malformed> {
        if self.rest.len() < n {
            return Err(Malformed(format!(
                "{what}: {n} bytes wanted, {} left",
                self.rest.len()
            )));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
    /// A `u32`.
    pub fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(
            self.take(4, "u32")?.try_into().expect("4 bytes"),
        ))
    }
    /// An `i32`.
    pub fn i32(&mut self) -> Result<i32, Malformed> {
        Ok(i32::from_le_bytes(
            self.take(4, "i32")?.try_into().expect("4 bytes"),
        ))
    }
    /// A `u64`.
    pub fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(
            self.take(8, "u64")?.try_into().expect("8 bytes"),
        ))
    }
    /// `n` bytes with no length before them.
    pub fn raw(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        self.take(n, "bytes")
    }
    /// A length-prefixed blob.
    pub fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let len = self.u64()?;
        let len = usize::try_from(len).map_err(|_| Malformed(format!("length {len}")))?;
        self.take(len, "blob")
    }
    /// A length-prefixed UTF-8 string.
    pub fn string(&mut self) -> Result<String, Malformed> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| Malformed("a string is not UTF-8".into()))
    }
    /// A count of items each at least `min_size` bytes long, checked
    /// against what is left (so a forged count cannot make us allocate).
    pub fn count(&mut self, min_size: usize) -> Result<usize, Malformed> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| Malformed(format!("count {n}")))?;
        if n.saturating_mul(min_size.max(1)) > self.rest.len() {
            return Err(Malformed(format!("count {n} exceeds the message")));
        }
        Ok(n)
    }
    /// How many bytes are left to read.
    pub fn left(&self) -> usize {
        self.rest.len()
    }
    /// Everything was read.
    pub fn end(&self) -> Result<(), Malformed> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Malformed(format!("{} trailing bytes", self.rest.len())))
        }
    }
}

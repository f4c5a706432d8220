//! LLVM's OffloadBinary wrapping (magic `10 FF 10 AD`), unwrapped.
//!
//! clang 19 and 22 embed each device image in an OffloadBinary blob
//! (header, one entry, a string table, then the image). In the binaries
//! these releases link for x86_64 (`ffi/plugin/abi`'s layout tests), `ImageStart`
//! already points at the ELF inside the blob; a producer that hands over the
//! blob itself (LLVM's own tests, other linkers) is also accepted: the image
//! the plugins get is always the bare device image.
//!
//! Layout (little-endian, LLVM's `OffloadBinary::Header` and `Entry`):
//! ```text
//! header = magic[4], version u32, size u64, entry_offset u64, entry_size u64
//! entry  = image_kind u16, offload_kind u16, flags u32, string_offset u64,
//!          num_strings u64, image_offset u64, image_size u64
//! ```

/// The four bytes an OffloadBinary blob starts with.
pub const MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];
const HEADER_SIZE: usize = 32;
const ENTRY_SIZE: usize = 40;

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    let word = bytes.get(at..at.checked_add(8)?)?;
    Some(u64::from_le_bytes(word.try_into().ok()?))
}

/// Why a blob that starts with the magic cannot be unwrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadBlob(pub &'static str);

/// The device image inside `bytes`: `Ok(None)` when `bytes` is not an
/// OffloadBinary blob (a bare image, used as it is), `Ok(Some(range))` for
/// the image's byte range within `bytes`, `Err` for a blob whose header or
/// entry points outside it.
pub fn image_range(bytes: &[u8]) -> Result<Option<std::ops::Range<usize>>, BadBlob> {
    if bytes.len() < 4 || bytes[..4] != MAGIC {
        return Ok(None);
    }
    if bytes.len() < HEADER_SIZE {
        return Err(BadBlob("shorter than its header"));
    }
    let size = u64_at(bytes, 8).ok_or(BadBlob("no size"))?;
    let entry_offset = u64_at(bytes, 16).ok_or(BadBlob("no entry offset"))?;
    if size > bytes.len() as u64 {
        return Err(BadBlob("its size exceeds the image"));
    }
    let entry = usize::try_from(entry_offset).map_err(|_| BadBlob("entry offset"))?;
    match entry.checked_add(ENTRY_SIZE) {
        Some(end) if end <= bytes.len() => {}
        _ => return Err(BadBlob("its entry lies outside it")),
    }
    let image_offset = u64_at(bytes, entry + 24).ok_or(BadBlob("image offset"))?;
    let image_size = u64_at(bytes, entry + 32).ok_or(BadBlob("image size"))?;
    let start = usize::try_from(image_offset).map_err(|_| BadBlob("image offset"))?;
    let len = usize::try_from(image_size).map_err(|_| BadBlob("image size"))?;
    match start.checked_add(len) {
        Some(end) if end <= bytes.len() && len > 0 => Ok(Some(start..end)),
        _ => Err(BadBlob("its image lies outside it")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A blob as `clang-offload-packager` lays it out: header, entry, two
    /// string pairs, strings, then the image.
    fn blob(image: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let image_offset = 144u64;
        let total = image_offset + image.len() as u64;
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&total.to_le_bytes());
        out.extend_from_slice(&32u64.to_le_bytes());
        out.extend_from_slice(&40u64.to_le_bytes());
        out.extend_from_slice(&1u16.to_le_bytes()); // image kind: object
        out.extend_from_slice(&1u16.to_le_bytes()); // offload kind: OpenMP
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&80u64.to_le_bytes());
        out.extend_from_slice(&2u64.to_le_bytes());
        out.extend_from_slice(&image_offset.to_le_bytes());
        out.extend_from_slice(&(image.len() as u64).to_le_bytes());
        out.resize(image_offset as usize, 0);
        out.extend_from_slice(image);
        out
    }

    #[test]
    fn a_bare_image_is_used_as_it_is() {
        assert_eq!(image_range(b"\x7fELF rest"), Ok(None));
        assert_eq!(image_range(b""), Ok(None));
    }

    #[test]
    fn the_image_is_found_inside_a_blob() {
        let bytes = blob(b"\x7fELF device");
        let range = image_range(&bytes).unwrap().unwrap();
        assert_eq!(range.start, 144);
        assert_eq!(&bytes[range], b"\x7fELF device");
    }

    #[test]
    fn a_blob_pointing_outside_itself_is_refused() {
        let mut bytes = blob(b"\x7fELF device");
        bytes.truncate(150);
        assert!(image_range(&bytes).is_err());
        assert!(image_range(&MAGIC).is_err());
        let mut bytes = blob(b"\x7fELF");
        bytes[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(image_range(&bytes).is_err());
    }
}

//! What an nvptx device image is: a cubin (an ELF file for `EM_CUDA`),
//! bare (clang 14) or wrapped in an OffloadBinary blob (clang 19/22), and
//! the SM architecture its `e_flags` name.
//!
//! Pure functions on bytes, so the tests build their inputs.

use std::fmt;

/// `e_machine` of a cubin (`EM_CUDA`).
pub const EM_CUDA: u16 = 190;
/// First bytes of an OffloadBinary blob (LLVM's `OffloadBinary::Magic`).
pub const OFFLOAD_BINARY_MAGIC: [u8; 4] = [0x10, 0xFF, 0x10, 0xAD];
/// `EI_ABIVERSION` of cubins whose `e_flags` low byte is the SM number.
pub const CUDA_ABI_V1: u8 = 7;
/// `EI_ABIVERSION` of cubins whose SM number is in `e_flags` bits 8-15.
pub const CUDA_ABI_V2: u8 = 8;

/// OffloadBinary header: magic, version (u32), size, entry offset and
/// entry size (u64 each).
const OB_HEADER: usize = 32;
/// OffloadBinary entry: image kind (u16), offload kind (u16), flags (u32),
/// string offset, string count, image offset, image size (u64 each).
const OB_ENTRY: usize = 40;
/// `IMG_Cubin` of LLVM's `ImageKind`.
const IMG_CUBIN: u16 = 3;
/// `IMG_Object`: clang's OpenMP nvptx images are tagged as objects.
const IMG_OBJECT: u16 = 1;

/// A compute capability, e.g. 9.0 for `sm_90`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Sm {
    /// Major revision.
    pub major: u32,
    /// Minor revision.
    pub minor: u32,
}

impl Sm {
    /// From the SM number a cubin stores (`90` for `sm_90`).
    pub fn from_number(number: u32) -> Self {
        Self {
            major: number / 10,
            minor: number % 10,
        }
    }

    /// Whether a cubin built for `self` runs on a device of `device`: CUDA
    /// runs a cubin on the same major revision with the same or a higher
    /// minor one (the rule LLVM's plugin applies).
    pub fn runs_on(self, device: Sm) -> bool {
        self.major == device.major && device.minor >= self.minor
    }
}

impl fmt::Display for Sm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

/// A checked cubin inside a device image.
#[derive(Debug, Clone, Copy)]
pub struct Cubin<'a> {
    /// The ELF bytes, what `cuModuleLoadData` gets.
    pub elf: &'a [u8],
    /// The architecture it was built for.
    pub sm: Sm,
    /// Whether it came out of an OffloadBinary blob.
    pub wrapped: bool,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The image's cubin: `bytes` itself, or the first cubin/object entry of
/// an OffloadBinary blob.
pub fn parse(bytes: &[u8]) -> Result<Cubin<'_>, String> {
    if bytes.starts_with(&OFFLOAD_BINARY_MAGIC) {
        let inner = unwrap_offload_binary(bytes)?;
        let (elf, sm) = parse_cubin(inner)?;
        return Ok(Cubin {
            elf,
            sm,
            wrapped: true,
        });
    }
    let (elf, sm) = parse_cubin(bytes)?;
    Ok(Cubin {
        elf,
        sm,
        wrapped: false,
    })
}

/// The bytes of the first cubin or object entry of an OffloadBinary blob.
pub fn unwrap_offload_binary(blob: &[u8]) -> Result<&[u8], String> {
    let bad = |why: &str| format!("malformed OffloadBinary ({} bytes): {why}", blob.len());
    if blob.len() < OB_HEADER {
        return Err(bad("shorter than its header"));
    }
    let size = u64_at(blob, 8).ok_or_else(|| bad("no size"))?;
    if size > blob.len() as u64 {
        return Err(bad(&format!("its header says {size} bytes")));
    }
    let entry_offset = u64_at(blob, 16).ok_or_else(|| bad("no entry offset"))?;
    let entry_size = u64_at(blob, 24).ok_or_else(|| bad("no entry size"))?;
    if entry_size < OB_ENTRY as u64 {
        return Err(bad(&format!("entry size {entry_size}")));
    }
    let entry = usize::try_from(entry_offset)
        .ok()
        .and_then(|at| blob.get(at..at.checked_add(OB_ENTRY)?))
        .ok_or_else(|| bad("its entry lies outside it"))?;
    let kind = u16_at(entry, 0).unwrap_or(0);
    if kind != IMG_CUBIN && kind != IMG_OBJECT {
        return Err(bad(&format!(
            "image kind {kind} is neither a cubin ({IMG_CUBIN}) nor an object ({IMG_OBJECT})"
        )));
    }
    let offset = u64_at(entry, 24).unwrap_or(u64::MAX);
    let len = u64_at(entry, 32).unwrap_or(u64::MAX);
    usize::try_from(offset)
        .ok()
        .zip(usize::try_from(len).ok())
        .and_then(|(at, len)| blob.get(at..at.checked_add(len)?))
        .ok_or_else(|| {
            bad(&format!(
                "its image ({len} bytes at {offset}) lies outside it"
            ))
        })
}

/// Check an ELF header for a 64-bit little-endian `EM_CUDA` file and read
/// its SM architecture.
pub fn parse_cubin(elf: &[u8]) -> Result<(&[u8], Sm), String> {
    if elf.len() < 64 || elf[..4] != *b"\x7fELF" {
        return Err(format!("not an ELF file ({} bytes)", elf.len()));
    }
    if elf[4] != 2 {
        return Err("not a 64-bit ELF file".into());
    }
    if elf[5] != 1 {
        return Err("not a little-endian ELF file".into());
    }
    let machine = u16_at(elf, 18).unwrap_or(0);
    if machine != EM_CUDA {
        return Err(format!(
            "ELF machine {machine}, not CUDA ({EM_CUDA}): not an nvptx image"
        ));
    }
    let flags = u32_at(elf, 48).unwrap_or(0);
    let sm = sm_from_flags(elf[8], flags)?;
    Ok((elf, sm))
}

/// The SM number in a cubin's `e_flags`: the low byte for ELF ABI version
/// 7, bits 8-15 for version 8 (CUDA 12.8's new layout).
pub fn sm_from_flags(abi_version: u8, e_flags: u32) -> Result<Sm, String> {
    let number = match abi_version {
        CUDA_ABI_V1 => e_flags & 0xff,
        CUDA_ABI_V2 => (e_flags >> 8) & 0xff,
        other => {
            return Err(format!(
                "cubin ELF ABI version {other} is unknown (7 or 8 expected)"
            ))
        }
    };
    if number == 0 {
        return Err(format!("e_flags {e_flags:#x} names no SM architecture"));
    }
    Ok(Sm::from_number(number))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A 64-byte ELF header as a cubin has it.
    pub fn cubin_header(machine: u16, abi_version: u8, e_flags: u32) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2; // ELFCLASS64
        h[5] = 1; // little-endian
        h[6] = 1; // EV_CURRENT
        h[7] = 51; // ELFOSABI_CUDA
        h[8] = abi_version;
        h[16..18].copy_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h[48..52].copy_from_slice(&e_flags.to_le_bytes());
        h[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        h
    }

    /// An OffloadBinary blob with one entry of `kind` holding `image`
    /// (strings omitted: nothing reads them).
    pub fn offload_binary(kind: u16, image: &[u8]) -> Vec<u8> {
        let image_at = OB_HEADER + OB_ENTRY;
        let total = image_at + image.len();
        let mut b = Vec::with_capacity(total);
        b.extend_from_slice(&OFFLOAD_BINARY_MAGIC);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&(total as u64).to_le_bytes());
        b.extend_from_slice(&(OB_HEADER as u64).to_le_bytes());
        b.extend_from_slice(&(OB_ENTRY as u64).to_le_bytes());
        b.extend_from_slice(&kind.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes()); // OFK_OpenMP
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(total as u64).to_le_bytes()); // strings: none
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&(image_at as u64).to_le_bytes());
        b.extend_from_slice(&(image.len() as u64).to_le_bytes());
        b.extend_from_slice(image);
        b
    }

    #[test]
    fn a_raw_cubin_of_abi_7_reads_its_sm_from_the_low_byte() {
        let h = cubin_header(EM_CUDA, 7, 0x0050_0556); // sm_86 plus other bits
        let c = parse(&h).unwrap();
        assert_eq!(c.sm, Sm { major: 8, minor: 6 });
        assert!(!c.wrapped);
        assert_eq!(c.elf.len(), 64);
    }

    #[test]
    fn a_raw_cubin_of_abi_8_reads_its_sm_from_bits_8_to_15() {
        let h = cubin_header(EM_CUDA, 8, 0x5a02); // sm_90 in bits 8-15
        assert_eq!(parse(&h).unwrap().sm, Sm::from_number(90));
        // The same flags read as ABI 7 would say sm_2 (0x02): the version decides.
        assert_eq!(sm_from_flags(7, 0x5a02).unwrap(), Sm::from_number(2));
    }

    #[test]
    fn an_offload_binary_is_unwrapped_to_its_cubin() {
        let cubin = cubin_header(EM_CUDA, 7, 90);
        for kind in [IMG_CUBIN, IMG_OBJECT] {
            let blob = offload_binary(kind, &cubin);
            let c = parse(&blob).unwrap();
            assert!(c.wrapped);
            assert_eq!(c.elf, &cubin[..]);
            assert_eq!(c.sm.to_string(), "sm_90");
        }
    }

    #[test]
    fn bad_images_are_refused_with_the_reason() {
        let x86 = cubin_header(62, 7, 90);
        assert!(parse(&x86).unwrap_err().contains("ELF machine 62"));
        assert!(parse(b"hello").unwrap_err().contains("not an ELF"));
        let mut be = cubin_header(EM_CUDA, 7, 90);
        be[5] = 2;
        assert!(parse(&be).unwrap_err().contains("little-endian"));
        assert!(parse(&cubin_header(EM_CUDA, 9, 90))
            .unwrap_err()
            .contains("ABI version 9"));
        assert!(parse(&cubin_header(EM_CUDA, 7, 0))
            .unwrap_err()
            .contains("names no SM"));
        // A bitcode entry (kind 2) is not something the driver loads.
        let blob = offload_binary(2, &cubin_header(EM_CUDA, 7, 90));
        assert!(parse(&blob).unwrap_err().contains("image kind 2"));
        // Truncated blobs: the header's size, the entry, the image.
        let blob = offload_binary(IMG_CUBIN, &cubin_header(EM_CUDA, 7, 90));
        for cut in [10, OB_HEADER + 4, blob.len() - 1] {
            let err = parse(&blob[..cut]).unwrap_err();
            assert!(err.contains("malformed OffloadBinary"), "{cut}: {err}");
        }
    }

    #[test]
    fn a_real_clang_19_offload_binary_is_sm_90_of_abi_8() {
        // `scripts/gpu-build.sh`'s clang-19 saxpy (ptxas 12.9, sm_90).
        let blob = include_bytes!("../tests/fixtures/saxpy_sm90.offload");
        let c = parse(blob).unwrap();
        assert!(c.wrapped);
        assert_eq!(c.elf[8], CUDA_ABI_V2);
        assert_eq!(c.sm, Sm::from_number(90));
        assert_eq!(c.elf.as_ptr() as usize - blob.as_ptr() as usize, 144);
    }

    #[test]
    fn compatibility_follows_cuda_rules() {
        let sm = Sm::from_number;
        assert!(sm(80).runs_on(sm(86)));
        assert!(sm(90).runs_on(sm(90)));
        assert!(!sm(86).runs_on(sm(80)), "newer minor");
        assert!(!sm(80).runs_on(sm(90)), "other major");
        assert!(!sm(90).runs_on(sm(80)));
    }
}

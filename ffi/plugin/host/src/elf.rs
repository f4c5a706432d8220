//! ELF checks for host device images.

use object::elf::{FileHeader64, EM_X86_64, ET_DYN};
use object::read::elf::{FileHeader, ProgramHeader, Rela, SectionHeader, Sym};
use object::Endianness;

/// The section where clang (up to LLVM 17) places a device image's own
/// offload entry table (`__tgt_offload_entry` records, relocated at load).
pub const OFFLOAD_ENTRIES_SECTION: &[u8] = b"omp_offloading_entries";

/// Where an image's offload entry section lies once loaded: `addr` is
/// relative to the load base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntriesSection {
    pub addr: u64,
    pub size: u64,
}

fn header(bytes: &[u8]) -> Result<(&FileHeader64<Endianness>, Endianness), String> {
    let header = FileHeader64::<Endianness>::parse(bytes)
        .map_err(|e| format!("not a 64-bit ELF file ({e})"))?;
    let endian = header
        .endian()
        .map_err(|e| format!("bad ELF byte order ({e})"))?;
    Ok((header, endian))
}

/// Check that `bytes` is an image this backend runs: ELF64, little endian,
/// `EM_X86_64`, `ET_DYN` (a shared object dlopen can load).
pub fn check_image(bytes: &[u8]) -> Result<(), String> {
    let (header, endian) = header(bytes)?;
    if endian != Endianness::Little {
        return Err("big-endian ELF file, not x86_64".to_string());
    }
    let machine = header.e_machine(endian);
    if machine != EM_X86_64 {
        return Err(format!("ELF machine {machine}, not x86_64 ({EM_X86_64})"));
    }
    let kind = header.e_type(endian);
    if kind != ET_DYN {
        return Err(format!(
            "ELF type {kind}, not a shared object (ET_DYN = {ET_DYN})"
        ));
    }
    Ok(())
}

/// Find the image's `omp_offloading_entries` section, if it has one (plain
/// shared objects built without `-fopenmp-targets` do not).
pub fn entries_section(bytes: &[u8]) -> Result<Option<EntriesSection>, String> {
    let (header, endian) = header(bytes)?;
    let sections = header
        .sections(endian, bytes)
        .map_err(|e| format!("bad ELF section table ({e})"))?;
    if sections.is_empty() {
        return Ok(None);
    }
    // The section names are compared in place, not read through
    // `section_name`: that finds each name's end with the `memchr` crate,
    // whose first call probes the CPU (a dozen `cpuid`, each a VM exit
    // under a hypervisor: ~1% of a one-region process's time).
    let names = sections
        .section(object::SectionIndex(
            header
                .shstrndx(endian, bytes)
                .map_err(|e| format!("bad ELF section name table index ({e})"))?
                as usize,
        ))
        .and_then(|s| s.data(endian, bytes))
        .map_err(|e| format!("bad ELF section name table ({e})"))?;
    for section in sections.iter() {
        let name = names
            .get(section.sh_name(endian) as usize..)
            .ok_or_else(|| "bad ELF section name (offset out of the name table)".to_string())?;
        if name
            .strip_prefix(OFFLOAD_ENTRIES_SECTION)
            .and_then(|rest| rest.first())
            == Some(&0)
        {
            let found = EntriesSection {
                addr: section.sh_addr(endian),
                size: section.sh_size(endian),
            };
            check_loaded(header, endian, bytes, found)?;
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The parts of the image that are read-only once loaded, as ranges of
/// addresses relative to the load base: every `PT_LOAD` segment without
/// `PF_W` (`.rodata`, where `const` globals live, and the code), and every
/// `PT_GNU_RELRO` range (`.data.rel.ro`: `const` data with relocations,
/// which the loader write-protects once it has relocated it). A copy into
/// them would fault (SIGSEGV), so the plugin refuses it instead.
pub fn read_only_ranges(bytes: &[u8]) -> Result<Vec<std::ops::Range<u64>>, String> {
    let (header, endian) = header(bytes)?;
    let segments = header
        .program_headers(endian, bytes)
        .map_err(|e| format!("bad ELF program headers ({e})"))?;
    Ok(segments
        .iter()
        .filter(|segment| match segment.p_type(endian) {
            object::elf::PT_LOAD => segment.p_flags(endian) & object::elf::PF_W == 0,
            object::elf::PT_GNU_RELRO => true,
            _ => false,
        })
        .map(|segment| {
            let start = segment.p_vaddr(endian);
            start..start.saturating_add(segment.p_memsz(endian))
        })
        .filter(|range| !range.is_empty())
        .collect())
}

/// Where the image's references to the function `name` are written once
/// loaded: the offsets (from the load base) of its GOT slots, those of
/// `R_X86_64_JUMP_SLOT` (calls through the PLT) and `R_X86_64_GLOB_DAT`
/// (calls through the GOT, `-fno-plt`) relocations against `name`. None
/// where the image has no section table (nothing to find them by).
pub fn import_slots(bytes: &[u8], name: &[u8]) -> Result<Vec<u64>, String> {
    let (header, endian) = header(bytes)?;
    let sections = header
        .sections(endian, bytes)
        .map_err(|e| format!("bad ELF section table ({e})"))?;
    let mut slots = Vec::new();
    for section in sections.iter() {
        let Some((relocations, symbols)) = section
            .rela(endian, bytes)
            .map_err(|e| format!("bad ELF relocation section ({e})"))?
        else {
            continue;
        };
        if symbols.0 == 0 {
            continue;
        }
        let symbols = sections
            .symbol_table_by_index(endian, bytes, symbols)
            .map_err(|e| format!("bad ELF symbol table of a relocation section ({e})"))?;
        // Names are compared in place (see `entries_section` on `memchr`).
        let strings = sections
            .section(symbols.string_section())
            .and_then(|s| s.data(endian, bytes))
            .map_err(|e| format!("bad ELF string table ({e})"))?;
        for relocation in relocations {
            let kind = relocation.r_type(endian, false);
            if kind != object::elf::R_X86_64_JUMP_SLOT && kind != object::elf::R_X86_64_GLOB_DAT {
                continue;
            }
            let symbol = symbols
                .symbol(object::SymbolIndex(relocation.r_sym(endian, false) as usize))
                .map_err(|e| format!("bad ELF relocation symbol ({e})"))?;
            let named = strings
                .get(symbol.st_name(endian) as usize..)
                .and_then(|text| text.strip_prefix(name))
                .and_then(|rest| rest.first())
                == Some(&0);
            if named {
                let slot = relocation.r_offset(endian);
                // The loader wrote this slot already; still, a slot outside
                // the image's segments is refused rather than written.
                if !inside_a_segment(header, endian, bytes, slot, 8)? {
                    return Err(format!(
                        "relocation of `exit` at {slot:#x} is outside the image"
                    ));
                }
                slots.push(slot);
            }
        }
    }
    Ok(slots)
}

/// Whether `size` bytes at `addr` (relative to the load base) lie inside
/// one `PT_LOAD` segment: mapped memory once loaded.
fn inside_a_segment(
    header: &FileHeader64<Endianness>,
    endian: Endianness,
    bytes: &[u8],
    addr: u64,
    size: u64,
) -> Result<bool, String> {
    let segments = header
        .program_headers(endian, bytes)
        .map_err(|e| format!("bad ELF program headers ({e})"))?;
    let end = addr.checked_add(size);
    Ok(segments.iter().any(|segment| {
        let start = segment.p_vaddr(endian);
        segment.p_type(endian) == object::elf::PT_LOAD
            && addr >= start
            && end.is_some_and(|end| Some(end) <= start.checked_add(segment.p_memsz(endian)))
    }))
}

/// Check that `section` lies inside a `PT_LOAD` segment, so that reading
/// it after dlopen reads mapped memory.
fn check_loaded(
    header: &FileHeader64<Endianness>,
    endian: Endianness,
    bytes: &[u8],
    section: EntriesSection,
) -> Result<(), String> {
    if inside_a_segment(header, endian, bytes, section.addr, section.size)? {
        Ok(())
    } else {
        Err("section omp_offloading_entries is not inside a loaded segment".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 header with the given class, data, type and machine.
    fn header_bytes(class: u8, data: u8, kind: u16, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = class;
        h[5] = data;
        h[6] = 1; // EI_VERSION
        h[16..18].copy_from_slice(&kind.to_le_bytes());
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        h
    }

    #[test]
    fn accepts_x86_64_shared_objects() {
        check_image(&header_bytes(2, 1, ET_DYN, EM_X86_64)).unwrap();
    }

    #[test]
    fn rejects_other_files_with_a_reason() {
        let cases: [(Vec<u8>, &str); 6] = [
            (Vec::new(), "not a 64-bit ELF"),
            (
                b"hello world, not an ELF image at all........................".to_vec(),
                "not a 64-bit ELF",
            ),
            (header_bytes(1, 1, ET_DYN, EM_X86_64), "not a 64-bit ELF"),
            (header_bytes(2, 1, ET_DYN, 183), "not x86_64"),
            (header_bytes(2, 1, 2, EM_X86_64), "not a shared object"),
            (header_bytes(2, 2, ET_DYN, EM_X86_64), "big-endian"),
        ];
        for (bytes, reason) in cases {
            let err = check_image(&bytes).unwrap_err();
            assert!(err.contains(reason), "{err:?} should mention {reason:?}");
        }
        // Truncated header.
        assert!(check_image(&header_bytes(2, 1, ET_DYN, EM_X86_64)[..40]).is_err());
    }

    #[test]
    fn a_header_without_sections_has_no_entries_section() {
        let bytes = header_bytes(2, 1, ET_DYN, EM_X86_64);
        assert_eq!(entries_section(&bytes).unwrap(), None);
    }
}

//! Reading values out of a linked ELF shared library as the dynamic loader
//! would see them: a pointer field is whatever its dynamic relocation
//! resolves to (`R_X86_64_RELATIVE`: the addend; `R_X86_64_64` and
//! `GLOB_DAT`: the symbol's address plus the addend).

use object::elf::{R_X86_64_64, R_X86_64_GLOB_DAT, R_X86_64_RELATIVE};
use object::RelocationTarget;
use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationFlags};
use std::collections::HashMap;
use std::path::Path;

/// A shared library read into memory.
pub struct Elf {
    data: Vec<u8>,
    /// Address of a relocated word -> the value the loader stores there
    /// (relative to a load base of 0).
    relocated: HashMap<u64, u64>,
}

impl Elf {
    pub fn read(path: &Path) -> Self {
        let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut relocated = HashMap::new();
        {
            let file = object::File::parse(&*data).expect("an ELF file");
            let dynsym = file.dynamic_symbol_table();
            for (at, r) in file.dynamic_relocations().into_iter().flatten() {
                let RelocationFlags::Elf { r_type } = r.flags() else {
                    continue;
                };
                let symbol_value = || match r.target() {
                    RelocationTarget::Symbol(i) => dynsym
                        .as_ref()
                        .and_then(|t| t.symbol_by_index(i).ok())
                        .map(|s| s.address())
                        .unwrap_or(0),
                    _ => 0,
                };
                let value = match r_type {
                    R_X86_64_RELATIVE => r.addend() as u64,
                    R_X86_64_64 | R_X86_64_GLOB_DAT => {
                        symbol_value().wrapping_add(r.addend() as u64)
                    }
                    _ => continue,
                };
                relocated.insert(at, value);
            }
        }
        Self { data, relocated }
    }

    pub fn file(&self) -> object::File<'_> {
        object::File::parse(&*self.data).expect("parsed before")
    }

    /// (address, size) of the symbol `name` (static table first).
    pub fn symbol(&self, name: &str) -> Option<(u64, u64)> {
        let f = self.file();
        let found = f
            .symbols()
            .chain(f.dynamic_symbols())
            .find(|s| s.name() == Ok(name) && s.section_index().is_some());
        found.map(|s| (s.address(), s.size()))
    }

    /// (address, size) of the section `name`.
    pub fn section(&self, name: &str) -> Option<(u64, u64)> {
        let f = self.file();
        let s = f.section_by_name(name)?;
        Some((s.address(), s.size()))
    }

    /// `len` bytes at virtual address `addr` as stored in the file (zeros in
    /// a NOBITS section).
    pub fn bytes(&self, addr: u64, len: u64) -> Vec<u8> {
        let f = self.file();
        for s in f.sections() {
            if s.address() <= addr && addr + len <= s.address() + s.size() && s.address() != 0 {
                let data = s.data().expect("section data");
                if data.is_empty() {
                    return vec![0; len as usize];
                }
                let at = (addr - s.address()) as usize;
                return data[at..at + len as usize].to_vec();
            }
        }
        panic!("no section holds {len} bytes at {addr:#x}");
    }

    pub fn u16(&self, addr: u64) -> u16 {
        u16::from_le_bytes(self.bytes(addr, 2).try_into().unwrap())
    }

    pub fn u32(&self, addr: u64) -> u32 {
        u32::from_le_bytes(self.bytes(addr, 4).try_into().unwrap())
    }

    /// A plain (non-pointer) 64-bit word; asserts no relocation targets it.
    pub fn u64(&self, addr: u64) -> u64 {
        assert!(
            !self.relocated.contains_key(&addr),
            "{addr:#x} holds a relocated pointer, not a plain integer"
        );
        u64::from_le_bytes(self.bytes(addr, 8).try_into().unwrap())
    }

    /// A pointer-sized word after dynamic relocation (0 for a null pointer).
    pub fn pointer(&self, addr: u64) -> u64 {
        match self.relocated.get(&addr) {
            Some(v) => *v,
            None => u64::from_le_bytes(self.bytes(addr, 8).try_into().unwrap()),
        }
    }

    /// The NUL-terminated string at `addr`.
    pub fn c_str(&self, addr: u64) -> String {
        let f = self.file();
        for s in f.sections() {
            if s.address() != 0 && s.address() <= addr && addr < s.address() + s.size() {
                let data = s.data().expect("section data");
                let tail = &data[(addr - s.address()) as usize..];
                let end = tail.iter().position(|&b| b == 0).expect("NUL-terminated");
                return String::from_utf8_lossy(&tail[..end]).into_owned();
            }
        }
        panic!("no section holds a string at {addr:#x}");
    }
}

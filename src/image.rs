//! A device image the runtime builds itself: the ELF bytes of a device
//! shared object plus a `__tgt_offload_entry` table naming its kernels,
//! wrapped in a `__tgt_device_image`, all at stable heap addresses.
//!
//! What a compiler would embed in a host program (LLVM's offload binary)
//! is built here from parts, so the Rust API can load any device object.
//! Host entries carry the kernel name; their `addr` is the address of the
//! name (a unique non-null key, as there is no host fallback function).
use crate::abi::{DeviceImage, OffloadEntry};
use crate::{Error, Result};
use std::ffi::{c_char, c_void, CString};

/// What an entry of an image is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A function: a kernel (offload entry size 0).
    Function,
    /// A variable of `size` bytes (offload entry size `size`).
    Global {
        /// Its size in bytes, from the symbol table.
        size: usize,
    },
}

/// The kind of each of `names` in the ELF object `elf`, from its symbol
/// tables (dynamic symbols first, as the loader sees them).
pub fn entry_kinds(elf: &[u8], names: &[&str]) -> std::result::Result<Vec<EntryKind>, String> {
    use object::{Object, ObjectSymbol, SymbolKind};
    let file = object::File::parse(elf).map_err(|e| format!("not an ELF object: {e}"))?;
    let defined: Vec<_> = file
        .dynamic_symbols()
        .chain(file.symbols())
        .filter(|s| s.is_definition())
        .collect();
    names
        .iter()
        .map(|name| {
            let symbol = defined
                .iter()
                .find(|s| s.name() == Ok(*name))
                .ok_or_else(|| format!("the object defines no symbol named {name:?}"))?;
            match symbol.kind() {
                SymbolKind::Text => Ok(EntryKind::Function),
                SymbolKind::Data | SymbolKind::Tls => Ok(EntryKind::Global {
                    size: usize::try_from(symbol.size())
                        .map_err(|_| format!("{name:?} is too large"))?,
                }),
                other => Err(format!(
                    "symbol {name:?} is neither a function nor a variable ({other:?})"
                )),
            }
        })
        .collect()
}

/// An owned `__tgt_device_image` with its bytes and entry table.
///
/// Every address inside (`image_start`, `entries_begin`, the names) points
/// into heap storage owned by this value and freed only when it is dropped;
/// moving the value moves none of it.
pub struct OwnedImage {
    /// 8-byte aligned copy of the ELF bytes (`len` of them).
    bytes: Box<[u64]>,
    len: usize,
    names: Vec<CString>,
    kinds: Vec<EntryKind>,
    entries: Box<[OffloadEntry]>,
    /// Boxed so its address is stable; the plugin gets `*mut` to it.
    image: Box<DeviceImage>,
}

// SAFETY: after construction nothing mutates the storage; the raw pointers
// inside only point into storage owned by the value itself.
unsafe impl Send for OwnedImage {}
// SAFETY: as above: shared access only ever reads.
unsafe impl Sync for OwnedImage {}

impl OwnedImage {
    /// Build the image from ELF bytes and the names of its entries, in the
    /// order of the object's `omp_offloading_entries` section (if it has
    /// one). Names must be unique, non-empty and without NUL bytes, and
    /// each a function or variable the object defines (which one, and a
    /// variable's size, come from its symbol table).
    pub fn new(elf: &[u8], entry_names: &[&str]) -> std::result::Result<OwnedImage, String> {
        if elf.len() < 4 || &elf[..4] != b"\x7fELF" {
            return Err("the image bytes are not an ELF object".into());
        }
        let kinds = entry_kinds(elf, entry_names)?;
        Self::with_kinds(elf, entry_names, kinds).map_err(|e| match e {
            Error::InvalidArgument(reason) => reason,
            other => other.to_string(),
        })
    }

    /// [`OwnedImage::new`] with the entries' kinds given, not read.
    pub fn with_kinds(
        elf: &[u8],
        entry_names: &[&str],
        kinds: Vec<EntryKind>,
    ) -> Result<OwnedImage> {
        if elf.len() < 4 || &elf[..4] != b"\x7fELF" {
            return Err(Error::InvalidArgument(
                "image bytes are not an ELF object".into(),
            ));
        }
        if kinds.len() != entry_names.len() {
            return Err(Error::InvalidArgument(format!(
                "{} entry names but {} kinds",
                entry_names.len(),
                kinds.len()
            )));
        }
        if entry_names.is_empty() {
            return Err(Error::InvalidArgument(
                "an image needs at least one entry name".into(),
            ));
        }
        let mut names = Vec::with_capacity(entry_names.len());
        for (i, name) in entry_names.iter().enumerate() {
            if name.is_empty() || entry_names[..i].contains(name) {
                return Err(Error::InvalidArgument(format!(
                    "entry name {name:?} is empty or repeated"
                )));
            }
            names.push(CString::new(*name).map_err(|_| {
                Error::InvalidArgument(format!("entry name {name:?} contains a NUL byte"))
            })?);
        }
        let mut bytes = vec![0u64; elf.len().div_ceil(8)].into_boxed_slice();
        // SAFETY: `bytes` holds at least `elf.len()` bytes; no overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(elf.as_ptr(), bytes.as_mut_ptr().cast::<u8>(), elf.len())
        };
        let mut entries: Box<[OffloadEntry]> = names
            .iter()
            .zip(&kinds)
            .map(|(name, kind)| OffloadEntry {
                addr: name.as_ptr() as *mut c_void,
                name: name.as_ptr() as *mut c_char,
                size: match kind {
                    EntryKind::Function => 0,
                    EntryKind::Global { size } => *size,
                },
                flags: 0,
                reserved: 0,
            })
            .collect();
        let start = bytes.as_mut_ptr().cast::<u8>();
        let entries_range = entries.as_mut_ptr_range();
        let image = Box::new(DeviceImage {
            image_start: start.cast(),
            // SAFETY: one past the last ELF byte, inside the allocation.
            image_end: unsafe { start.add(elf.len()) }.cast(),
            entries_begin: entries_range.start,
            entries_end: entries_range.end,
        });
        Ok(OwnedImage {
            bytes,
            len: elf.len(),
            names,
            kinds,
            entries,
            image,
        })
    }

    /// The `__tgt_device_image` to hand to a plugin. Plugins only read it.
    pub fn as_device_image(&self) -> *mut DeviceImage {
        &*self.image as *const DeviceImage as *mut DeviceImage
    }

    /// The entry names, in table order.
    pub fn entry_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.names.iter().map(|n| n.to_str().unwrap_or(""))
    }

    /// The entries' names and kinds, in table order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, EntryKind)> + '_ {
        self.entry_names().zip(self.kinds.iter().copied())
    }

    /// The number of entries.
    pub fn entry_count(&self) -> usize {
        self.entries.len()
    }

    /// The ELF bytes.
    pub fn elf(&self) -> &[u8] {
        // SAFETY: `bytes` holds `len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.bytes.as_ptr().cast::<u8>(), self.len) }
    }
}

impl std::fmt::Debug for OwnedImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedImage")
            .field("bytes", &self.len)
            .field("entries", &self.names)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_points_into_owned_storage() {
        let elf = b"\x7fELF and some more bytes";
        let image = OwnedImage::with_kinds(
            elf,
            &["vec_add", "saxpy", "counter"],
            vec![
                EntryKind::Function,
                EntryKind::Function,
                EntryKind::Global { size: 4 },
            ],
        )
        .unwrap();
        // SAFETY: the descriptor points into `image`, alive here.
        let desc = unsafe { &*image.as_device_image() };
        assert_eq!(desc.len(), Some(elf.len()));
        assert_eq!(image.elf(), elf);
        // SAFETY: the entry array of `image`, `entry_count` long, alive here.
        let entries =
            unsafe { std::slice::from_raw_parts(desc.entries_begin, image.entry_count()) };
        let names: Vec<_> = entries
            .iter()
            .map(|e| {
                // SAFETY: `image` owns NUL-terminated copies of the names.
                unsafe { std::ffi::CStr::from_ptr(e.name) }
                    .to_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(names, ["vec_add", "saxpy", "counter"]);
        assert!(entries.iter().all(|e| !e.addr.is_null()));
        let sizes: Vec<usize> = entries.iter().map(|e| e.size).collect();
        assert_eq!(sizes, [0, 0, 4], "globals carry their size");
        assert_eq!(desc.image_start as usize % 8, 0, "aligned");
    }

    #[test]
    fn bad_input_is_rejected() {
        let f = |n: usize| vec![EntryKind::Function; n];
        assert!(OwnedImage::new(b"MZ..", &["k"]).is_err());
        assert!(OwnedImage::new(b"\x7fELF truncated", &["k"]).is_err());
        assert!(OwnedImage::with_kinds(b"\x7fELF", &[], f(0)).is_err());
        assert!(OwnedImage::with_kinds(b"\x7fELF", &["k", "k"], f(2)).is_err());
        assert!(OwnedImage::with_kinds(b"\x7fELF", &["a\0b"], f(1)).is_err());
        assert!(OwnedImage::with_kinds(b"\x7fELF", &["k"], f(2)).is_err());
    }
}

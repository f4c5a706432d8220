//! The runtime's own copy of a registered device image.
//!
//! A `__tgt_device_image` of a host binary points into that binary: its
//! bytes, its host entry table and the entries' names are all in the
//! library's mapping. `__tgt_unregister_lib` runs from the library's
//! destructor while `dlclose` unmaps it, and may run while another thread
//! is still inside the plugin's `load_binary` for that image (loading
//! holds no lock of ours, see [`super::load`]). So at registration the
//! runtime copies each image it takes, and plugins only ever see the copy:
//! it stays alive while a load may read it and, through the device's image
//! record, for as long as the image is loaded (until it is unloaded, or the
//! plugin is closed when it cannot unload images).
use super::{entry_layout, offload_binary};
use omptarget::abi::{DeviceImage, OffloadEntry};
use std::ffi::{c_char, c_void, CStr, CString};

/// A registered device image, copied; see the module docs.
///
/// Every pointer inside `image` points into heap storage owned by this
/// value (or is null where the original was null); nothing is written
/// after construction.
pub(crate) struct ImageCopy {
    /// The original `__tgt_device_image` address (the registration's key:
    /// registering the same image again reuses its copy).
    original: usize,
    /// Where the bare image lies in the binary, and its length: what LLVM
    /// 19/22's plugins report to an OMPT tool when they load it.
    source: (usize, usize),
    /// 8-byte aligned copy of the image bytes.
    _bytes: Box<[u64]>,
    /// Copies of the entries' names; `entries` point into them.
    _names: Vec<CString>,
    /// Copy of the host entry table, names redirected to `_names`.
    _entries: Box<[OffloadEntry]>,
    /// Boxed so that its address is stable: plugins get `*mut` to it, and
    /// `unload_binary` identifies the image by this address.
    image: Box<DeviceImage>,
}

// SAFETY: the raw pointers inside point only into storage owned by the
// value itself, which is never mutated after construction.
unsafe impl Send for ImageCopy {}
// SAFETY: as above: shared access only ever reads.
unsafe impl Sync for ImageCopy {}

impl ImageCopy {
    /// Copy `image`: its bytes, its entry table and the entries' names.
    /// The entries' `addr`, `size`, `flags` and `reserved` are kept as they
    /// are (host addresses stay keys; nothing dereferences them here).
    ///
    /// # Safety
    /// `image` is a valid device image of a registered binary: a non-null
    /// byte range and a non-empty entry range are readable, and non-null
    /// entry names are NUL-terminated strings.
    pub(crate) unsafe fn new(image: *const DeviceImage) -> ImageCopy {
        // SAFETY: per this function's contract.
        let original = unsafe { &*image };
        let whole = original.len().unwrap_or(0);
        // The bare device image: an OffloadBinary blob is unwrapped (a
        // malformed one is copied as it is, for the plugins to refuse).
        let (skip, len) = if original.image_start.is_null() || whole == 0 {
            (0, whole)
        } else {
            // SAFETY: `whole` bytes from `image_start` are the image (per
            // the contract), read only during this call.
            let view =
                unsafe { std::slice::from_raw_parts(original.image_start.cast::<u8>(), whole) };
            match offload_binary::image_range(view) {
                Ok(Some(range)) => (range.start, range.len()),
                _ => (0, whole),
            }
        };
        let mut bytes = vec![0u64; len.div_ceil(8)].into_boxed_slice();
        if len > 0 {
            // SAFETY: `skip + len <= whole` bytes from `image_start` are the
            // image (per the contract); `bytes` holds at least `len` bytes;
            // no overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    original.image_start.cast::<u8>().add(skip),
                    bytes.as_mut_ptr().cast::<u8>(),
                    len,
                )
            };
        }
        // Read in the layout the library's compiler wrote (`entry_layout`);
        // the copy holds 32-byte entries whatever the original held.
        // SAFETY: per this function's contract.
        let host = unsafe {
            entry_layout::read(
                original.entries_begin as *const c_void,
                original.entries_end as *const c_void,
            )
        }
        .entries;
        let names: Vec<Option<CString>> = host
            .iter()
            .map(|e| {
                (!e.name.is_null())
                    // SAFETY: a non-null name is a NUL-terminated string.
                    .then(|| unsafe { CStr::from_ptr(e.name) }.to_owned())
            })
            .collect();
        let mut copied: Box<[OffloadEntry]> = host
            .iter()
            .zip(&names)
            .map(|(e, name)| OffloadEntry {
                name: name.as_ref().map_or(e.name, |n| n.as_ptr() as *mut c_char),
                ..*e
            })
            .collect();
        let (entries_begin, entries_end) = if copied.is_empty() {
            // Keep what the compiler wrote as an empty range (null, or a
            // table of `requires` entries only, which plugins must not read).
            (original.entries_begin, original.entries_begin)
        } else {
            let range = copied.as_mut_ptr_range();
            (range.start, range.end)
        };
        let (image_start, image_end) = if original.image_start.is_null() || len == 0 {
            (original.image_start, original.image_end)
        } else {
            let start = bytes.as_mut_ptr().cast::<u8>();
            // SAFETY: one past the last byte, inside the allocation.
            (start.cast(), unsafe { start.add(len) }.cast())
        };
        let source_start = if original.image_start.is_null() {
            0
        } else {
            original.image_start as usize + skip
        };
        ImageCopy {
            original: image as usize,
            source: (source_start, len),
            _bytes: bytes,
            _names: names.into_iter().flatten().collect(),
            _entries: copied,
            image: Box::new(DeviceImage {
                image_start,
                image_end,
                entries_begin,
                entries_end,
            }),
        }
    }

    /// The address of the image this is a copy of.
    pub(crate) fn original(&self) -> usize {
        self.original
    }

    /// The bare image in the registered binary: its address and length.
    pub(crate) fn source(&self) -> (usize, usize) {
        self.source
    }

    /// The copied entries (32-byte form, `requires` entries taken out), in
    /// the order plugins see them.
    pub(crate) fn entries(&self) -> &[OffloadEntry] {
        &self._entries
    }

    /// The `__tgt_device_image` to hand to plugins (they only read it).
    pub(crate) fn device_image(&self) -> *mut DeviceImage {
        &*self.image as *const DeviceImage as *mut DeviceImage
    }
}

impl std::fmt::Debug for ImageCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImageCopy")
            .field("original", &format_args!("{:#x}", self.original))
            .field("copy", &self.device_image())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::super::registration::entries;
    use super::*;

    #[test]
    fn the_copy_outlives_the_original_and_keeps_every_field() {
        let mut bytes = b"\x7fELF device image bytes".to_vec();
        let names = [
            CString::new("kernel").unwrap(),
            CString::new("global").unwrap(),
        ];
        let mut host = [
            OffloadEntry {
                addr: 0x1000 as *mut c_void,
                name: names[0].as_ptr() as *mut c_char,
                size: 0,
                flags: 0,
                reserved: 0,
            },
            OffloadEntry {
                addr: 0x2000 as *mut c_void,
                name: names[1].as_ptr() as *mut c_char,
                size: 8,
                flags: 2,
                reserved: 0,
            },
        ];
        let range = bytes.as_mut_ptr_range();
        let entry_range = host.as_mut_ptr_range();
        let original = DeviceImage {
            image_start: range.start.cast(),
            image_end: range.end.cast(),
            entries_begin: entry_range.start,
            entries_end: entry_range.end,
        };
        // SAFETY: `original` and everything it points to is alive here.
        let copy = unsafe { ImageCopy::new(&original) };
        assert_eq!(copy.original(), &original as *const DeviceImage as usize);
        // The original goes away (as a dlclose'd library's data does).
        bytes.fill(0);
        drop(names);
        host = [host[0]; 2];
        let _ = host;

        // SAFETY: the copy owns everything it points to.
        let image = unsafe { &*copy.device_image() };
        assert_ne!(image.image_start, original.image_start);
        assert_eq!(image.image_start as usize % 8, 0, "aligned");
        let len = image.len().unwrap();
        // SAFETY: the copy's byte range.
        let copied = unsafe { std::slice::from_raw_parts(image.image_start.cast::<u8>(), len) };
        assert_eq!(copied, b"\x7fELF device image bytes");
        // SAFETY: the copy's entry range.
        let entries = unsafe { entries(image.entries_begin, image.entries_end) };
        let seen: Vec<_> = entries
            .iter()
            .map(|e| {
                // SAFETY: names point into the copy.
                let name = unsafe { CStr::from_ptr(e.name) }.to_str().unwrap();
                (e.addr as usize, name, e.size, e.flags)
            })
            .collect();
        assert_eq!(seen, [(0x1000, "kernel", 0, 0), (0x2000, "global", 8, 2)]);
    }

    #[test]
    fn a_clang_22_image_is_unwrapped_and_its_entries_become_32_byte_ones() {
        use omptarget::abi::{declare_target, OffloadEntryV2};
        let elf = b"\x7fELF device".to_vec();
        let mut blob = Vec::new();
        blob.extend_from_slice(&super::offload_binary::MAGIC);
        blob.extend_from_slice(&1u32.to_le_bytes());
        blob.extend_from_slice(&(144 + elf.len() as u64).to_le_bytes());
        blob.extend_from_slice(&32u64.to_le_bytes());
        blob.extend_from_slice(&40u64.to_le_bytes());
        blob.extend_from_slice(&[1, 0, 1, 0, 0, 0, 0, 0]);
        blob.extend_from_slice(&80u64.to_le_bytes());
        blob.extend_from_slice(&0u64.to_le_bytes());
        blob.extend_from_slice(&144u64.to_le_bytes());
        blob.extend_from_slice(&(elf.len() as u64).to_le_bytes());
        blob.resize(144, 0);
        blob.extend_from_slice(&elf);
        let (kernel, req) = (CString::new("kernel").unwrap(), CString::new("").unwrap());
        let entry = |address: usize, name: &CString, flags: i32, data: u64| OffloadEntryV2 {
            reserved: 0,
            version: 1,
            kind: 1,
            flags: flags as u32,
            address: address as *mut c_void,
            symbol_name: name.as_ptr() as *mut c_char,
            size: 0,
            data,
            aux_addr: std::ptr::null_mut(),
        };
        let mut host = [
            entry(0, &req, declare_target::REGISTER_REQUIRES, 1),
            entry(0x1000, &kernel, 0, 0),
        ];
        let range = blob.as_mut_ptr_range();
        let entry_range = host.as_mut_ptr_range();
        let original = DeviceImage {
            image_start: range.start.cast(),
            image_end: range.end.cast(),
            entries_begin: entry_range.start.cast(),
            entries_end: entry_range.end.cast(),
        };
        // SAFETY: `original` and everything it points to is alive here.
        let copy = unsafe { ImageCopy::new(&original) };
        // SAFETY: the copy owns everything it points to.
        let image = unsafe { &*copy.device_image() };
        // SAFETY: the copy's byte range.
        let bytes = unsafe {
            std::slice::from_raw_parts(image.image_start.cast::<u8>(), image.len().unwrap())
        };
        assert_eq!(bytes, &elf[..], "the bare ELF, not the blob");
        // SAFETY: the copy's entry range.
        let entries = unsafe { entries(image.entries_begin, image.entries_end) };
        assert_eq!(entries.len(), 1, "the requires entry is not a symbol");
        assert_eq!(entries[0].addr as usize, 0x1000);
        // SAFETY: names point into the copy.
        let name = unsafe { CStr::from_ptr(entries[0].name) };
        assert_eq!(name, kernel.as_c_str());
    }

    #[test]
    fn an_empty_image_stays_empty() {
        let original = DeviceImage {
            image_start: std::ptr::null_mut(),
            image_end: std::ptr::null_mut(),
            entries_begin: std::ptr::null_mut(),
            entries_end: std::ptr::null_mut(),
        };
        // SAFETY: null ranges are read as empty.
        let copy = unsafe { ImageCopy::new(&original) };
        // SAFETY: the copy's descriptor.
        let image = unsafe { &*copy.device_image() };
        assert!(image.image_start.is_null() && image.entries_begin.is_null());
    }
}

//! `Image`: a device object loaded on one device; `Kernel`: one of its
//! entries; `KernelArg`/`LaunchConfig`: how to call it.
use super::{DeviceBuffer, DeviceCopy};
use crate::device::images::KeepAlive;
use crate::image::OwnedImage;
use crate::launch::RegionLaunch;
use crate::{Device, Error, Result};
use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

/// An image loaded on a device. Dropping it unloads it (if the plugin can;
/// otherwise it stays loaded, with its storage, until shutdown).
pub struct Image<'rt> {
    device: &'rt Device,
    storage: Arc<OwnedImage>,
    /// (name, device address, size) per entry, in table order.
    entries: Vec<(String, usize, usize)>,
    /// Still to be unloaded.
    loaded: bool,
}

impl<'rt> Image<'rt> {
    /// Load the device shared object `elf` on `device`. `entry_names` are
    /// its kernels (and globals), in the order of its
    /// `omp_offloading_entries` section if it has one; the plugin must
    /// report the same names, else [`Error::EntryMismatch`].
    pub fn load(device: &'rt Device, elf: &[u8], entry_names: &[&str]) -> Result<Image<'rt>> {
        let storage = Arc::new(OwnedImage::new(elf, entry_names)?);
        let desc = storage.as_device_image();
        // SAFETY: `desc` points into `storage`, alive while we hold it.
        if !unsafe { device.is_valid_image(desc) }? {
            return Err(Error::InvalidImage {
                device: device.id(),
                plugin: device.plugin_name().to_owned(),
                reason: "is_valid_binary rejected it".into(),
            });
        }
        let keepalive: KeepAlive = storage.clone();
        // SAFETY: the device keeps `storage` alive as long as the image is
        // loaded (and until the plugin is closed).
        let loaded = unsafe { device.load_image_kept(desc, Some(keepalive)) }?;
        let image = Image {
            device,
            storage,
            entries: Vec::new(),
            loaded: true,
        };
        // From here on `image` unloads itself if checking fails.
        image.with_entries(loaded.entries)
    }

    /// [`Image::load`] from a file.
    pub fn load_file(
        device: &'rt Device,
        path: impl AsRef<Path>,
        entry_names: &[&str],
    ) -> Result<Image<'rt>> {
        let path = path.as_ref();
        let elf = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::load(device, &elf, entry_names)
    }

    /// Check the target table against our entry names and keep it.
    fn with_entries(mut self, table: Vec<crate::abi::OffloadEntry>) -> Result<Self> {
        let expected: Vec<String> = self.storage.entry_names().map(str::to_owned).collect();
        if table.len() != expected.len() {
            return Err(Error::EntryMismatch {
                device: self.device.id(),
                index: table.len().min(expected.len()),
                expected: format!("{} entries", expected.len()),
                found: format!("{} entries", table.len()),
            });
        }
        for (index, (entry, name)) in table.iter().zip(expected).enumerate() {
            if !entry.name.is_null() {
                // SAFETY: the plugin contract: a non-null name in a target
                // table is a host-readable C string.
                let found = unsafe { CStr::from_ptr(entry.name) }.to_string_lossy();
                if found != name {
                    return Err(Error::EntryMismatch {
                        device: self.device.id(),
                        index,
                        expected: name,
                        found: found.into_owned(),
                    });
                }
            }
            self.entries.push((name, entry.addr as usize, entry.size));
        }
        Ok(self)
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Result<Kernel<'_>> {
        let Some((name, addr, size)) = self.entries.iter().find(|(n, ..)| n == name) else {
            return Err(Error::KernelNotFound {
                name: name.to_owned(),
                available: self.entries.iter().map(|(n, ..)| n.clone()).collect(),
            });
        };
        if *size != 0 {
            return Err(Error::InvalidArgument(format!(
                "entry {name:?} is a global variable of {size} bytes, not a kernel"
            )));
        }
        if *addr == 0 {
            return Err(Error::InvalidArgument(format!(
                "the plugin gave entry {name:?} no device address"
            )));
        }
        Ok(Kernel {
            device: self.device,
            name,
            addr: *addr,
        })
    }

    /// The entry names, in table order.
    pub fn entry_names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, ..)| n.as_str())
    }

    /// The device it is loaded on.
    pub fn device(&self) -> &'rt Device {
        self.device
    }

    /// Unload now, reporting a failure (drop only logs it). `Ok(false)`:
    /// the plugin cannot unload; the image stays loaded until shutdown.
    pub fn unload(mut self) -> Result<bool> {
        self.unload_once()
    }

    fn unload_once(&mut self) -> Result<bool> {
        if !std::mem::replace(&mut self.loaded, false) {
            return Ok(true);
        }
        // SAFETY: loaded on this device by `load`; the device keeps its own
        // reference to the storage if the plugin cannot unload.
        unsafe { self.device.unload_image(self.storage.as_device_image()) }
    }
}

impl Drop for Image<'_> {
    fn drop(&mut self) {
        if let Err(err) = self.unload_once() {
            tracing::warn!(
                device = self.device.id(),
                "unloading a dropped Image failed: {err}"
            );
        }
    }
}

impl std::fmt::Debug for Image<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("device", &self.device.id())
            .field("entries", &self.entries)
            .finish()
    }
}

/// How to launch a kernel: a teams region with `teams` teams of at most
/// `threads` threads; 0 lets the plugin choose.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Number of teams to launch (0: the plugin chooses).
    pub teams: u32,
    /// Maximum number of threads per team (0: the plugin chooses).
    pub threads: u32,
}

/// A kernel of a loaded image.
#[derive(Debug, Clone, Copy)]
pub struct Kernel<'img> {
    device: &'img Device,
    name: &'img str,
    addr: usize,
}

impl Kernel<'_> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// Run the kernel as a teams region and wait for it to finish.
    ///
    /// # Safety
    /// The kernel is native code: `args` must match its parameters (each
    /// pointer-sized) and it must access only the buffers passed, within
    /// their bounds.
    pub unsafe fn launch(&self, args: &[KernelArg<'_>], config: LaunchConfig) -> Result<()> {
        let to_i32 = |v: u32, what: &str| {
            i32::try_from(v).map_err(|_| Error::InvalidArgument(format!("{what} {v} exceeds i32")))
        };
        let launch = RegionLaunch::Teams {
            num_teams: to_i32(config.teams, "teams")?,
            thread_limit: to_i32(config.threads, "threads")?,
            loop_tripcount: 0,
        };
        // SAFETY: per this function's contract.
        unsafe { self.run(args, launch) }
    }

    /// Run the kernel as a region without teams (one thread) and wait.
    ///
    /// # Safety
    /// As for [`Kernel::launch`].
    pub unsafe fn launch_single(&self, args: &[KernelArg<'_>]) -> Result<()> {
        // SAFETY: per this function's contract.
        unsafe { self.run(args, RegionLaunch::Single) }
    }

    unsafe fn run(&self, args: &[KernelArg<'_>], launch: RegionLaunch) -> Result<()> {
        for (i, arg) in args.iter().enumerate() {
            if let Some(device) = arg.device {
                if device != self.device.id() {
                    return Err(Error::InvalidArgument(format!(
                        "argument {i} of {} is a buffer on device {device}, the kernel runs on device {}",
                        self.name,
                        self.device.id()
                    )));
                }
            }
        }
        let mut values: Vec<*mut c_void> = args.iter().map(|a| a.value as *mut c_void).collect();
        let mut offsets = vec![0isize; values.len()];
        // SAFETY: `addr` is a kernel of an image loaded on this device (the
        // image outlives this borrow); the rest per the caller's contract.
        unsafe {
            self.device
                .run_region(self.addr as *mut c_void, &mut values, &mut offsets, launch)
        }
    }
}

/// One kernel argument: a device buffer (its address) or a scalar value in
/// a pointer-sized slot, as LLVM passes them. Borrows the buffer, so it
/// cannot be freed while the argument exists.
#[derive(Debug, Clone, Copy)]
pub struct KernelArg<'a> {
    value: usize,
    /// The device of a buffer argument.
    device: Option<usize>,
    _borrow: PhantomData<&'a ()>,
}

impl<'a> KernelArg<'a> {
    /// The address of `buffer`.
    pub fn buffer<T: DeviceCopy>(buffer: &'a DeviceBuffer<'_, T>) -> Self {
        KernelArg {
            value: buffer.device_ptr().addr(),
            device: Some(buffer.device().id()),
            _borrow: PhantomData,
        }
    }

    /// A scalar, passed by value in a pointer-sized slot.
    pub fn scalar(value: impl ScalarArg) -> KernelArg<'static> {
        KernelArg {
            value: value.to_slot(),
            device: None,
            _borrow: PhantomData,
        }
    }

    /// The pointer-sized value passed to the kernel.
    pub fn value(&self) -> usize {
        self.value
    }
}

impl<'a, T: DeviceCopy> From<&'a DeviceBuffer<'_, T>> for KernelArg<'a> {
    fn from(buffer: &'a DeviceBuffer<'_, T>) -> Self {
        KernelArg::buffer(buffer)
    }
}

/// A value that fits a pointer-sized kernel argument slot. Signed integers
/// are sign-extended, unsigned ones zero-extended; floats are passed as
/// their bit pattern in the low bytes (the kernel reads an integer
/// parameter and reinterprets it, as clang's outlined regions do).
pub trait ScalarArg: Copy {
    /// The value as the bits of one pointer-sized argument slot.
    fn to_slot(self) -> usize;
}

macro_rules! scalar_int {
    ($($t:ty => $via:ty),*) => { $(
        impl ScalarArg for $t {
            fn to_slot(self) -> usize { self as $via as usize }
        }
    )* };
}
scalar_int!(i8 => isize, i16 => isize, i32 => isize, i64 => isize, isize => isize,
            u8 => usize, u16 => usize, u32 => usize, u64 => usize, usize => usize);

impl ScalarArg for f32 {
    fn to_slot(self) -> usize {
        self.to_bits() as usize
    }
}

impl ScalarArg for f64 {
    fn to_slot(self) -> usize {
        self.to_bits() as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_fill_a_pointer_sized_slot() {
        assert_eq!(KernelArg::scalar(-1i32).value(), usize::MAX);
        assert_eq!(KernelArg::scalar(7u8).value(), 7);
        assert_eq!(KernelArg::scalar(1.5f32).value(), 1.5f32.to_bits() as usize);
        assert_eq!(KernelArg::scalar(2.0f64).value(), 2.0f64.to_bits() as usize);
        assert!(KernelArg::scalar(3u64).device.is_none());
    }
}

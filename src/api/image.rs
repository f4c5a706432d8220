//! `Image`: a device object loaded on one device, its kernels and globals.
use super::gate::Gate;
use super::kernel::Kernel;
use super::params::KernelSignature;
use super::DeviceCopy;
use crate::abi::device_entry;
use crate::device::images::KeepAlive;
use crate::image::{EntryKind, OwnedImage};
use crate::{Device, DevicePtr, Error, Result};
use std::ffi::{c_void, CStr};
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;

/// One entry of a loaded image.
#[derive(Debug)]
struct Entry {
    name: String,
    kind: EntryKind,
    /// The device address the plugin gave it.
    addr: usize,
    /// The plugin marked it read-only (`device_entry::READ_ONLY`).
    read_only: bool,
}

/// A device object (an x86_64 shared object for the host plugin, a cubin
/// for CUDA) loaded on one device, with the kernels and globals it was
/// loaded for. Dropping it unloads it (if the plugin can; otherwise it
/// stays loaded, with its storage, until shutdown).
pub struct Image<'rt> {
    device: &'rt Device,
    storage: Arc<OwnedImage>,
    entries: Vec<Entry>,
    /// Makes the host's accesses to the globals exclusive with launches
    /// of the kernels (see [`Global`]).
    gate: Gate,
    /// Still to be unloaded.
    loaded: bool,
}

impl<'rt> Image<'rt> {
    /// Load the device object `bytes` on `device`, for the entries named
    /// `entry_names`: its kernels (functions) and globals (variables). The
    /// object's symbol table says which is which, and each global's size.
    ///
    /// Every symbol the object references is bound here, before any of its
    /// code runs ([`Device::load_image_bind_now`]): an object that calls a
    /// function neither it, the libraries it links (its `NEEDED`), nor the
    /// program defines is refused, naming the function, and nothing of it
    /// stays loaded. Loaded lazily (as LLVM's host plugins load, and as
    /// clang's OpenMP images are still loaded here, through the OpenMP
    /// layer), it would load, and the first launch reaching the call would
    /// end the process (`symbol lookup error`, exit 127), which no `Result`
    /// can report. A plugin without this project's
    /// `__tgt_rtl_load_binary_flags` (LLVM's own) loads the object its own
    /// way, lazily for LLVM's host plugin.
    ///
    /// # Safety
    /// Loading runs the object's initialisers, and unloading it runs its
    /// finalisers: code no Rust type can check, in this process on the
    /// host plugin (as `dlopen` and `dlclose` run them; the reason
    /// `libloading::Library::new` is `unsafe` too). The caller vouches that
    /// * the object's initialisers (ELF constructors, `.init_array`, those
    ///   of the libraries it brings in) are sound to run now, on this
    ///   thread;
    /// * its finalisers (destructors, `.fini_array`, handlers it gave
    ///   `atexit`) are sound to run whenever the image is unloaded:
    ///   dropping the `Image` or [`Image::unload`] on whatever thread does
    ///   it, or the runtime's shutdown for an image the plugin kept, and
    ///   that nothing still uses the object's code or data then (a function
    ///   pointer or thread it handed out, say).
    ///
    /// What its kernels do at a launch is vouched for separately
    /// ([`Image::kernel`]). A GPU plugin's object runs no host code when it
    /// loads, but which code runs is the plugin's business, not this
    /// function's, so the contract is the same for every device.
    ///
    /// ```compile_fail
    /// # fn f(device: &omptarget::Device) {
    /// let _ = omptarget::Image::load(device, b"\x7fELF", &["k"]); // needs `unsafe`
    /// # }
    /// ```
    ///
    /// # Errors
    /// * [`Error::InvalidImage`]: not an ELF object, no symbol of that
    ///   name, or the plugin rejects the object;
    /// * [`Error::ImageLoadFailed`], with the plugin's or the loader's
    ///   reason: `undefined symbol: NAME` for a function or variable the
    ///   object references that the loader cannot find.
    pub unsafe fn load(
        device: &'rt Device,
        bytes: &[u8],
        entry_names: &[&str],
    ) -> Result<Image<'rt>> {
        let storage = Arc::new(OwnedImage::new(bytes, entry_names).map_err(|reason| {
            Error::InvalidImage {
                device: device.id(),
                plugin: device.plugin_name().to_owned(),
                reason,
            }
        })?);
        let desc = storage.as_device_image();
        // SAFETY: `desc` points into `storage`, alive while we hold it.
        if !unsafe { device.is_valid_image(desc) }? {
            return Err(Error::InvalidImage {
                device: device.id(),
                plugin: device.plugin_name().to_owned(),
                reason: format!(
                    "the plugin cannot run it (is_valid_binary said no){}",
                    device
                        .plugin()
                        .take_last_error()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
            });
        }
        // SAFETY: as above.
        if !unsafe { device.can_run_image(desc) } {
            return Err(Error::InvalidImage {
                device: device.id(),
                plugin: device.plugin_name().to_owned(),
                reason: "this device cannot run it (is_device_compatible said no), though its plugin can".into(),
            });
        }
        let keepalive: KeepAlive = storage.clone();
        // SAFETY: the device keeps `storage` alive as long as the image is
        // loaded (and until the plugin is closed).
        let loaded = unsafe { device.load_image_bind_now(desc, Some(keepalive)) }?;
        let image = Image {
            device,
            storage,
            entries: Vec::new(),
            gate: Gate::default(),
            loaded: true,
        };
        // From here on `image` unloads itself if checking fails.
        let image = image.with_entries(loaded.entries)?;
        // Owned by the handle: still so at shutdown means it was forgotten.
        image.device.set_image_handle(
            image.storage.as_device_image(),
            Some(image.entries.iter().map(|e| e.name.clone()).collect()),
        );
        Ok(image)
    }

    /// [`Image::load`] from a file.
    ///
    /// # Safety
    /// As [`Image::load`]: the object's initialisers run now, its
    /// finalisers when it is unloaded.
    ///
    /// ```compile_fail
    /// # fn f(device: &omptarget::Device) {
    /// let _ = omptarget::Image::load_file(device, "k.so", &["k"]); // needs `unsafe`
    /// # }
    /// ```
    pub unsafe fn load_file(
        device: &'rt Device,
        path: impl AsRef<Path>,
        entry_names: &[&str],
    ) -> Result<Image<'rt>> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        // SAFETY: this function's contract is `load`'s.
        unsafe { Self::load(device, &bytes, entry_names) }
    }

    /// Check the target table against our entries and keep it.
    fn with_entries(mut self, table: Vec<crate::abi::OffloadEntry>) -> Result<Self> {
        let expected: Vec<(String, EntryKind)> = self
            .storage
            .entries()
            .map(|(name, kind)| (name.to_owned(), kind))
            .collect();
        if table.len() != expected.len() {
            return Err(Error::EntryMismatch {
                device: self.device.id(),
                index: table.len().min(expected.len()),
                expected: format!("{} entries", expected.len()),
                found: format!("{} entries", table.len()),
            });
        }
        for (index, (entry, (name, kind))) in table.iter().zip(expected).enumerate() {
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
            if entry.addr.is_null() {
                return Err(Error::InvalidImage {
                    device: self.device.id(),
                    plugin: self.device.plugin_name().to_owned(),
                    reason: format!("the plugin gave entry {name:?} no device address"),
                });
            }
            self.entries.push(Entry {
                name,
                kind,
                addr: entry.addr as usize,
                read_only: entry.flags & device_entry::READ_ONLY != 0,
            });
        }
        Ok(self)
    }

    fn entry(&self, name: &str) -> Result<&Entry> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| Error::KernelNotFound {
                name: name.to_owned(),
                available: self.entries.iter().map(|e| e.name.clone()).collect(),
            })
    }

    /// The kernel named `name`, with the C signature `S` (a tuple of
    /// [`crate::KernelParam`]s, e.g. `(f32, Slice<f32>, SliceMut<f32>)`
    /// for `void k(float a, const float *x, size_t nx, float *y, size_t ny)`).
    ///
    /// # Safety
    /// The object code cannot be checked against a Rust type, so the caller
    /// vouches, once, for what the kernel does with any arguments a launch
    /// may pass:
    /// * the function's parameters are exactly `S`, in order (a
    ///   [`crate::Slice`] or [`crate::SliceMut`] is two: the pointer, then
    ///   its length in values as a `size_t`);
    /// * through a slice parameter it reads (and, for [`crate::SliceMut`],
    ///   writes) only the values below the length passed with it, whatever
    ///   the other arguments are: that is what makes [`Kernel::launch`]
    ///   safe. What it does through a bare [`crate::Ptr`] or
    ///   [`crate::PtrMut`] is vouched for at each launch instead
    ///   ([`Kernel::launch_unchecked`]);
    /// * it writes only through [`crate::SliceMut`] and [`crate::PtrMut`]
    ///   parameters and to globals of its own image;
    /// * it is memory-safe whatever its image's globals hold (any values
    ///   the host or other kernels wrote there), and data-race-free when it
    ///   runs at the same time as itself and the other kernels of its image
    ///   (blocking launches on several threads, or queues running side by
    ///   side).
    ///
    /// The host's own accesses to the globals need no promise: the image
    /// makes [`Global::read`] and [`Global::write`] exclusive with its
    /// kernels' launches (see [`Global`]).
    ///
    /// # Errors
    /// [`Error::KernelNotFound`]; [`Error::InvalidArgument`] when `name` is
    /// a global variable, not a function.
    pub unsafe fn kernel<S: KernelSignature>(&self, name: &str) -> Result<Kernel<'_, S>> {
        let entry = self.entry(name)?;
        match entry.kind {
            EntryKind::Function => Ok(Kernel {
                device: self.device,
                name: &entry.name,
                addr: entry.addr,
                gate: &self.gate,
                _signature: PhantomData,
            }),
            EntryKind::Global { size } => Err(Error::InvalidArgument(format!(
                "{name:?} is a global variable of {size} bytes, not a kernel (use Image::global)"
            ))),
        }
    }

    /// The global variable named `name`, as a `T`.
    ///
    /// # Errors
    /// [`Error::KernelNotFound`] (no such entry); [`Error::InvalidArgument`]
    /// when `name` is a function, or its size is not `size_of::<T>()`.
    pub fn global<T: DeviceCopy>(&self, name: &str) -> Result<Global<'_, T>> {
        let entry = self.entry(name)?;
        match entry.kind {
            EntryKind::Global { size } if size == std::mem::size_of::<T>() => Ok(Global {
                device: self.device,
                name: &entry.name,
                ptr: DevicePtr::from_raw(entry.addr as *mut c_void),
                read_only: entry.read_only,
                gate: &self.gate,
                _value: PhantomData,
            }),
            EntryKind::Global { size } => Err(Error::InvalidArgument(format!(
                "global {name:?} has {size} bytes; a {} has {}",
                std::any::type_name::<T>(),
                std::mem::size_of::<T>()
            ))),
            EntryKind::Function => Err(Error::InvalidArgument(format!(
                "{name:?} is a function, not a global variable (use Image::kernel)"
            ))),
        }
    }

    /// The entry names, in the order they were given.
    pub fn entry_names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.name.as_str())
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
        // The handle lets go, whether or not the plugin can unload it.
        self.device
            .set_image_handle(self.storage.as_device_image(), None);
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

/// A global variable of a loaded image, typed as `T`. Borrows the image.
///
/// A `const` global (in the object's read-only memory) can be read but
/// not written: the host plugin marks it read-only at load and
/// [`Global::write`] is refused with [`Error::ReadOnlyGlobal`].
///
/// Reading and writing a global from the host is exclusive with the
/// launches of its image's kernels, which may touch it whenever they run:
///
/// * reads and writes of the image's globals, through any handles on any
///   threads, are serialised;
/// * one waits for the blocking launches ([`Kernel::launch`]) of the
///   image's kernels running on other threads, and launches that come
///   after it wait for it;
/// * one is refused with [`Error::LaunchesPending`] while launches of the
///   image's kernels are queued in a [`crate::scope`] and their queue has
///   not been synchronised since ([`crate::ScopedQueue::synchronize`], or
///   the end of the scope, which synchronises every queue of the scope and
///   attached [`crate::Queue`]s): such a launch may run at any time until
///   then, and waiting for it could wait for the caller itself.
///
/// ```
/// # fn main() -> anyhow::Result<()> {
/// # use omptarget::{Config, Error, Image, Kernel, LaunchConfig, Runtime};
/// # let runtime = Runtime::new(Config::default())?;
/// # let device = runtime.device(0)?;
/// # let dir = tempfile::tempdir()?;
/// # let so = dir.path().join("typed.so");
/// # let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernels/typed.c");
/// # let built = std::process::Command::new("cc")
/// #     .args(["-shared", "-fPIC", "-O2"]).arg(&source).arg("-o").arg(&so).status()?;
/// # assert!(built.success());
/// // int32_t counter = 41; void bump(int32_t by) { counter += by; }
/// // SAFETY: the test kernels' object has no initialiser or finaliser.
/// let image = unsafe { Image::load_file(device, &so, &["bump", "counter"]) }?;
/// // SAFETY: that is its signature; it touches only `counter`, whatever it holds.
/// let bump: Kernel<(i32,)> = unsafe { image.kernel("bump")? };
/// let counter = image.global::<i32>("counter")?;
/// counter.write(&1)?;
/// omptarget::scope(|s| {
///     let queue = s.queue(device)?;
///     queue.launch(&bump, LaunchConfig::single(), (2,))?;
///     // The launch may still run: the global is out of reach ...
///     assert!(matches!(counter.read(), Err(Error::LaunchesPending { .. })));
///     queue.synchronize()?;
///     assert_eq!(counter.read()?, 3); // ... until its queue is synchronised.
///     Ok(())
/// })?;
/// # Ok(()) }
/// ```
pub struct Global<'img, T: DeviceCopy> {
    device: &'img Device,
    name: &'img str,
    ptr: DevicePtr,
    /// Marked read-only by the plugin: [`Global::write`] is refused.
    read_only: bool,
    gate: &'img Gate,
    _value: PhantomData<T>,
}

impl<T: DeviceCopy> Global<'_, T> {
    /// The variable's name.
    pub fn name(&self) -> &str {
        self.name
    }

    /// Whether the plugin marked it read-only ([`Global::write`] is
    /// refused).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Its device address (to pass to code that takes addresses).
    pub fn device_ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Read its current value from the device, after the blocking
    /// launches of the image's kernels running now (see [`Global`]).
    ///
    /// # Errors
    /// [`Error::LaunchesPending`] while launches of the image's kernels
    /// are queued and not synchronised; the plugin's failure.
    pub fn read(&self) -> Result<T> {
        let _access = self.gate.access(self.name)?;
        let mut value = std::mem::MaybeUninit::<T>::uninit();
        // SAFETY: `value` is writable for size_of::<T>() bytes and any bytes
        // are a valid `T` (DeviceCopy); the global is that large (checked
        // by `Image::global`) and lives while the image is loaded.
        unsafe {
            self.device.retrieve(
                value.as_mut_ptr().cast(),
                self.ptr,
                std::mem::size_of::<T>(),
            )?;
            Ok(value.assume_init())
        }
    }

    /// Write `value` to the device, after the blocking launches of the
    /// image's kernels running now (see [`Global`]).
    ///
    /// # Errors
    /// [`Error::ReadOnlyGlobal`] for a global the plugin marked read-only
    /// when it loaded the image (the host plugin marks a `const` global:
    /// it lies in the image's read-only memory, where the copy would end
    /// the process with SIGSEGV); nothing is written. A plugin that cannot
    /// tell marks none: CUDA's `__constant__` memory is written from the
    /// host like any global (`cuMemcpyHtoD`); LLVM's own host plugin
    /// marks none, and its copy into a `const` global faults, as it does
    /// under LLVM's runtime (docs/rust-api.md). Else as [`Global::read`].
    pub fn write(&self, value: &T) -> Result<()> {
        if self.read_only {
            return Err(Error::ReadOnlyGlobal {
                device: self.device.id(),
                global: self.name.to_owned(),
            });
        }
        let _access = self.gate.access(self.name)?;
        // SAFETY: `value` is readable for size_of::<T>() bytes; the global
        // is that large and lives while the image is loaded.
        unsafe {
            self.device.submit(
                self.ptr,
                (value as *const T).cast(),
                std::mem::size_of::<T>(),
            )
        }
    }
}

impl<T: DeviceCopy> std::fmt::Debug for Global<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Global")
            .field("name", &self.name)
            .field("device", &self.device.id())
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

//! The trait a plugin backend implements, and the checked values it receives.

use crate::error::Result;
use omptarget_abi::{AllocKind, DeviceImage, OffloadEntry, TargetTable};
use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;

/// A device index already checked to be in `0..number_of_devices`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId(usize);

impl DeviceId {
    /// Only the entry layer creates ids, after the range check.
    pub(crate) fn new(index: usize) -> Self {
        Self(index)
    }

    /// The device's index.
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How a team region was requested (`run_target_team_region`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TeamConfig {
    /// Teams asked for (`num_teams` clause); 0 lets the plugin choose.
    pub num_teams: i32,
    /// Threads per team asked for (`thread_limit` clause); 0: the plugin's choice.
    pub thread_limit: i32,
    /// The loop's trip count pushed before the launch; 0 if unknown.
    pub loop_tripcount: u64,
}

/// One device property, as [`Backend::device_info`] gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceInfoValue {
    /// A text (UTF-8); an empty one is reported as not known.
    Text(String),
    /// A number.
    Number(u64),
}

/// Why the plugin state is being created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitCause {
    /// `__tgt_rtl_init_plugin` was called.
    Explicit,
    /// Another entry came first (LLVM 14's runtime never calls `init_plugin`).
    Lazy,
}

/// How `load_binary` loads an image: `__tgt_rtl_load_binary` passes the
/// default (as LLVM's runtime asks: every flag off),
/// `__tgt_rtl_load_binary_flags` its flags
/// ([`omptarget_abi::plugin::load_flags`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Bind every symbol the image references now, and refuse the image
    /// (naming the symbol) when one cannot be bound
    /// ([`load_flags::BIND_NOW`](omptarget_abi::plugin::load_flags::BIND_NOW)).
    /// Off, a backend loads as LLVM's plugin for its device does (the host
    /// one binds functions at their first call).
    pub bind_now: bool,
}

impl LoadOptions {
    /// The options `flags` asks for; a flag this kit does not know is an
    /// error naming it, so the caller never gets a weaker load than asked.
    pub fn from_flags(flags: u32) -> Result<Self> {
        use omptarget_abi::plugin::load_flags;
        let unknown = flags & !load_flags::ALL;
        if unknown != 0 {
            return Err(crate::error::PluginError::InvalidArgument(format!(
                "unknown load flags {unknown:#x} (this plugin knows {:#x})",
                load_flags::ALL
            )));
        }
        Ok(Self {
            bind_now: flags & load_flags::BIND_NOW != 0,
        })
    }
}

/// A device image as passed to `is_valid_binary` / `load_binary`, with its
/// byte range and host entry table already checked for null and ordering.
#[derive(Clone, Copy)]
pub struct ImageRef<'a> {
    /// The caller's descriptor; its address identifies the image for
    /// `unload_binary`.
    pub desc: NonNull<DeviceImage>,
    /// `image_start..image_end`.
    pub bytes: &'a [u8],
    /// `entries_begin..entries_end`: the host entry table.
    pub entries: &'a [OffloadEntry],
}

impl fmt::Debug for ImageRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImageRef")
            .field("desc", &self.desc)
            .field("bytes", &self.bytes.len())
            .field("entries", &self.entries.len())
            .finish()
    }
}

/// A plugin backend: the device-specific half of a plugin.
///
/// The entry layer ([`crate::entry_bodies`]) has already checked every argument
/// when a method runs: device ids are in range, devices passed to anything
/// but `init_device` are initialised, sizes are non-negative, pointers the
/// ABI requires are non-null. Methods take `&self` because the runtime may
/// call entries from several threads at once (kernels on different devices
/// run concurrently); a backend synchronises its own state. `init` and
/// `deinit` run under the plugin's write lock, so no other entry runs then.
pub trait Backend: Send + Sync + Sized + 'static {
    /// Short name used in messages (`x86_64`, `test` ...).
    const NAME: &'static str;

    /// The backend's queue: what its operations run on (a CUDA stream, an
    /// MPI batch of copies back, or nothing for a backend whose operations
    /// are done when they return). The kit keeps one in the `queue` field
    /// of each `__tgt_async_info` the caller passes ([`AsyncQueue`]).
    type Queue: AsyncQueue;

    /// Create the plugin state (`__tgt_rtl_init_plugin`, or lazily).
    fn init(cause: InitCause) -> Result<Self>;

    /// Release everything the plugin holds (`__tgt_rtl_deinit_plugin`),
    /// including devices, images and memory the runtime did not release.
    fn deinit(self) -> Result<()>;

    /// Number of devices; asked once, right after `init`.
    fn number_of_devices(&self) -> usize;

    /// What `__tgt_rtl_number_of_devices` reports (clamped to `i32::MAX`);
    /// by default [`Backend::number_of_devices`]. Only a test backend
    /// claims more devices than it serves, to exercise a runtime's limits
    /// without allocating for them: entries on the devices it does not
    /// serve fail as out of range.
    fn reported_device_count(&self) -> usize {
        self.number_of_devices()
    }

    /// Whether this backend can run `image` (it must not keep it).
    fn is_valid_binary(&self, image: &ImageRef<'_>) -> bool;

    /// Whether `device`, which need not be initialised, can run `image`,
    /// which [`Backend::is_valid_binary`] accepted
    /// (`__tgt_rtl_is_device_compatible`). Every device can, unless the
    /// backend's devices differ (remote devices served by different
    /// plugins): the runtime then registers the image only where it runs.
    fn is_device_compatible(&self, device: DeviceId, image: &ImageRef<'_>) -> Result<bool> {
        let _ = (device, image);
        Ok(true)
    }

    /// Set up a device.
    fn init_device(&self, device: DeviceId) -> Result<()>;

    /// Release a device: unload its images, free what is left of its memory.
    fn deinit_device(&self, device: DeviceId) -> Result<()>;

    /// Load `image` on `device` as `options` asks and return its target
    /// table, which the backend owns and keeps valid until the image is
    /// unloaded. A failed load leaves nothing loaded.
    fn load_binary(
        &self,
        device: DeviceId,
        image: &ImageRef<'_>,
        options: LoadOptions,
    ) -> Result<NonNull<TargetTable>>;

    /// Unload an image `load_binary` loaded on `device` (identified by the
    /// descriptor's address).
    fn unload_binary(&self, device: DeviceId, image: NonNull<DeviceImage>) -> Result<()>;

    /// Allocate `size` bytes of device memory of `kind`.
    fn data_alloc(
        &self,
        device: DeviceId,
        size: usize,
        host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<NonNull<c_void>>;

    /// Free memory `data_alloc` returned for `device`.
    fn data_delete(&self, device: DeviceId, tgt_ptr: NonNull<c_void>) -> Result<()>;

    /// Free the blocks of `ptrs` (`__tgt_rtl_data_delete_batch`), each as
    /// [`Backend::data_delete`] would: set each slot freed to null, leave
    /// the others as they were, and say why some were not freed. The
    /// default calls `data_delete` per block
    /// ([`crate::error::delete_each`]); a backend overrides it to take its
    /// locks once.
    fn data_delete_batch(&self, device: DeviceId, ptrs: &mut [*mut c_void]) -> Result<()> {
        crate::error::delete_each(ptrs, |ptr| self.data_delete(device, ptr))
    }

    // The operations. Each runs on a queue of the backend's own type
    // (`Self::Queue`), once per backend: the kit's blocking entries
    // (`__tgt_rtl_data_submit` ...) give it a local queue made by
    // `create_queue` and synchronise that before returning; the `_async`
    // entries give it the queue their `__tgt_async_info` holds, made on
    // first use and kept there until `__tgt_rtl_synchronize` hands it to
    // `synchronize` (see `entry_bodies`' queue module). A backend that runs
    // an operation at once simply leaves nothing on the queue.

    /// Make a queue for operations of `device`.
    fn create_queue(&self, device: DeviceId) -> Result<Self::Queue>;

    /// Wait for everything on `queue` and release it (`__tgt_rtl_synchronize`
    /// on a queue the caller holds, and the end of every blocking entry).
    /// `device` is the one the synchronising call names.
    fn synchronize(&self, device: DeviceId, queue: Self::Queue) -> Result<()>;

    /// Whether nothing on `queue` is left to wait for (by default: no). An
    /// `_async` entry whose queue is done synchronises it at once and
    /// leaves the caller's `__tgt_async_info` empty, so the caller has no
    /// queue to synchronise (LLVM's runtime skips `__tgt_rtl_synchronize`
    /// for an empty one), as a plugin that runs synchronously answers.
    fn is_done(&self, _queue: &Self::Queue) -> bool {
        false
    }

    /// Wait for everything queued on `device`, whatever queue holds it
    /// (`__tgt_rtl_synchronize` with a null `__tgt_async_info`); by default
    /// nothing to wait for.
    fn synchronize_device(&self, _device: DeviceId) -> Result<()> {
        Ok(())
    }

    /// Copy `size` bytes host -> device, on `queue`.
    ///
    /// # Safety
    /// `host_ptr` is readable and `tgt_ptr` writable for `size` bytes until
    /// `queue` is synchronised.
    unsafe fn data_submit(
        &self,
        device: DeviceId,
        tgt_ptr: NonNull<c_void>,
        host_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut Self::Queue,
    ) -> Result<()>;

    /// Copy `size` bytes device -> host, on `queue`.
    ///
    /// # Safety
    /// `tgt_ptr` is readable and `host_ptr` writable for `size` bytes until
    /// `queue` is synchronised.
    unsafe fn data_retrieve(
        &self,
        device: DeviceId,
        host_ptr: NonNull<c_void>,
        tgt_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut Self::Queue,
    ) -> Result<()>;

    /// Whether `data_exchange` can copy from `src` to `dst` directly.
    fn is_data_exchangable(&self, _src: DeviceId, _dst: DeviceId) -> bool {
        false
    }

    /// Copy `size` bytes between two devices, on `queue` (a queue of `src`).
    ///
    /// # Safety
    /// `src_ptr` is readable on `src` and `dst_ptr` writable on `dst` for
    /// `size` bytes until `queue` is synchronised.
    unsafe fn data_exchange(
        &self,
        _src: DeviceId,
        _src_ptr: NonNull<c_void>,
        _dst: DeviceId,
        _dst_ptr: NonNull<c_void>,
        _size: usize,
        _queue: &mut Self::Queue,
    ) -> Result<()> {
        Err(crate::PluginError::Unsupported("data_exchange"))
    }

    /// Run the kernel at `entry` with pointer-sized `args` (already
    /// `args[i] + offsets[i]`), on `queue`; `teams` is `None` for a plain
    /// target region. `types` is `None` for LLVM's launch entries (every
    /// argument pointer-sized) and the kernel's C parameter types for
    /// `__tgt_rtl_run_typed_region` (one per argument, each value in the
    /// low bytes of its slot); a backend that passes every argument as a
    /// pointer-sized slot refuses other types ([`pointer_args_only`]).
    ///
    /// # Safety
    /// `entry` comes from a target table this backend returned for
    /// `device`, `args` are what that kernel expects (of `types`, when
    /// given), and every device address among them stays valid until
    /// `queue` is synchronised.
    unsafe fn run_region(
        &self,
        device: DeviceId,
        entry: NonNull<c_void>,
        args: &[*mut c_void],
        types: Option<&[omptarget_abi::plugin::KernelArgType]>,
        teams: Option<TeamConfig>,
        queue: &mut Self::Queue,
    ) -> Result<()>;

    /// `__tgt_rtl_init_requires`: the requirement flags the backend accepts.
    fn init_requires(&self, flags: i64) -> i64 {
        flags
    }

    /// Print a description of `device` to stdout.
    fn print_device_info(&self, device: DeviceId);

    /// Property `key` of `device` (`__tgt_rtl_get_device_info`): `None`
    /// when the backend does not know it, the default for every key. The
    /// entry layer checks the arguments, encodes the value (a
    /// [`DeviceInfoValue::Number`] for the number keys, a
    /// [`DeviceInfoValue::Text`] for [`DeviceInfoKey::Name`]; a value of
    /// the other shape is refused as the backend's error) and answers
    /// unknown keys itself. `device` is in range and may not be
    /// initialised; an error is for a value the backend should know but
    /// could not read.
    ///
    /// A backend that answers [`DeviceInfoKey::Location`] says its devices
    /// are outside this process: the runtime then offers them every image
    /// an earlier plugin took as well (a remote server loads the local
    /// plugins' images into its own), so only a backend whose devices run
    /// other plugins' images should answer it.
    ///
    /// [`DeviceInfoKey::Name`]: omptarget_abi::plugin::DeviceInfoKey::Name
    /// [`DeviceInfoKey::Location`]: omptarget_abi::plugin::DeviceInfoKey::Location
    fn device_info(
        &self,
        _device: DeviceId,
        _key: omptarget_abi::plugin::DeviceInfoKey,
    ) -> Result<Option<DeviceInfoValue>> {
        Ok(None)
    }

    /// Observe every entry call (for call recording); runs before the entry
    /// does its work, except `data_alloc`, which is observed with its
    /// result. It is an associated function because entries may run with no
    /// plugin state (before init, after deinit).
    fn on_entry(_call: &EntryCall) {}

    /// Called by the `.fini_array` safety net when the library is unloaded
    /// or the process exits. It must not take locks another thread may hold
    /// or touch the plugin state.
    fn on_unload() {}

    /// Lock every lock that a kernel launch (`run_region`) or an entry's
    /// logging takes, and return the guards; they are held across a
    /// `fork()` so the child never inherits one held by a thread it does
    /// not have ([`crate::fork`]). Lock them in the backend's usual order.
    fn lock_for_fork(&self) -> crate::fork_locks::ForkLocks<'_> {
        Vec::new()
    }
}

/// How a backend's queue sits in a `__tgt_async_info`'s `queue` field
/// between two entries: as itself when it is a handle (a CUDA stream, as
/// LLVM's plugin keeps it, so nothing is allocated), or boxed.
pub trait AsyncQueue: Sized {
    /// The queue as the field's value; never null.
    fn into_raw(self) -> *mut c_void;

    /// The queue back from the field.
    ///
    /// # Safety
    /// `raw` came from [`AsyncQueue::into_raw`] of this type, and is taken
    /// back once.
    unsafe fn from_raw(raw: *mut c_void) -> Self;
}

/// A boxed queue: the box's address.
impl<T> AsyncQueue for Box<T> {
    fn into_raw(self) -> *mut c_void {
        Box::into_raw(self).cast()
    }

    unsafe fn from_raw(raw: *mut c_void) -> Self {
        // SAFETY: per this function's contract, a box's address.
        unsafe { Box::from_raw(raw.cast()) }
    }
}

/// No queue (a backend whose operations are done when they return): a
/// non-null placeholder, which holds nothing.
impl AsyncQueue for () {
    fn into_raw(self) -> *mut c_void {
        NonNull::<c_void>::dangling().as_ptr()
    }

    unsafe fn from_raw(_raw: *mut c_void) -> Self {}
}

/// For a backend that passes every kernel argument as a pointer-sized
/// slot ([`Backend::run_region`]): `Ok` when `types` is `None` or all
/// [`KernelArgType::Pointer`](omptarget_abi::plugin::KernelArgType), else
/// the refusal, rather than pass an argument wrong.
pub fn pointer_args_only(types: Option<&[omptarget_abi::plugin::KernelArgType]>) -> Result<()> {
    use omptarget_abi::plugin::KernelArgType;
    match types
        .unwrap_or_default()
        .iter()
        .find(|t| **t != KernelArgType::Pointer)
    {
        None => Ok(()),
        Some(other) => Err(crate::PluginError::InvalidArgument(format!(
            "this plugin passes every kernel argument as a pointer-sized slot and cannot pass a {other:?}"
        ))),
    }
}

/// One call of a C entry, as seen by [`Backend::on_entry`]. Its `Display`
/// form is the entry name without `__tgt_rtl_`, then its key arguments
/// (pointers as `0x…`, a null result as `null`), e.g. `data_alloc 0 64 3 0x5612a0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryCall {
    /// `__tgt_rtl_init_plugin`.
    InitPlugin,
    /// `__tgt_rtl_deinit_plugin`.
    DeinitPlugin,
    /// `__tgt_rtl_number_of_devices`.
    NumberOfDevices,
    /// `__tgt_rtl_is_valid_binary`.
    IsValidBinary,
    /// `__tgt_rtl_is_device_compatible`.
    IsDeviceCompatible {
        /// The plugin's own device number, as passed.
        device: i32,
    },
    /// `__tgt_rtl_init_requires`.
    InitRequires {
        /// The program's `requires` flags.
        flags: i64,
    },
    /// `__tgt_rtl_init_device`.
    InitDevice {
        /// The plugin's own device number, as passed.
        device: i32,
    },
    /// `__tgt_rtl_deinit_device`.
    DeinitDevice {
        /// The plugin's own device number, as passed.
        device: i32,
    },
    /// `__tgt_rtl_load_binary` (or `__tgt_rtl_load_binary_flags`, logged
    /// the same).
    LoadBinary {
        /// The plugin's own device number, as passed.
        device: i32,
    },
    /// `__tgt_rtl_unload_binary`.
    UnloadBinary {
        /// The plugin's own device number, as passed.
        device: i32,
    },
    /// `__tgt_rtl_data_alloc`.
    DataAlloc {
        /// The plugin's own device number, as passed.
        device: i32,
        /// Bytes, as passed.
        size: i64,
        /// The allocation kind (`TARGET_ALLOC_*`), as passed.
        kind: i32,
        /// What the entry returned (null on failure).
        result: *mut c_void,
    },
    /// `__tgt_rtl_data_delete`, and each block of a
    /// `__tgt_rtl_data_delete_batch` (one per block, before the batch
    /// runs), so a log of deletes reads the same either way.
    DataDelete {
        /// The plugin's own device number, as passed.
        device: i32,
        /// The device pointer to free.
        ptr: *mut c_void,
    },
    /// `__tgt_rtl_data_submit` (or its `_async` variant).
    DataSubmit {
        /// The plugin's own device number, as passed.
        device: i32,
        /// Bytes, as passed.
        size: i64,
        /// The call came through the `_async` entry.
        is_async: bool,
    },
    /// `__tgt_rtl_data_retrieve` (or its `_async` variant).
    DataRetrieve {
        /// The plugin's own device number, as passed.
        device: i32,
        /// Bytes, as passed.
        size: i64,
        /// The call came through the `_async` entry.
        is_async: bool,
    },
    /// `__tgt_rtl_is_data_exchangable`.
    IsDataExchangable {
        /// The source device number.
        src: i32,
        /// The destination device number.
        dst: i32,
    },
    /// `__tgt_rtl_data_exchange` (or its `_async` variant).
    DataExchange {
        /// The source device number.
        src: i32,
        /// The destination device number.
        dst: i32,
        /// Bytes, as passed.
        size: i64,
        /// The call came through the `_async` entry.
        is_async: bool,
    },
    /// `__tgt_rtl_run_target_region` (or its `_async` variant).
    RunTargetRegion {
        /// The plugin's own device number, as passed.
        device: i32,
        /// The call came through the `_async` entry.
        is_async: bool,
    },
    /// `__tgt_rtl_run_target_team_region` (or its `_async` variant).
    RunTargetTeamRegion {
        /// The plugin's own device number, as passed.
        device: i32,
        /// The call came through the `_async` entry.
        is_async: bool,
    },
    /// `__tgt_rtl_synchronize`.
    Synchronize {
        /// The plugin's own device number, as passed.
        device: i32,
    },
    /// `__tgt_rtl_set_info_flag`.
    SetInfoFlag {
        /// The `LIBOMPTARGET_INFO` bits.
        flags: u32,
    },
    /// `__tgt_rtl_print_device_info`.
    PrintDeviceInfo {
        /// The plugin's own device number, as passed.
        device: i32,
    },
    /// `__tgt_rtl_register_destruction_cb`.
    RegisterDestructionCb,
    /// `__tgt_rtl_get_device_info`.
    GetDeviceInfo {
        /// The plugin's own device number, as passed.
        device: i32,
        /// The property's key code, as passed.
        key: i32,
    },
}

struct Ptr(*mut c_void);

impl fmt::Display for Ptr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_null() {
            f.write_str("null")
        } else {
            write!(f, "{:#x}", self.0 as usize)
        }
    }
}

fn suffix(is_async: bool) -> &'static str {
    if is_async {
        "_async"
    } else {
        ""
    }
}

impl fmt::Display for EntryCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use EntryCall::*;
        match *self {
            InitPlugin => f.write_str("init_plugin"),
            DeinitPlugin => f.write_str("deinit_plugin"),
            NumberOfDevices => f.write_str("number_of_devices"),
            IsValidBinary => f.write_str("is_valid_binary"),
            IsDeviceCompatible { device } => write!(f, "is_device_compatible {device}"),
            InitRequires { flags } => write!(f, "init_requires {flags:#x}"),
            InitDevice { device } => write!(f, "init_device {device}"),
            DeinitDevice { device } => write!(f, "deinit_device {device}"),
            LoadBinary { device } => write!(f, "load_binary {device}"),
            UnloadBinary { device } => write!(f, "unload_binary {device}"),
            DataAlloc {
                device,
                size,
                kind,
                result,
            } => write!(f, "data_alloc {device} {size} {kind} {}", Ptr(result)),
            DataDelete { device, ptr } => write!(f, "data_delete {device} {}", Ptr(ptr)),
            DataSubmit {
                device,
                size,
                is_async,
            } => write!(f, "data_submit{} {device} {size}", suffix(is_async)),
            DataRetrieve {
                device,
                size,
                is_async,
            } => write!(f, "data_retrieve{} {device} {size}", suffix(is_async)),
            IsDataExchangable { src, dst } => write!(f, "is_data_exchangable {src} {dst}"),
            DataExchange {
                src,
                dst,
                size,
                is_async,
            } => write!(f, "data_exchange{} {src} {dst} {size}", suffix(is_async)),
            RunTargetRegion { device, is_async } => {
                write!(f, "run_target_region{} {device}", suffix(is_async))
            }
            RunTargetTeamRegion { device, is_async } => {
                write!(f, "run_target_team_region{} {device}", suffix(is_async))
            }
            Synchronize { device } => write!(f, "synchronize {device}"),
            SetInfoFlag { flags } => write!(f, "set_info_flag {flags:#x}"),
            PrintDeviceInfo { device } => write!(f, "print_device_info {device}"),
            RegisterDestructionCb => f.write_str("register_destruction_cb"),
            GetDeviceInfo { device, key } => write!(f, "get_device_info {device} {key}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{EntryCall, LoadOptions};
    use omptarget_abi::plugin::load_flags;

    #[test]
    fn load_flags_become_options_and_unknown_ones_are_refused() {
        assert_eq!(LoadOptions::from_flags(0).unwrap(), LoadOptions::default());
        assert!(
            LoadOptions::from_flags(load_flags::BIND_NOW)
                .unwrap()
                .bind_now
        );
        let err = LoadOptions::from_flags(load_flags::BIND_NOW | 0x8000_0000)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown load flags 0x80000000"), "{err}");
    }

    #[test]
    fn display_matches_the_log_contract() {
        let p = 0x1234usize as *mut _;
        let cases = [
            (EntryCall::InitPlugin, "init_plugin"),
            (EntryCall::InitDevice { device: 1 }, "init_device 1"),
            (
                EntryCall::DataAlloc {
                    device: 0,
                    size: 64,
                    kind: 3,
                    result: p,
                },
                "data_alloc 0 64 3 0x1234",
            ),
            (
                EntryCall::DataAlloc {
                    device: 1,
                    size: 8,
                    kind: 0,
                    result: std::ptr::null_mut(),
                },
                "data_alloc 1 8 0 null",
            ),
            (
                EntryCall::DataDelete { device: 0, ptr: p },
                "data_delete 0 0x1234",
            ),
            (
                EntryCall::DataSubmit {
                    device: 0,
                    size: 16,
                    is_async: false,
                },
                "data_submit 0 16",
            ),
            (
                EntryCall::DataRetrieve {
                    device: 2,
                    size: 16,
                    is_async: true,
                },
                "data_retrieve_async 2 16",
            ),
            (
                EntryCall::RunTargetTeamRegion {
                    device: 0,
                    is_async: false,
                },
                "run_target_team_region 0",
            ),
            (EntryCall::RegisterDestructionCb, "register_destruction_cb"),
            (
                EntryCall::GetDeviceInfo { device: 1, key: 3 },
                "get_device_info 1 3",
            ),
        ];
        for (call, text) in cases {
            assert_eq!(call.to_string(), text);
        }
    }
}

//! The one place a `__tgt_async_info` meets a backend's typed queue
//! ([`Backend::Queue`]), as LLVM's plugins' `AsyncInfoWrapperTy` is:
//!
//! * a blocking entry (`__tgt_rtl_data_submit` ...), or an `_async` one
//!   given a null `__tgt_async_info`, runs its operation on a local queue
//!   and synchronises it before returning;
//! * an `_async` entry runs it on the queue its `__tgt_async_info` holds,
//!   made on first use (in the `queue` field: [`crate::backend::AsyncQueue`]) and kept
//!   there for the caller's `__tgt_rtl_synchronize` ([`synchronize`]),
//!   unless the backend says it is done already ([`Backend::is_done`]):
//!   then it is synchronised at once and the field stays null.
//!
//! A non-null `queue` field is one this module set for the same backend
//! (the entries' contract: the caller passes back what the plugin set).

use super::*;
use crate::backend::AsyncQueue;
use crate::DeviceId;

/// Run `op` on the queue of an operation entry of `device`: the queue of
/// `async_info` (an `_async` entry's, non-null) or a local one, as the
/// module docs say. Returns the operation's failure first, then the
/// synchronisation's.
pub(super) fn on_queue<B: Backend>(
    backend: &B,
    device: DeviceId,
    async_info: Option<&mut AsyncInfo>,
    op: impl FnOnce(&mut B::Queue) -> Result<()>,
) -> Result<()> {
    let Some(info) = async_info else {
        let mut queue = backend.create_queue(device)?;
        let done = op(&mut queue);
        let synchronised = backend.synchronize(device, queue);
        return done.and(synchronised);
    };
    if info.queue.is_null() {
        // First use: the queue is this call's until it is stored, so a
        // failure or panic of `op` leaves the caller's field empty.
        let mut queue = backend.create_queue(device)?;
        let done = op(&mut queue);
        if backend.is_done(&queue) {
            return done.and(backend.synchronize(device, queue));
        }
        info.queue = queue.into_raw();
        return done;
    }
    // SAFETY: a non-null field holds a queue this module stored for this
    // backend (module docs), not synchronised since; it is taken out for
    // the call and put back unless done (a panic of `op` drops it: the
    // backend's release of what it holds is its deinitialisation's).
    let mut queue = unsafe { take::<B::Queue>(info) };
    let done = op(&mut queue);
    if backend.is_done(&queue) {
        return done.and(backend.synchronize(device, queue));
    }
    info.queue = queue.into_raw();
    done
}

/// The queue `info` holds, taken back out of it (the field cleared).
///
/// # Safety
/// `info.queue` is a non-null [`AsyncQueue::into_raw`] of `Q` this module
/// stored.
unsafe fn take<Q: AsyncQueue>(info: &mut AsyncInfo) -> Q {
    // SAFETY: per this function's contract.
    let queue = unsafe { Q::from_raw(info.queue) };
    info.queue = ptr::null_mut();
    queue
}

/// `__tgt_rtl_synchronize`'s work: wait for `async_info`'s queue and give
/// it back ([`Backend::synchronize`]); one never made needs nothing; a
/// null `async_info` waits for the whole device
/// ([`Backend::synchronize_device`]).
pub(super) fn synchronize<B: Backend>(
    backend: &B,
    device: DeviceId,
    async_info: Option<&mut AsyncInfo>,
) -> Result<()> {
    match async_info {
        None => backend.synchronize_device(device),
        Some(info) if info.queue.is_null() => Ok(()),
        Some(info) => {
            // SAFETY: a non-null field holds a queue this module stored for
            // this backend (module docs).
            let queue = unsafe { take::<B::Queue>(info) };
            backend.synchronize(device, queue)
        }
    }
}

/// The body of an entry a backend's plugin exports beside
/// [`crate::export_plugin!`]'s own that works on the caller's queue (the
/// CUDA plugin's `record_event`/`wait_event`): as
/// [`super::device_entry`], with `f` given the queue of `async_info`,
/// made on first use as an `_async` entry's is. A null `async_info` is
/// refused.
///
/// # Safety
/// `async_info` is null or a valid `__tgt_async_info` the caller owns
/// during the call, whose `queue` field is null or set by this plugin.
pub unsafe fn queue_entry<B: Backend, K: Boundary>(
    cell: &PluginCell<B, K>,
    entry: &str,
    device: i32,
    async_info: *mut AsyncInfo,
    f: impl FnOnce(&B, DeviceId, &mut B::Queue) -> Result<()>,
) -> i32 {
    status::<B, K>(entry, || {
        diagnostics::debug(B::NAME, &format_args!("{entry} {device}"));
        let info = queue_arg(Some(async_info)).ok_or(PluginError::NullPointer("async_info"))?;
        cell.with_live(|live| {
            let device = live.initialised_device(device)?;
            let backend = live.backend();
            on_queue(backend, device, Some(info), |queue| {
                f(backend, device, queue)
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use crate::backend::{ImageRef, InitCause, LoadOptions, TeamConfig};
    use crate::{Backend, DeviceId, PluginCell, PluginError};
    use omptarget_abi::plugin::KernelArgType;
    use omptarget_abi::{AllocKind, AsyncInfo, DeviceImage, TargetTable, OFFLOAD_SUCCESS};
    use std::ffi::c_void;
    use std::ptr::{null_mut, NonNull};
    use std::sync::Mutex;

    type Result<T> = std::result::Result<T, PluginError>;

    /// What the backend saw, in order.
    static SEEN: Mutex<Vec<String>> = Mutex::new(Vec::new());
    static NEXT_QUEUE: Mutex<u32> = Mutex::new(0);

    fn saw(what: String) {
        SEEN.lock().unwrap().push(what);
    }

    fn seen() -> Vec<String> {
        std::mem::take(&mut *SEEN.lock().unwrap())
    }

    /// A queue numbered at creation; a retrieve runs at once (done).
    struct Numbered {
        id: u32,
        done: bool,
    }

    /// Records each call with the queue it runs on.
    struct Recording;

    impl Backend for Recording {
        const NAME: &'static str = "recording";
        type Queue = Box<Numbered>;

        fn init(_cause: InitCause) -> Result<Self> {
            Ok(Recording)
        }
        fn deinit(self) -> Result<()> {
            Ok(())
        }
        fn number_of_devices(&self) -> usize {
            1
        }
        fn is_valid_binary(&self, _image: &ImageRef<'_>) -> bool {
            false
        }
        fn init_device(&self, _device: DeviceId) -> Result<()> {
            Ok(())
        }
        fn deinit_device(&self, _device: DeviceId) -> Result<()> {
            Ok(())
        }
        fn load_binary(
            &self,
            _device: DeviceId,
            _image: &ImageRef<'_>,
            _options: LoadOptions,
        ) -> Result<NonNull<TargetTable>> {
            Err(PluginError::Unsupported("load_binary"))
        }
        fn unload_binary(&self, _device: DeviceId, _image: NonNull<DeviceImage>) -> Result<()> {
            Ok(())
        }
        fn data_alloc(
            &self,
            _device: DeviceId,
            _size: usize,
            _host_ptr: *mut c_void,
            _kind: AllocKind,
        ) -> Result<NonNull<c_void>> {
            Err(PluginError::Unsupported("data_alloc"))
        }
        fn data_delete(&self, _device: DeviceId, _tgt_ptr: NonNull<c_void>) -> Result<()> {
            Ok(())
        }
        fn create_queue(&self, device: DeviceId) -> Result<Box<Numbered>> {
            let mut next = NEXT_QUEUE.lock().unwrap();
            *next += 1;
            saw(format!("create {device} q{next}"));
            Ok(Box::new(Numbered {
                id: *next,
                done: false,
            }))
        }
        fn synchronize(&self, device: DeviceId, queue: Box<Numbered>) -> Result<()> {
            saw(format!("synchronize {device} q{}", queue.id));
            Ok(())
        }
        fn is_done(&self, queue: &Box<Numbered>) -> bool {
            queue.done
        }
        fn synchronize_device(&self, device: DeviceId) -> Result<()> {
            saw(format!("synchronize_device {device}"));
            Ok(())
        }
        unsafe fn data_submit(
            &self,
            device: DeviceId,
            _tgt_ptr: NonNull<c_void>,
            _host_ptr: NonNull<c_void>,
            size: usize,
            queue: &mut Box<Numbered>,
        ) -> Result<()> {
            saw(format!("submit {device} {size} q{}", queue.id));
            // 13 bytes: the operation fails (after it saw its queue).
            if size == 13 {
                return Err(PluginError::Backend("refused 13 bytes".into()));
            }
            Ok(())
        }
        unsafe fn data_retrieve(
            &self,
            device: DeviceId,
            _host_ptr: NonNull<c_void>,
            _tgt_ptr: NonNull<c_void>,
            size: usize,
            queue: &mut Box<Numbered>,
        ) -> Result<()> {
            saw(format!("retrieve {device} {size} q{}", queue.id));
            queue.done = true;
            Ok(())
        }
        unsafe fn run_region(
            &self,
            device: DeviceId,
            _entry: NonNull<c_void>,
            args: &[*mut c_void],
            types: Option<&[KernelArgType]>,
            _teams: Option<TeamConfig>,
            queue: &mut Box<Numbered>,
        ) -> Result<()> {
            saw(format!(
                "run {device} {} typed={} q{}",
                args.len(),
                types.is_some(),
                queue.id
            ));
            Ok(())
        }
        fn print_device_info(&self, _device: DeviceId) {}
    }

    static CELL: PluginCell<Recording> = PluginCell::new();

    #[test]
    fn blocking_entries_use_a_local_queue_and_async_ones_keep_theirs() {
        use super::super::{data_retrieve, data_submit, init_device, run_region, synchronize};
        let (mut host, mut dev) = (0u64, 0u64);
        let (h, d): (*mut c_void, *mut c_void) = ((&raw mut host).cast(), (&raw mut dev).cast());
        assert_eq!(init_device(&CELL, 0), OFFLOAD_SUCCESS);
        // SAFETY: for every entry call below, `h` and `d` are 8 writable
        // bytes each; `info` is a live `__tgt_async_info` whose queue only
        // these entries set; the kernel address is never called.
        unsafe {
            // Blocking: a local queue, the operation, a synchronise.
            assert_eq!(data_submit(&CELL, 0, d, h, 8, None), OFFLOAD_SUCCESS);
            assert_eq!(seen(), ["create 0 q1", "submit 0 8 q1", "synchronize 0 q1"]);
            // An `_async` entry given a null `__tgt_async_info`: blocking.
            assert_eq!(
                data_submit(&CELL, 0, d, h, 4, Some(null_mut())),
                OFFLOAD_SUCCESS
            );
            assert_eq!(seen(), ["create 0 q2", "submit 0 4 q2", "synchronize 0 q2"]);

            // `_async`: made on first use, kept until `synchronize`.
            let mut info = AsyncInfo { queue: null_mut() };
            let info_ptr: *mut AsyncInfo = &mut info;
            assert_eq!(
                data_submit(&CELL, 0, d, h, 8, Some(info_ptr)),
                OFFLOAD_SUCCESS
            );
            assert!(!info.queue.is_null());
            let mut args = [d];
            let mut offsets = [0isize];
            let entry = 0x1000 as *mut c_void;
            assert_eq!(
                run_region(
                    &CELL,
                    0,
                    entry,
                    args.as_mut_ptr(),
                    offsets.as_mut_ptr(),
                    1,
                    None,
                    Some(info_ptr)
                ),
                OFFLOAD_SUCCESS
            );
            assert_eq!(
                seen(),
                ["create 0 q3", "submit 0 8 q3", "run 0 1 typed=false q3"]
            );
            assert_eq!(synchronize(&CELL, 0, info_ptr), OFFLOAD_SUCCESS);
            assert!(info.queue.is_null(), "synchronize gives the queue back");
            assert_eq!(seen(), ["synchronize 0 q3"]);
            // Synchronising an empty one calls nothing.
            assert_eq!(synchronize(&CELL, 0, info_ptr), OFFLOAD_SUCCESS);
            assert_eq!(seen(), Vec::<String>::new());

            // A queue the backend says is done is synchronised at once:
            // the caller is left no queue to synchronise.
            assert_eq!(
                data_retrieve(&CELL, 0, h, d, 8, Some(info_ptr)),
                OFFLOAD_SUCCESS
            );
            assert!(info.queue.is_null());
            assert_eq!(
                seen(),
                ["create 0 q4", "retrieve 0 8 q4", "synchronize 0 q4"]
            );

            // A null `__tgt_async_info`: the whole device.
            assert_eq!(synchronize(&CELL, 0, null_mut()), OFFLOAD_SUCCESS);
            assert_eq!(seen(), ["synchronize_device 0"]);

            // A failing operation, blocking: the failure, and its local
            // queue still synchronised.
            assert_ne!(data_submit(&CELL, 0, d, h, 13, None), OFFLOAD_SUCCESS);
            assert_eq!(
                seen(),
                ["create 0 q5", "submit 0 13 q5", "synchronize 0 q5"]
            );
            // Failing on an `_async` entry's first use: the failure, and the
            // queue kept for the caller's synchronize (work queued before the
            // failure on a real device may still run), synchronised once.
            assert_ne!(
                data_submit(&CELL, 0, d, h, 13, Some(info_ptr)),
                OFFLOAD_SUCCESS
            );
            assert!(!info.queue.is_null());
            assert_eq!(seen(), ["create 0 q6", "submit 0 13 q6"]);
            // Failing on a queue made earlier: it is put back, not lost.
            assert_ne!(
                data_submit(&CELL, 0, d, h, 13, Some(info_ptr)),
                OFFLOAD_SUCCESS
            );
            assert!(!info.queue.is_null());
            assert_eq!(seen(), ["submit 0 13 q6"]);
            assert_eq!(synchronize(&CELL, 0, info_ptr), OFFLOAD_SUCCESS);
            assert!(info.queue.is_null());
            assert_eq!(seen(), ["synchronize 0 q6"]);
        }
    }
}

//! Long-lived queues ([`Queue`]) and events ([`Event`]).
//!
//! A [`Queue`] is one plugin queue (`__tgt_async_info`: a CUDA stream on a
//! GPU) that lives as long as the program wants: it is `Send`, it can be
//! kept in a struct, and it is synchronised and released on drop. Work that
//! borrows memory is queued on it inside a [`crate::scope`]
//! ([`crate::Scope::attach`]), which waits for it at its end; outside a
//! scope it copies owned buffers, which it holds until [`Queue::wait`]
//! gives them back (`transfer.rs`); between scopes the queue orders
//! itself against other queues with [`Event`]s.
use crate::abi::AsyncInfo;
use crate::device::queue_ops::RawEvent;
use crate::{Device, Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A long-lived queue on one device: `device.queue()?` or
/// [`Queue::new`]. Dropping it waits for its work and releases it; one
/// never dropped (`mem::forget`) is synchronised by the shutdown and listed
/// in its report ([`crate::ShutdownReport::leaked_queues`]).
///
/// Borrowed memory goes on it inside a [`crate::scope`] (below); owned
/// buffers (a [`crate::DeviceBuffer`] and a `Vec`, a boxed slice or a
/// [`crate::PinnedBuffer`]) go on it anywhere: [`Queue::copy_from_host`]
/// and [`Queue::copy_to_host`] take them by value, and [`Queue::wait`]
/// gives them back once the copy is complete.
///
/// ```
/// use omptarget::{Config, DeviceBuffer, Queue, Runtime};
///
/// /// A pipeline object: its queue and buffers live as long as it does.
/// struct Doubler<'rt> {
///     queue: Queue<'rt>,
///     buffer: DeviceBuffer<'rt, u32>,
/// }
///
/// impl Doubler<'_> {
///     fn run(&mut self, input: &[u32]) -> omptarget::Result<Vec<u32>> {
///         let mut output = vec![0; input.len()];
///         let (queue, buffer) = (&mut self.queue, &mut self.buffer);
///         omptarget::scope(|s| {
///             let q = s.attach(queue);
///             let lent = s.bind(buffer);
///             q.copy_from_host(lent, input)?;
///             q.copy_to_host(lent, &mut output)?; // the same queue: in order
///             Ok(())
///         })?;
///         Ok(output.iter().map(|v| v * 2).collect())
///     }
/// }
///
/// let runtime = Runtime::new(Config::default())?;
/// let device = runtime.device(0)?;
/// let mut doubler = Doubler { queue: device.queue()?, buffer: DeviceBuffer::new(device, 3)? };
/// let once = doubler.run(&[1, 2, 3])?;
/// assert_eq!(doubler.run(&once)?, [4, 8, 12]);
/// drop(doubler);
/// assert!(runtime.shutdown().is_clean());
/// # Ok::<(), omptarget::Error>(())
/// ```
pub struct Queue<'rt> {
    device: &'rt Device,
    /// Boxed at a stable address, registered with the device (so the
    /// teardown finds a forgotten queue); freed by drop, or by the
    /// teardown for a forgotten one.
    info: *mut AsyncInfo,
    /// The buffers of copies queued outside a scope, until given back.
    pub(super) holding: Holding<'rt>,
}

// SAFETY: a plugin queue may be used from any thread (CUDA streams are
// not tied to a thread; LLVM's runtime moves `__tgt_async_info` between
// threads), one at a time: every use takes `&mut self`.
unsafe impl Send for Queue<'_> {}

impl<'rt> Queue<'rt> {
    /// A new queue on `device` (the same as `device.queue()`).
    pub fn new(device: &'rt Device) -> Result<Queue<'rt>> {
        device.ensure_initialized()?;
        let info = Box::into_raw(Box::new(AsyncInfo {
            queue: std::ptr::null_mut(),
        }));
        device.register_queue(info);
        Ok(Queue {
            device,
            info,
            holding: Holding::new(),
        })
    }

    /// The device the queue runs on.
    pub fn device(&self) -> &'rt Device {
        self.device
    }

    pub(crate) fn async_info(&mut self) -> *mut AsyncInfo {
        self.info
    }

    pub(super) fn info(&mut self) -> &mut AsyncInfo {
        // SAFETY: our box, alive until drop; `&mut self` is exclusive.
        unsafe { &mut *self.info }
    }

    /// Block until everything queued so far has completed.
    pub fn synchronize(&mut self) -> Result<()> {
        let device = self.device;
        // SAFETY: our own box, whose queue only this device's plugin set.
        unsafe { device.synchronize_queue(self.info()) }
    }

    /// Mark the current end of the queue: the event happens once
    /// everything queued so far has.
    pub fn record_event(&mut self) -> Result<Event<'rt>> {
        let device = self.device;
        Event::record(device, self.info())
    }

    /// Make everything queued after this call wait for `event`.
    pub fn wait_for(&mut self, event: &Event<'_>) -> Result<()> {
        let device = self.device;
        event.wait_on(device, self.info())
    }
}

/// Synchronise `queue` (on `device`) before what its work uses is
/// released; `after` says when (for the message).
///
/// A queue that cannot be synchronised may still be copying from or into
/// that memory (host memory, or device memory, which on the host plugin is
/// host memory too). Returning would end the borrows that keep it alive
/// and make the copy a use after free, so the process aborts instead,
/// with the reason: the policy for every queue the API waits for before
/// releasing memory. A destroyed plugin runs nothing more, so that case is
/// an error.
pub(crate) fn synchronize_or_abort(
    device: &Device,
    queue: &mut AsyncInfo,
    after: &dyn std::fmt::Display,
) -> Result<()> {
    let synced = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the callers pass their own queue (a `Queue`'s box, a
        // scope's, a copy's), which only `device`'s plugin set.
        unsafe { device.synchronize_queue(queue) }
    }));
    match synced {
        Ok(Ok(())) => Ok(()),
        Ok(Err(err @ Error::PluginDead { .. })) => Err(err),
        Ok(Err(err)) => abort_unsynchronised(device, after, &err),
        Err(_) => abort_unsynchronised(device, after, &"a panic"),
    }
}

/// See [`synchronize_or_abort`].
fn abort_unsynchronised(
    device: &Device,
    after: &dyn std::fmt::Display,
    why: &dyn std::fmt::Display,
) -> ! {
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "omptarget: fatal: a queue on device {} could not be synchronised {after} ({why}); \
         it may still use memory that would be released, so the process aborts",
        device.id()
    );
    std::process::abort()
}

impl Drop for Queue<'_> {
    fn drop(&mut self) {
        let device = self.device;
        if !self.holding.is_empty() {
            // The buffers it holds are dropped after this: their copies
            // must be complete (or the process aborts).
            let _ = synchronize_or_abort(device, self.info(), &"when dropped with copies' buffers");
        } else if let Err(err) =
            // SAFETY: our own box, whose queue only this device's plugin set.
            unsafe { device.synchronize_queue(self.info()) }
        {
            tracing::warn!(
                device = device.id(),
                "synchronising a dropped Queue failed: {err}"
            );
        }
        device.unregister_queue(self.info);
        // SAFETY: our box, unregistered: nothing else frees or uses it.
        drop(unsafe { Box::from_raw(self.info) });
    }
}

impl std::fmt::Debug for Queue<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("device", &self.device.id())
            .finish()
    }
}

/// A point in a queue ([`Queue::record_event`],
/// [`crate::ScopedQueue::record_event`]): it happens once everything queued
/// before it has. Destroyed on drop (a queue still waiting for it is not
/// affected).
pub struct Event<'rt> {
    device: &'rt Device,
    raw: RawEvent,
    /// When the record call returned.
    recorded: Instant,
}

// SAFETY: a plugin event is a handle any thread may wait for or destroy
// (LLVM's runtime does); the runtime serialises nothing per thread.
unsafe impl Send for Event<'_> {}
// SAFETY: as for Send: shared use only waits for it.
unsafe impl Sync for Event<'_> {}

impl<'rt> Event<'rt> {
    pub(crate) fn record(device: &'rt Device, queue: &mut AsyncInfo) -> Result<Event<'rt>> {
        let raw = device.record_event_on(queue)?;
        Ok(Event {
            device,
            raw,
            recorded: Instant::now(),
        })
    }

    /// Make `queue` (on `device`) wait for this event: on the device when
    /// both are of one plugin, else on the host, before anything later is
    /// queued.
    pub(crate) fn wait_on(&self, device: &Device, queue: &mut AsyncInfo) -> Result<()> {
        if device.same_plugin(self.device) {
            device.wait_event_on(queue, self.raw)
        } else {
            self.synchronize()
        }
    }

    /// Block until the event has happened.
    pub fn synchronize(&self) -> Result<()> {
        self.device.sync_event(self.raw)
    }

    /// The time from `earlier` to this event, both of one device.
    ///
    /// A plugin without device events (the host plugin) completes an
    /// event's work before recording it, so the time between the two
    /// record calls is exact. A plugin with device events measures them
    /// on the device (`__tgt_rtl_event_elapsed_time`, this project's entry;
    /// the CUDA plugin: `cuEventElapsedTime`), after waiting for both; one
    /// without that entry says so ([`Error::Unsupported`]).
    pub fn elapsed_since(&self, earlier: &Event<'_>) -> Result<Duration> {
        if !std::ptr::eq(self.device, earlier.device) {
            return Err(Error::InvalidArgument(format!(
                "events of devices {} and {} cannot be compared",
                earlier.device.id(),
                self.device.id()
            )));
        }
        match (earlier.raw.0.is_null(), self.raw.0.is_null()) {
            (true, true) => Ok(self.recorded.saturating_duration_since(earlier.recorded)),
            _ => {
                self.synchronize()?;
                earlier.synchronize()?;
                self.device.event_elapsed(earlier.raw, self.raw)
            }
        }
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        if let Err(err) = self.device.destroy_event(self.raw) {
            tracing::warn!(
                device = self.device.id(),
                "destroying a dropped Event failed: {err}"
            );
        }
    }
}

impl std::fmt::Debug for Event<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("device", &self.device.id())
            .field("plugin_event", &!self.raw.0.is_null())
            .finish()
    }
}

/// Anything a queue holds for its copies (type-erased; [`Transfer`] keeps
/// the type, `transfer`).
pub(crate) trait Held: Send {}
impl<V: Send> Held for V {}

/// What a [`Queue`] holds for the copies queued on it.
pub(crate) struct Holding<'rt> {
    /// Unique among all queues: a receipt names its queue by it.
    pub(super) queue: u64,
    pub(super) next: u64,
    pub(super) held: Vec<(u64, Box<dyn Held + 'rt>)>,
}

impl Holding<'_> {
    pub(crate) fn new() -> Self {
        static QUEUES: AtomicU64 = AtomicU64::new(1);
        Holding {
            queue: QUEUES.fetch_add(1, Ordering::Relaxed),
            next: 0,
            held: Vec::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

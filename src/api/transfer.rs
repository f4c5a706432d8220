//! Copies on a long-lived [`Queue`] outside any scope: owned buffers only.
//!
//! A copy that borrows host memory is queued inside [`crate::scope`],
//! whose end waits for it. Outside a scope nothing would wait: a borrow
//! ends whenever its handle is dropped or forgotten, so a copy still in
//! flight could use memory its owner already freed. So a [`Queue`] takes
//! copies of owned buffers only, by value, both sides (the device buffer
//! too: dropping it frees device memory the copy may still use), and
//! keeps them until the copy is known to be complete:
//! [`Queue::wait`] synchronises the queue and gives them back. A
//! [`Transfer`] is only a receipt: forgetting it, or the queue, leaks
//! nothing the queue still uses (a dropped queue synchronises, then drops
//! what it holds; a forgotten one is synchronised by the shutdown).
use super::pinned::PinnedBuffer;
use super::queue::{synchronize_or_abort, Queue};
use super::{DeviceBuffer, DeviceCopy};
use crate::{Error, Result};
use std::ffi::c_void;
use std::marker::PhantomData;

/// Owned host memory a [`Queue`] may copy from or into while it holds it:
/// `Vec<T>`, `Box<[T]>` or a [`PinnedBuffer`] (on a GPU, the one whose
/// copies run asynchronously with the host). Its values stay at the same
/// address when it moves.
pub trait HostBuffer<T: DeviceCopy>: Send + sealed::Sealed {
    /// The values.
    #[doc(hidden)]
    fn host_slice(&self) -> &[T];
    /// The values, writable.
    #[doc(hidden)]
    fn host_slice_mut(&mut self) -> &mut [T];
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! host_buffers {
    ($(<$($lt:lifetime,)? $t:ident> $buffer:ty;)*) => { $(
        impl<$($lt,)? $t: DeviceCopy> sealed::Sealed for $buffer {}
        impl<$($lt,)? $t: DeviceCopy> HostBuffer<$t> for $buffer {
            fn host_slice(&self) -> &[$t] {
                self
            }
            fn host_slice_mut(&mut self) -> &mut [$t] {
                self
            }
        }
    )* };
}
// Each keeps its values in a heap block it owns, which moving it does
// not move (the queue relies on that: it moves them into its own list).
host_buffers! {
    <T> Vec<T>;
    <T> Box<[T]>;
    <'rt, T> PinnedBuffer<'rt, T>;
}

/// The receipt of a copy queued on a [`Queue`]: [`Queue::wait`] trades it
/// for the buffers `V` the copy used, once the copy is complete. Dropping
/// or forgetting it is harmless: the queue drops the buffers when it is
/// dropped, after synchronising.
#[must_use = "the buffers come back only through Queue::wait"]
pub struct Transfer<V> {
    queue: u64,
    id: u64,
    _values: PhantomData<fn() -> V>,
}

impl<V> std::fmt::Debug for Transfer<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transfer")
            .field("queue", &self.queue)
            .field("id", &self.id)
            .finish()
    }
}

/// A copy refused or failed, with the buffers it was given back (`?`
/// turns it into its [`Error`], dropping them).
pub struct Returned<V> {
    /// Why.
    pub error: Error,
    /// The buffers, complete with whatever the copy did before it failed.
    pub buffers: V,
}

impl<V> From<Returned<V>> for Error {
    fn from(returned: Returned<V>) -> Error {
        returned.error
    }
}

impl<V> std::fmt::Debug for Returned<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Returned")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

/// A copy queued, with its receipt, or refused, with its buffers.
type Queued<V> = Result<Transfer<V>, Returned<V>>;

impl<'rt> Queue<'rt> {
    /// Queue a copy of the host buffer `src` into the whole device buffer
    /// `dst` (same length; on this queue's device). The queue holds both
    /// until [`Queue::wait`] gives them back; meanwhile the copy runs in
    /// order with the queue's other work (asynchronously with the host on
    /// a GPU, from a [`PinnedBuffer`]).
    ///
    /// ```
    /// use omptarget::{Config, DeviceBuffer, PinnedBuffer, Runtime};
    /// let runtime = Runtime::new(Config::default())?;
    /// let device = runtime.device(0)?;
    /// let mut queue = device.queue()?;
    /// let staging = PinnedBuffer::from_slice(device, &[1.0f32, 2.0, 3.0])?;
    /// let upload = queue.copy_from_host(DeviceBuffer::new(device, 3)?, staging)?;
    /// // ... the host works on meanwhile ...
    /// let (buffer, mut staging) = queue.wait(upload)?;
    /// let download = queue.copy_to_host(buffer, vec![0.0f32; 3])?;
    /// let (buffer, values) = queue.wait(download)?;
    /// assert_eq!(values, [1.0, 2.0, 3.0]);
    /// staging[0] = 7.0; // the host's again
    /// # drop((buffer, staging, queue)); assert!(runtime.shutdown().is_clean());
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    ///
    /// Borrowed host memory is queued inside a [`crate::scope`] only:
    ///
    /// ```compile_fail,E0277
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// # let runtime = Runtime::new(Config::default())?;
    /// # let device = runtime.device(0)?;
    /// # let mut queue = device.queue()?;
    /// let values = vec![1u8; 4];
    /// queue.copy_from_host(DeviceBuffer::new(device, 4)?, &values[..])?; // error: borrowed
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    ///
    /// # Errors
    /// With the buffers given back ([`Returned`]): a device buffer on
    /// another device than the queue's ([`Error::InvalidArgument`]),
    /// lengths that differ ([`Error::LengthMismatch`]), the plugin's
    /// failure (the queue is synchronised first).
    pub fn copy_from_host<T: DeviceCopy, H: HostBuffer<T> + 'rt>(
        &mut self,
        dst: DeviceBuffer<'rt, T>,
        src: H,
    ) -> Queued<(DeviceBuffer<'rt, T>, H)> {
        self.queue_owned((dst, src), |device, queue, (dst, src)| {
            let src = src.host_slice();
            super::view::check_len(dst.len(), src.len())?;
            if std::mem::size_of_val(src) == 0 {
                return Ok(()); // an empty buffer has no address to copy to
            }
            // SAFETY: both buffers are held by the queue, at addresses
            // that do not move, until it is synchronised (`queue_owned`);
            // the lengths match (checked).
            unsafe {
                device.submit_on(
                    queue,
                    dst.device_ptr(),
                    src.as_ptr().cast::<c_void>(),
                    std::mem::size_of_val(src),
                )
            }
        })
    }

    /// Queue a copy of the whole device buffer `src` (on this queue's
    /// device) into the host buffer `dst` (same length); as
    /// [`Queue::copy_from_host`], the queue holds both until
    /// [`Queue::wait`] gives them back.
    ///
    /// # Errors
    /// As [`Queue::copy_from_host`].
    pub fn copy_to_host<T: DeviceCopy, H: HostBuffer<T> + 'rt>(
        &mut self,
        src: DeviceBuffer<'rt, T>,
        dst: H,
    ) -> Queued<(DeviceBuffer<'rt, T>, H)> {
        self.queue_owned((src, dst), |device, queue, (src, dst)| {
            let dst = dst.host_slice_mut();
            super::view::check_len(src.len(), dst.len())?;
            if std::mem::size_of_val(dst) == 0 {
                return Ok(());
            }
            // SAFETY: as in `copy_from_host`; any bytes are a valid `T`,
            // and the host cannot read `dst` until the queue gives it back.
            unsafe {
                device.retrieve_on(
                    queue,
                    dst.as_mut_ptr().cast::<c_void>(),
                    src.device_ptr(),
                    std::mem::size_of_val(dst),
                )
            }
        })
    }

    /// Check `buffers`' device buffer, queue `op` on them and hold them. A
    /// failure gives them back: at once when nothing was queued, else
    /// after synchronising.
    fn queue_owned<T: DeviceCopy, H: HostBuffer<T> + 'rt>(
        &mut self,
        buffers: (DeviceBuffer<'rt, T>, H),
        op: impl FnOnce(
            &crate::Device,
            &mut crate::abi::AsyncInfo,
            &mut (DeviceBuffer<'rt, T>, H),
        ) -> Result<()>,
    ) -> Queued<(DeviceBuffer<'rt, T>, H)> {
        let device = self.device();
        let on_device =
            super::checks::on_queue_device("the device buffer", buffers.0.device(), device);
        if let Err(error) = on_device {
            return Err(Returned { error, buffers });
        }
        let mut boxed = Box::new(buffers);
        // Room to hold them, so that nothing between queueing the copy and
        // holding its buffers can fail. The copy uses the memory the
        // buffers own, which stays put when they move into the list.
        self.holding.held.reserve(1);
        let queued = op(device, self.info(), &mut boxed);
        let receipt = self.hold(boxed);
        match queued {
            Ok(()) => Ok(receipt),
            Err(error) => {
                // Part of it may have been queued: synchronised (or the
                // process aborts) before they are given back; a destroyed
                // plugin runs nothing more, and `error` says why.
                let _ = synchronize_or_abort(device, self.info(), &"after a failed copy");
                let index = self.position(&receipt).expect("held just above");
                Err(Returned {
                    error,
                    buffers: self.take(index, receipt),
                })
            }
        }
    }

    /// Wait for the copy `transfer` stands for (and everything queued
    /// before it), then give back the buffers it used.
    ///
    /// The queue is synchronised; if that fails the copy may still run,
    /// and the process aborts with the reason rather than hand out memory
    /// it may still write (as at the end of a [`crate::scope`]).
    ///
    /// # Errors
    /// A receipt of another queue ([`Error::InvalidArgument`]; its buffers
    /// stay with their queue); a destroyed plugin ([`Error::PluginDead`];
    /// the buffers stay held, dropped with the queue).
    pub fn wait<V>(&mut self, transfer: Transfer<V>) -> Result<V> {
        let index = self.position(&transfer).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "the transfer was queued on another queue than this one (device {})",
                self.device().id()
            ))
        })?;
        let device = self.device();
        synchronize_or_abort(device, self.info(), &"before giving back a copy's buffers")?;
        Ok(self.take(index, transfer))
    }

    /// Where the buffers of `transfer` are held, if on this queue.
    fn position<V>(&self, transfer: &Transfer<V>) -> Option<usize> {
        let holding = &self.holding;
        if transfer.queue != holding.queue {
            return None;
        }
        holding.held.iter().position(|(id, _)| *id == transfer.id)
    }

    /// Give back the buffers held at `index` for `transfer`.
    fn take<V>(&mut self, index: usize, transfer: Transfer<V>) -> V {
        let (id, held) = self.holding.held.swap_remove(index);
        debug_assert_eq!(id, transfer.id);
        // SAFETY: `held` was boxed as a `V`: `queue_owned` made the
        // receipt of that type for it, a receipt cannot be made or copied
        // elsewhere, ids are unique among all queues (`position` found
        // this one's), and the receipt is consumed now.
        *unsafe { Box::from_raw(Box::into_raw(held).cast::<V>()) }
    }

    fn hold<V: Send + 'rt>(&mut self, values: Box<V>) -> Transfer<V> {
        let holding = &mut self.holding;
        let id = holding.next;
        holding.next += 1;
        holding.held.push((id, values));
        Transfer {
            queue: holding.queue,
            id,
            _values: PhantomData,
        }
    }
}

//! Bulk data between MPI and the devices: straight from and into device
//! memory when it is this process's (the host plugin), staged otherwise.
use super::{ok, Reply, Server};
use crate::error::ServeError;
use omptarget::DevicePtr;
use omptarget_mpi_wire::protocol::{self, REPLY_SLOT};
use omptarget_mpi_wire::world::World;
use std::ffi::c_void;

impl Server {
    pub(super) fn submit(
        &mut self,
        client: i32,
        tag: i32,
        device: u32,
        ptr: u64,
        size: usize,
    ) -> Reply {
        self.receive_into(client, tag, device, ptr, size)?;
        ok()
    }

    /// Copy `data` (a request's own bytes) to `ptr` on `device`.
    pub(super) fn submit_inline(
        &self,
        device: u32,
        ptr: u64,
        data: &[u8],
    ) -> Result<(), ServeError> {
        let target = DevicePtr::from_raw(ptr as usize as *mut c_void);
        // SAFETY: `data` is readable; the address is the client's, as for
        // any plugin's submit.
        unsafe {
            self.device(device)?
                .submit(target, data.as_ptr().cast(), data.len())
        }
        .map_err(ServeError::from)
    }

    /// The reply, then each of `ranges` (device address, bytes) on
    /// `device` to `client` (tag `tag`); or, when they are small enough
    /// ([`protocol::retrieve_inline`]), the reply holding their bytes.
    /// Staged ranges are all read before anything is sent, so that a
    /// failure leaves nothing sent.
    pub(super) fn retrieve_batch(
        &self,
        client: i32,
        tag: i32,
        device: u32,
        ranges: &[(u64, u64)],
    ) -> Result<(), ServeError> {
        let dev = self.device(device)?;
        let slot = protocol::retrieve_reply_slot(ranges);
        if protocol::retrieve_inline(ranges) {
            // Inside the reply: one message.
            let mut failed = None;
            let reply = protocol::ok_reply(|w| {
                for &(ptr, size) in ranges {
                    let into = w.raw_mut(size as usize);
                    let source = DevicePtr::from_raw(ptr as usize as *mut c_void);
                    if self.direct {
                        // SAFETY: host-plugin device memory is this
                        // process's memory; the range is the client's, as
                        // for any plugin's retrieve (a copy, no reference
                        // made to it).
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                source.as_ptr().cast::<u8>(),
                                into.as_mut_ptr(),
                                into.len(),
                            )
                        };
                    } else if failed.is_none() {
                        // SAFETY: `into` holds `size` bytes.
                        let got =
                            unsafe { dev.retrieve(into.as_mut_ptr().cast(), source, into.len()) };
                        failed = got.err();
                    }
                }
            });
            if let Some(err) = failed {
                return Err(err.into());
            }
            return send_reply(&self.world, client, tag, slot, &reply);
        }
        let mut staged = Vec::new();
        if !self.direct {
            for &(ptr, size) in ranges {
                let mut buffer = vec![0u8; size as usize];
                let source = DevicePtr::from_raw(ptr as usize as *mut c_void);
                // SAFETY: `buffer` holds `size` bytes.
                unsafe { dev.retrieve(buffer.as_mut_ptr().cast(), source, buffer.len()) }?;
                staged.push(buffer);
            }
        }
        send_reply(&self.world, client, tag, slot, &protocol::ok_reply(|_| {}))?;
        for (i, &(ptr, size)) in ranges.iter().enumerate() {
            let data: *const c_void = match staged.get(i) {
                Some(buffer) => buffer.as_ptr().cast(),
                None => ptr as usize as *const c_void,
            };
            // SAFETY: device memory of this process (direct) or `staged`.
            unsafe { self.world.send_raw(client, tag, data, size as usize)? };
        }
        Ok(())
    }

    /// Receive `size` bytes from `peer` (tag `tag`) into `ptr` on `device`.
    pub(super) fn receive_into(
        &self,
        peer: i32,
        tag: i32,
        device: u32,
        ptr: u64,
        size: usize,
    ) -> Result<(), ServeError> {
        let dev = self.device(device);
        let target = DevicePtr::from_raw(ptr as usize as *mut c_void);
        if self.direct && dev.is_ok() {
            // SAFETY: host-plugin device memory is this process's memory;
            // the address and size are the sender's, as for any plugin's
            // submit.
            return Ok(unsafe { self.world.recv_raw(peer, tag, target.as_ptr(), size) }?);
        }
        // Staged: the data must be received whatever happens next, or it
        // would be taken for the next message.
        let staging = self.world.recv_into(peer, tag, vec![0u8; size])?;
        let dev = dev?;
        // SAFETY: as above.
        Ok(unsafe { dev.submit(target, staging.as_ptr().cast(), size) }?)
    }

    /// Send `size` bytes at `ptr` on `device` to `peer` (tag `tag`),
    /// after `header` (a retrieve's successful reply) if any. An error
    /// before anything was sent leaves nothing sent.
    pub(super) fn send_from(
        &self,
        peer: i32,
        tag: i32,
        device: u32,
        ptr: u64,
        size: usize,
        header: Option<Vec<u8>>,
    ) -> Result<(), ServeError> {
        let dev = self.device(device)?;
        let source = DevicePtr::from_raw(ptr as usize as *mut c_void);
        let staging;
        let data: *const c_void = if self.direct {
            source.as_ptr()
        } else {
            let mut buffer = vec![0u8; size];
            // SAFETY: `buffer` holds `size` bytes.
            unsafe { dev.retrieve(buffer.as_mut_ptr().cast(), source, size) }?;
            staging = buffer;
            staging.as_ptr().cast()
        };
        if let Some(header) = header {
            send_reply(&self.world, peer, tag, REPLY_SLOT, &header)?;
        }
        // SAFETY: device memory of this process (direct) or `staging`.
        Ok(unsafe { self.world.send_raw(peer, tag, data, size) }?)
    }
}

/// Send `reply` to `client` with `tag`: its first `slot` bytes land in
/// the receive the client posted (`protocol::reply_slot` of the request,
/// which both sides compute; [`REPLY_SLOT`] where the request is not
/// known); the rest, if any, follows on the same tag.
pub fn send_reply(
    world: &World,
    client: i32,
    tag: i32,
    slot: usize,
    reply: &[u8],
) -> Result<(), ServeError> {
    Ok(world.send_message(client, tag, tag, slot, reply)?)
}

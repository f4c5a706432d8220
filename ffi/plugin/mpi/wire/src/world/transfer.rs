//! Bytes to and from another rank, in fragments of at most an MPI
//! count, each wait bounded by the peer's life.
use super::World;
use crate::error::{Failure, WireError};
use crate::mpi;
use crate::protocol::FRAGMENT;
use std::ffi::{c_int, c_void};

impl World {
    /// Send `bytes` to `dest` with `tag`; `Err` if `dest` dies first.
    pub fn send(&self, dest: i32, tag: i32, bytes: &[u8]) -> Result<(), WireError> {
        // SAFETY: `bytes` is readable for its length.
        unsafe { self.send_raw(dest, tag, bytes.as_ptr().cast(), bytes.len()) }
    }

    /// Send `len` bytes at `ptr` to `dest` with `tag`, in fragments;
    /// `Err` if `dest` dies first.
    ///
    /// # Safety
    /// `ptr` is readable for `len` bytes.
    pub unsafe fn send_raw(
        &self,
        dest: i32,
        tag: i32,
        ptr: *const c_void,
        len: usize,
    ) -> Result<(), WireError> {
        // SAFETY: per this function's contract.
        unsafe { self.send_fragments(dest, tag, ptr, len, FRAGMENT) }
    }

    /// [`World::send_raw`] in fragments of at most `fragment` bytes.
    ///
    /// # Safety
    /// `ptr` is readable for `len` bytes.
    pub(super) unsafe fn send_fragments(
        &self,
        dest: i32,
        tag: i32,
        ptr: *const c_void,
        len: usize,
        fragment: usize,
    ) -> Result<(), WireError> {
        let m = &self.mpi;
        let watch = self.watch_rank(dest);
        let mut offset = 0;
        loop {
            let n = (len - offset).min(fragment);
            let mut request = m.predefined.request_null;
            // SAFETY: within `ptr..ptr+len` (this function's contract),
            // which stays readable until `complete` returns (it completes
            // the send, or cancels it: a cancelled send reads no more).
            let code = unsafe {
                m.isend(
                    ptr.cast::<u8>().add(offset).cast(),
                    n as c_int,
                    m.predefined.byte,
                    dest,
                    tag,
                    self.comm,
                    &mut request,
                )
            };
            m.check("MPI_Isend", code)?;
            self.complete("MPI_Test (send)", request, &watch)?;
            offset += n;
            if offset >= len {
                return Ok(());
            }
        }
    }

    /// Receive `len` bytes from `source` with `tag` into `ptr`, in the
    /// fragments [`World::send_raw`] sends; `Err` if `source` dies first.
    ///
    /// # Safety
    /// `ptr` is writable for `len` bytes.
    pub unsafe fn recv_raw(
        &self,
        source: i32,
        tag: i32,
        ptr: *mut c_void,
        len: usize,
    ) -> Result<(), WireError> {
        // SAFETY: per this function's contract.
        unsafe { self.recv_fragments(source, tag, ptr, len, FRAGMENT) }
    }

    /// Receive `buffer.len()` bytes from `source` with `tag` into
    /// `buffer`, as [`World::recv_raw`]: the buffer back, filled; or the
    /// error, which keeps the buffer if MPI may still write into it.
    pub fn recv_into(
        &self,
        source: i32,
        tag: i32,
        mut buffer: Vec<u8>,
    ) -> Result<Vec<u8>, WireError> {
        // SAFETY: `buffer` holds `len` bytes, and is the error's if MPI
        // may still write into it.
        let received =
            unsafe { self.recv_raw(source, tag, buffer.as_mut_ptr().cast(), buffer.len()) };
        match received {
            Ok(()) => Ok(buffer),
            Err(err) => Err(err.keep(buffer)),
        }
    }

    /// [`World::recv_raw`] in fragments of at most `fragment` bytes (as
    /// their sender sent them). Each fragment must be whole: one shorter
    /// than expected (a sender out of step) is an error, never bytes
    /// left unwritten.
    ///
    /// # Safety
    /// `ptr` is writable for `len` bytes.
    pub(super) unsafe fn recv_fragments(
        &self,
        source: i32,
        tag: i32,
        ptr: *mut c_void,
        len: usize,
        fragment: usize,
    ) -> Result<(), WireError> {
        let watch = self.watch_rank(source);
        let mut offset = 0;
        loop {
            let n = (len - offset).min(fragment);
            // SAFETY: within `ptr..ptr+len` (this function's contract).
            // A cancelled receive may still be written by MPI until it is
            // known cancelled: it is cancelled only when its sender died,
            // and the memory stays the caller's (device memory or a
            // buffer), as with any failed transfer.
            let request = unsafe { self.irecv(ptr.cast::<u8>().add(offset), n, source, tag)? };
            let status = self.complete("MPI_Test (receive)", request, &watch)?;
            if usize::try_from(status.count).ok() != Some(n) {
                return Err(Failure::Short {
                    from: self.describe(source),
                    count: status.count,
                    tag,
                    due: n,
                }
                .into());
            }
            offset += n;
            if offset >= len {
                return Ok(());
            }
        }
    }

    /// Start receiving at most `len` bytes (an `int`'s worth) into `ptr`
    /// from `source` with `tag`: the request, to complete or cancel.
    ///
    /// # Safety
    /// `ptr` is writable for `len` bytes until the request completes or
    /// is known cancelled.
    pub(super) unsafe fn irecv(
        &self,
        ptr: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
    ) -> Result<mpi::Handle, WireError> {
        let m = &self.mpi;
        let count = c_int::try_from(len).map_err(|_| Failure::TooLarge { len })?;
        let mut request = m.predefined.request_null;
        // SAFETY: per this function's contract.
        let code = unsafe {
            m.irecv(
                ptr.cast(),
                count,
                m.predefined.byte,
                source,
                tag,
                self.comm,
                &mut request,
            )
        };
        m.check("MPI_Irecv", code)?;
        Ok(request)
    }
}

//! The calls, with the binding's [`Handle`] and [`Status`]: each
//! converts its handles to the family's type and back, and decodes the
//! family's status. Every one is `unsafe` with MPI's own contract for the
//! call (valid handles, buffers as long as the counts say, MPI initialised
//! where MPI requires it), which its callers' `SAFETY` comments meet.
use super::{Abi, Binding, DeleteAttr, Handle, Mpi, Mpich, OpenMpi, Status};
use std::ffi::{c_char, c_int, c_void};

#[allow(clippy::missing_safety_doc, missing_docs)]
impl Mpi {
    pub unsafe fn initialized(&self, flag: *mut c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f => unsafe { (f.initialized)(flag) })
    }

    pub unsafe fn finalized(&self, flag: *mut c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f => unsafe { (f.finalized)(flag) })
    }

    pub unsafe fn init_thread(
        &self,
        argc: *mut c_int,
        argv: *mut *mut *mut c_char,
        required: c_int,
        provided: *mut c_int,
    ) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f => unsafe { (f.init_thread)(argc, argv, required, provided) })
    }

    /// The library's own `MPI_Init` and `MPI_Init_thread`, as function
    /// pointers (their signatures hold no handle, so they are the same in
    /// every family): for a wrapper that stands in for them.
    pub fn init_entries(&self) -> InitEntries {
        dispatch!(self, f => InitEntries {
            init: f.init,
            init_thread: f.init_thread,
            initialized: f.initialized,
            finalized: f.finalized,
            finalize: f.finalize,
        })
    }

    pub unsafe fn query_thread(&self, provided: *mut c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f => unsafe { (f.query_thread)(provided) })
    }

    pub unsafe fn finalize(&self) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f => unsafe { (f.finalize)() })
    }

    pub unsafe fn comm_dup(&self, comm: Handle, new: &mut Handle) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*new);
            // SAFETY: this function's contract.
            let code = unsafe { (f.comm_dup)(A::raw(comm), &mut raw) };
            *new = A::handle(raw);
            code
        })
    }

    pub unsafe fn comm_free(&self, comm: &mut Handle) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*comm);
            // SAFETY: this function's contract.
            let code = unsafe { (f.comm_free)(&mut raw) };
            *comm = A::handle(raw);
            code
        })
    }

    /// `MPI_Comm_spawn` with `MPI_ERRCODES_IGNORE` (null in both families).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn comm_spawn(
        &self,
        command: *const c_char,
        argv: *mut *mut c_char,
        maxprocs: c_int,
        info: Handle,
        root: c_int,
        comm: Handle,
        intercomm: &mut Handle,
    ) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*intercomm);
            // SAFETY: this function's contract.
            let code = unsafe {
                (f.comm_spawn)(
                    command,
                    argv,
                    maxprocs,
                    A::raw(info),
                    root,
                    A::raw(comm),
                    &mut raw,
                    std::ptr::null_mut(),
                )
            };
            *intercomm = A::handle(raw);
            code
        })
    }

    pub unsafe fn comm_get_parent(&self, parent: &mut Handle) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*parent);
            // SAFETY: this function's contract.
            let code = unsafe { (f.comm_get_parent)(&mut raw) };
            *parent = A::handle(raw);
            code
        })
    }

    pub unsafe fn intercomm_merge(
        &self,
        intercomm: Handle,
        high: bool,
        merged: &mut Handle,
    ) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*merged);
            // SAFETY: this function's contract.
            let code = unsafe { (f.intercomm_merge)(A::raw(intercomm), c_int::from(high), &mut raw) };
            *merged = A::handle(raw);
            code
        })
    }

    pub unsafe fn comm_disconnect(&self, comm: &mut Handle) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*comm);
            // SAFETY: this function's contract.
            let code = unsafe { (f.comm_disconnect)(&mut raw) };
            *comm = A::handle(raw);
            code
        })
    }

    pub unsafe fn comm_rank(&self, comm: Handle, rank: *mut c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f, A => unsafe { (f.comm_rank)(A::raw(comm), rank) })
    }

    pub unsafe fn comm_size(&self, comm: Handle, size: *mut c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f, A => unsafe { (f.comm_size)(A::raw(comm), size) })
    }

    pub unsafe fn comm_set_errhandler(&self, comm: Handle, handler: Handle) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f, A => unsafe {
            (f.comm_set_errhandler)(A::raw(comm), A::raw(handler))
        })
    }

    /// With `MPI_COMM_NULL_COPY_FN` and the family's form of `delete`.
    pub unsafe fn comm_create_keyval(
        &self,
        delete: DeleteAttr,
        keyval: *mut c_int,
        extra: *mut c_void,
    ) -> c_int {
        let copy = self.predefined.comm_null_copy_fn;
        match &self.binding {
            // SAFETY: this function's contract; the delete function has
            // the family's signature.
            Binding::OpenMpi(f) => unsafe {
                (f.comm_create_keyval)(copy, delete.pointer as *mut c_void, keyval, extra)
            },
            // SAFETY: as above.
            Binding::Mpich(f) => unsafe {
                (f.comm_create_keyval)(copy, delete.int as *mut c_void, keyval, extra)
            },
        }
    }

    pub unsafe fn comm_free_keyval(&self, keyval: *mut c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f => unsafe { (f.comm_free_keyval)(keyval) })
    }

    pub unsafe fn comm_set_attr(&self, comm: Handle, keyval: c_int, value: *mut c_void) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f, A => unsafe { (f.comm_set_attr)(A::raw(comm), keyval, value) })
    }

    pub unsafe fn comm_delete_attr(&self, comm: Handle, keyval: c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f, A => unsafe { (f.comm_delete_attr)(A::raw(comm), keyval) })
    }

    pub unsafe fn comm_get_attr(
        &self,
        comm: Handle,
        keyval: c_int,
        value: *mut c_void,
        found: *mut c_int,
    ) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f, A => unsafe {
            (f.comm_get_attr)(A::raw(comm), keyval, value, found)
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub unsafe fn allgather(
        &self,
        send: *const c_void,
        send_count: c_int,
        send_type: Handle,
        recv: *mut c_void,
        recv_count: c_int,
        recv_type: Handle,
        comm: Handle,
    ) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f, A => unsafe {
            (f.allgather)(
                send,
                send_count,
                A::raw(send_type),
                recv,
                recv_count,
                A::raw(recv_type),
                A::raw(comm),
            )
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub unsafe fn isend(
        &self,
        buf: *const c_void,
        count: c_int,
        datatype: Handle,
        dest: c_int,
        tag: c_int,
        comm: Handle,
        request: &mut Handle,
    ) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*request);
            // SAFETY: this function's contract.
            let code = unsafe {
                (f.isend)(buf, count, A::raw(datatype), dest, tag, A::raw(comm), &mut raw)
            };
            *request = A::handle(raw);
            code
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub unsafe fn irecv(
        &self,
        buf: *mut c_void,
        count: c_int,
        datatype: Handle,
        source: c_int,
        tag: c_int,
        comm: Handle,
        request: &mut Handle,
    ) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*request);
            // SAFETY: this function's contract.
            let code = unsafe {
                (f.irecv)(buf, count, A::raw(datatype), source, tag, A::raw(comm), &mut raw)
            };
            *request = A::handle(raw);
            code
        })
    }

    /// `MPI_Test`; `status` is decoded when `flag` says done.
    pub unsafe fn test(
        &self,
        request: &mut Handle,
        flag: &mut c_int,
        status: &mut Status,
    ) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*request);
            let mut family_status = <A as Abi>::Status::default();
            // SAFETY: this function's contract.
            let code = unsafe { (f.test)(&mut raw, flag, &mut family_status) };
            *request = A::handle(raw);
            if *flag != 0 {
                *status = A::decode(&family_status);
            }
            code
        })
    }

    pub unsafe fn cancel(&self, request: &mut Handle) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*request);
            // SAFETY: this function's contract.
            let code = unsafe { (f.cancel)(&mut raw) };
            *request = A::handle(raw);
            code
        })
    }

    pub unsafe fn request_free(&self, request: &mut Handle) -> c_int {
        dispatch!(self, f, A => {
            let mut raw = A::raw(*request);
            // SAFETY: this function's contract.
            let code = unsafe { (f.request_free)(&mut raw) };
            *request = A::handle(raw);
            code
        })
    }

    pub unsafe fn get_processor_name(&self, name: *mut c_char, len: *mut c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f => unsafe { (f.get_processor_name)(name, len) })
    }

    pub unsafe fn error_string(&self, code: c_int, text: *mut c_char, len: *mut c_int) -> c_int {
        // SAFETY: this function's contract.
        dispatch!(self, f => unsafe { (f.error_string)(code, text, len) })
    }
}

/// `MPI_Init`, `MPI_Init_thread` and the calls that finalise MPI at exit,
/// of the opened library (signatures without handles: the same in every
/// family).
#[derive(Debug, Clone, Copy)]
pub struct InitEntries {
    /// `MPI_Init`.
    pub init: unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char) -> c_int,
    /// `MPI_Init_thread`.
    pub init_thread:
        unsafe extern "C" fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int) -> c_int,
    /// `MPI_Initialized`.
    pub initialized: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// `MPI_Finalized`.
    pub finalized: unsafe extern "C" fn(*mut c_int) -> c_int,
    /// `MPI_Finalize`.
    pub finalize: unsafe extern "C" fn() -> c_int,
}

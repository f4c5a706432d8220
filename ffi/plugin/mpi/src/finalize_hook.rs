//! Closing the remote devices when the program finalises MPI first.
//!
//! A program that initialised MPI itself also finalises it, and for a
//! clang-compiled program that happens at the end of `main`, before the
//! runtime's teardown (which runs from `__tgt_unregister_lib`, in the
//! program's destructors). After `MPI_Finalize` no message can reach a
//! server, and a server still waiting for requests would keep the job
//! (and the program's `MPI_Finalize`, which waits for every process of
//! the job) waiting for ever.
//!
//! MPI's own hook for libraries fixes the order: `MPI_Finalize` first
//! deletes the attributes of `MPI_COMM_SELF`, while MPI still works,
//! calling their delete functions. The plugin sets one; its delete
//! function tells every server to exit (each tears its devices down in the
//! fixed order and acknowledges), so the job ends together; servers this
//! rank spawned are disconnected too. Later calls on
//! remote devices fail with "the remote devices are gone: the program
//! called MPI_Finalize"; the runtime's shutdown report lists what they
//! could not free, which the servers' own teardown has freed.
use crate::client::Client;
use omptarget_mpi_wire::MpiError;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// The installed attribute; [`FinalizeHook::remove`] takes it off.
pub struct FinalizeHook {
    keyval: c_int,
    /// `Arc::into_raw` of the client the delete function closes.
    client: *const Client,
}

// SAFETY: `client` is an `Arc` reference count, released once by `remove`.
unsafe impl Send for FinalizeHook {}
// SAFETY: nothing is reached through `&FinalizeHook`.
unsafe impl Sync for FinalizeHook {}

/// The delete function, in each family's form (`H`: its `MPI_Comm`).
unsafe extern "C" fn on_finalize<H>(
    _comm: H,
    keyval: c_int,
    value: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    let closed = std::panic::catch_unwind(|| {
        // SAFETY: `value` is the `Arc::into_raw` pointer `install` set,
        // released only by `remove`, after this attribute is deleted.
        let client = unsafe { &*value.cast::<Client>() };
        // The keyval's only attribute is being deleted: freed here, where
        // MPI still works, whoever deletes it (the program's MPI_Finalize,
        // or `remove`); MPI frees it once the deletion is done.
        let mut keyval = keyval;
        let m = &client.world().mpi;
        // SAFETY: our keyval, freed once (here).
        unsafe { m.comm_free_keyval(&mut keyval) };
        for (rank, ack) in client.close("the program called MPI_Finalize") {
            if let Err(err) = ack {
                eprintln!(
                    "omptarget: MPI device server rank {rank} did not acknowledge its exit: {err}"
                );
            }
        }
        // Other threads' calls still taking their replies end before MPI
        // does (and before the communicator is freed below).
        client.drain();
        // Spawned servers stay connected to this process through the
        // plugin's communicators, and MPI finalises connected processes
        // together: disconnect now, as each server does once it has
        // acknowledged, so that the program's MPI_Finalize goes on alone.
        if client.world().is_spawned() {
            if let Err(err) = client.world().detach() {
                eprintln!("omptarget: leaving the MPI device servers: {err}");
            }
        }
    });
    if closed.is_err() {
        // Not eprintln!, which panics when stderr is gone: this is a C
        // callback, and nothing may unwind out of it.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"omptarget: closing the MPI device servers panicked\n",
        );
    }
    crate::mpi::SUCCESS
}

impl FinalizeHook {
    /// Set the attribute on `MPI_COMM_SELF`.
    pub fn install(client: &Arc<Client>) -> Result<FinalizeHook, MpiError> {
        let m = &client.world().mpi;
        let mut keyval = m.constants.keyval_invalid;
        let delete = crate::mpi::DeleteAttr {
            pointer: on_finalize::<*mut c_void>,
            int: on_finalize::<c_int>,
        };
        // SAFETY: our delete function, in both forms; `keyval` is written.
        m.check("MPI_Comm_create_keyval", unsafe {
            m.comm_create_keyval(delete, &mut keyval, std::ptr::null_mut())
        })?;
        let raw = Arc::into_raw(Arc::clone(client));
        // SAFETY: a valid keyval; the value is an opaque pointer.
        let set = m.check("MPI_Comm_set_attr", unsafe {
            m.comm_set_attr(m.predefined.comm_self, keyval, raw.cast_mut().cast())
        });
        if let Err(err) = set {
            // SAFETY: from `Arc::into_raw` just above, not shared.
            drop(unsafe { Arc::from_raw(raw) });
            // SAFETY: our keyval.
            unsafe { m.comm_free_keyval(&mut keyval) };
            return Err(err);
        }
        Ok(FinalizeHook {
            keyval,
            client: raw,
        })
    }

    /// Take the attribute off (unless MPI is finalised: then it is gone)
    /// and release the client's reference.
    pub fn remove(self, client: &Client) {
        let world = client.world();
        if !world.finalized() {
            let m = &world.mpi;
            // SAFETY: our keyval on MPI_COMM_SELF; the delete function runs,
            // finds the client closed already, and frees the keyval.
            unsafe {
                m.comm_delete_attr(m.predefined.comm_self, self.keyval);
            }
        }
        // SAFETY: from `Arc::into_raw` in `install`; the attribute that
        // held it is gone, so this is its last use.
        drop(unsafe { Arc::from_raw(self.client) });
    }
}

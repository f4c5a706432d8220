//! The MPI functions the binding calls, with one [`Abi`]'s types: `H` is
//! its handle (`MPI_Comm`, `MPI_Datatype`, `MPI_Request`,
//! `MPI_Errhandler`), `S` its `MPI_Status`.
use super::abi::Abi;
use crate::mpi::error::MpiError;
use libloading::Library;
use std::ffi::{c_char, c_int, c_void};

macro_rules! mpi_functions {
    ($($field:ident = $symbol:literal : fn($($arg:ty),*);)*) => {
        /// The MPI functions, resolved once when the library is opened.
        #[allow(missing_docs)]
        pub struct Functions<A: Abi> {
            $(pub $field: unsafe extern "C" fn($($arg),*) -> c_int,)*
        }

        impl<A: Abi> Functions<A> {
            /// # Safety
            /// `library` is of `A`'s family: every symbol has the
            /// signature of its declaration in that family's `mpi.h`.
            pub(super) unsafe fn resolve(library: &Library) -> Result<Self, MpiError> {
                Ok(Functions {
                    $($field: {
                        // SAFETY: per this function's contract.
                        let symbol = unsafe {
                            library.get::<unsafe extern "C" fn($($arg),*) -> c_int>(
                                concat!($symbol, "\0").as_bytes(),
                            )
                        };
                        *symbol.map_err(|source| MpiError::Missing { symbol: $symbol, source })?
                    },)*
                })
            }
        }
    };
}

type H<A> = <A as Abi>::Handle;
type S<A> = <A as Abi>::Status;

mpi_functions! {
    initialized = "MPI_Initialized": fn(*mut c_int);
    finalized = "MPI_Finalized": fn(*mut c_int);
    init = "MPI_Init": fn(*mut c_int, *mut *mut *mut c_char);
    init_thread = "MPI_Init_thread": fn(*mut c_int, *mut *mut *mut c_char, c_int, *mut c_int);
    query_thread = "MPI_Query_thread": fn(*mut c_int);
    finalize = "MPI_Finalize": fn();
    comm_dup = "MPI_Comm_dup": fn(H<A>, *mut H<A>);
    comm_free = "MPI_Comm_free": fn(*mut H<A>);
    comm_rank = "MPI_Comm_rank": fn(H<A>, *mut c_int);
    comm_size = "MPI_Comm_size": fn(H<A>, *mut c_int);
    comm_set_errhandler = "MPI_Comm_set_errhandler": fn(H<A>, H<A>);
    comm_create_keyval = "MPI_Comm_create_keyval": fn(*mut c_void, *mut c_void, *mut c_int, *mut c_void);
    comm_free_keyval = "MPI_Comm_free_keyval": fn(*mut c_int);
    comm_set_attr = "MPI_Comm_set_attr": fn(H<A>, c_int, *mut c_void);
    comm_delete_attr = "MPI_Comm_delete_attr": fn(H<A>, c_int);
    comm_get_attr = "MPI_Comm_get_attr": fn(H<A>, c_int, *mut c_void, *mut c_int);
    allgather = "MPI_Allgather": fn(*const c_void, c_int, H<A>, *mut c_void, c_int, H<A>, H<A>);
    isend = "MPI_Isend": fn(*const c_void, c_int, H<A>, c_int, c_int, H<A>, *mut H<A>);
    irecv = "MPI_Irecv": fn(*mut c_void, c_int, H<A>, c_int, c_int, H<A>, *mut H<A>);
    test = "MPI_Test": fn(*mut H<A>, *mut c_int, *mut S<A>);
    cancel = "MPI_Cancel": fn(*mut H<A>);
    request_free = "MPI_Request_free": fn(*mut H<A>);
    get_processor_name = "MPI_Get_processor_name": fn(*mut c_char, *mut c_int);
    error_string = "MPI_Error_string": fn(c_int, *mut c_char, *mut c_int);
    comm_spawn = "MPI_Comm_spawn": fn(*const c_char, *mut *mut c_char, c_int, H<A>, c_int, H<A>, *mut H<A>, *mut c_int);
    comm_get_parent = "MPI_Comm_get_parent": fn(*mut H<A>);
    intercomm_merge = "MPI_Intercomm_merge": fn(H<A>, c_int, *mut H<A>);
    comm_disconnect = "MPI_Comm_disconnect": fn(*mut H<A>);
}

//! The two ABI families `mpi.h` comes in, as types: how a handle is
//! passed, how `MPI_Status` is laid out, where the predefined handles
//! are, and the constants that differ.
//!
//! `mpi.h` is an API, not an ABI (MPI 5's standard ABI, `libmpi_abi`, is
//! not shipped by the libraries installed here; when it is, it is a third
//! [`Abi`]). The two families in use:
//!
//! * Open MPI (`libmpi.so.40`, Open MPI 4 and 5): a handle is a pointer,
//!   the predefined handles are the addresses of `ompi_*` globals, and
//!   `MPI_Status` is `MPI_SOURCE`, `MPI_TAG`, `MPI_ERROR`, `_cancelled`,
//!   `_ucount` (a `size_t` of bytes): 24 bytes.
//! * MPICH and its derivatives (`libmpich.so.12`): a handle is an `int`,
//!   the predefined handles are constants of `mpi.h`, and `MPI_Status` is
//!   `count_lo`, `count_hi_and_cancelled`, `MPI_SOURCE`, `MPI_TAG`,
//!   `MPI_ERROR`: 20 bytes.
//!
//! Every call of the binding goes through one [`Abi`]'s types (its
//! [`Functions`](super::functions::Functions) are generic over it), so no
//! function is ever called through a signature that is not its own.
use super::family::Family;
use super::Handle;
use crate::mpi::error::MpiError;
use libloading::Library;
use std::ffi::{c_int, c_void};

/// A completed request's status, decoded from its family's layout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Status {
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
    /// The bytes received (what `MPI_Get_count` gives for `MPI_BYTE`).
    pub count: u64,
    /// Whether the request was cancelled (`MPI_Test_cancelled`).
    pub cancelled: bool,
}

/// The predefined handles (and the one predefined function) the binding
/// uses, as the opened library has them.
#[derive(Debug, Clone, Copy)]
pub struct Predefined {
    /// `MPI_COMM_WORLD`.
    pub comm_world: Handle,
    /// `MPI_COMM_SELF`.
    pub comm_self: Handle,
    /// `MPI_COMM_NULL`: what `MPI_Comm_free` leaves.
    pub comm_null: Handle,
    /// `MPI_REQUEST_NULL`: what a completed or freed request becomes.
    pub request_null: Handle,
    /// `MPI_BYTE`.
    pub byte: Handle,
    /// `MPI_ERRORS_RETURN`.
    pub errors_return: Handle,
    /// `MPI_INFO_NULL`.
    pub info_null: Handle,
    /// `MPI_COMM_NULL_COPY_FN` (Open MPI: a function; MPICH: null).
    pub comm_null_copy_fn: *mut c_void,
}

/// One ABI family, as types.
pub trait Abi: 'static {
    /// Which.
    const FAMILY: Family;
    /// How a handle (`MPI_Comm`, `MPI_Datatype`, `MPI_Request`,
    /// `MPI_Errhandler`) is passed.
    type Handle: Copy;
    /// `MPI_Status` as the family lays it out.
    type Status: Copy + Default;
    /// The family's handle as the binding's.
    fn handle(raw: Self::Handle) -> Handle;
    /// The binding's handle as the family's.
    fn raw(handle: Handle) -> Self::Handle;
    /// What a status says.
    fn decode(status: &Self::Status) -> Status;
    /// The predefined handles of `library` (one of this family).
    fn predefined(library: &Library) -> Result<Predefined, MpiError>;
}

/// Open MPI's ABI.
pub enum OpenMpi {}

/// Open MPI's `MPI_Status` (`ompi/include/mpi.h.in`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenMpiStatus {
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
    /// `_cancelled`.
    pub cancelled: c_int,
    /// `_ucount`: bytes.
    pub ucount: usize,
}

impl Abi for OpenMpi {
    const FAMILY: Family = Family::OpenMpi;
    type Handle = *mut c_void;
    type Status = OpenMpiStatus;

    fn handle(raw: *mut c_void) -> Handle {
        Handle(raw as usize)
    }

    fn raw(handle: Handle) -> *mut c_void {
        handle.0 as *mut c_void
    }

    fn decode(s: &OpenMpiStatus) -> Status {
        Status {
            source: s.source,
            tag: s.tag,
            error: s.error,
            count: s.ucount as u64,
            cancelled: s.cancelled != 0,
        }
    }

    /// The objects the process uses: a non-PIE program that names
    /// `MPI_COMM_WORLD` holds a copy of `ompi_mpi_comm_world` (a copy
    /// relocation) which MPI's library itself is bound to, and the
    /// library's own, unused, is not a communicator. So the first
    /// definition in the process's global scope comes first (the
    /// program's copy, else the library's); the library's if the symbol
    /// is not global.
    fn predefined(library: &Library) -> Result<Predefined, MpiError> {
        let address = |symbol: &'static str| -> Result<*mut c_void, MpiError> {
            let name = std::ffi::CString::new(symbol).expect("no NUL in a symbol name");
            // SAFETY: a NUL-terminated name; only the address is taken.
            let global = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            if !global.is_null() {
                return Ok(global);
            }
            // SAFETY: the symbol is a global object (or function); only
            // its address is taken, never read through here.
            unsafe { library.get::<*mut c_void>(symbol.as_bytes()) }
                .map(|s| *s)
                .map_err(|source| MpiError::NotOfFamily {
                    library: Family::OpenMpi.constants().library,
                    family: Family::OpenMpi,
                    symbol,
                    source,
                })
        };
        let handle = |symbol| address(symbol).map(Self::handle);
        Ok(Predefined {
            comm_world: handle("ompi_mpi_comm_world")?,
            comm_self: handle("ompi_mpi_comm_self")?,
            comm_null: handle("ompi_mpi_comm_null")?,
            request_null: handle("ompi_request_null")?,
            byte: handle("ompi_mpi_byte")?,
            errors_return: handle("ompi_mpi_errors_return")?,
            info_null: handle("ompi_mpi_info_null")?,
            comm_null_copy_fn: address("OMPI_C_MPI_COMM_NULL_COPY_FN")?,
        })
    }
}

/// MPICH's ABI.
pub enum Mpich {}

/// MPICH's `MPI_Status` (`src/include/mpi.h.in`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MpichStatus {
    /// `count_lo`: the low 32 bits of the byte count.
    pub count_lo: c_int,
    /// `count_hi_and_cancelled`: the count's high bits above the
    /// cancelled bit (bit 0).
    pub count_hi_and_cancelled: c_int,
    /// `MPI_SOURCE`.
    pub source: c_int,
    /// `MPI_TAG`.
    pub tag: c_int,
    /// `MPI_ERROR`.
    pub error: c_int,
}

impl Abi for Mpich {
    const FAMILY: Family = Family::Mpich;
    type Handle = c_int;
    type Status = MpichStatus;

    fn handle(raw: c_int) -> Handle {
        Handle(raw as u32 as usize)
    }

    fn raw(handle: Handle) -> c_int {
        handle.0 as u32 as c_int
    }

    /// As MPICH's `MPIR_STATUS_GET_COUNT` and `MPIR_STATUS_GET_CANCEL_BIT`.
    fn decode(s: &MpichStatus) -> Status {
        let high = (s.count_hi_and_cancelled as u32 >> 1) as u64;
        Status {
            source: s.source,
            tag: s.tag,
            error: s.error,
            count: (high << 32) + s.count_lo as u32 as u64,
            cancelled: s.count_hi_and_cancelled & 1 != 0,
        }
    }

    /// Constants of MPICH's `mpi.h`: the library holds no object for them.
    fn predefined(_library: &Library) -> Result<Predefined, MpiError> {
        let handle = |raw: u32| Self::handle(raw as c_int);
        Ok(Predefined {
            comm_world: handle(0x4400_0000),
            comm_self: handle(0x4400_0001),
            comm_null: handle(0x0400_0000),
            request_null: handle(0x2c00_0000),
            byte: handle(0x4c00_010d),
            errors_return: handle(0x5400_0001),
            info_null: handle(0x1c00_0000),
            comm_null_copy_fn: std::ptr::null_mut(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_mpi_status_decodes_its_fields() {
        let raw = OpenMpiStatus {
            source: 3,
            tag: 17,
            error: 0,
            cancelled: 0,
            ucount: (5 << 32) + 9,
        };
        assert_eq!(std::mem::size_of::<OpenMpiStatus>(), 24);
        assert_eq!(
            OpenMpi::decode(&raw),
            Status {
                source: 3,
                tag: 17,
                error: 0,
                count: (5 << 32) + 9,
                cancelled: false
            }
        );
        let cancelled = OpenMpiStatus {
            cancelled: 1,
            ..raw
        };
        assert!(OpenMpi::decode(&cancelled).cancelled);
    }

    #[test]
    fn mpich_status_splits_its_count_around_the_cancelled_bit() {
        assert_eq!(std::mem::size_of::<MpichStatus>(), 20);
        // 5 * 2^32 + 2^31 + 9 bytes, not cancelled: the low word's top bit
        // set (a negative `int`), the high part shifted past bit 0.
        let raw = MpichStatus {
            count_lo: (0x8000_0009u32) as c_int,
            count_hi_and_cancelled: 5 << 1,
            source: 2,
            tag: 40,
            error: 0,
        };
        assert_eq!(
            Mpich::decode(&raw),
            Status {
                source: 2,
                tag: 40,
                error: 0,
                count: (5 << 32) + 0x8000_0009,
                cancelled: false
            }
        );
        let cancelled = MpichStatus {
            count_lo: 0,
            count_hi_and_cancelled: 1,
            ..raw
        };
        let decoded = Mpich::decode(&cancelled);
        assert!(decoded.cancelled);
        assert_eq!(decoded.count, 0);
    }

    #[test]
    fn handles_round_trip_in_each_representation() {
        let world = Mpich::handle(0x4400_0000);
        assert_eq!(Mpich::raw(world), 0x4400_0000);
        // An int handle with its top bit set stays the same int.
        let negative = Mpich::handle(0x8c00_0000u32 as c_int);
        assert_eq!(Mpich::raw(negative), 0x8c00_0000u32 as c_int);
        let mut object = 0u64;
        let address = (&mut object as *mut u64).cast::<c_void>();
        assert_eq!(OpenMpi::raw(OpenMpi::handle(address)), address);
    }

    #[test]
    fn mpich_predefined_handles_are_its_header_constants() {
        // MPICH's mpi.h: MPI_COMM_WORLD ((MPI_Comm)0x44000000), MPI_BYTE
        // ((MPI_Datatype)0x4c00010d), MPI_REQUEST_NULL
        // ((MPI_Request)0x2c000000), MPI_ERRORS_RETURN
        // ((MPI_Errhandler)0x54000001). Any library will do: none is read.
        let library = Library::from(libloading::os::unix::Library::this());
        let p = Mpich::predefined(&library).unwrap();
        assert_eq!(Mpich::raw(p.comm_world), 0x4400_0000);
        assert_eq!(Mpich::raw(p.comm_self), 0x4400_0001);
        assert_eq!(Mpich::raw(p.comm_null), 0x0400_0000);
        assert_eq!(Mpich::raw(p.request_null), 0x2c00_0000);
        assert_eq!(Mpich::raw(p.byte), 0x4c00_010d);
        assert_eq!(Mpich::raw(p.errors_return), 0x5400_0001);
        assert!(p.comm_null_copy_fn.is_null());
    }

    #[test]
    fn the_families_differ_where_their_headers_do() {
        let (o, m) = (Family::OpenMpi.constants(), Family::Mpich.constants());
        assert_eq!((o.any_source, m.any_source), (-1, -2));
        assert_eq!((o.keyval_invalid, m.keyval_invalid), (-1, 0x2400_0000));
        assert_eq!((o.tag_ub, m.tag_ub), (0, 0x6440_0001));
        assert_eq!((o.library, m.library), ("libmpi.so.40", "libmpich.so.12"));
    }
}

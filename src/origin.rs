//! Where an allocation was made, for the leak report.
//!
//! Recording must cost next to nothing, because allocation is a hot path,
//! so the expensive half (turning an address into a file and line) waits
//! until a report asks ([`AllocOrigin::resolve`]):
//!
//! * [`OriginCapture::Caller`] (the Rust API's default) keeps the
//!   `#[track_caller]` location of the Rust call: a pointer the compiler
//!   passes anyway, no stack walk.
//! * [`OriginCapture::ReturnAddress`] (the C shim, when a leak report is
//!   asked for) walks the stack up to the first frame outside the object
//!   the runtime is linked into (`libomptarget.so`): the return address in
//!   the program that called `omp_target_alloc` or entered a `target
//!   data` region. A few frames of unwinding, only when asked for.
//! * [`OriginCapture::Off`] records nothing.
//!
//! The stack walk is the `backtrace` crate's (no allocation). Resolution
//! reads the DWARF of the object the address lies in with `addr2line`
//! (gimli): with `-g` it gives the function, file and line; without debug
//! info, the symbol at best. The reader is dropped after each address, so
//! the report leaves no cache alive (`backtrace::resolve` would keep one
//! for the rest of the process).
use std::ffi::c_void;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::panic::Location;
use std::path::PathBuf;

/// What a device records about where each allocation was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OriginCapture {
    /// Nothing.
    Off,
    /// The Rust caller's location (`#[track_caller]`; free).
    #[default]
    Caller,
    /// The return address into the program that called the runtime's
    /// library: a short stack walk per allocation.
    ReturnAddress,
}

/// Where an allocation was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AllocOrigin {
    /// Not recorded.
    #[default]
    Unknown,
    /// The Rust call that allocated (through the typed API or
    /// [`crate::Device::alloc`]).
    Caller(&'static Location<'static>),
    /// The return address in the program that called the runtime's library.
    ReturnAddress(usize),
}

/// A resolved origin: what the program's symbols and debug info say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLocation {
    /// The address the location was resolved from (0 for a Rust caller).
    pub address: usize,
    /// The enclosing function, if a symbol covers the address.
    pub function: Option<String>,
    /// The source file, with debug info.
    pub file: Option<String>,
    /// The line, with debug info.
    pub line: Option<u32>,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.function, &self.file, self.line) {
            (Some(func), Some(file), Some(line)) => write!(f, "{func} at {file}:{line}"),
            (None, Some(file), Some(line)) => write!(f, "{file}:{line}"),
            (Some(func), _, _) => write!(f, "{func} ({:#x}, no debug info)", self.address),
            _ => write!(f, "{:#x} (no symbol)", self.address),
        }
    }
}

impl AllocOrigin {
    /// Record the origin of an allocation made now, called from `caller`.
    #[inline]
    pub(crate) fn capture(mode: OriginCapture, caller: &'static Location<'static>) -> Self {
        match mode {
            OriginCapture::Off => AllocOrigin::Unknown,
            OriginCapture::Caller => AllocOrigin::Caller(caller),
            OriginCapture::ReturnAddress => first_address_outside_the_runtime()
                .map_or(AllocOrigin::Caller(caller), AllocOrigin::ReturnAddress),
        }
    }

    /// The source location, resolved now. `None` when nothing was recorded.
    pub fn resolve(&self) -> Option<SourceLocation> {
        match *self {
            AllocOrigin::Unknown => None,
            AllocOrigin::Caller(loc) => Some(SourceLocation {
                address: 0,
                function: None,
                file: Some(loc.file().to_owned()),
                line: Some(loc.line()),
            }),
            AllocOrigin::ReturnAddress(address) => Some(resolve_address(address)),
        }
    }
}

/// The base address of the object `addr` lies in (dladdr), if any.
fn object_base(addr: *const c_void) -> Option<usize> {
    // SAFETY: dladdr only reads the loader's tables; `info` is written by it.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `addr` is only compared against the loaded objects' ranges.
    let found = unsafe { libc::dladdr(addr, &mut info) };
    (found != 0).then_some(info.dli_fbase as usize)
}

/// The first return address on this thread's stack that lies outside the
/// object this function is in.
fn first_address_outside_the_runtime() -> Option<usize> {
    let ours = object_base(first_address_outside_the_runtime as *const c_void)?;
    let mut found = None;
    backtrace::trace(|frame| {
        let ip = frame.ip();
        if ip.is_null() {
            return false;
        }
        match object_base(ip) {
            Some(base) if base == ours => true,
            _ => {
                found = Some(ip as usize);
                false
            }
        }
    });
    found
}

/// The file and load address of the object `addr` lies in. The main
/// program's name from dladdr is its `argv[0]`, which may be relative to a
/// directory the program left: `/proc/self/exe` names it instead.
fn object_of(addr: usize) -> Option<(PathBuf, usize)> {
    // SAFETY: dladdr only reads the loader's tables; `info` is written by it.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `addr` is only compared against the loaded objects' ranges.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dladdr set `dli_fname` to a NUL-terminated path.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()));
    let path = if path.is_absolute() {
        path
    } else {
        PathBuf::from("/proc/self/exe")
    };
    Some((path, info.dli_fbase as usize))
}

/// Resolve a return address with the DWARF of the object it lies in
/// (`addr2line`, which reads the file and is dropped afterwards: nothing
/// stays cached). The call instruction is the byte before the address.
fn resolve_address(address: usize) -> SourceLocation {
    let mut location = SourceLocation {
        address,
        function: None,
        file: None,
        line: None,
    };
    let Some((path, base)) = object_of(address) else {
        return location;
    };
    let Ok(loader) = addr2line::Loader::new(&path) else {
        return location;
    };
    let call = address.saturating_sub(1);
    // A position-independent object's addresses are relative to where it
    // was loaded; a fixed-address executable's are absolute.
    for probe in [call.wrapping_sub(base) as u64, call as u64] {
        if let Ok(mut frames) = loader.find_frames(probe) {
            // The innermost frame: an inlined function, not its caller.
            if let Ok(Some(frame)) = frames.next() {
                location.function = frame
                    .function
                    .as_ref()
                    .and_then(|f| f.demangle().ok())
                    .map(|name| name.into_owned());
                if let Some(at) = frame.location {
                    location.file = at.file.map(str::to_owned);
                    location.line = at.line;
                }
            }
        }
        if location.function.is_none() {
            location.function = loader.find_symbol(probe).map(str::to_owned);
        }
        if location.function.is_some() || location.file.is_some() {
            break;
        }
    }
    location
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_caller_resolves_to_its_file_and_line() {
        let origin = AllocOrigin::capture(OriginCapture::Caller, Location::caller());
        let loc = origin.resolve().unwrap();
        assert!(loc.file.unwrap().ends_with("origin.rs"));
        assert!(loc.line.unwrap() > 0);
        assert_eq!(
            AllocOrigin::capture(OriginCapture::Off, Location::caller()),
            AllocOrigin::Unknown
        );
    }

    #[test]
    fn statically_linked_callers_fall_back_to_the_rust_location() {
        // The test binary and the runtime are one object: no frame is
        // outside it until libc's start code, which has no debug info.
        let origin = AllocOrigin::capture(OriginCapture::ReturnAddress, Location::caller());
        match origin {
            AllocOrigin::ReturnAddress(addr) => assert_ne!(addr, 0),
            AllocOrigin::Caller(loc) => assert!(loc.file().ends_with("origin.rs")),
            AllocOrigin::Unknown => panic!("nothing captured"),
        }
    }
}

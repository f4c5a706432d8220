//! `ol_result_t`: LLVM 22's error objects (`ol_error_struct_t`), a code
//! and a details string, or null for success.
//!
//! Every error object here is a `static`: a result stays valid for as long
//! as the program holds it (LLVM's live in a process-wide set that its
//! static destructors free at exit), and nothing is allocated for it, so
//! nothing is left for a leak checker or a destructor. The details are
//! fixed texts; what varies (the plugin's own message) goes to the debug
//! output instead.

use std::ffi::c_char;

/// `ol_errc_t` (OffloadAPI.h), the codes this library returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Errc {
    InvalidBinary = 3,
    InvalidNullPointer = 4,
    InvalidArgument = 5,
    NotFound = 6,
    OutOfResources = 7,
    InvalidSize = 8,
    InvalidEnumeration = 9,
    Unimplemented = 12,
    Unsupported = 13,
    BackendFailure = 17,
    Uninitialized = 18,
    InvalidNullHandle = 19,
    InvalidPlatform = 20,
    InvalidDevice = 21,
    InvalidQueue = 22,
    InvalidEvent = 23,
    SymbolKind = 24,
}

/// `ol_error_struct_t`: its layout is the header's.
#[repr(C)]
pub(crate) struct OlError {
    code: Errc,
    details: *const c_char,
}

// SAFETY: every `OlError` is a `static` whose `details` points at a
// `'static` string that nothing writes: sharing it between threads reads
// constant memory only.
unsafe impl Sync for OlError {}

impl OlError {
    /// An error with `details`, which must end in a NUL byte.
    pub(crate) const fn new(code: Errc, details: &'static str) -> OlError {
        let bytes = details.as_bytes();
        assert!(
            !bytes.is_empty() && bytes[bytes.len() - 1] == 0,
            "details must end in a NUL byte"
        );
        OlError {
            code,
            details: bytes.as_ptr().cast(),
        }
    }

    /// The error's code (the tests read it back).
    #[cfg(test)]
    pub(crate) fn code(&self) -> Errc {
        self.code
    }
}

impl std::fmt::Debug for OlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // SAFETY: `details` is a NUL-terminated `'static` string (`new`).
        let details = unsafe { std::ffi::CStr::from_ptr(self.details) };
        write!(f, "{:?}: {}", self.code, details.to_string_lossy())
    }
}

/// What an entry point returns: null for success, else a static error.
pub(crate) type OlResult = *const OlError;

/// An entry's outcome before it crosses the boundary.
pub(crate) type Outcome<T = ()> = Result<T, &'static OlError>;

/// `Outcome` as the C result.
pub(crate) fn to_result(outcome: Outcome) -> OlResult {
    match outcome {
        Ok(()) => std::ptr::null(),
        Err(error) => error,
    }
}

/// A static [`OlError`] with `code` and the text `details`:
/// `ol_error!(Errc::InvalidSize, "PropSize is too small")`.
macro_rules! ol_error {
    ($code:expr, $details:literal) => {{
        static ERROR: $crate::offload_api::errors::OlError =
            $crate::offload_api::errors::OlError::new($code, concat!($details, "\0"));
        &ERROR
    }};
}
pub(crate) use ol_error;

/// A call made before `olInit` or after the last `olShutDown`.
pub(crate) static UNINITIALIZED: OlError = OlError::new(
    Errc::Uninitialized,
    "liboffload is not initialized: call olInit first\0",
);

/// The entry ran into an internal error (a panic, reported on stderr).
pub(crate) static INTERNAL: OlError = OlError::new(
    Errc::BackendFailure,
    "internal error in omptarget-rs (reported on stderr)\0",
);

#[cfg(test)]
mod tests {
    use super::*;

    /// `ol_error_struct_t` is `{ ol_errc_t Code; const char *Details; }`.
    #[test]
    fn the_error_object_has_the_headers_layout() {
        assert_eq!(size_of::<Errc>(), 4);
        assert_eq!(size_of::<OlError>(), 16);
        assert_eq!(std::mem::offset_of!(OlError, details), 8);
    }

    #[test]
    fn an_error_carries_its_code_and_a_nul_terminated_text() {
        let error: &OlError = ol_error!(Errc::InvalidSize, "PropSize == 0");
        assert_eq!(error.code(), Errc::InvalidSize);
        // SAFETY: `details` points at the static text, NUL-terminated
        // (checked by `OlError::new` at compile time).
        let text = unsafe { std::ffi::CStr::from_ptr(error.details) };
        assert_eq!(text.to_str(), Ok("PropSize == 0"));
        assert_eq!(to_result(Ok(())), std::ptr::null());
        assert_eq!(to_result(Err(&UNINITIALIZED)), &raw const UNINITIALIZED);
    }
}

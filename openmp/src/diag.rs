//! What the runtime prints on stderr, byte for byte as LLVM 14's
//! libomptarget prints it (release build: `REPORT` always prints, `DP`
//! never does), and the source locations the compiler passes.

use crate::release::Release;
use std::ffi::{c_char, CStr};
use std::fmt;
use std::io::Write;

/// One line (or fragment) LLVM's runtime prints on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Diagnostic {
    /// `MESSAGE`: `Libomptarget message: <text>\n`.
    Message(String),
    /// `REPORT` / `FAILURE_MESSAGE`: `Libomptarget error: <text>\n`.
    Error(String),
    /// `INFO`: `Libomptarget device <n> info: <text>` (text ends in `\n`).
    Info {
        /// The device number the line names.
        device: i32,
        /// The message, ending in `\n`.
        text: String,
    },
    /// An INFO line of LLVM 15+'s plugins, whose common code prints under
    /// its own name: `"PluginInterface" device <n> info: <text>` (quotes
    /// included; `n` is the plugin's device number).
    Plugin {
        /// The plugin's own device number.
        device: i32,
        /// The message, ending in `\n`.
        text: String,
    },
    /// Text printed as is (the `file:line:col: ` before a fatal error).
    Raw(String),
}

impl Diagnostic {
    /// The exact bytes LLVM 14 writes for this diagnostic.
    pub fn render(&self) -> String {
        self.render_as(Release::Llvm14)
    }

    /// The bytes `release`'s runtime writes (its prefix, see
    /// [`Release::prefix`]).
    pub fn render_as(&self, release: Release) -> String {
        let prefix = release.prefix();
        match self {
            Diagnostic::Message(text) => format!("{prefix} message: {text}\n"),
            Diagnostic::Error(text) => format!("{prefix} error: {text}\n"),
            Diagnostic::Info { device, text } => {
                format!("{prefix} device {device} info: {text}")
            }
            Diagnostic::Plugin { device, text } => {
                format!("\"PluginInterface\" device {device} info: {text}")
            }
            Diagnostic::Raw(text) => text.clone(),
        }
    }

    /// Write the rendered diagnostic to stderr in one call (stderr is
    /// unbuffered in both C and Rust, so lines interleave with the program's
    /// own `fprintf(stderr, ...)` in call order).
    pub fn write_to_stderr(&self) {
        let _ = std::io::stderr().write_all(self.render().as_bytes());
    }
}

/// LLVM's `FATAL_MESSAGE0`: print `Libomptarget fatal error <code>: <text>`
/// and `abort()`. Returned (not performed) by the library so that the shim
/// aborts and tests can look at it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Libomptarget fatal error {code}: {text}")]
pub struct Fatal {
    /// The error code printed after `fatal error` (1 everywhere, as in LLVM 14).
    pub code: i32,
    /// The message, without the trailing newline.
    pub text: String,
}

impl Fatal {
    pub(crate) fn new(code: i32, text: impl Into<String>) -> Self {
        Fatal {
            code,
            text: text.into(),
        }
    }

    /// `__tgt_target_nowait_query` with no handle: LLVM 19+'s fatal error.
    pub fn invalid_async_handle() -> Self {
        Fatal::new(
            1,
            "Receive an invalid async handle from the current OpenMP task. Is this a target nowait region?",
        )
    }

    /// LLVM 19+'s fatal error for an unknown device number (whose value is
    /// also the code), worded as `release` words it.
    pub fn device_out_of_range(device: i64, available: usize, release: Release) -> Self {
        let what = match release {
            Release::Llvm22 => "\"invalid value\" device number",
            _ => "Device number",
        };
        Fatal::new(
            device as i32,
            format!("{what} '{device}' out of range, only {available} devices available"),
        )
    }

    /// The exact bytes LLVM 14 writes before aborting.
    pub fn render(&self) -> String {
        format!("{self}\n")
    }

    /// The bytes `release`'s runtime writes before aborting.
    pub fn render_as(&self, release: Release) -> String {
        format!(
            "{} fatal error {}: {}\n",
            release.prefix(),
            self.code,
            self.text
        )
    }

    /// Print the message and abort the process, as LLVM 14 does.
    pub fn abort(&self) -> ! {
        self.abort_as(Release::Llvm14)
    }

    /// Print the message as `release`'s runtime does and abort.
    pub fn abort_as(&self, release: Release) -> ! {
        let _ = std::io::stderr().write_all(self.render_as(release).as_bytes());
        std::process::abort()
    }
}

/// `ident_t`: the source location clang passes to `__tgt_*_mapper` calls.
/// `psource` is `";file;function;line;column;;"`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Ident {
    /// Reserved by libomp; not read here.
    pub reserved_1: i32,
    /// libomp's `KMP_IDENT_*` flags; not read here.
    pub flags: i32,
    /// Reserved by libomp; not read here.
    pub reserved_2: i32,
    /// Reserved by libomp (Fortran only); not read here.
    pub reserved_3: i32,
    /// The location string, or null (then `";unknown;unknown;0;0;;"`).
    pub psource: *const c_char,
}

/// The `ident_t *` of one call, checked once at the C boundary: null or a
/// valid `ident_t` whose `psource` is null or a NUL-terminated string, for
/// `'a`. Reading it is then safe; the OpenMP layer's entry points take this
/// instead of the raw pointer. A pointer's size: passed as cheaply.
#[derive(Debug, Clone, Copy)]
pub struct Loc<'a> {
    ident: *const Ident,
    _valid: std::marker::PhantomData<&'a Ident>,
}

impl<'a> Loc<'a> {
    /// No location (LLVM prints `unknown`).
    pub const UNKNOWN: Loc<'static> = Loc {
        ident: std::ptr::null(),
        _valid: std::marker::PhantomData,
    };

    /// The location clang passed.
    ///
    /// # Safety
    /// `ident` is null or points to an `ident_t` whose `psource` is null or
    /// a NUL-terminated string, both valid and unchanged for `'a`.
    pub const unsafe fn from_raw(ident: *const Ident) -> Self {
        Loc {
            ident,
            _valid: std::marker::PhantomData,
        }
    }

    /// The parsed location string.
    pub fn source_info(self) -> SourceInfo {
        // SAFETY: `from_raw`'s contract: null or a valid `ident_t` whose
        // `psource` is null or NUL-terminated, for `'a`.
        unsafe { SourceInfo::from_ident(self.ident) }
    }
}

const UNKNOWN_LOCATION: &str = ";unknown;unknown;0;0;;";

/// LLVM's `SourceInfo`: fields of a `;`-separated location string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    /// The function's name (a region's location) or the variable's (a
    /// map name).
    pub name: String,
    /// Source file name, without its directories.
    pub filename: String,
    /// Line number; 0 when unknown or not a number.
    pub line: i32,
    /// Column number; 0 when unknown or not a number.
    pub column: i32,
}

impl SourceInfo {
    /// Parse a kernel/region location (`";file;function;line;col;;"`).
    ///
    /// # Safety
    /// `loc` is null or points to an `ident_t` whose `psource` is null or a
    /// NUL-terminated string.
    pub unsafe fn from_ident(loc: *const Ident) -> Self {
        let source = if loc.is_null() {
            UNKNOWN_LOCATION.to_string()
        } else {
            // SAFETY: our `# Safety`: `loc` is non-null here, so it points to
            // an `ident_t` whose `psource` is null or NUL-terminated.
            unsafe { c_string_or((*loc).psource, UNKNOWN_LOCATION) }
        };
        let field = |n| nth_field(&source, n);
        SourceInfo {
            filename: remove_path(&field(0)),
            name: field(1),
            line: parse_int(&field(2)),
            column: parse_int(&field(3)),
        }
    }

    /// Parse a variable's `map_var_info_t` (`";name;file;line;col;;"`).
    ///
    /// # Safety
    /// `name` is null or a NUL-terminated string.
    pub unsafe fn from_var_name(name: *const c_char) -> Self {
        // SAFETY: our `# Safety`: `name` is null or NUL-terminated.
        let mut source = unsafe { c_string_or(name, UNKNOWN_LOCATION) };
        // A bare symbol name (a global's, which LLVM 15+ name mappings
        // after) is read as LLVM reads it: the name, in an unknown place.
        if !source.contains(';') {
            source = format!(";{source};unknown;0;0;;");
        }
        let field = |n| nth_field(&source, n);
        SourceInfo {
            name: field(0),
            filename: remove_path(&field(1)),
            line: parse_int(&field(2)),
            column: parse_int(&field(3)),
        }
    }

    /// LLVM's `isAvailible`: a line or column is known.
    pub fn is_available(&self) -> bool {
        self.line != 0 || self.column != 0
    }
}

/// LLVM's `getNameFromMapping`: the variable name of a `map_var_info_t`,
/// or `unknown`.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
pub unsafe fn name_from_mapping(name: *const c_char) -> String {
    if name.is_null() {
        return "unknown".to_string();
    }
    // SAFETY: our `# Safety`: `name` is a NUL-terminated string.
    let text = unsafe { c_string_or(name, "") };
    // Without a `;` LLVM's substring runs from the start to the end: a
    // bare symbol name (a global's mapping, LLVM 15+) is itself.
    if !text.contains(';') {
        return text;
    }
    nth_field(&text, 0)
}

/// The string at `ptr` (lossily UTF-8), or `default` when `ptr` is null.
///
/// # Safety
/// `ptr` is null or a NUL-terminated string valid for the call.
unsafe fn c_string_or(ptr: *const c_char, default: &str) -> String {
    if ptr.is_null() {
        default.to_string()
    } else {
        // SAFETY: our `# Safety`: `ptr` is non-null here, so it is a
        // NUL-terminated string valid for this call (we copy it out).
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned()
    }
}

/// The text between the (n+1)-th and (n+2)-th `;` (LLVM's `getSubstring`).
fn nth_field(source: &str, n: usize) -> String {
    source.split(';').nth(n + 1).unwrap_or("").to_string()
}

fn remove_path(path: &str) -> String {
    path.rsplit('/').next().unwrap_or(path).to_string()
}

/// `std::stoi` on a leading integer; 0 where LLVM would throw.
fn parse_int(text: &str) -> i32 {
    let trimmed = text.trim_start();
    let end = trimmed
        .char_indices()
        .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && (c == '-' || c == '+')))
        .map(|(i, c)| i + c.len_utf8())
        .last()
        .unwrap_or(0);
    trimmed[..end].parse().unwrap_or(0)
}

impl fmt::Display for SourceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.filename, self.line, self.column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;

    #[test]
    fn render_prefixes() {
        assert_eq!(
            Diagnostic::Message("x".into()).render(),
            "Libomptarget message: x\n"
        );
        assert_eq!(
            Diagnostic::Error("y".into()).render(),
            "Libomptarget error: y\n"
        );
        assert_eq!(
            Diagnostic::Info {
                device: 2,
                text: "z\n".into()
            }
            .render(),
            "Libomptarget device 2 info: z\n"
        );
        assert_eq!(
            Fatal::new(1, "failure").render(),
            "Libomptarget fatal error 1: failure\n"
        );
    }

    #[test]
    fn ident_parsing() {
        let s = CString::new(";/tmp/dir/test.c;main;12;5;;").unwrap();
        let loc = Ident {
            reserved_1: 0,
            flags: 0,
            reserved_2: 0,
            reserved_3: 0,
            psource: s.as_ptr(),
        };
        // SAFETY: `loc` is a local `Ident` whose `psource` is the live,
        // NUL-terminated CString `s`.
        let info = unsafe { SourceInfo::from_ident(&loc) };
        assert_eq!(info.filename, "test.c");
        assert_eq!(info.name, "main");
        assert_eq!((info.line, info.column), (12, 5));
        assert!(info.is_available());
        // SAFETY: a null `loc` is allowed by `from_ident`'s contract.
        let none = unsafe { SourceInfo::from_ident(std::ptr::null()) };
        assert_eq!(none.filename, "unknown");
        assert!(!none.is_available());
    }

    #[test]
    fn var_names() {
        let s = CString::new(";arr[0:n];/x/t.c;7;3;;").unwrap();
        // SAFETY: `s` is a live NUL-terminated CString.
        assert_eq!(unsafe { name_from_mapping(s.as_ptr()) }, "arr[0:n]");
        // SAFETY: null is allowed by `name_from_mapping`'s contract.
        assert_eq!(unsafe { name_from_mapping(std::ptr::null()) }, "unknown");
        // SAFETY: `s` is a live NUL-terminated CString.
        let info = unsafe { SourceInfo::from_var_name(s.as_ptr()) };
        assert_eq!(info.to_string(), "t.c:7:3");
        // A global's symbol name, as LLVM 15+ name its mapping.
        let bare = CString::new("pGI_decl_tgt_ref_ptr").unwrap();
        // SAFETY: `bare` is a live NUL-terminated CString.
        let name = unsafe { name_from_mapping(bare.as_ptr()) };
        assert_eq!(name, "pGI_decl_tgt_ref_ptr");
        // SAFETY: `bare` is a live NUL-terminated CString.
        let info = unsafe { SourceInfo::from_var_name(bare.as_ptr()) };
        assert_eq!(info.name, "pGI_decl_tgt_ref_ptr");
        assert_eq!(info.to_string(), "unknown:0:0");
    }

    #[test]
    fn stoi_like_parsing() {
        assert_eq!(parse_int("42"), 42);
        assert_eq!(parse_int("  -3x"), -3);
        assert_eq!(parse_int("abc"), 0);
    }
}

//! Is the calling thread one of libomp's hidden helper threads (where a
//! `target nowait` region's task runs)?
//!
//! libomp reserves global thread ids 1 to N for its hidden helper threads
//! (`KMP_HIDDEN_HELPER_THREAD(gtid)` in LLVM 14 to 22's `kmp.h`), N being
//! `LIBOMP_NUM_HIDDEN_HELPER_THREADS` (default 8, at most 16), when they
//! are in use: on Linux unless `LIBOMP_USE_HIDDEN_HELPER_TASK` is false or
//! N is 0. libomp exports neither setting, so both are read from the
//! environment as libomp parses it at start-up; the thread's id comes
//! from `__kmpc_global_thread_num`, found in the process.

use std::ffi::{c_int, c_void};

/// The calling thread is a libomp hidden helper thread. False without
/// libomp in the process.
pub(crate) fn on_hidden_helper_thread() -> bool {
    let Some(threads) = helper_threads(
        std::env::var("LIBOMP_USE_HIDDEN_HELPER_TASK")
            .ok()
            .as_deref(),
        std::env::var("LIBOMP_NUM_HIDDEN_HELPER_THREADS")
            .ok()
            .as_deref(),
    ) else {
        return false;
    };
    global_thread_num().is_some_and(|gtid| gtid >= 1 && gtid <= threads)
}

/// `__kmpc_global_thread_num(NULL)`, if libomp is in the process. The
/// thread is known to libomp already (it ran a target region's task), so
/// the call registers nothing.
fn global_thread_num() -> Option<i32> {
    // SAFETY: a NUL-terminated name and the `RTLD_DEFAULT` pseudo-handle;
    // dlsym only reads the loader's tables.
    let f = unsafe { dlsym(RTLD_DEFAULT, c"__kmpc_global_thread_num".as_ptr()) };
    if f.is_null() {
        return None;
    }
    // SAFETY: `f` is libomp's `kmp_int32 __kmpc_global_thread_num(ident_t
    // *)`, which accepts a null location.
    let f = unsafe { std::mem::transmute::<*mut c_void, extern "C" fn(*mut c_void) -> c_int>(f) };
    Some(f(std::ptr::null_mut()))
}

const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

extern "C" {
    fn dlsym(handle: *mut c_void, name: *const std::ffi::c_char) -> *mut c_void;
}

/// How many hidden helper threads libomp runs for these values of its two
/// variables; `None` when it runs none.
fn helper_threads(use_task: Option<&str>, threads: Option<&str>) -> Option<i32> {
    // `__kmp_stg_parse_int(.., 0, 16, ..)`: clamped to 0..=16; a value it
    // cannot read keeps the default.
    let threads = threads
        .and_then(|t| t.trim().parse::<u64>().ok())
        .map_or(8, |n| n.min(16) as i32);
    // `__kmp_stg_parse_bool`: a true word, a false word, or (with a
    // warning) neither, which keeps the default (on).
    let off = use_task.is_some_and(is_false_word) || threads == 0;
    (!off).then_some(threads)
}

/// libomp's `__kmp_str_match_false`: each word matches case-insensitively
/// any prefix of it at least as long as its minimum ("f", "fa" ... for
/// "false"), or a longer value that starts with the whole word; "disabled"
/// only exactly.
fn is_false_word(value: &str) -> bool {
    const WORDS: [(&str, usize); 7] = [
        ("false", 1),
        ("off", 2),
        ("0", 1),
        (".false.", 2),
        (".f.", 2),
        ("no", 1),
        ("disabled", 0),
    ];
    let value = value.to_ascii_lowercase();
    WORDS.iter().any(|&(word, min)| {
        let common = word
            .bytes()
            .zip(value.bytes())
            .take_while(|(w, v)| w == v)
            .count();
        if common < word.len().min(value.len()) {
            false
        } else if min > 0 {
            common >= min
        } else {
            value == word
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_by_default_and_none_as_libomp_parses_it() {
        assert_eq!(helper_threads(None, None), Some(8));
        for off in [
            "0", "false", "F", "fal", "off", "OFF", "no", "n", ".false.", ".f.", "disabled",
        ] {
            assert_eq!(helper_threads(Some(off), None), None, "{off}");
        }
        for on in ["1", "true", "on", "yes", "o", "disable", "maybe", ""] {
            assert_eq!(helper_threads(Some(on), None), Some(8), "{on:?}");
        }
        assert_eq!(helper_threads(None, Some("0")), None);
        assert_eq!(helper_threads(Some("true"), Some(" 0 ")), None);
        assert_eq!(helper_threads(None, Some("4")), Some(4));
        assert_eq!(helper_threads(None, Some("99")), Some(16));
        assert_eq!(helper_threads(None, Some("lots")), Some(8));
    }

    #[test]
    fn a_thread_of_a_process_without_libomp_is_no_helper() {
        // This test binary does not link libomp.
        assert!(!on_hidden_helper_thread());
    }
}

//! How an entry body meets its caller: [`CEntry`] for an exported C entry,
//! [`Native`] for a plugin built into its runtime and called from Rust
//! ([`crate::builtin`]). A [`PluginCell`](crate::PluginCell) names its
//! kind in its type, so a cell is only ever called one way: a built-in
//! instance's state has no C entry that could skip the panic boundary.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// The part of an entry that depends on its caller. Sealed: the kit's two.
pub trait Boundary: sealed::Sealed + 'static {
    /// Run the body of an entry that is not a launch: `Err` is a panic
    /// this boundary caught.
    fn run<R>(f: impl FnOnce() -> R) -> std::thread::Result<R>;
    /// Run a launch's body: `Err` is a panic this boundary caught.
    fn run_launch<R>(f: impl FnOnce() -> R) -> std::thread::Result<R>;
    /// After a launch, when the backend intercepted a kernel's thread exit
    /// and left it pending (`omptarget_thread_exit::set_pending`).
    fn after_launch();
}

/// An exported C entry: nothing may unwind into C, so a panic is caught
/// and becomes the entry's failure, and a kernel's thread exit is resumed
/// from the entry's own frame, past that catch, for the caller's
/// interception to meet.
#[derive(Debug)]
pub enum CEntry {}

/// A call from the runtime in the same binary ([`crate::builtin`]): in a
/// launch a panic unwinds to the Rust caller as any Rust library call's
/// does (the caller is the one boundary; other entries still catch it, see
/// [`Boundary::run`] below), and a kernel's thread exit stays pending on
/// the thread, which the caller shares: it returns normally and resumes
/// the exit at its own outermost frame. One interception (the backend's,
/// around the kernel) and no resume in between.
#[derive(Debug)]
pub enum Native {}

impl Boundary for CEntry {
    #[inline]
    fn run<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
        catch_unwind(AssertUnwindSafe(f))
    }

    #[inline]
    fn run_launch<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
        catch_unwind(AssertUnwindSafe(f))
    }

    #[inline]
    fn after_launch() {
        // Everything of ours below has returned (locks released); continue
        // the exit from the entry's frame, past the panic boundary, which
        // must not meet the forced unwind.
        omptarget_thread_exit::resume_pending();
    }
}

impl Boundary for Native {
    /// Caught, as a library plugin's entry catches it: the runtime calls
    /// plugins from its teardown and from `Drop` impls (a buffer freed
    /// while a program's panic unwinds), where a second panic would abort,
    /// and a plugin that panics in `init_plugin` is skipped, not fatal.
    /// Off the launch path, the catch costs nothing that shows.
    #[inline]
    fn run<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
        catch_unwind(AssertUnwindSafe(f))
    }

    /// Not caught: the launch's one boundary is its caller's.
    #[inline]
    fn run_launch<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
        Ok(f())
    }

    #[inline]
    fn after_launch() {}
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::CEntry {}
    impl Sealed for super::Native {}
}

//! Where the shutdown report of the process-wide runtime goes.
//!
//! `OMPTARGET_SHUTDOWN_REPORT=1` (or `stderr`) prints it to stderr;
//! any other non-empty value is a file path the report is appended to
//! (created if missing): a process that shuts down several runtimes (one
//! per dlopen/dlclose cycle of an offload library) keeps every report.
//! Unset or empty: the report is only logged at debug level.
//!
//! `OMPTARGET_LEAK_REPORT` takes the same values for the leak report
//! ([`omptarget::leak_report::LeakReport`]): what the program never freed or
//! unmapped, with the source location of each allocating call where the
//! program has debug info. Set, it also makes every allocation record its
//! return address into the program (`omptarget::Config::from_env`).

use omptarget::ShutdownReport;

pub(crate) fn emit(report: &ShutdownReport) {
    tracing::debug!(target: "omptarget::shutdown", "{report}");
    write_to_var("OMPTARGET_SHUTDOWN_REPORT", "shutdown report", || {
        format!("{report}\n")
    });
    write_to_var("OMPTARGET_LEAK_REPORT", "leak report", || {
        report.leaks().to_string()
    });
}

/// Write `text()` where `var` says (see the module docs).
fn write_to_var(var: &str, what: &str, text: impl FnOnce() -> String) {
    if let Err(err) = omptarget::shutdown_report::write_where_var_says(var, text) {
        eprintln!("Libomptarget error: cannot write the {what} to {err}");
    }
}

//! Where the shutdown report of the process-wide runtime goes.
//!
//! `OMPTARGET_SHUTDOWN_REPORT=1` (or `stderr`) prints it to stderr;
//! any other non-empty value is a file path the report is appended to
//! (created if missing): a process that shuts down several runtimes (one
//! per dlopen/dlclose cycle of an offload library) keeps every report.
//! Unset or empty: the report is only logged at debug level.

use omptarget::ShutdownReport;
use std::io::Write;

pub(crate) fn emit(report: &ShutdownReport) {
    tracing::debug!(target: "omptarget::shutdown", "{report}");
    let Some(dest) = std::env::var_os("OMPTARGET_SHUTDOWN_REPORT") else {
        return;
    };
    if dest.is_empty() {
        return;
    }
    let text = format!("{report}\n");
    if dest == "1" || dest == "stderr" {
        eprint!("{text}");
    } else if let Err(err) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&dest)
        .and_then(|mut file| file.write_all(text.as_bytes()))
    {
        eprintln!(
            "Libomptarget error: cannot write the shutdown report to {}: {err}",
            dest.to_string_lossy()
        );
    }
}

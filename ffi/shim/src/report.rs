//! Where the shutdown report of the process-wide runtime goes.
//!
//! `OMPTARGET_SHUTDOWN_REPORT=1` (or `stderr`) prints it to stderr;
//! any other non-empty value is a file path to write it to. Unset: the
//! report is only logged at debug level.

use omptarget::ShutdownReport;

pub(crate) fn emit(report: &ShutdownReport) {
    tracing::debug!(target: "omptarget::shutdown", "{report}");
    let Some(dest) = std::env::var_os("OMPTARGET_SHUTDOWN_REPORT") else {
        return;
    };
    let text = format!("{report}\n");
    if dest == "1" || dest == "stderr" {
        eprint!("{text}");
    } else if let Err(err) = std::fs::write(&dest, text) {
        eprintln!(
            "Libomptarget error: cannot write the shutdown report to {}: {err}",
            dest.to_string_lossy()
        );
    }
}

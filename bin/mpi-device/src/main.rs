//! `omptarget-mpi-device`: serves one rank's devices to the offload
//! programs of an MPI job.
//!
//! Started by `mpirun` beside the program (`mpirun -np 1 ./app : -np N
//! omptarget-mpi-device`, or `omptarget run --mpi N -- ./app`). It joins
//! the job (collectively with the program's ranks), builds an
//! `omptarget::Runtime` over its local plugin (the built-in host plugin by
//! default, any plugin library with `--plugin PATH`), and answers requests
//! one at a time until every program rank has said `Exit`. Then it shuts
//! its runtime down in the fixed order, acknowledges with the teardown's
//! summary, leaves MPI and exits 0.
//!
//! A program rank that dies instead of saying `Exit` (possible only under
//! `mpirun --enable-recovery`: otherwise Open MPI ends the job) is
//! noticed within about a quarter of a second and forgotten; the server
//! serves the others, and when none is left shuts its runtime down all
//! the same, says so on stderr, leaves MPI and exits 1: a client did not
//! end well, and the exit status says so.
mod error;
mod server;

use server::{Ended, Server, ServerConfig};
use std::process::ExitCode;

const USAGE: &str = "usage: omptarget-mpi-device [--plugin PATH]

Serves this rank's devices to the offload programs of an MPI job; start it
with mpirun beside the program: mpirun -np 1 ./app : -np N omptarget-mpi-device

  --plugin PATH   serve the devices of this plugin library (default: the
                  built-in host plugin, x86_64 devices in this process)";

fn main() -> ExitCode {
    // A device server is never a program rank: an MPI plugin loaded by its
    // runtime (`--plugin libomptarget.rtl.mpi.so`) must not join the job
    // as one (its collective join would wait for ever) and has no devices
    // here, by the rule that plugin itself applies. Set first, while this
    // process has one thread.
    std::env::set_var("OMPTARGET_MPI_DISABLE", "1");
    let mut config = ServerConfig::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--plugin" => match args.next() {
                Some(path) => config.plugin = Some(path.into()),
                None => return usage("--plugin needs a path"),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => return usage(&format!("unknown argument {other:?}")),
        }
    }
    match Server::start(config).and_then(Server::serve) {
        Ok(Ended::Exited) => ExitCode::SUCCESS,
        Ok(Ended::ProgramsDied(who)) => {
            eprintln!(
                "omptarget-mpi-device: program rank(s) died without saying exit ({who}); its devices were torn down"
            );
            ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("omptarget-mpi-device: {err}");
            ExitCode::FAILURE
        }
    }
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("omptarget-mpi-device: {problem}\n{USAGE}");
    ExitCode::from(2)
}

//! `omptarget`: what users need around the runtime.
//!
//! * `omptarget info [--json]`: every plugin tried (loaded, or skipped and
//!   why) and every device with its properties.
//! * `omptarget run [--profile FILE] [--leak-report] [--report] -- PROGRAM
//!   ARGS...`: run a clang offload program on this runtime (the libraries
//!   installed beside this binary, or staged in the repository), with no
//!   `LD_LIBRARY_PATH` to set; the exit status is the program's (1 for a
//!   leak with `--leak-report`).
//! * `omptarget profile FILE`: a summary table of a `LIBOMPTARGET_PROFILE`
//!   trace.
//! * `omptarget mpi-program-rank -- PROGRAM ARGS...` (hidden): what
//!   `run --mpi N` has `mpirun` start as the program's rank.
//!
//! Modules: `info`, `run`, `profile` and `program_rank`, one per
//! subcommand, `libdir`
//! (where the runtime's libraries are, from this binary's own path) and
//! `signals` (what `run` passes on to the job), `capacity` (how many
//! device servers `run --mpi` may start). How
//! the command works: `docs/debug-output.md` in the repository.
mod capacity;
mod info;
mod libdir;
mod profile;
mod program_rank;
mod run;
mod signals;

use clap::{Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "omptarget",
    version,
    about = "The omptarget-rs OpenMP offload runtime's tool"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Plugins tried (loaded or skipped, and why) and devices with their properties.
    Info {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run an OpenMP offload program on this runtime.
    Run {
        /// Write a Chrome trace (LIBOMPTARGET_PROFILE) to FILE.
        #[arg(long, value_name = "FILE")]
        profile: Option<PathBuf>,
        /// Print the leak report at exit; a leak makes the exit status 1.
        #[arg(long)]
        leak_report: bool,
        /// Print the runtime's shutdown report at exit.
        #[arg(long)]
        report: bool,
        /// Start N device servers (omptarget-mpi-device) beside the program
        /// with mpirun: their devices become the program's, after the
        /// local ones.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        mpi: Option<u32>,
        /// The plugin library the device servers serve (default: their
        /// built-in host plugin).
        #[arg(long, value_name = "PATH", requires = "mpi")]
        mpi_plugin: Option<PathBuf>,
        /// Each program rank spawns its own N servers (MPI_Comm_spawn)
        /// instead of sharing a job with them: the program's
        /// MPI_COMM_WORLD holds its own ranks only, as an MPI program
        /// needs. Chosen by itself for a program linked with Open MPI.
        #[arg(long, requires = "mpi")]
        spawn: bool,
        /// Program ranks to start (spawned servers only: each has its own
        /// N servers).
        #[arg(long, value_name = "K", requires = "mpi", value_parser = clap::value_parser!(u32).range(1..))]
        ranks: Option<u32>,
        /// The program and its arguments.
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "PROGRAM"
        )]
        program: Vec<OsString>,
    },
    /// Summarise a profile written by LIBOMPTARGET_PROFILE or `run --profile`.
    Profile {
        /// The trace file.
        file: PathBuf,
    },
    /// The program's rank of a `run --mpi N` job: runs the program, and
    /// joins the job in its place if it never did (internal).
    #[command(name = "mpi-program-rank", hide = true)]
    MpiProgramRank {
        /// The program and its arguments.
        #[arg(
            required = true,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "PROGRAM"
        )]
        program: Vec<OsString>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { json } => info::info(json).map(|()| ExitCode::SUCCESS),
        Command::Run {
            profile,
            leak_report,
            report,
            mpi,
            mpi_plugin,
            spawn,
            ranks,
            program,
        } => run::run(&run::RunOptions {
            profile,
            leak_report,
            report,
            mpi: mpi.map(|servers| run::MpiOptions {
                servers,
                plugin: mpi_plugin,
                spawn,
                ranks,
            }),
            program,
        }),
        Command::Profile { file } => profile::summary(&file).map(|()| ExitCode::SUCCESS),
        Command::MpiProgramRank { program } => program_rank::program_rank(&program),
    };
    result.unwrap_or_else(|err| {
        eprintln!("omptarget: error: {err:#}");
        ExitCode::from(2)
    })
}

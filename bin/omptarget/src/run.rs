//! `omptarget run`: a clang offload program on this runtime.
//!
//! The program finds our `libomptarget.so` (and, for newer clang releases,
//! the SONAMEs they ask for) through `LD_LIBRARY_PATH`, which is set to
//! the runtime's library folder in front of what the user had; it beats
//! the `RUNPATH` clang writes. The reports are asked for with the
//! runtime's own variables, so they are written by the runtime at its
//! shutdown, also when the program calls `exit()`.
use crate::signals::Forwarding;
use crate::{capacity, libdir};
use anyhow::{Context, Result};
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// What `run` was asked for.
pub struct RunOptions {
    /// `--profile FILE`.
    pub profile: Option<PathBuf>,
    /// `--leak-report`.
    pub leak_report: bool,
    /// `--report`.
    pub report: bool,
    /// `--mpi N [--mpi-plugin PATH]`.
    pub mpi: Option<MpiOptions>,
    /// The program and its arguments.
    pub program: Vec<OsString>,
}

/// Device servers to start beside the program.
pub struct MpiOptions {
    /// How many (`mpirun -np N omptarget-mpi-device`).
    pub servers: u32,
    /// The plugin they serve (`--plugin PATH`).
    pub plugin: Option<PathBuf>,
    /// `--spawn`: each program rank spawns its own servers.
    pub spawn: bool,
    /// `--ranks K`: program ranks (spawned servers only).
    pub ranks: Option<u32>,
}

/// The device server's executable.
const MPI_SERVER: &str = "omptarget-mpi-device";

/// The device server next to the runtime: `LIB/../bin` (installed, and
/// `target/omptarget/bin` where `cargo xtask stage` puts it).
fn mpi_server(lib_dir: &std::path::Path) -> Result<PathBuf> {
    let server = lib_dir.join("../bin").join(MPI_SERVER);
    anyhow::ensure!(
        server.is_file(),
        "cannot find {MPI_SERVER} at {} (install with `cargo xtask install`, or `cargo xtask stage`)",
        server.display()
    );
    Ok(server.canonicalize()?)
}

/// The launcher starting the program (one rank) and the servers: MPMD,
/// so the servers share the program's job, as `mpirun -np 1 ./app : -np
/// N omptarget-mpi-device` does by hand. Which launcher:
/// `OMPTARGET_MPI_FAMILY` (`openmpi`, `mpich`; the variable the plugin
/// and servers read to choose their library, passed on to them), else
/// Open MPI's `mpirun`.
///
/// Open MPI passes on only the variables named with `-x`: each one this
/// tool sets is named. MPICH's `mpiexec.hydra` passes on the whole
/// environment, and tells a rank nothing of the job's contexts, so every
/// rank gets `OMPTARGET_MPI=1` (the program's rank may have servers; the
/// servers ignore it).
///
/// The program's rank is this binary's `mpi-program-rank`, which runs
/// the program and joins in its place if it never does
/// ([`crate::program_rank`]): else a program that never offloads would
/// leave the servers waiting for it for ever.
fn mpirun(
    mpi: &MpiOptions,
    lib_dir: &std::path::Path,
    program: &OsString,
    args: &[OsString],
    vars: &[&str],
) -> Result<Command> {
    use omptarget_plugin_mpi::mpi::Family;
    let server = mpi_server(lib_dir)?;
    let family = match std::env::var("OMPTARGET_MPI_FAMILY") {
        Ok(name) => Family::parse(&name)?,
        Err(_) => Family::OpenMpi,
    };
    if mpi.spawn || links_mpi(program, family) {
        return Ok(spawning(mpi, family, &server, program, args, vars));
    }
    anyhow::ensure!(
        mpi.ranks.is_none(),
        "--ranks needs --spawn: servers started beside the program serve one program rank"
    );
    let mut cmd;
    match family {
        Family::OpenMpi => cmd = open_mpi_launcher(vars.iter().copied()),
        Family::Mpich => {
            cmd = Command::new("mpiexec.hydra");
            cmd.args(["-genv", "OMPTARGET_MPI", "1"]);
        }
    }
    let this = std::env::current_exe().context("finding this program's own path")?;
    cmd.args(["-np", "1"])
        .arg(this)
        .args(["mpi-program-rank", "--"])
        .arg(program)
        .args(args);
    cmd.args([":", "-np"])
        .arg(mpi.servers.to_string())
        .arg(server);
    if let Some(plugin) = &mpi.plugin {
        cmd.arg("--plugin").arg(std::path::absolute(plugin)?);
    }
    Ok(cmd)
}

/// Open MPI's `mpirun`, passing `vars` on to every rank (it passes only
/// the variables named with `-x`), oversubscribing (the servers need
/// slots beyond the program's ranks, on a machine of few cores).
fn open_mpi_launcher<'a>(vars: impl Iterator<Item = &'a str>) -> Command {
    let mut cmd = Command::new("mpirun");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        // Open MPI refuses root unless told; containers and CI run as root.
        cmd.arg("--allow-run-as-root");
    }
    cmd.arg("--oversubscribe");
    for var in vars {
        cmd.args(["-x", var]);
    }
    cmd
}

/// The launcher starting `--ranks` program ranks (1 by default), each of
/// which spawns its own servers (`OMPTARGET_MPI_SPAWN`, read by the MPI
/// plugin): the program's `MPI_COMM_WORLD` holds its own ranks only, as an
/// MPI program needs. No stand-in is needed: a rank that never offloads
/// spawns nothing.
fn spawning(
    mpi: &MpiOptions,
    family: omptarget_plugin_mpi::mpi::Family,
    server: &std::path::Path,
    program: &OsString,
    args: &[OsString],
    vars: &[&str],
) -> Command {
    use omptarget_plugin_mpi::mpi::Family;
    let mut cmd;
    let mut spawn_vars = vec![
        (
            "OMPTARGET_MPI_SPAWN",
            OsString::from(mpi.servers.to_string()),
        ),
        ("OMPTARGET_MPI_SERVER", server.as_os_str().to_owned()),
    ];
    if let Some(plugin) = &mpi.plugin {
        let plugin = std::path::absolute(plugin).unwrap_or_else(|_| plugin.clone());
        spawn_vars.push(("OMPTARGET_MPI_SERVER_PLUGIN", plugin.into_os_string()));
    }
    match family {
        Family::OpenMpi => {
            cmd = open_mpi_launcher(
                vars.iter()
                    .chain(spawn_vars.iter().map(|(name, _)| name))
                    .copied(),
            )
        }
        // Hydra passes the whole environment on.
        Family::Mpich => cmd = Command::new("mpiexec.hydra"),
    }
    for (name, value) in spawn_vars {
        cmd.env(name, value);
    }
    cmd.args(["-np", &mpi.ranks.unwrap_or(1).to_string()])
        .arg(program)
        .args(args);
    cmd
}

/// Whether `program` (found on `PATH` when it names no folder) is an ELF
/// file that links `family`'s MPI library (`DT_NEEDED`): an MPI program,
/// whose servers must not share its `MPI_COMM_WORLD`.
fn links_mpi(program: &OsString, family: omptarget_plugin_mpi::mpi::Family) -> bool {
    use object::read::elf::{Dyn, ElfFile64, FileHeader};
    let path = std::path::Path::new(program);
    let found = if path.components().count() > 1 {
        Some(path.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|dirs| {
            std::env::split_paths(&dirs)
                .map(|dir| dir.join(path))
                .find(|candidate| candidate.is_file())
        })
    };
    let Some(bytes) = found.and_then(|p| std::fs::read(p).ok()) else {
        return false;
    };
    let Ok(elf) = ElfFile64::<object::Endianness>::parse(&*bytes) else {
        return false;
    };
    let wanted = family.constants().library.as_bytes();
    let endian = elf.endian();
    let header = elf.elf_header();
    let Ok(sections) = header.sections(endian, &*bytes) else {
        return false;
    };
    // The dynamic section, and the index of the string table it links.
    let Ok(Some((dynamic, strings))) = sections.dynamic(endian, &*bytes) else {
        return false;
    };
    let Ok(strings) = sections.strings(endian, &*bytes, strings) else {
        return false;
    };
    dynamic.iter().any(|entry| {
        entry.d_tag(endian) as u32 == object::elf::DT_NEEDED
            && entry
                .string(endian, strings)
                .is_ok_and(|name| name == wanted)
    })
}

/// The first line of a leak report that found leaks.
const LEAKS_MARK: &str = "omptarget leak report: LEAKS:";

/// Run the program; its exit status, or 1 for a leak with `--leak-report`
/// when the program itself succeeded.
pub fn run(options: &RunOptions) -> Result<ExitCode> {
    // First: a signal that comes while the job is being set up waits, and
    // is passed on once the job runs.
    let signals = Forwarding::block().context("blocking the signals to pass on")?;
    let lib_dir = libdir::find()?;
    let (program, args) = options.program.split_first().context("no program to run")?;
    let mut vars = vec!["LD_LIBRARY_PATH"];
    let mut cmd = Command::new(program);
    cmd.args(args);
    let mut path = OsString::from(lib_dir.as_os_str());
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        path.push(":");
        path.push(old);
    }
    cmd.env("LD_LIBRARY_PATH", path);
    if let Some(profile) = &options.profile {
        cmd.env("LIBOMPTARGET_PROFILE", std::path::absolute(profile)?);
        vars.push("LIBOMPTARGET_PROFILE");
    }
    if options.report {
        cmd.env("OMPTARGET_SHUTDOWN_REPORT", "stderr");
        vars.push("OMPTARGET_SHUTDOWN_REPORT");
    }
    // The runtime appends one report per shutdown to this file; read at
    // the end, it goes to stderr after everything the program printed.
    let leak_file = if options.leak_report {
        let file = tempfile::Builder::new()
            .prefix("omptarget-leaks-")
            .suffix(".txt")
            .tempfile()
            .context("creating the leak report's file")?;
        cmd.env("OMPTARGET_LEAK_REPORT", file.path());
        vars.push("OMPTARGET_LEAK_REPORT");
        Some(file)
    } else {
        None
    };
    if let Some(mpi) = &options.mpi {
        let (max, why) = capacity::max_servers()?;
        anyhow::ensure!(
            u64::from(mpi.servers) <= max,
            "--mpi {}: this machine can start at most {max} device servers ({why})",
            mpi.servers
        );
        // The same environment, on the program's rank and the servers'.
        let mut launcher = mpirun(mpi, &lib_dir, program, args, &vars)?;
        for (key, value) in cmd.get_envs() {
            if let Some(value) = value {
                launcher.env(key, value);
            }
        }
        cmd = launcher;
    }
    let mut child = signals
        .spawn(&mut cmd)
        .with_context(|| format!("cannot run {}", program.to_string_lossy()))?;
    let status = signals
        .wait(&mut child)
        .with_context(|| format!("waiting for {}", program.to_string_lossy()))?;
    let code = match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => {
            eprintln!(
                "omptarget: {} was killed by signal {signal}",
                program.to_string_lossy()
            );
            128 + signal
        }
        (None, None) => 1,
    };
    let mut leaked = false;
    if let Some(file) = &leak_file {
        let text = std::fs::read_to_string(file.path()).context("reading the leak report")?;
        if text.is_empty() {
            eprintln!(
                "omptarget: no leak report: {} never started the offload runtime",
                program.to_string_lossy()
            );
        } else {
            eprint!("{text}");
            leaked = text.lines().any(|l| l.starts_with(LEAKS_MARK));
        }
    }
    if let Some(profile) = &options.profile {
        if !profile.exists() {
            eprintln!(
                "omptarget: no profile written to {}: the program never started the offload runtime",
                profile.display()
            );
        }
    }
    let code = if code == 0 && leaked { 1 } else { code };
    Ok(ExitCode::from(u8::try_from(code & 0xff).unwrap_or(1)))
}

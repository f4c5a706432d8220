//! This program rank's own device servers, started with `MPI_Comm_spawn`
//! when `OMPTARGET_MPI_SPAWN=N` asks for them.
//!
//! The servers join through MPI's dynamic process management, not as
//! members of the program's job: the program's `MPI_COMM_WORLD` holds its
//! own ranks only, so its collectives and point-to-point calls work as
//! without servers. Each program rank spawns over `MPI_COMM_SELF`, alone,
//! when its plugin initialises; its servers serve it alone (two program
//! ranks never share a server, so no server waits on another rank's
//! copy).
//!
//! What starts:
//! * `OMPTARGET_MPI_SERVER=PATH`, or else `omptarget-mpi-device` in the
//!   `bin` folder beside the plugin's `lib` folder (the layout of
//!   `cargo xtask stage` and of an install);
//! * with `--plugin PATH` when `OMPTARGET_MPI_SERVER_PLUGIN=PATH` names the
//!   plugin the servers serve (the built-in host plugin otherwise).
use crate::world::Spawn;
use omptarget_mpi_wire::mpi::{spawn_count_by, BadSpawnCount};
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// Why the servers asked for cannot be described.
#[derive(Debug, thiserror::Error)]
pub enum SpawnConfigError {
    /// `OMPTARGET_MPI_SPAWN` is not a count.
    #[error(transparent)]
    Count(#[from] BadSpawnCount),
    /// `OMPTARGET_MPI_TIMEOUT` is not a number of seconds.
    #[error(transparent)]
    Limit(#[from] omptarget_mpi_wire::world::liveness::BadLimit),
    /// The server's executable is not there.
    #[error("no device server at {path} ({why}): install omptarget-mpi-device there, or name it with OMPTARGET_MPI_SERVER=PATH")]
    NoServer {
        /// Where it was looked for.
        path: PathBuf,
        /// What the file system said.
        why: std::io::Error,
    },
    /// The plugin the servers are to serve is not there.
    #[error("OMPTARGET_MPI_SERVER_PLUGIN names {path}, which is not there ({why})")]
    NoServerPlugin {
        /// What it names.
        path: PathBuf,
        /// What the file system said.
        why: std::io::Error,
    },
    /// This plugin's own file could not be found (to find the server
    /// beside it).
    #[error("the MPI plugin cannot find its own library file (to find omptarget-mpi-device beside it): name the server with OMPTARGET_MPI_SERVER=PATH")]
    NoPluginFile,
    /// A path or argument holds a NUL byte.
    #[error("{what} holds a NUL byte: {value:?}")]
    Nul {
        /// Which.
        what: &'static str,
        /// Its text.
        value: String,
    },
}

/// The servers `OMPTARGET_MPI_SPAWN` asks for, from the environment;
/// `Ok(None)` when it asks for none.
pub fn configured() -> Result<Option<Spawn>, SpawnConfigError> {
    configured_by(|name| std::env::var_os(name), own_file)
}

/// [`configured`] over `var` and where this plugin's file is (testable).
pub fn configured_by(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
    plugin_file: impl FnOnce() -> Option<PathBuf>,
) -> Result<Option<Spawn>, SpawnConfigError> {
    let text = |name: &str| var(name).map(|v| v.to_string_lossy().into_owned());
    let Some(servers) = spawn_count_by(text)? else {
        return Ok(None);
    };
    // Checked before anything is spawned: a server given a bad limit
    // refuses to start, which ends the whole job.
    omptarget_mpi_wire::world::liveness::limit_by(text)?;
    if omptarget_mpi_wire::mpi::job_of_several_contexts_by(text) {
        // Servers started beside the program (`mpirun ./app : -np N
        // omptarget-mpi-device`) wait for this rank in the job's
        // collective join: it joins them, and spawns none.
        let line = "omptarget-rs plugin mpi: OMPTARGET_MPI_SPAWN is ignored in a job that starts its servers beside the program\n";
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        return Ok(None);
    }
    let command = match var("OMPTARGET_MPI_SERVER") {
        Some(path) => PathBuf::from(path),
        None => {
            let plugin = plugin_file().ok_or(SpawnConfigError::NoPluginFile)?;
            beside(&plugin)
        }
    };
    if let Err(why) = std::fs::metadata(&command) {
        return Err(SpawnConfigError::NoServer { path: command, why });
    }
    let mut args = Vec::new();
    if let Some(plugin) = var("OMPTARGET_MPI_SERVER_PLUGIN") {
        // Checked here: a server that cannot load it would end the job.
        if let Err(why) = std::fs::metadata(&plugin) {
            return Err(SpawnConfigError::NoServerPlugin {
                path: plugin.into(),
                why,
            });
        }
        args.push(c_string("--plugin", "an argument")?);
        args.push(c_string(
            &plugin.to_string_lossy(),
            "OMPTARGET_MPI_SERVER_PLUGIN",
        )?);
    }
    Ok(Some(Spawn {
        command: c_string(&command.to_string_lossy(), "OMPTARGET_MPI_SERVER")?,
        args,
        servers,
    }))
}

/// `omptarget-mpi-device` in the `bin` folder beside the plugin's folder.
fn beside(plugin: &Path) -> PathBuf {
    let lib = plugin.parent().unwrap_or(Path::new("."));
    lib.parent()
        .unwrap_or(Path::new(".."))
        .join("bin")
        .join("omptarget-mpi-device")
}

fn c_string(value: &str, what: &'static str) -> Result<CString, SpawnConfigError> {
    CString::new(value).map_err(|_| SpawnConfigError::Nul {
        what,
        value: value.to_owned(),
    })
}

/// The file this code was loaded from (`dladdr` of one of its functions).
fn own_file() -> Option<PathBuf> {
    let path = crate::program_init::file_of(own_file as *const () as usize)?;
    std::fs::canonicalize(&path).ok().or(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_server_beside_the_plugin_is_spawned_with_the_named_plugin() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("lib")).unwrap();
        std::fs::create_dir_all(dir.path().join("bin")).unwrap();
        let server = dir.path().join("bin/omptarget-mpi-device");
        std::fs::write(&server, b"").unwrap();
        let plugin = dir.path().join("lib/libomptarget.rtl.mpi.so");
        let server_plugin = dir.path().join("lib/libomptarget.rtl.cuda.so");
        std::fs::write(&server_plugin, b"").unwrap();
        let spawn = configured_by(
            env(&[
                ("OMPTARGET_MPI_SPAWN", "3"),
                (
                    "OMPTARGET_MPI_SERVER_PLUGIN",
                    server_plugin.to_str().unwrap(),
                ),
            ]),
            || Some(plugin),
        )
        .unwrap()
        .unwrap();
        assert_eq!(spawn.servers, 3);
        assert_eq!(spawn.command.to_str().unwrap(), server.to_str().unwrap());
        let args: Vec<_> = spawn.args.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(args, ["--plugin", server_plugin.to_str().unwrap()]);
    }

    #[test]
    fn no_count_no_spawn_and_bad_input_is_a_clear_error() {
        assert!(configured_by(env(&[]), || None).unwrap().is_none());
        let bad = configured_by(env(&[("OMPTARGET_MPI_SPAWN", "lots")]), || None).unwrap_err();
        assert!(matches!(bad, SpawnConfigError::Count(_)), "{bad}");
        let bad_limit = configured_by(
            env(&[
                ("OMPTARGET_MPI_SPAWN", "1"),
                ("OMPTARGET_MPI_TIMEOUT", "soon"),
            ]),
            || None,
        )
        .unwrap_err();
        assert!(
            matches!(bad_limit, SpawnConfigError::Limit(_)),
            "{bad_limit}"
        );
        let missing = configured_by(
            env(&[
                ("OMPTARGET_MPI_SPAWN", "1"),
                ("OMPTARGET_MPI_SERVER", "/nonexistent/server"),
            ]),
            || None,
        )
        .unwrap_err();
        assert!(
            matches!(missing, SpawnConfigError::NoServer { .. }),
            "{missing}"
        );
        assert!(
            missing.to_string().contains("/nonexistent/server"),
            "{missing}"
        );
        let no_plugin = configured_by(
            env(&[
                ("OMPTARGET_MPI_SPAWN", "1"),
                ("OMPTARGET_MPI_SERVER", "/bin/sh"),
                ("OMPTARGET_MPI_SERVER_PLUGIN", "/nonexistent/plugin.so"),
            ]),
            || None,
        )
        .unwrap_err();
        assert!(
            matches!(no_plugin, SpawnConfigError::NoServerPlugin { .. }),
            "{no_plugin}"
        );
        let mpmd = configured_by(
            env(&[("OMPTARGET_MPI_SPAWN", "1"), ("OMPI_NUM_APP_CTX", "2")]),
            || None,
        )
        .unwrap();
        assert!(mpmd.is_none(), "servers beside the program: none spawned");
        let no_file = configured_by(env(&[("OMPTARGET_MPI_SPAWN", "1")]), || None).unwrap_err();
        assert!(
            matches!(no_file, SpawnConfigError::NoPluginFile),
            "{no_file}"
        );
    }

    #[test]
    fn this_code_knows_its_own_file() {
        let file = own_file().expect("dladdr answers for a function of this object");
        assert!(file.is_file(), "{}", file.display());
    }
}

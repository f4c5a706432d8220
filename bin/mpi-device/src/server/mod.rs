//! The request loop: one request at a time, each answered before the next.
//!
//! Its parts: [`handle`] (what each request does), [`data`] (bulk data
//! between MPI and the devices) and [`capabilities`] (what the devices
//! run and where their memory is, from what their plugin reports).
use crate::error::ServeError;
use capabilities::memory_is_this_process;
use handle::ImageStorage;
use omptarget::{Config, Device, Runtime};
use omptarget_mpi_wire::protocol::{self, Op, Request, REPLY_SLOT, REQUEST_SLOT, REQUEST_TAG};
use omptarget_mpi_wire::world::{Role, World};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Weak};

mod capabilities;
mod data;
mod handle;
mod kernel_exit;

pub use data::send_reply;

/// A request's reply message (empty: already sent), or why it failed.
type Reply = Result<Vec<u8>, ServeError>;

/// The reply of a request that succeeded with nothing to say.
fn ok() -> Reply {
    Ok(protocol::Reply::Ok(()).encode())
}

/// How to start.
#[derive(Debug, Default)]
pub struct ServerConfig {
    /// The plugin library whose devices are served; `None`: the built-in
    /// host plugin.
    pub plugin: Option<PathBuf>,
}

/// A running server.
pub struct Server {
    /// Shared with the thread answering pings ([`World::answer_pings`]).
    world: std::sync::Arc<World>,
    runtime: Option<Runtime>,
    /// Memory in this process is the device's (the host plugin): bulk data
    /// moves straight between MPI and device memory, with no staging copy.
    direct: bool,
    /// What each client loaded, by (device, client rank, image key).
    images: HashMap<(u32, i32, u64), Arc<ImageStorage>>,
    /// The image bytes each client shipped, by (client rank, image id):
    /// held while an image of them is loaded.
    shipped: HashMap<(i32, u64), Weak<Vec<u8>>>,
    /// Images clients asked about (`CanRun`), and their bytes (for the
    /// shutdown summary: what registration cost in traffic).
    asked: (usize, u64),
    /// Images shipped here, and their bytes (for the shutdown summary).
    received: (usize, u64),
    /// Requests answered, and one-way copies (for the shutdown summary:
    /// what a program costs in round trips).
    served: u64,
    one_way: u64,
    /// A client's failed `SubmitInline`, for its next request's reply.
    deferred: HashMap<i32, String>,
    /// What each client allocated, by device: freed at its `DeinitDevice`.
    allocations: HashMap<(u32, i32), BTreeSet<u64>>,
    /// The program ranks that have not said `Exit` (nor died).
    clients: BTreeSet<i32>,
}

/// How serving ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every program rank said `Exit`.
    Exited,
    /// Every program rank said `Exit` or died, and at least one died
    /// (only possible under `mpirun --enable-recovery`): the runtime was
    /// shut down all the same. The text says who died.
    ProgramsDied(String),
}

impl Server {
    /// Join the job and build the runtime over the local plugin.
    pub fn start(config: ServerConfig) -> Result<Server, ServeError> {
        let world = std::sync::Arc::new(World::join(Role::Server)?);
        world.check_thread_level()?;
        world.check_limit()?;
        // Pings answered while this thread serves or runs a kernel: a
        // slow kernel is not a silent server.
        world.answer_pings().map_err(ServeError::Responder)?;
        // Stopped on every early return below: its thread holds the world
        // (and calls MPI) until told to end.
        let answering = scopeguard::guard(std::sync::Arc::clone(&world), |w| w.stop_answering());
        let mut runtime_config = Config::default();
        // Never the program's plugin list (OMPTARGET_PLUGINS may name the
        // MPI plugin itself): only the plugin this server was told to use.
        match &config.plugin {
            Some(path) => {
                // SAFETY: the plugin library the server's command line
                // names (`--plugin`): whoever starts the job vouches for it,
                // as for the program's own libraries.
                runtime_config = unsafe { runtime_config.with_plugins([path.clone()]) };
            }
            None => {
                // SAFETY: an empty list: no library is loaded (the
                // built-in host plugin, turned back on, is this crate's).
                runtime_config = unsafe { runtime_config.with_plugins(Vec::<PathBuf>::new()) }
                    .with_builtin_host(true);
            }
        }
        // The program's profile, one file per server: FILE.rankN.
        if let Some(file) = std::env::var_os("LIBOMPTARGET_PROFILE").filter(|f| !f.is_empty()) {
            let mut file = file;
            file.push(format!(".rank{}", world.rank));
            runtime_config.profile = Some(file.into());
        }
        let runtime = Runtime::new(runtime_config).map_err(ServeError::Runtime)?;
        // After MPI and the runtime started, before any image is loaded.
        kernel_exit::install()?;
        // Served devices must be this process's own: the MPI plugin (whose
        // devices are other servers') has none here (main turns MPI off
        // for the server's own runtime), and any other plugin's remote
        // device is refused by what it reports, not by its file name.
        if let Some(remote) = runtime.devices().find(|d| d.is_remote()) {
            return Err(ServeError::RemoteDevices {
                plugin: remote.plugin_name().to_owned(),
            });
        }
        let direct = memory_is_this_process(runtime.devices().map(|d| d.kind()));
        let clients = world.ranks(Role::Program).into_iter().collect();
        scopeguard::ScopeGuard::into_inner(answering);
        Ok(Server {
            world,
            runtime: Some(runtime),
            direct,
            images: HashMap::new(),
            allocations: HashMap::new(),
            shipped: HashMap::new(),
            asked: (0, 0),
            received: (0, 0),
            served: 0,
            one_way: 0,
            deferred: HashMap::new(),
            clients,
        })
    }

    fn runtime(&self) -> &Runtime {
        self.runtime
            .as_ref()
            .expect("the runtime lives until the last Exit")
    }

    fn device(&self, id: u32) -> Result<&Device, ServeError> {
        self.runtime()
            .device(id as usize)
            .map_err(|source| ServeError::NoDevice { id, source })
    }

    /// Answer requests until every client has said `Exit` (or died); then
    /// tear down and leave the job.
    ///
    /// While it waits for a request it checks, every
    /// [`omptarget_mpi_wire::world::CHECK_EVERY`], whether the clients
    /// still live; a dead one is forgotten, and when none is left the
    /// runtime is shut down and the server leaves: no server outlives a
    /// killed program, even under `mpirun --enable-recovery`.
    pub fn serve(mut self) -> Result<Ended, ServeError> {
        let mut deaths = Vec::new();
        // The posted receive's buffer, reused from request to request.
        let mut buffer = Vec::with_capacity(REQUEST_SLOT);
        while !self.clients.is_empty() {
            // The receive takes a request from any program rank, so one
            // rank's death does not end it (another's request may be on
            // its way into it): it ends only once no rank is left alive.
            // A death is noted, and the dead are forgotten after it.
            let someone_died = std::cell::Cell::new(false);
            let watch = || {
                let mut deaths = self
                    .clients
                    .iter()
                    .filter_map(|&rank| self.world.death_of(rank));
                let first = deaths.next()?;
                someone_died.set(true);
                (1 + deaths.count() == self.clients.len()).then_some(first)
            };
            let received = self
                .world
                .post(
                    self.world.any_source(),
                    REQUEST_TAG,
                    std::mem::take(&mut buffer),
                    REQUEST_SLOT,
                )
                .and_then(|posted| {
                    self.world
                        .receive_message(posted, &watch, protocol::reply_tag_of)
                });
            if someone_died.get() {
                self.forget_dead_clients(&mut deaths);
            }
            let (client, message) = match received {
                Ok(received) => received,
                Err(_) if self.clients.is_empty() => continue,
                Err(err) => {
                    // The ping thread would call MPI while the process ends.
                    self.world.stop_answering();
                    return Err(err.into());
                }
            };
            let request = match Request::decode(&message) {
                Ok(request) => request,
                Err(err) => {
                    // Answered on the reply tag the request starts with, if
                    // it has one, so that the client does not wait for ever.
                    say(&format!("omptarget-mpi-device: from rank {client}: {err}"));
                    if let Some(tag) = protocol::reply_tag_of(&message) {
                        let reply = match protocol::message_len(&message) {
                            // Its rest was dropped (World::receive_message).
                            Ok(said) if said > message.len() as u64 => protocol::error_reply(
                                &format!("a request of {said} bytes cannot be held on this server"),
                            ),
                            _ => protocol::error_reply(&format!("malformed request: {err}")),
                        };
                        let _ = send_reply(&self.world, client, tag, REPLY_SLOT, &reply);
                    }
                    buffer = message;
                    continue;
                }
            };
            // Decoded, the request owns what it needs: its buffer takes
            // the next one (unless a long request, an image, grew it).
            if message.capacity() <= 4 * REQUEST_SLOT {
                buffer = message;
            }
            let tag = request.reply_tag;
            if let Op::SubmitInline { copies } = &request.op {
                // No reply: a failure answers the client's next request.
                for copy in copies {
                    self.one_way += 1;
                    if let Err(err) = self.submit_inline(copy.device, copy.ptr, &copy.data) {
                        self.deferred.entry(client).or_insert(format!(
                            "an earlier copy to device {} failed: {err}",
                            copy.device
                        ));
                    }
                }
                continue;
            }
            // A retrieve's reply precedes its data: an earlier failure is
            // its answer, and nothing is sent after it.
            let replies_first = matches!(request.op, Op::RetrieveBatch { .. });
            let slot = protocol::reply_slot(&request.op);
            self.served += 1;
            let earlier = match request.op {
                Op::Exit => {
                    // Nothing left to answer it: said here.
                    if let Some(err) = self.deferred.remove(&client) {
                        say(&format!(
                            "omptarget-mpi-device rank {}: program rank {client}: {err}",
                            self.world.rank
                        ));
                    }
                    None
                }
                // Questions about images or the server, not about the
                // client's data: an earlier copy's failure waits for a
                // request whose reply the client reads as the outcome of
                // its work (the plugin's `is_device_compatible` takes a
                // failed `CanRun` for "cannot tell", a warning, and would
                // lose it).
                Op::Hello | Op::CanRun { .. } => None,
                // Usually none: no hash of the rank per request.
                _ if self.deferred.is_empty() => None,
                _ => self.deferred.remove(&client),
            };
            let reply = match earlier {
                Some(err) if replies_first => Err(ServeError::Earlier(err)),
                earlier => {
                    let reply = self.handle(client, request);
                    match (earlier, reply) {
                        (Some(err), Ok(_)) => Err(ServeError::Earlier(err)),
                        (Some(earlier), Err(now)) => Err(ServeError::AfterEarlier {
                            now: Box::new(now),
                            earlier,
                        }),
                        (None, reply) => reply,
                    }
                }
            };
            let message = match reply {
                Ok(message) => message,
                Err(err) => protocol::error_reply(&err.to_string()),
            };
            // A transfer's data was sent or received inside `handle`; a
            // retrieve's reply went first (it precedes the data).
            if !message.is_empty() {
                if let Err(err) = send_reply(&self.world, client, tag, slot, &message) {
                    if !self.forget_dead_clients(&mut deaths) {
                        self.world.stop_answering();
                        return Err(err);
                    }
                }
            }
        }
        let ended = if deaths.is_empty() {
            Ended::Exited
        } else {
            // The last client died without saying `Exit`: the teardown it
            // would have asked for.
            if self.runtime.is_some() {
                self.shut_down();
            }
            Ended::ProgramsDied(deaths.join("; "))
        };
        self.world.stop_answering();
        match std::sync::Arc::try_unwrap(self.world) {
            Ok(world) => world.leave()?,
            // Not expected: the responder, the only other holder, ended.
            Err(world) => {
                world.detach()?;
                world.finalize_before_exit();
            }
        }
        Ok(ended)
    }

    /// Drop the clients found dead, noting each in `deaths`; whether any was.
    fn forget_dead_clients(&mut self, deaths: &mut Vec<String>) -> bool {
        let dead: Vec<(i32, String)> = self
            .clients
            .iter()
            .filter_map(|&rank| self.world.death_of(rank).map(|why| (rank, why)))
            .collect();
        for (rank, why) in &dead {
            self.clients.remove(rank);
            say(&format!(
                "omptarget-mpi-device rank {}: {why}; {} program rank(s) left",
                self.world.rank,
                self.clients.len()
            ));
            deaths.push(why.clone());
        }
        !dead.is_empty()
    }

    /// The teardown, in the runtime's fixed order; its one-line summary.
    fn shut_down(&mut self) -> String {
        let runtime = self.runtime.take().expect("shut down once");
        let report = runtime.shutdown();
        // The images' storage outlives their unload, which the shutdown did.
        self.images.clear();
        let rank = self.world.rank;
        let host = self.world.mpi.processor_name();
        let (images, bytes) = self.received;
        let (asked, asked_bytes) = self.asked;
        let shipped = format!(
            "{} request(s) answered, {} one-way copies; {images} image(s) shipped here ({bytes} bytes), {asked} asked about ({asked_bytes} bytes)",
            self.served, self.one_way
        );
        emit_report(&format!(
            "omptarget-mpi-device rank {rank} on {host}: {shipped}\n{report}\n"
        ));
        format!("rank {rank}: {}; {shipped}", report.summary())
    }
}

/// The server's shutdown report, where the program's goes
/// (`OMPTARGET_SHUTDOWN_REPORT`: `stderr` or a file appended to).
fn emit_report(text: &str) {
    let written =
        omptarget::shutdown_report::write_where_var_says("OMPTARGET_SHUTDOWN_REPORT", || {
            text.to_owned()
        });
    if let Err(err) = written {
        say(&format!(
            "omptarget-mpi-device: cannot write the shutdown report to {err}"
        ));
    }
}

/// `line` and a newline on stderr in one write, so that the lines of the
/// job's servers (one stderr, through mpirun) do not interleave.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

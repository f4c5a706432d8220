//! Joining the job: MPI initialised (or found initialised) with
//! `MPI_THREAD_MULTIPLE`, the plugin's own communicator, and who is who.
//!
//! Every rank of the job joins once, collectively: the program's ranks
//! when their plugin initialises, the device servers when they start.
//! Joining duplicates `MPI_COMM_WORLD` (so no message of ours can match a
//! receive of the program's, whatever its tags) and gathers each rank's
//! [`Role`], process id and host on the duplicate.
//!
//! Every wait is bounded by the peer's life: a send is an `MPI_Isend`, a
//! receive an `MPI_Irecv` (a request's or reply's first part posted before
//! it comes, [`World::post`]), each completed by
//! [`World::poll`], which spins on the test for the first
//! [`SPIN`] (no added latency), then naps [`NAP`] between tests, and every
//! [`CHECK_EVERY`] asks whether the peer still lives
//! ([`World::peer_alive`]). A dead peer ends the wait with an error that
//! names it; the request is cancelled and freed (one that completes while
//! it is being cancelled completed: its message is returned, not lost).
//! A server's wait for the next request, from any program rank, gives up
//! only when every program rank is dead: one rank's death must not cost
//! another its request.
//!
//! Why this matters only under `mpirun --enable-recovery`: by default Open
//! MPI ends the whole job when any rank dies by a signal, so nothing can
//! wait for a dead peer. With recovery enabled the job survives, a send to
//! a dead peer never completes (Open MPI 4.1, shared memory), and without
//! the check every survivor waiting for it would wait for ever.
//!
//! The check sees only peers whose process this rank can see: same boot
//! of the same machine (`/proc/sys/kernel/random/boot_id`) and same pid
//! namespace. A peer elsewhere answers "unknown", and a wait for it is
//! bounded only by Open MPI (which ends the job when a remote rank dies,
//! unless recovery is enabled).
//!
//! Its parts, one job each: [`peer`] (who a rank is, and whether it still
//! lives), [`wait`] (completing a request, bounded by its peer's life),
//! [`transfer`] (bytes to and from a rank, in fragments) and [`message`]
//! (a protocol message: its first part into a posted receive, its rest
//! after it).
use crate::error::MpiError;
use crate::mpi::{self, Handle, Mpi};
use peer::{own_process_table, proc_stat, RECORD};
use std::ffi::c_int;

pub mod liveness;
pub mod message;
pub mod peer;
pub mod transfer;
pub mod wait;

pub use message::Posted;
pub use peer::{Peer, Role};
pub use wait::{CHECK_EVERY, NAP, SPIN};

/// Why this rank could not join the job.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// An MPI call failed (or the library could not be opened).
    #[error(transparent)]
    Mpi(#[from] MpiError),
    /// The program finalised MPI before the plugin joined.
    #[error("the program already finalised MPI")]
    AlreadyFinalized,
    /// The program initialised MPI below `MPI_THREAD_MULTIPLE`: checked
    /// before any server is spawned for nothing.
    #[error(transparent)]
    ThreadLevel(#[from] ThreadLevel),
    /// `MPI_Comm_spawn` could not start the servers.
    #[error(
        "could not start {servers} device server(s) `{command}` with MPI_Comm_spawn: {source}"
    )]
    Spawn {
        /// The server's command.
        command: String,
        /// How many were asked for.
        servers: u32,
        /// MPI's error.
        source: MpiError,
    },
}

/// Device servers for this program rank alone, started with
/// `MPI_Comm_spawn` (MPI's dynamic process management): they are not
/// members of the program's `MPI_COMM_WORLD`, which keeps only the
/// program's ranks, so its collectives work as without servers.
#[derive(Debug, Clone)]
pub struct Spawn {
    /// The server's executable (`omptarget-mpi-device`).
    pub command: std::ffi::CString,
    /// Its arguments.
    pub args: Vec<std::ffi::CString>,
    /// How many servers.
    pub servers: u32,
}

/// Where this rank's peers are.
enum Peers<'a> {
    /// Every rank of `MPI_COMM_WORLD` (a job started MPMD: `mpirun -np 1
    /// ./app : -np 2 omptarget-mpi-device`).
    World,
    /// This program rank and the servers it spawns.
    Spawn(&'a Spawn),
    /// A spawned server: its parent program rank and its sibling servers.
    Parent(Handle),
    /// This rank alone: its servers could not be spawned.
    Alone,
}

/// MPI gives less than `MPI_THREAD_MULTIPLE`, which remote devices need.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the MPI library gives thread level {provided}, and remote devices need MPI_THREAD_MULTIPLE ({}){}",
    mpi::THREAD_MULTIPLE,
    if *initialised_here {
        " (Open MPI built without thread support?)"
    } else {
        ": the program initialised MPI; it must call MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)"
    }
)]
pub struct ThreadLevel {
    /// The level MPI gives.
    pub provided: c_int,
    /// Whether MPI was initialised here (else by the program).
    pub initialised_here: bool,
}

/// This rank's membership of the job.
pub struct World {
    /// The library.
    pub mpi: Mpi,
    /// The plugin's communicator (a duplicate of `MPI_COMM_WORLD`).
    pub comm: Handle,
    /// This rank in `comm`.
    pub rank: i32,
    /// Every rank's role, by rank.
    pub roles: Vec<Role>,
    /// Every rank's pid and host, by rank.
    pub peers: Vec<Peer>,
    /// MPI was initialised here, so it is finalised here.
    pub initialised_here: bool,
    /// The thread level MPI gives (`MPI_THREAD_MULTIPLE` is needed by the
    /// plugin; checked by the caller after joining, so that a rank that
    /// cannot go on still takes part in the collective join, and can tell
    /// the servers to exit).
    pub thread_level: c_int,
    /// The largest tag MPI takes on the communicator (`MPI_TAG_UB`; MPI
    /// guarantees at least 32767, Open MPI's ob1 gives 2^31 - 1).
    pub tag_ub: i32,
    /// The intercommunicator to the spawned servers (program) or to the
    /// parent (spawned server), disconnected when this rank leaves: `comm`
    /// is merged from it. `None` in an MPMD job.
    spawned: std::sync::Mutex<Option<Handle>>,
    /// Whether [`World::detach`] freed `comm` (and disconnected `spawned`).
    detached: std::sync::atomic::AtomicBool,
    /// How long a device server may stay silent in a wait for it
    /// (`OMPTARGET_MPI_TIMEOUT`; `None`: no limit).
    pub limit: Option<std::time::Duration>,
    /// `OMPTARGET_MPI_TIMEOUT` when it is not a number of seconds
    /// ([`World::check_limit`]).
    bad_limit: Option<liveness::BadLimit>,
    /// Servers given up on for their silence, by rank, and why.
    silent: std::sync::Mutex<Vec<(i32, String)>>,
    /// A server's thread answering pings ([`World::answer_pings`]).
    responder: std::sync::Mutex<Option<liveness::Responder>>,
    /// Whether this program rank asked for servers of its own.
    spawn_mode: bool,
    /// This rank's role.
    role: Role,
    /// Why they could not be spawned.
    spawn_error: Option<String>,
}

// SAFETY: `Mpi` is Send + Sync (MPI_THREAD_MULTIPLE, checked by `join`);
// the communicator is a handle that any thread may use under it.
unsafe impl Send for World {}
// SAFETY: as above.
unsafe impl Sync for World {}

impl World {
    /// Open MPI, initialise it unless the program did, check
    /// `MPI_THREAD_MULTIPLE`, make the plugin's communicator and gather
    /// the roles on it. A program rank: a duplicate of `MPI_COMM_WORLD`,
    /// collective over it. A server: the same, unless a program rank
    /// spawned it ([`World::spawn`]): then merged with its parent and
    /// sibling servers, collective over them.
    pub fn join(role: Role) -> Result<World, JoinError> {
        World::join_peers(role, None)
    }

    /// [`World::join`] for a program rank whose servers are its own:
    /// start them with `MPI_Comm_spawn` over `MPI_COMM_SELF` (no other
    /// program rank takes part, so each rank spawns when it likes) and
    /// merge the intercommunicator into the plugin's communicator: this
    /// rank is rank 0 of it, its servers 1 and up.
    pub fn spawn(spawn: &Spawn) -> Result<World, JoinError> {
        World::join_peers(Role::Program, Some(spawn))
    }

    fn join_peers(role: Role, spawn: Option<&Spawn>) -> Result<World, JoinError> {
        // A bad value is reported after joining (`check_limit`), so that
        // the rank still takes part in the collective join and can tell
        // its servers it is done.
        let (limit, bad_limit) = match liveness::limit_by(|name| std::env::var(name).ok()) {
            Ok(limit) => (limit, None),
            Err(bad) => (Some(liveness::DEFAULT_LIMIT), Some(bad)),
        };
        let mpi = Mpi::open()?;
        let mut flag: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time.
        mpi.check("MPI_Initialized", unsafe { mpi.initialized(&mut flag) })?;
        let mut finalized: c_int = 0;
        // SAFETY: MPI_Finalized may be called at any time.
        mpi.check("MPI_Finalized", unsafe { mpi.finalized(&mut finalized) })?;
        if finalized != 0 {
            return Err(JoinError::AlreadyFinalized);
        }
        let initialised_here = flag == 0;
        let mut provided: c_int = 0;
        if initialised_here {
            // SAFETY: not initialised yet; null argc/argv are allowed.
            let code = unsafe {
                mpi.init_thread(
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    mpi::THREAD_MULTIPLE,
                    &mut provided,
                )
            };
            mpi.check("MPI_Init_thread", code)?;
        } else {
            // SAFETY: initialised.
            mpi.check("MPI_Query_thread", unsafe {
                mpi.query_thread(&mut provided)
            })?;
        }
        let comm_null = mpi.predefined.comm_null;
        let mut world = World {
            mpi,
            comm: comm_null,
            rank: -1,
            roles: Vec::new(),
            peers: Vec::new(),
            initialised_here,
            thread_level: provided,
            tag_ub: 32767,
            spawned: std::sync::Mutex::new(None),
            detached: std::sync::atomic::AtomicBool::new(false),
            limit,
            bad_limit,
            silent: std::sync::Mutex::new(Vec::new()),
            responder: std::sync::Mutex::new(None),
            spawn_mode: spawn.is_some(),
            role,
            spawn_error: None,
        };
        // Only a server looks for a parent: a program rank that an MPI
        // program spawned (a worker of its own) has a parent too, which is
        // not ours to merge with.
        let peers = match spawn {
            Some(spawn) => Peers::Spawn(spawn),
            None if role == Role::Program => Peers::World,
            None => match world.parent() {
                Ok(Some(parent)) => Peers::Parent(parent),
                Ok(None) => Peers::World,
                Err(err) => {
                    world.finalize_if_ours();
                    return Err(err.into());
                }
            },
        };
        if let Err(err) = world.connect(role, peers) {
            if spawn.is_some() && world.initialised_here && !world.finalized() {
                // MPI stays initialised: the program may call MPI_Init
                // later (answered by the plugin), and MPI cannot start
                // again once finalised. This rank goes on alone.
                world.spawn_error = Some(err.to_string());
                if world.connect(role, Peers::Alone).is_ok() {
                    return Ok(world);
                }
            }
            world.finalize_if_ours();
            return Err(err);
        }
        Ok(world)
    }

    /// Whether MPI, initialised here before the program could, stays
    /// initialised for the program (whose `MPI_Init` the plugin answers)
    /// rather than being finalised when this rank leaves early: with
    /// servers of its own (spawned), or with none at all. Not in a job
    /// whose servers share the program's world (their collective join
    /// and teardown are the plugin's).
    pub fn keeps_mpi_for_the_program(&self) -> bool {
        self.initialised_here
            && self.role == Role::Program
            && (self.spawn_mode || !self.roles.contains(&Role::Server))
    }

    /// Leave the job without finalising MPI, which stays the program's
    /// (it finalises it, as an MPI program does): the plugin's
    /// communicator is freed first.
    pub fn leave_mpi_to_the_program(self) -> Result<(), MpiError> {
        // Dropped without MPI_Finalize; `Mpi` keeps its library loaded
        // once MPI started.
        self.detach()
    }

    /// Why the servers asked for could not be spawned, if they could not
    /// (this rank then goes on alone).
    pub fn spawn_error(&self) -> Option<&str> {
        self.spawn_error.as_deref()
    }

    /// The intercommunicator to the program rank that spawned this
    /// process, if one did.
    fn parent(&self) -> Result<Option<Handle>, MpiError> {
        let m = &self.mpi;
        let mut parent = m.predefined.comm_null;
        // SAFETY: initialised; `parent` receives the handle.
        m.check("MPI_Comm_get_parent", unsafe {
            m.comm_get_parent(&mut parent)
        })?;
        Ok((parent != m.predefined.comm_null).then_some(parent))
    }

    /// The plugin's communicator over `peers`.
    fn communicator(&self, peers: Peers<'_>) -> Result<Handle, JoinError> {
        let m = &self.mpi;
        let mut comm = m.predefined.comm_null;
        let inter = match peers {
            Peers::World | Peers::Alone => {
                let base = match peers {
                    Peers::Alone => m.predefined.comm_self,
                    _ => m.predefined.comm_world,
                };
                // SAFETY: initialised; `comm` receives the new handle.
                m.check("MPI_Comm_dup", unsafe { m.comm_dup(base, &mut comm) })?;
                return Ok(comm);
            }
            Peers::Parent(parent) => parent,
            Peers::Spawn(spawn) => {
                self.check_thread_level()?;
                self.spawn_servers(spawn)?
            }
        };
        *self.spawned.lock().unwrap_or_else(|p| p.into_inner()) = Some(inter);
        // The program rank low (rank 0), its servers high.
        let high = matches!(peers, Peers::Parent(_));
        // SAFETY: a valid intercommunicator; `comm` receives the new handle.
        m.check("MPI_Intercomm_merge", unsafe {
            m.intercomm_merge(inter, high, &mut comm)
        })?;
        Ok(comm)
    }

    /// Start `spawn`'s servers; the intercommunicator to them.
    fn spawn_servers(&self, spawn: &Spawn) -> Result<Handle, JoinError> {
        let m = &self.mpi;
        let failed = |source| JoinError::Spawn {
            command: spawn.command.to_string_lossy().into_owned(),
            servers: spawn.servers,
            source,
        };
        // Spawned over a duplicate of MPI_COMM_SELF whose errors return:
        // a spawn that fails (no slot for a server, no such command) is an
        // error of ours, and MPI_COMM_SELF's handler stays the program's.
        let mut own_self = m.predefined.comm_null;
        // SAFETY: initialised; `own_self` receives the new handle.
        m.check("MPI_Comm_dup", unsafe {
            m.comm_dup(m.predefined.comm_self, &mut own_self)
        })?;
        let _free = scopeguard::guard(own_self, |mut own_self| {
            // SAFETY: our duplicate, freed once; no request on it.
            unsafe { m.comm_free(&mut own_self) };
        });
        // SAFETY: a valid communicator and predefined handler.
        m.check("MPI_Comm_set_errhandler", unsafe {
            m.comm_set_errhandler(own_self, m.predefined.errors_return)
        })?;
        let mut argv: Vec<*mut std::ffi::c_char> = spawn
            .args
            .iter()
            .map(|a| a.as_ptr().cast_mut())
            .chain([std::ptr::null_mut()])
            .collect();
        let mut inter = m.predefined.comm_null;
        // SAFETY: `command` and `argv` are NUL-terminated strings (MPI
        // reads them only), `argv` ends with a null; the communicator is
        // ours and valid.
        let code = unsafe {
            m.comm_spawn(
                spawn.command.as_ptr(),
                argv.as_mut_ptr(),
                spawn.servers as c_int,
                m.predefined.info_null,
                0,
                own_self,
                &mut inter,
            )
        };
        m.check("MPI_Comm_spawn", code).map_err(failed)?;
        Ok(inter)
    }

    fn connect(&mut self, role: Role, peers: Peers<'_>) -> Result<(), JoinError> {
        let comm = self.communicator(peers)?;
        let m = &self.mpi;
        self.comm = comm;
        // Errors come back as codes: a failure is a Result, not an abort
        // of the program by MPI's default handler.
        // SAFETY: a valid communicator and predefined handler.
        m.check("MPI_Comm_set_errhandler", unsafe {
            m.comm_set_errhandler(comm, m.predefined.errors_return)
        })?;
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        // SAFETY: valid communicator.
        m.check("MPI_Comm_rank", unsafe { m.comm_rank(comm, &mut rank) })?;
        // SAFETY: valid communicator.
        m.check("MPI_Comm_size", unsafe { m.comm_size(comm, &mut size) })?;
        let (start_time, pid) = proc_stat("self")
            .map(|(_, start)| (start, std::process::id() as i32))
            .unwrap_or((0, std::process::id() as i32));
        let mine = Peer {
            role,
            pid,
            start_time,
            process_table: own_process_table(),
            host: m.processor_name(),
        }
        .encode();
        let mut all = vec![0u8; size.max(0) as usize * RECORD];
        // SAFETY: RECORD bytes sent, `size` records received.
        m.check("MPI_Allgather", unsafe {
            m.allgather(
                mine.as_ptr().cast(),
                RECORD as c_int,
                m.predefined.byte,
                all.as_mut_ptr().cast(),
                RECORD as c_int,
                m.predefined.byte,
                comm,
            )
        })?;
        self.rank = rank;
        self.tag_ub = tag_upper_bound(m, comm);
        self.peers = all.chunks_exact(RECORD).map(Peer::decode).collect();
        self.roles = self.peers.iter().map(|p| p.role).collect();
        Ok(())
    }

    /// The reply tags a client cycles through (16 and up: tags below are
    /// the protocol's own): the lower half of the tags MPI takes.
    pub fn reply_tags(&self) -> std::ops::RangeInclusive<i32> {
        let last = 16 + (self.tag_ub - 16) / 2;
        16..=last
    }

    /// The tag of a client's `n`th copy between two servers, from the
    /// upper half of the tags: the servers match its data by (peer, tag),
    /// so the tag holds the client's rank, and two program ranks' copies
    /// between the same two servers never take each other's data (with
    /// Open MPI's 2^31 - 1, unique for 16384 program ranks and 65536
    /// copies in flight each).
    pub fn exchange_tag(&self, n: u32) -> i32 {
        let first = *self.reply_tags().end() as i64 + 1;
        let span = self.tag_ub as i64 - first + 1;
        let slot = (self.rank as i64) * 65536 + (n % 65536) as i64;
        (first + slot.rem_euclid(span.max(1))) as i32
    }

    /// `Err` saying why, unless MPI gives `MPI_THREAD_MULTIPLE`.
    pub fn check_thread_level(&self) -> Result<(), ThreadLevel> {
        if self.thread_level >= mpi::THREAD_MULTIPLE {
            return Ok(());
        }
        Err(ThreadLevel {
            provided: self.thread_level,
            initialised_here: self.initialised_here,
        })
    }

    /// `Err` saying why, when `OMPTARGET_MPI_TIMEOUT` is not a number of
    /// seconds (checked by the caller after joining, as the thread level).
    pub fn check_limit(&self) -> Result<(), liveness::BadLimit> {
        self.bad_limit.clone().map_or(Ok(()), Err)
    }

    /// `MPI_ANY_SOURCE` of the job's library (Open MPI -1, MPICH -2).
    pub fn any_source(&self) -> i32 {
        self.mpi.constants.any_source
    }

    /// The ranks with `role`.
    pub fn ranks(&self, role: Role) -> Vec<i32> {
        (0..self.roles.len() as i32)
            .filter(|&r| self.roles[r as usize] == role)
            .collect()
    }

    /// Free the communicator, and finalise MPI if it was initialised here
    /// (and not finalised since). Called once, at the end.
    ///
    /// Unless a rank of the job is known dead (possible only under
    /// `mpirun --enable-recovery`): then `MPI_Finalize` may wait for ever
    /// for it (Open MPI 4.1's finalize fence: measured, it hangs in some
    /// runs and not in others), so MPI is left as it is, and its library
    /// stays loaded (its progress threads still run in it). The process
    /// ends without finalising MPI, which `mpirun` reports.
    pub fn leave(mut self) -> Result<(), MpiError> {
        self.stop_answering();
        if self.initialised_here && !self.finalized() {
            if let Some(why) = self.any_peer_dead() {
                if self.role == Role::Program && self.is_spawned() {
                    self.end_silent_servers();
                }
                let note = format!(
                    "omptarget: rank {} does not finalise MPI: {why}, and MPI_Finalize could wait for it for ever\n",
                    self.rank
                );
                // One write: the ranks share mpirun's stderr.
                let _ = std::io::Write::write_all(&mut std::io::stderr(), note.as_bytes());
                std::mem::forget(self);
                return Ok(());
            }
        }
        let first = self.detach();
        self.finalize_if_ours();
        first
    }

    /// Free the plugin's communicator and, if it was merged from an
    /// intercommunicator (spawned servers), disconnect that: then the
    /// program's `MPI_Finalize` and the servers' are independent (MPI
    /// finalises connected processes together). Collective with the
    /// peers, which do the same as they leave. Once: later calls do
    /// nothing; nothing may use the communicator after it.
    pub fn detach(&self) -> Result<(), MpiError> {
        self.stop_answering();
        let mut spawned = self.spawned.lock().unwrap_or_else(|p| p.into_inner());
        if self.finalized()
            || self
                .detached
                .swap(true, std::sync::atomic::Ordering::AcqRel)
        {
            return Ok(());
        }
        let m = &self.mpi;
        let mut comm = self.comm;
        let mut first = Ok(());
        if comm != m.predefined.comm_null {
            // SAFETY: our communicator, freed once (`detached`); no
            // request pending on it.
            first = m.check("MPI_Comm_free", unsafe { m.comm_free(&mut comm) });
        }
        if let Some(mut inter) = spawned.take() {
            if self.role == Role::Program {
                self.end_silent_servers();
            }
            // A dead peer would never take part: leave it connected.
            if self.any_peer_dead().is_none() {
                // SAFETY: the intercommunicator `comm` was merged from,
                // disconnected once; no request pending on it.
                let code = unsafe { m.comm_disconnect(&mut inter) };
                first = first.and(m.check("MPI_Comm_disconnect", code));
            }
        }
        first
    }

    /// Answer the pings of the ranks waiting for this one (a device
    /// server), from a thread of its own, until [`World::stop_answering`]
    /// (which leaving and finalising call first).
    pub fn answer_pings(self: &std::sync::Arc<World>) -> std::io::Result<()> {
        let responder = liveness::Responder::start(std::sync::Arc::clone(self))?;
        *self.responder.lock().unwrap_or_else(|p| p.into_inner()) = Some(responder);
        Ok(())
    }

    /// Stop answering pings; returns once the thread has ended.
    pub fn stop_answering(&self) {
        let responder = self
            .responder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(responder) = responder {
            responder.stop();
        }
    }

    /// Give up on `rank` for its silence, saying `why` (the first reason
    /// stays).
    pub fn note_silent(&self, rank: i32, why: &str) {
        let mut silent = self.silent.lock().unwrap_or_else(|p| p.into_inner());
        if !silent.iter().any(|(r, _)| *r == rank) {
            tracing::warn!("{why}");
            silent.push((rank, why.to_owned()));
        }
    }

    /// Why `rank` was given up on for its silence, if it was.
    pub fn silence_of(&self, rank: i32) -> Option<String> {
        let silent = self.silent.lock().unwrap_or_else(|p| p.into_inner());
        silent
            .iter()
            .find(|(r, _)| *r == rank)
            .map(|(_, why)| why.clone())
    }

    /// Whether the servers were spawned by this program rank (or this
    /// server by one).
    pub fn is_spawned(&self) -> bool {
        self.spawned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Whether MPI was finalised (by the program, or by us).
    pub fn finalized(&self) -> bool {
        let mut flag: c_int = 0;
        // SAFETY: may be called at any time.
        unsafe { self.mpi.finalized(&mut flag) };
        flag != 0
    }

    /// `MPI_Finalize` now if MPI was initialised here and is not finalised
    /// yet, for a process about to exit with no teardown to come (a
    /// kernel called `exit()` on a remote device). Later calls fail.
    pub fn finalize_before_exit(&self) {
        self.stop_answering();
        if self.initialised_here && !self.finalized() && self.any_peer_dead().is_none() {
            // SAFETY: initialised by us and not finalised; the process is
            // exiting, and nothing of ours uses MPI after this.
            let code = unsafe { self.mpi.finalize() };
            if let Err(err) = self.mpi.check("MPI_Finalize", code) {
                tracing::warn!("{err}");
            }
        }
    }

    fn finalize_if_ours(&mut self) {
        if self.initialised_here && !self.finalized() {
            // SAFETY: initialised by us and not finalised.
            let code = unsafe { self.mpi.finalize() };
            if let Err(err) = self.mpi.check("MPI_Finalize", code) {
                tracing::warn!("{err}");
            }
        }
    }
}

/// `MPI_TAG_UB` of `comm`, or the 32767 MPI guarantees when it cannot be
/// read.
fn tag_upper_bound(m: &Mpi, comm: Handle) -> i32 {
    let mut value: *mut c_int = std::ptr::null_mut();
    let mut found: c_int = 0;
    // SAFETY: a valid communicator; the attribute's value is a pointer to
    // an int that MPI owns (read here, never freed).
    let code = unsafe {
        m.comm_get_attr(
            comm,
            m.constants.tag_ub,
            (&mut value as *mut *mut c_int).cast(),
            &mut found,
        )
    };
    if code != mpi::SUCCESS || found == 0 || value.is_null() {
        return 32767;
    }
    // SAFETY: MPI's own int, set above.
    unsafe { *value }.max(32767)
}

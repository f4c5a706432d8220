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
use crate::error::{self, WireError};
use crate::mpi::{self, Comm, Mpi, Status};
use crate::protocol::{self, FRAGMENT};
use std::ffi::{c_int, c_void};
use std::time::{Duration, Instant};

/// How long a wait spins on `MPI_Test` before it starts to nap.
pub const SPIN: Duration = Duration::from_millis(50);
/// The nap between two tests after [`SPIN`].
pub const NAP: Duration = Duration::from_micros(100);
/// How often a wait asks whether its peer still lives.
pub const CHECK_EVERY: Duration = Duration::from_millis(250);

/// What a rank told the others about itself when joining.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    /// Its role.
    pub role: Role,
    /// Its process id (in its pid namespace).
    pub pid: i32,
    /// Its process's start time (`/proc/PID/stat` field 22), so that a
    /// reused pid is not taken for it; 0 when unknown.
    pub start_time: u64,
    /// Which process table it lives in: a hash of the boot id and the pid
    /// namespace; 0 when unknown (never "same" as anything).
    pub process_table: u64,
    /// Its host name (`MPI_Get_processor_name`).
    pub host: String,
}

/// The bytes of one rank's [`Peer`] record in the join's gather.
const RECORD: usize = 4 + 4 + 8 + 8 + mpi::MAX_PROCESSOR_NAME;

impl Peer {
    fn encode(&self) -> [u8; RECORD] {
        let mut out = [0u8; RECORD];
        out[0..4].copy_from_slice(&(self.role as i32).to_le_bytes());
        out[4..8].copy_from_slice(&self.pid.to_le_bytes());
        out[8..16].copy_from_slice(&self.start_time.to_le_bytes());
        out[16..24].copy_from_slice(&self.process_table.to_le_bytes());
        let name = self.host.as_bytes();
        let n = name.len().min(mpi::MAX_PROCESSOR_NAME);
        out[24..24 + n].copy_from_slice(&name[..n]);
        out
    }

    fn decode(bytes: &[u8]) -> Peer {
        let word = |r: std::ops::Range<usize>| -> [u8; 4] { bytes[r].try_into().unwrap_or([0; 4]) };
        let long = |r: std::ops::Range<usize>| -> [u8; 8] { bytes[r].try_into().unwrap_or([0; 8]) };
        let name = &bytes[24..RECORD];
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        Peer {
            role: if i32::from_le_bytes(word(0..4)) == Role::Server as i32 {
                Role::Server
            } else {
                Role::Program
            },
            pid: i32::from_le_bytes(word(4..8)),
            start_time: u64::from_le_bytes(long(8..16)),
            process_table: u64::from_le_bytes(long(16..24)),
            host: String::from_utf8_lossy(&name[..end]).into_owned(),
        }
    }

    /// "device server rank R on HOST" or "program rank R on HOST".
    pub fn describe(&self, rank: i32) -> String {
        let what = match self.role {
            Role::Server => "device server",
            Role::Program => "program",
        };
        format!("{what} rank {rank} on {}", self.host)
    }
}

/// 64-bit FNV-1a: the same in every binary of the job (std's hashers
/// promise no such thing).
fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        hash ^= 0xff;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// This process's table: the boot id and pid namespace; 0 if either is
/// unknown.
fn own_process_table() -> u64 {
    let boot = std::fs::read("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    let ns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    if boot.is_empty() || ns.is_empty() {
        return 0;
    }
    fnv1a(&[&boot, ns.as_bytes()]).max(1)
}

/// State and start time of `/proc/PID/stat` (`None`: no such process).
fn proc_stat(pid: &str) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "PID (COMM) STATE ...": COMM may hold spaces and parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Field 22 of the file is the 20th after COMM (field 3 is the 1st).
    let start = fields.nth(18)?.parse().ok()?;
    Some((state, start))
}

/// What a rank is in the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Role {
    /// A rank of the program (it offloads).
    Program = 0,
    /// A device server (`omptarget-mpi-device`).
    Server = 1,
}

/// This rank's membership of the job.
pub struct World {
    /// The library.
    pub mpi: Mpi,
    /// The plugin's communicator (a duplicate of `MPI_COMM_WORLD`).
    pub comm: Comm,
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
}

// SAFETY: `Mpi` is Send + Sync (MPI_THREAD_MULTIPLE, checked by `join`);
// the communicator is a handle that any thread may use under it.
unsafe impl Send for World {}
// SAFETY: as above.
unsafe impl Sync for World {}

impl World {
    /// Open MPI, initialise it unless the program did, check
    /// `MPI_THREAD_MULTIPLE`, duplicate `MPI_COMM_WORLD` and gather the
    /// roles. Collective over `MPI_COMM_WORLD`.
    pub fn join(role: Role) -> Result<World, String> {
        let mpi = Mpi::open()?;
        let mut flag: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time.
        mpi.check("MPI_Initialized", unsafe { (mpi.f.initialized)(&mut flag) })?;
        let mut finalized: c_int = 0;
        // SAFETY: MPI_Finalized may be called at any time.
        mpi.check("MPI_Finalized", unsafe {
            (mpi.f.finalized)(&mut finalized)
        })?;
        if finalized != 0 {
            return Err("the program already finalised MPI".into());
        }
        let initialised_here = flag == 0;
        let mut provided: c_int = 0;
        if initialised_here {
            // SAFETY: not initialised yet; null argc/argv are allowed.
            let code = unsafe {
                (mpi.f.init_thread)(
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
                (mpi.f.query_thread)(&mut provided)
            })?;
        }
        let mut world = World {
            mpi,
            comm: std::ptr::null_mut(),
            rank: -1,
            roles: Vec::new(),
            peers: Vec::new(),
            initialised_here,
            thread_level: provided,
            tag_ub: 32767,
        };
        if let Err(err) = world.connect(role) {
            world.finalize_if_ours();
            return Err(err);
        }
        Ok(world)
    }

    fn connect(&mut self, role: Role) -> Result<(), String> {
        let m = &self.mpi;
        let mut comm: Comm = std::ptr::null_mut();
        // SAFETY: initialised; `comm` receives the new handle.
        m.check("MPI_Comm_dup", unsafe {
            (m.f.comm_dup)(m.comm_world, &mut comm)
        })?;
        self.comm = comm;
        // Errors come back as codes: a failure is a Result, not an abort
        // of the program by MPI's default handler.
        // SAFETY: a valid communicator and predefined handler.
        m.check("MPI_Comm_set_errhandler", unsafe {
            (m.f.comm_set_errhandler)(comm, m.errors_return)
        })?;
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        // SAFETY: valid communicator.
        m.check("MPI_Comm_rank", unsafe { (m.f.comm_rank)(comm, &mut rank) })?;
        // SAFETY: valid communicator.
        m.check("MPI_Comm_size", unsafe { (m.f.comm_size)(comm, &mut size) })?;
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
            (m.f.allgather)(
                mine.as_ptr().cast(),
                RECORD as c_int,
                m.byte,
                all.as_mut_ptr().cast(),
                RECORD as c_int,
                m.byte,
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
    pub fn check_thread_level(&self) -> Result<(), String> {
        if self.thread_level >= mpi::THREAD_MULTIPLE {
            return Ok(());
        }
        Err(format!(
            "the MPI library gives thread level {}, and remote devices need MPI_THREAD_MULTIPLE ({}){}",
            self.thread_level,
            mpi::THREAD_MULTIPLE,
            if self.initialised_here {
                " (Open MPI built without thread support?)"
            } else {
                ": the program initialised MPI; it must call MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)"
            }
        ))
    }

    /// The ranks with `role`.
    pub fn ranks(&self, role: Role) -> Vec<i32> {
        (0..self.roles.len() as i32)
            .filter(|&r| self.roles[r as usize] == role)
            .collect()
    }

    /// Whether `rank`'s process still runs: `None` when this rank cannot
    /// see it (another host or pid namespace, or an unknown pid).
    pub fn peer_alive(&self, rank: i32) -> Option<bool> {
        let peer = self.peers.get(usize::try_from(rank).ok()?)?;
        let mine = self.peers.get(usize::try_from(self.rank).ok()?)?;
        if peer.process_table == 0 || peer.process_table != mine.process_table || peer.pid <= 0 {
            return None;
        }
        Some(match proc_stat(&peer.pid.to_string()) {
            None => false,
            // A zombie (or dying) process will answer nothing any more.
            Some(('Z' | 'X' | 'x', _)) => false,
            // The pid is someone else's now.
            Some((_, start)) if peer.start_time != 0 && start != peer.start_time => false,
            Some(_) => true,
        })
    }

    /// `Some(why)` when `rank` is known to be dead: "device server rank 2
    /// on HOST died (its process is gone)".
    pub fn death_of(&self, rank: i32) -> Option<String> {
        if self.peer_alive(rank) != Some(false) {
            return None;
        }
        Some(format!(
            "{} died (its process is gone)",
            self.peers[rank as usize].describe(rank)
        ))
    }

    /// Describe `rank` ("device server rank 2 on HOST").
    pub fn describe(&self, rank: i32) -> String {
        match self.peers.get(rank as usize) {
            Some(peer) => peer.describe(rank),
            None => format!("rank {rank}"),
        }
    }

    /// Call `test` until it says done; `Err` when it fails, or when
    /// `watch` (asked every [`CHECK_EVERY`]) says the wait is hopeless.
    /// Spins for [`SPIN`], then naps [`NAP`] between tests.
    pub fn poll(
        &self,
        watch: &dyn Fn() -> Option<String>,
        mut test: impl FnMut() -> Result<bool, String>,
    ) -> Result<(), String> {
        // The clock is read every 64th poll: on a VM without a usable TSC
        // it is a system call, and a poll that reads it each time spends
        // more time there than in MPI (perf: 12% of a server's time).
        if test()? {
            return Ok(());
        }
        let start = Instant::now();
        let mut next_check = start + CHECK_EVERY;
        let mut polls: u32 = 0;
        let mut napping = false;
        loop {
            if test()? {
                return Ok(());
            }
            polls = polls.wrapping_add(1);
            if !napping && !polls.is_multiple_of(64) {
                // No `spin_loop` hint, as in MPI's own blocking waits:
                // each test is already a call into MPI's progress engine,
                // and a pause only delays noticing the message.
                continue;
            }
            let now = Instant::now();
            if now >= next_check {
                if let Some(why) = watch() {
                    return Err(why);
                }
                next_check = now + CHECK_EVERY;
            }
            napping = now - start >= SPIN;
            if napping {
                std::thread::sleep(NAP);
            } else {
                std::hint::spin_loop();
            }
        }
    }

    /// Complete `request` (a send or receive with `peer`), or cancel and
    /// free it when `watch` gives up. A request that completes while it
    /// is being given up completed: its status is returned, as if the
    /// wait had not given up (a receive's message is the caller's, not
    /// lost).
    fn complete(
        &self,
        what: &str,
        mut request: mpi::Request,
        watch: &dyn Fn() -> Option<String>,
    ) -> Result<Status, WireError> {
        let m = &self.mpi;
        let mut status = Status::default();
        let waited = self.poll(watch, || {
            let mut flag: c_int = 0;
            // SAFETY: an active request of ours; `status` is written.
            m.check(what, unsafe {
                (m.f.test)(&mut request, &mut flag, &mut status)
            })?;
            Ok(flag != 0)
        });
        let Err(err) = waited else {
            return Ok(status);
        };
        if request.is_null() {
            return Err(WireError::Failed(err));
        }
        match self.abandon(&mut request) {
            Abandoned::Completed(status) => Ok(status),
            Abandoned::Cancelled => Err(WireError::Failed(err)),
            Abandoned::Unconfirmed => Err(WireError::unconfirmed(err)),
        }
    }

    /// Give up on `request`, still active: let progress take what its
    /// peer sent before it died, cancel, and wait a little for it to
    /// complete, so that MPI writes no more into its buffer.
    fn abandon(&self, request: &mut mpi::Request) -> Abandoned {
        let m = &self.mpi;
        let settle = |limit: Duration, request: &mut mpi::Request| -> Option<Abandoned> {
            let until = Instant::now() + limit;
            loop {
                let mut flag: c_int = 0;
                let mut status = Status::default();
                // SAFETY: an active request of ours.
                let code = unsafe { (m.f.test)(request, &mut flag, &mut status) };
                if flag != 0 || request.is_null() {
                    if code != mpi::SUCCESS {
                        // Completed in error (Open MPI 4.1 frees it then):
                        // nothing of it to use.
                        return Some(Abandoned::Cancelled);
                    }
                    let mut cancelled: c_int = 0;
                    // SAFETY: the status of a completed request.
                    unsafe { (m.f.test_cancelled)(&status, &mut cancelled) };
                    return Some(if cancelled != 0 {
                        Abandoned::Cancelled
                    } else {
                        Abandoned::Completed(status)
                    });
                }
                if Instant::now() >= until {
                    return None;
                }
                std::thread::sleep(NAP);
            }
        };
        if let Some(settled) = settle(Duration::from_millis(50), request) {
            return settled;
        }
        // SAFETY: still active: cancelled, then waited for.
        unsafe { (m.f.cancel)(request) };
        if let Some(settled) = settle(Duration::from_millis(200), request) {
            return settled;
        }
        // SAFETY: still active: MPI frees it whenever it completes.
        unsafe { (m.f.request_free)(request) };
        Abandoned::Unconfirmed
    }

    fn watch_rank(&self, rank: i32) -> impl Fn() -> Option<String> + '_ {
        move || self.death_of(rank)
    }

    /// Send `bytes` to `dest` with `tag`; `Err` if `dest` dies first.
    pub fn send(&self, dest: i32, tag: i32, bytes: &[u8]) -> Result<(), WireError> {
        // SAFETY: `bytes` is readable for its length.
        unsafe { self.send_raw(dest, tag, bytes.as_ptr().cast(), bytes.len()) }
    }

    /// Send `len` bytes at `ptr` to `dest` with `tag`, in fragments;
    /// `Err` if `dest` dies first.
    ///
    /// # Safety
    /// `ptr` is readable for `len` bytes.
    pub unsafe fn send_raw(
        &self,
        dest: i32,
        tag: i32,
        ptr: *const c_void,
        len: usize,
    ) -> Result<(), WireError> {
        // SAFETY: per this function's contract.
        unsafe { self.send_fragments(dest, tag, ptr, len, FRAGMENT) }
    }

    /// [`World::send_raw`] in fragments of at most `fragment` bytes.
    ///
    /// # Safety
    /// `ptr` is readable for `len` bytes.
    unsafe fn send_fragments(
        &self,
        dest: i32,
        tag: i32,
        ptr: *const c_void,
        len: usize,
        fragment: usize,
    ) -> Result<(), WireError> {
        let m = &self.mpi;
        let watch = self.watch_rank(dest);
        let mut offset = 0;
        loop {
            let n = (len - offset).min(fragment);
            let mut request: mpi::Request = std::ptr::null_mut();
            // SAFETY: within `ptr..ptr+len` (this function's contract),
            // which stays readable until `complete` returns (it completes
            // the send, or cancels it: a cancelled send reads no more).
            let code = unsafe {
                (m.f.isend)(
                    ptr.cast::<u8>().add(offset).cast(),
                    n as c_int,
                    m.byte,
                    dest,
                    tag,
                    self.comm,
                    &mut request,
                )
            };
            m.check("MPI_Isend", code)?;
            self.complete("MPI_Test (send)", request, &watch)?;
            offset += n;
            if offset >= len {
                return Ok(());
            }
        }
    }

    /// Receive `len` bytes from `source` with `tag` into `ptr`, in the
    /// fragments [`World::send_raw`] sends; `Err` if `source` dies first.
    ///
    /// # Safety
    /// `ptr` is writable for `len` bytes.
    pub unsafe fn recv_raw(
        &self,
        source: i32,
        tag: i32,
        ptr: *mut c_void,
        len: usize,
    ) -> Result<(), WireError> {
        // SAFETY: per this function's contract.
        unsafe { self.recv_fragments(source, tag, ptr, len, FRAGMENT) }
    }

    /// Receive `buffer.len()` bytes from `source` with `tag` into
    /// `buffer`, as [`World::recv_raw`]: the buffer back, filled; or the
    /// error, which keeps the buffer if MPI may still write into it.
    pub fn recv_into(
        &self,
        source: i32,
        tag: i32,
        mut buffer: Vec<u8>,
    ) -> Result<Vec<u8>, WireError> {
        // SAFETY: `buffer` holds `len` bytes, and is the error's if MPI
        // may still write into it.
        let received =
            unsafe { self.recv_raw(source, tag, buffer.as_mut_ptr().cast(), buffer.len()) };
        match received {
            Ok(()) => Ok(buffer),
            Err(err) => Err(err.keep(buffer)),
        }
    }

    /// [`World::recv_raw`] in fragments of at most `fragment` bytes (as
    /// their sender sent them). Each fragment must be whole: one shorter
    /// than expected (a sender out of step) is an error, never bytes
    /// left unwritten.
    ///
    /// # Safety
    /// `ptr` is writable for `len` bytes.
    unsafe fn recv_fragments(
        &self,
        source: i32,
        tag: i32,
        ptr: *mut c_void,
        len: usize,
        fragment: usize,
    ) -> Result<(), WireError> {
        let m = &self.mpi;
        let watch = self.watch_rank(source);
        let mut offset = 0;
        loop {
            let n = (len - offset).min(fragment);
            // SAFETY: within `ptr..ptr+len` (this function's contract).
            // A cancelled receive may still be written by MPI until it is
            // known cancelled: it is cancelled only when its sender died,
            // and the memory stays the caller's (device memory or a
            // buffer), as with any failed transfer.
            let request = unsafe { self.irecv(ptr.cast::<u8>().add(offset), n, source, tag)? };
            let status = self.complete("MPI_Test (receive)", request, &watch)?;
            let mut count: c_int = 0;
            // SAFETY: `status` is a completed receive's.
            m.check("MPI_Get_count", unsafe {
                (m.f.get_count)(&status, m.byte, &mut count)
            })?;
            if usize::try_from(count).ok() != Some(n) {
                return Err(WireError::Failed(format!(
                    "{} sent {count} bytes on tag {tag} where {n} were due",
                    self.describe(source)
                )));
            }
            offset += n;
            if offset >= len {
                return Ok(());
            }
        }
    }

    /// Start receiving at most `len` bytes (an `int`'s worth) into `ptr`
    /// from `source` with `tag`: the request, to complete or cancel.
    ///
    /// # Safety
    /// `ptr` is writable for `len` bytes until the request completes or
    /// is known cancelled.
    unsafe fn irecv(
        &self,
        ptr: *mut u8,
        len: usize,
        source: i32,
        tag: i32,
    ) -> Result<mpi::Request, WireError> {
        let m = &self.mpi;
        let count = c_int::try_from(len).map_err(|_| format!("a receive of {len} bytes"))?;
        let mut request: mpi::Request = std::ptr::null_mut();
        // SAFETY: per this function's contract.
        let code = unsafe {
            (m.f.irecv)(
                ptr.cast(),
                count,
                m.byte,
                source,
                tag,
                self.comm,
                &mut request,
            )
        };
        m.check("MPI_Irecv", code)?;
        Ok(request)
    }

    /// Post the receive of a protocol message's first part (at most
    /// `slot` bytes) from `source` (or [`mpi::ANY_SOURCE`]) with `tag`,
    /// into `buffer` (emptied; reused for its capacity). Posted before the
    /// message comes, MPI matches it straight into the buffer: no probe
    /// polls, no unexpected-message copy (the remote round trip's floor).
    pub fn post(
        &self,
        source: i32,
        tag: i32,
        mut buffer: Vec<u8>,
        slot: usize,
    ) -> Result<Posted<'_>, WireError> {
        buffer.clear();
        buffer.reserve_exact(slot);
        // SAFETY: `buffer` has room for `slot` bytes; the `Posted` owns it
        // until the receive completes or is known cancelled (else it is
        // never freed).
        let request = unsafe { self.irecv(buffer.as_mut_ptr(), slot, source, tag)? };
        Ok(Posted {
            world: self,
            request,
            buffer,
            slot,
        })
    }

    /// Wait for `posted`'s message, then receive its rest, if its length
    /// header says more follows, from its sender with the tag `rest_tag`
    /// reads from the first part: `(its source, the whole message)`.
    /// `Err` when `watch` (asked every [`CHECK_EVERY`]) gives up; the
    /// receive is then cancelled.
    pub fn receive_message(
        &self,
        mut posted: Posted<'_>,
        watch: &dyn Fn() -> Option<String>,
        rest_tag: impl FnOnce(&[u8]) -> Option<i32>,
    ) -> Result<(i32, Vec<u8>), WireError> {
        let m = &self.mpi;
        // Taken: `posted`'s drop has nothing left to cancel.
        let request = std::mem::replace(&mut posted.request, std::ptr::null_mut());
        let mut buffer = std::mem::take(&mut posted.buffer);
        let status = match self.complete("MPI_Test (receive)", request, watch) {
            Ok(status) => status,
            Err(err) => return Err(err.keep(buffer)),
        };
        let mut count: c_int = 0;
        // SAFETY: `status` is a completed receive's.
        m.check("MPI_Get_count", unsafe {
            (m.f.get_count)(&status, m.byte, &mut count)
        })?;
        let count = (count.max(0) as usize).min(posted.slot);
        // SAFETY: MPI wrote `count` bytes, within the reserved slot.
        unsafe { buffer.set_len(count) };
        let said = protocol::message_len(&buffer).unwrap_or(0);
        if count < posted.slot || said <= count as u64 || said > protocol::MAX_MESSAGE {
            // Whole, or malformed (its reader says so): no sender of
            // ours sends a rest past `MAX_MESSAGE`.
            return Ok((status.source, buffer));
        }
        let Some(tag) = rest_tag(&buffer) else {
            return Ok((status.source, buffer));
        };
        let rest = usize::try_from(said - count as u64).unwrap_or(usize::MAX);
        if let Err(err) = buffer.try_reserve_exact(rest) {
            // The sender waits until its rest is taken: taken and dropped,
            // fragment by fragment, and the first part returned alone (its
            // reader finds it shorter than its header says).
            tracing::warn!(
                "a message of {said} bytes from {} cannot be held here ({err}): dropped",
                self.describe(status.source)
            );
            self.drain(status.source, tag, rest)?;
            return Ok((status.source, buffer));
        }
        // SAFETY: room for `rest` bytes after the `count` received.
        let received = unsafe {
            self.recv_fragments(
                status.source,
                tag,
                buffer.as_mut_ptr().add(count).cast(),
                rest,
                protocol::REST_FRAGMENT,
            )
        };
        if let Err(err) = received {
            return Err(err.keep(buffer));
        }
        // SAFETY: MPI wrote the `rest` bytes after the first `count`.
        unsafe { buffer.set_len(count + rest) };
        Ok((status.source, buffer))
    }

    /// Receive and drop the `len` bytes of a message's rest from `source`
    /// with `tag`, fragment by fragment into one scratch fragment (16 MiB:
    /// what a server short of memory can still find).
    fn drain(&self, source: i32, tag: i32, len: usize) -> Result<(), WireError> {
        let fragment = protocol::REST_FRAGMENT;
        let mut scratch: Vec<u8> = Vec::new();
        scratch
            .try_reserve_exact(len.min(fragment))
            .map_err(|e| format!("{len} bytes from {}: {e}", self.describe(source)))?;
        let mut left = len;
        while left > 0 {
            let n = left.min(fragment);
            // SAFETY: `scratch` has room for `n` bytes.
            let received = unsafe {
                self.recv_fragments(source, tag, scratch.as_mut_ptr().cast(), n, fragment)
            };
            if let Err(err) = received {
                return Err(err.keep(scratch));
            }
            left -= n;
        }
        Ok(())
    }

    /// Send `message` (a protocol message: it begins with its length) to
    /// `dest`: its first `slot` bytes with `tag` (the part the receiver's
    /// posted receive takes), the rest, if any, with `rest_tag`.
    pub fn send_message(
        &self,
        dest: i32,
        tag: i32,
        rest_tag: i32,
        slot: usize,
        message: &[u8],
    ) -> Result<(), WireError> {
        if message.len() as u64 > protocol::MAX_MESSAGE {
            return Err(WireError::Failed(format!(
                "a message of {} bytes: the protocol carries at most {} GiB",
                message.len(),
                protocol::MAX_MESSAGE >> 30
            )));
        }
        let first = message.len().min(slot);
        self.send(dest, tag, &message[..first])?;
        if first < message.len() {
            let rest = &message[first..];
            // SAFETY: `rest` is readable for its length.
            unsafe {
                self.send_fragments(
                    dest,
                    rest_tag,
                    rest.as_ptr().cast(),
                    rest.len(),
                    protocol::REST_FRAGMENT,
                )?
            };
        }
        Ok(())
    }

    /// The first rank of the job (not this one) known to be dead.
    pub fn any_peer_dead(&self) -> Option<String> {
        (0..self.peers.len() as i32)
            .filter(|&rank| rank != self.rank)
            .find_map(|rank| self.death_of(rank))
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
    pub fn leave(mut self) -> Result<(), String> {
        if self.initialised_here && !self.finalized() {
            if let Some(why) = self.any_peer_dead() {
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
        let mut first = Ok(());
        if !self.comm.is_null() && !self.finalized() {
            let m = &self.mpi;
            // SAFETY: our communicator, no request pending on it.
            first = m.check("MPI_Comm_free", unsafe { (m.f.comm_free)(&mut self.comm) });
        }
        self.finalize_if_ours();
        first
    }

    /// Whether MPI was finalised (by the program, or by us).
    pub fn finalized(&self) -> bool {
        let mut flag: c_int = 0;
        // SAFETY: may be called at any time.
        unsafe { (self.mpi.f.finalized)(&mut flag) };
        flag != 0
    }

    /// `MPI_Finalize` now if MPI was initialised here and is not finalised
    /// yet, for a process about to exit with no teardown to come (a
    /// kernel called `exit()` on a remote device). Later calls fail.
    pub fn finalize_before_exit(&self) {
        if self.initialised_here && !self.finalized() && self.any_peer_dead().is_none() {
            // SAFETY: initialised by us and not finalised; the process is
            // exiting, and nothing of ours uses MPI after this.
            let code = unsafe { (self.mpi.f.finalize)() };
            if let Err(err) = self.mpi.check("MPI_Finalize", code) {
                tracing::warn!("{err}");
            }
        }
    }

    fn finalize_if_ours(&mut self) {
        if self.initialised_here && !self.finalized() {
            // SAFETY: initialised by us and not finalised.
            let code = unsafe { (self.mpi.f.finalize)() };
            if let Err(err) = self.mpi.check("MPI_Finalize", code) {
                tracing::warn!("{err}");
            }
        }
    }
}

/// How a request given up on ended.
enum Abandoned {
    /// Cancelled: MPI will not touch its buffer.
    Cancelled,
    /// Completed before it could be cancelled: its message (or send) went
    /// through.
    Completed(Status),
    /// Neither, within the time allowed: freed, and its buffer must never
    /// be.
    Unconfirmed,
}

/// A receive posted with [`World::post`], its buffer MPI's until the
/// receive completes: finished by [`World::receive_message`]; dropped
/// unfinished, it is cancelled (and its buffer kept for the rest of the
/// process if MPI does not confirm it).
#[must_use = "a posted receive is finished by World::receive_message"]
pub struct Posted<'w> {
    world: &'w World,
    request: mpi::Request,
    buffer: Vec<u8>,
    slot: usize,
}

impl Drop for Posted<'_> {
    fn drop(&mut self) {
        if self.request.is_null() {
            return;
        }
        // A message that completed it meanwhile is dropped with it: a
        // posted receive is dropped only when its request could not be
        // sent, so no reply is due.
        if matches!(
            self.world.abandon(&mut self.request),
            Abandoned::Unconfirmed
        ) {
            error::keep_forever(std::mem::take(&mut self.buffer));
        }
    }
}

/// `MPI_TAG_UB` of `comm`, or the 32767 MPI guarantees when it cannot be
/// read.
fn tag_upper_bound(m: &Mpi, comm: Comm) -> i32 {
    let mut value: *mut c_int = std::ptr::null_mut();
    let mut found: c_int = 0;
    // SAFETY: a valid communicator; the attribute's value is a pointer to
    // an int that MPI owns (read here, never freed).
    let code = unsafe {
        (m.f.comm_get_attr)(
            comm,
            mpi::TAG_UB,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_record_round_trips() {
        let peer = Peer {
            role: Role::Server,
            pid: 4242,
            start_time: 123_456_789,
            process_table: 0xdead_beef_cafe,
            host: "node-17.example".into(),
        };
        assert_eq!(Peer::decode(&peer.encode()), peer);
        assert_eq!(peer.describe(3), "device server rank 3 on node-17.example");
        let long = Peer {
            host: "h".repeat(400),
            ..peer
        };
        assert_eq!(
            Peer::decode(&long.encode()).host.len(),
            mpi::MAX_PROCESSOR_NAME
        );
    }

    #[test]
    fn this_process_reads_as_running_with_a_start_time() {
        let (state, start) = proc_stat("self").expect("/proc/self/stat");
        assert!(matches!(state, 'R' | 'S'), "{state}");
        assert!(start > 0);
        let by_pid = proc_stat(&std::process::id().to_string()).expect("by pid");
        assert_eq!(by_pid.1, start);
        assert_eq!(proc_stat("0"), None);
        assert_ne!(own_process_table(), 0);
        assert_eq!(own_process_table(), own_process_table());
    }

    #[test]
    fn the_hash_separates_its_parts() {
        assert_ne!(fnv1a(&[b"ab", b"c"]), fnv1a(&[b"a", b"bc"]));
        assert_eq!(fnv1a(&[b"boot", b"ns"]), fnv1a(&[b"boot", b"ns"]));
    }
}

//! Joining the job: MPI initialised (or found initialised) with
//! `MPI_THREAD_MULTIPLE`, the plugin's own communicator, and who is who.
//!
//! Every rank of the job joins once, collectively: the program's ranks
//! when their plugin initialises, the device servers when they start.
//! Joining duplicates `MPI_COMM_WORLD` (so no message of ours can match a
//! receive of the program's, whatever its tags) and gathers each rank's
//! [`Role`] on the duplicate.
use crate::mpi::{self, Comm, Mpi, Status};
use crate::protocol::FRAGMENT;
use std::ffi::{c_int, c_void};

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
    /// MPI was initialised here, so it is finalised here.
    pub initialised_here: bool,
    /// The thread level MPI gives (`MPI_THREAD_MULTIPLE` is needed by the
    /// plugin; checked by the caller after joining, so that a rank that
    /// cannot go on still takes part in the collective join, and can tell
    /// the servers to exit).
    pub thread_level: c_int,
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
            initialised_here,
            thread_level: provided,
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
        let mine = role as c_int;
        let mut all = vec![0 as c_int; size.max(0) as usize];
        // SAFETY: one int sent, `size` ints received.
        m.check("MPI_Allgather", unsafe {
            (m.f.allgather)(
                (&mine as *const c_int).cast(),
                1,
                m.int,
                all.as_mut_ptr().cast(),
                1,
                m.int,
                comm,
            )
        })?;
        self.rank = rank;
        self.roles = all
            .into_iter()
            .map(|r| {
                if r == Role::Server as c_int {
                    Role::Server
                } else {
                    Role::Program
                }
            })
            .collect();
        Ok(())
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

    /// Send `bytes` to `dest` with `tag` (blocking).
    pub fn send(&self, dest: i32, tag: i32, bytes: &[u8]) -> Result<(), String> {
        // SAFETY: `bytes` is readable for its length.
        unsafe { self.send_raw(dest, tag, bytes.as_ptr().cast(), bytes.len()) }
    }

    /// Send `len` bytes at `ptr` to `dest` with `tag`, in fragments.
    ///
    /// # Safety
    /// `ptr` is readable for `len` bytes.
    pub unsafe fn send_raw(
        &self,
        dest: i32,
        tag: i32,
        ptr: *const c_void,
        len: usize,
    ) -> Result<(), String> {
        let m = &self.mpi;
        let mut offset = 0;
        loop {
            let n = (len - offset).min(FRAGMENT);
            // SAFETY: within `ptr..ptr+len` (this function's contract).
            let code = unsafe {
                (m.f.send)(
                    ptr.cast::<u8>().add(offset).cast(),
                    n as c_int,
                    m.byte,
                    dest,
                    tag,
                    self.comm,
                )
            };
            m.check("MPI_Send", code)?;
            offset += n;
            if offset >= len {
                return Ok(());
            }
        }
    }

    /// Receive `len` bytes from `source` with `tag` into `ptr`, in the
    /// fragments [`World::send_raw`] sends.
    ///
    /// # Safety
    /// `ptr` is writable for `len` bytes.
    pub unsafe fn recv_raw(
        &self,
        source: i32,
        tag: i32,
        ptr: *mut c_void,
        len: usize,
    ) -> Result<(), String> {
        let m = &self.mpi;
        let mut offset = 0;
        loop {
            let n = (len - offset).min(FRAGMENT);
            let mut status = Status::default();
            // SAFETY: within `ptr..ptr+len` (this function's contract).
            let code = unsafe {
                (m.f.recv)(
                    ptr.cast::<u8>().add(offset).cast(),
                    n as c_int,
                    m.byte,
                    source,
                    tag,
                    self.comm,
                    &mut status,
                )
            };
            m.check("MPI_Recv", code)?;
            offset += n;
            if offset >= len {
                return Ok(());
            }
        }
    }

    /// Receive one whole message from `source` (or [`mpi::ANY_SOURCE`])
    /// with `tag`, whatever its size: `(its source, its bytes)`.
    pub fn recv_message(&self, source: i32, tag: i32) -> Result<(i32, Vec<u8>), String> {
        let m = &self.mpi;
        let mut status = Status::default();
        // SAFETY: valid communicator; `status` is written.
        m.check("MPI_Probe", unsafe {
            (m.f.probe)(source, tag, self.comm, &mut status)
        })?;
        let mut count: c_int = 0;
        // SAFETY: `status` came from MPI_Probe.
        m.check("MPI_Get_count", unsafe {
            (m.f.get_count)(&status, m.byte, &mut count)
        })?;
        let mut bytes = vec![0u8; count.max(0) as usize];
        let mut received = Status::default();
        // SAFETY: `bytes` holds `count` bytes; the probed message is the
        // one received (same source and tag, and only this thread
        // receives with this tag from that source).
        let code = unsafe {
            (m.f.recv)(
                bytes.as_mut_ptr().cast(),
                count,
                m.byte,
                status.source,
                tag,
                self.comm,
                &mut received,
            )
        };
        m.check("MPI_Recv", code)?;
        Ok((status.source, bytes))
    }

    /// Free the communicator, and finalise MPI if it was initialised here
    /// (and not finalised since). Called once, at the end.
    pub fn leave(mut self) -> Result<(), String> {
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

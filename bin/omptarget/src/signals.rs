//! Passing signals on to the job `run` started.
//!
//! Batch systems, `timeout` and `kill` send SIGTERM (or SIGHUP, SIGINT,
//! SIGUSR1/2) to this process alone: it passes each one to its child (the
//! program, or `mpirun`, which tears its whole job down on SIGTERM, SIGHUP
//! and SIGINT, and passes SIGUSR1/2 on to its ranks), waits for it to end
//! and returns its status. Nothing is left running when this process is
//! asked to stop.
//!
//! How: the signals are blocked before the child is spawned and taken
//! with `sigwaitinfo` afterwards, SIGCHLD among them. No handler runs, so
//! nothing async-signal-unsafe can happen, and a signal that comes before
//! the child exists waits, pending, and is passed on as soon as it does.
//! The child unblocks them between `fork` and `exec` ([`Forwarding::spawn`]:
//! a mask survives `exec`, and std does not clear it), and keeps the
//! dispositions this process was given.
//!
//! Not passed on:
//! * a signal the terminal sent (Ctrl-C, Ctrl-\, a hangup: `si_code` is
//!   `SI_KERNEL`): the terminal sends it to the whole foreground process
//!   group, which the child shares with this process (it is never moved
//!   to a group of its own, so that it can still read the terminal); a
//!   second copy would make Ctrl-C count twice (`mpirun` takes a second
//!   one as "abort harder");
//! * a signal this process was started ignoring (`nohup`, a background
//!   job of a script): the child inherits the same `SIG_IGN`, and the one
//!   who started us asked for it to be ignored.
//!
//! A signal sent to this process's whole group by another process (`kill
//! -TERM -PGID`, `timeout`, a shell hanging up its jobs) reaches the child
//! twice, directly and from here: nothing in the signal tells a group's
//! copy from a single one. For the signals passed on that is harmless (a
//! second SIGTERM to `mpirun` only repeats that the job is being ended).
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};

/// The signals passed on to the child.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// The forwarded signals that ask the job to end (the rest, SIGUSR1/2,
/// are messages to the program).
const ENDING: [libc::c_int; 4] = [libc::SIGTERM, libc::SIGHUP, libc::SIGINT, libc::SIGQUIT];

/// The forwarded signals, blocked in this process until it exits (or
/// [`Forwarding::unblock`]).
pub struct Forwarding {
    /// What `sigwaitinfo` takes: the forwarded signals and SIGCHLD.
    waited: libc::sigset_t,
    /// Whether a signal of [`ENDING`] was passed on.
    ended_from_outside: std::cell::Cell<bool>,
}

/// Whether `signal`'s disposition is `SIG_IGN`.
fn ignored(signal: libc::c_int) -> bool {
    // SAFETY: a zeroed sigaction is a valid out-parameter; a null new
    // action only reads the current one.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, std::ptr::null(), &mut current) == 0
            && current.sa_sigaction == libc::SIG_IGN
    }
}

impl Forwarding {
    /// Block the signals to pass on, and SIGCHLD (taken by [`Self::wait`]).
    /// Call before spawning the child. They stay blocked until this
    /// process exits: one that comes after the child ended is not the
    /// job's any more, and must not cut the reports short.
    pub fn block() -> io::Result<Forwarding> {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset; the
        // calls take valid pointers to it.
        unsafe {
            // Inherited SIG_IGN for SIGCHLD would reap the child for us
            // and lose its status.
            libc::signal(libc::SIGCHLD, libc::SIG_DFL);
            let mut waited: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut waited);
            libc::sigaddset(&mut waited, libc::SIGCHLD);
            for signal in FORWARDED {
                if !ignored(signal) {
                    libc::sigaddset(&mut waited, signal);
                }
            }
            let code = libc::pthread_sigmask(libc::SIG_BLOCK, &waited, std::ptr::null_mut());
            if code != 0 {
                return Err(io::Error::from_raw_os_error(code));
            }
            Ok(Forwarding {
                waited,
                ended_from_outside: std::cell::Cell::new(false),
            })
        }
    }

    /// Spawn `cmd` with the signals this process blocks unblocked: the
    /// program must get them.
    pub fn spawn(&self, cmd: &mut Command) -> io::Result<Child> {
        let waited = self.waited;
        // SAFETY: the closure runs in the forked child before exec and
        // calls only pthread_sigmask, which is async-signal-safe.
        unsafe {
            cmd.pre_exec(move || {
                match libc::pthread_sigmask(libc::SIG_UNBLOCK, &waited, std::ptr::null_mut()) {
                    0 => Ok(()),
                    code => Err(io::Error::from_raw_os_error(code)),
                }
            })
        };
        cmd.spawn()
    }

    /// Wait for `child` to end, passing on every signal that comes
    /// meanwhile (and those that came since [`Self::block`]).
    pub fn wait(&self, child: &mut Child) -> io::Result<ExitStatus> {
        let pid = libc::pid_t::try_from(child.id()).map_err(io::Error::other)?;
        loop {
            // SIGCHLD is blocked: an end between this check and the wait
            // below leaves it pending, and the wait returns at once.
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            // SAFETY: a zeroed siginfo_t is a valid out-parameter; the set
            // was built by `block`.
            let (signal, info) = unsafe {
                let mut info: libc::siginfo_t = std::mem::zeroed();
                (libc::sigwaitinfo(&self.waited, &mut info), info)
            };
            if signal < 0 {
                let err = io::Error::last_os_error();
                if err.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(err);
            }
            if signal == libc::SIGCHLD || info.si_code == libc::SI_KERNEL {
                continue;
            }
            if ENDING.contains(&signal) {
                self.ended_from_outside.set(true);
            }
            // SAFETY: kill has no memory preconditions. The child is not
            // reaped before `try_wait` sees it end, so `pid` is still it.
            unsafe { libc::kill(pid, signal) };
        }
    }

    /// Whether [`Self::wait`] passed on a signal asking the job to end
    /// (SIGTERM, SIGHUP, SIGINT, SIGQUIT).
    pub fn ended_from_outside(&self) -> bool {
        self.ended_from_outside.get()
    }

    /// Unblock the signals again, once the child has ended: one pending,
    /// or sent from now on, acts on this process as its disposition says
    /// (by default, it ends it).
    pub fn unblock(self) -> io::Result<()> {
        // SAFETY: the set was built by `block`.
        match unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &self.waited, std::ptr::null_mut())
        } {
            0 => Ok(()),
            code => Err(io::Error::from_raw_os_error(code)),
        }
    }
}

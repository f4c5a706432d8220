//! How many device servers `run --mpi N` may start on this machine.
//!
//! `mpirun --oversubscribe` takes any count, and then spends minutes
//! mapping and forking 100001 processes before it fails. The count is
//! checked first against what the machine can hold, the smaller of:
//!
//! * memory: `MemAvailable` (`/proc/meminfo`) over [`SERVER_MEMORY`]. An
//!   idle server holds about 15 MiB resident before its runtime starts
//!   (Open MPI 4.1, measured); with its runtime, Open MPI's shared-memory
//!   segments and the images it is sent, 64 MiB is a floor for a server
//!   that works;
//! * processes: every rank is at least [`TASKS_PER_RANK`] tasks (its main
//!   thread and Open MPI's three, measured), and `RLIMIT_NPROC` (`ulimit
//!   -u`) counts tasks of the user, those already running included. Root
//!   is not bound by it.
//!
//! Any count within both starts; its speed is another matter (the servers
//! share the cores), which is the user's to judge.
use anyhow::{Context, Result};

/// Memory a device server is counted for.
pub const SERVER_MEMORY: u64 = 64 << 20;

/// Tasks (threads) one rank of the job is counted for.
pub const TASKS_PER_RANK: u64 = 4;

/// The largest server count this machine can start, and why.
pub fn max_servers() -> Result<(u64, String)> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").context("reading /proc/meminfo")?;
    let available = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .context("no MemAvailable in /proc/meminfo")?
        * 1024;
    let mut max = available / SERVER_MEMORY;
    let mut why = format!(
        "{} MiB of memory available, {} MiB per server",
        available >> 20,
        SERVER_MEMORY >> 20
    );
    if let Some((limit, running)) = task_limit() {
        // The program's rank is one more.
        let by_tasks = (limit.saturating_sub(running) / TASKS_PER_RANK).saturating_sub(1);
        if by_tasks < max {
            max = by_tasks;
            why = format!(
                "ulimit -u {limit} with {running} tasks of this user running, {TASKS_PER_RANK} per rank"
            );
        }
    }
    Ok((max, why))
}

/// `RLIMIT_NPROC` and the tasks this user runs, where the limit binds.
fn task_limit() -> Option<(u64, u64)> {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    if uid == 0 {
        return None;
    }
    // SAFETY: a zeroed rlimit is a valid out-parameter.
    let limit = unsafe {
        let mut limit: libc::rlimit = std::mem::zeroed();
        (libc::getrlimit(libc::RLIMIT_NPROC, &mut limit) == 0).then_some(limit.rlim_cur)?
    };
    if limit == libc::RLIM_INFINITY {
        return None;
    }
    Some((limit, tasks_of(uid)))
}

/// Threads of the processes whose real uid is `uid` (what `RLIMIT_NPROC`
/// counts); a process that ends while it is read is left out.
fn tasks_of(uid: libc::uid_t) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("status")).ok())
        .filter_map(|status| {
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| v.split_whitespace().next())
                    .and_then(|v| v.parse::<u64>().ok())
            };
            (field("Uid:")? == u64::from(uid)).then(|| field("Threads:").unwrap_or(1))
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_can_start_some_servers_and_says_why() {
        let (max, why) = max_servers().unwrap();
        assert!(max >= 1, "{why}");
        assert!(why.contains("per"), "{why}");
    }

    #[test]
    fn this_process_counts_among_its_users_tasks() {
        // SAFETY: getuid has no preconditions.
        assert!(tasks_of(unsafe { libc::getuid() }) >= 1);
    }
}

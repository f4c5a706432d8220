//! Who each rank of the job is ([`Peer`], gathered when joining), and
//! whether its process still runs: the check that bounds every wait.
use super::World;
use crate::mpi;

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
pub(super) const RECORD: usize = 4 + 4 + 8 + 8 + mpi::MAX_PROCESSOR_NAME;

impl Peer {
    pub(super) fn encode(&self) -> [u8; RECORD] {
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

    pub(super) fn decode(bytes: &[u8]) -> Peer {
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
pub(super) fn own_process_table() -> u64 {
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
pub(super) fn proc_stat(pid: &str) -> Option<(char, u64)> {
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

impl World {
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
    ///
    /// A server given up on for its silence ([`super::liveness`]) counts
    /// as dead too: the text says so.
    pub fn death_of(&self, rank: i32) -> Option<String> {
        if let Some(why) = self.silence_of(rank) {
            return Some(why);
        }
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

    /// The first rank of the job (not this one) known to be dead.
    pub fn any_peer_dead(&self) -> Option<String> {
        (0..self.peers.len() as i32)
            .filter(|&rank| rank != self.rank)
            .find_map(|rank| self.death_of(rank))
    }
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

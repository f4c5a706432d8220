//! What the host backend reports of its devices
//! (`__tgt_rtl_get_device_info`): every host device is the machine's CPU,
//! and its memory is the machine's (device memory is `malloc`ed).
//!
//! * name: the CPU's model name, from `/proc/cpuinfo` (its first
//!   `model name` line);
//! * total and free memory: `MemTotal` and `MemAvailable` of
//!   `/proc/meminfo` (what the kernel says a program can still allocate
//!   without swapping), else `sysinfo(2)`'s total and free RAM. Limits of a
//!   cgroup are not read;
//! * launches: one team of one thread. A kernel is one call of a C
//!   function on the calling thread, whatever the launch asks for; a
//!   `-fopenmp` kernel forks its own threads with its own pragmas. So
//!   [`HostBackend`](crate::HostBackend) refuses a typed launch of more
//!   teams or threads ([`check_launch`]) rather than run it once.

use omptarget_plugin_kit::error::{PluginError, Result};
use omptarget_plugin_kit::TeamConfig;
use std::io::BufRead;

/// The value of the first `model name` line of a `/proc/cpuinfo` text.
pub fn cpu_model_name(cpuinfo: impl BufRead) -> Option<String> {
    cpuinfo
        .lines()
        .map_while(|line| line.ok())
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            let value = value.trim();
            (key.trim() == "model name" && !value.is_empty()).then(|| value.to_owned())
        })
}

/// `MemTotal` and `MemAvailable` of a `/proc/meminfo` text, in bytes.
pub fn meminfo(text: &str) -> (Option<u64>, Option<u64>) {
    let field = |name: &str| {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            let kib = rest.trim().strip_suffix("kB")?.trim().parse::<u64>().ok()?;
            kib.checked_mul(1024)
        })
    };
    (field("MemTotal"), field("MemAvailable"))
}

/// The CPU's model name, read now.
pub fn cpu_name() -> Option<String> {
    let file = std::fs::File::open("/proc/cpuinfo").ok()?;
    cpu_model_name(std::io::BufReader::new(file))
}

/// The machine's total and available memory in bytes, read now.
pub fn memory() -> (Option<u64>, Option<u64>) {
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo") {
        let found = meminfo(&text);
        if found.0.is_some() {
            return found;
        }
    }
    // SAFETY: `sysinfo` only writes the struct it is given.
    let mut info: libc::sysinfo = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is a writable `struct sysinfo`.
    if unsafe { libc::sysinfo(&mut info) } != 0 {
        return (None, None);
    }
    let unit = u64::from(info.mem_unit.max(1));
    (
        (info.totalram as u64).checked_mul(unit),
        (info.freeram as u64).checked_mul(unit),
    )
}

/// Refuse a typed launch that asks for more than one team or more than one
/// thread per team: the host runs a kernel as one call on the calling
/// thread, so it could not honour them (0 is "the plugin's choice": one).
pub fn check_launch(teams: Option<TeamConfig>) -> Result<()> {
    let Some(teams) = teams else {
        return Ok(());
    };
    if teams.num_teams > 1 || teams.thread_limit > 1 {
        return Err(PluginError::InvalidArgument(format!(
            "a launch of {} team(s) of {} thread(s) cannot be honoured: the host plugin runs a \
             kernel as one call on the calling thread (one team of one thread); launch with \
             the plugin's choice (0) or 1, and parallelise inside the kernel (OpenMP pragmas)",
            teams.num_teams, teams.thread_limit
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_model_name_is_the_cpu_name() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\
                    processor\t: 1\nmodel name\t: Other\n";
        assert_eq!(
            cpu_model_name(text.as_bytes()).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(cpu_model_name("processor : 0\n".as_bytes()), None);
        assert_eq!(cpu_model_name("model name :   \n".as_bytes()), None);
    }

    #[test]
    fn meminfo_fields_are_kib() {
        let text = "MemTotal:       16384 kB\nMemFree:         1024 kB\nMemAvailable:    8192 kB\n";
        assert_eq!(meminfo(text), (Some(16 << 20), Some(8 << 20)));
        assert_eq!(meminfo("MemTotal: 4 kB\n"), (Some(4096), None));
        assert_eq!(meminfo("MemTotalX: 4 kB\nnonsense"), (None, None));
    }

    #[test]
    fn this_machine_has_a_cpu_and_memory() {
        let (total, free) = memory();
        let total = total.expect("total memory");
        assert!(
            total > 0 && free.is_some_and(|f| f <= total),
            "{total} {free:?}"
        );
        if std::path::Path::new("/proc/cpuinfo").exists() && cfg!(target_arch = "x86_64") {
            assert!(cpu_name().is_some());
        }
    }

    #[test]
    fn a_launch_of_more_than_one_team_or_thread_is_refused() {
        let teams = |num_teams, thread_limit| {
            Some(TeamConfig {
                num_teams,
                thread_limit,
                loop_tripcount: 0,
            })
        };
        for ok in [None, teams(0, 0), teams(1, 1), teams(1, 0), teams(0, 1)] {
            assert!(check_launch(ok).is_ok(), "{ok:?}");
        }
        for refused in [teams(100, 0), teams(0, 8), teams(4, 8)] {
            let err = check_launch(refused).unwrap_err().to_string();
            assert!(err.contains("cannot be honoured"), "{err}");
        }
    }
}

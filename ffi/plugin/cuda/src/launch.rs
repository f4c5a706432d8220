//! Grid and block sizes of a launch, by LLVM's rules (its CUDA plugin's
//! `runTargetTeamRegion`): the `num_teams` and `thread_limit` clauses, the
//! kernel's execution mode, the loop's trip count and the device limits.
//!
//! A pure function, unit-tested without a device.

use omptarget_plugin_kit::TeamConfig;

/// LLVM 14's default teams and threads per team when no clause and no
/// environment variable says otherwise.
pub const DEFAULT_TEAMS: u32 = 128;
/// See [`DEFAULT_TEAMS`].
pub const DEFAULT_THREADS: u32 = 128;

/// How the device runtime runs a kernel (LLVM's `OMPTgtExecModeFlags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecMode {
    /// One main thread per team runs the sequential part; the team's other
    /// threads wait in a state machine (`target teams` without a combined
    /// `parallel`). Needs one extra warp for the main thread.
    Generic,
    /// Every thread runs the region (`target teams distribute parallel for`).
    Spmd,
    /// A generic kernel the compiler turned into SPMD: SPMD threads, but
    /// the trip count is that of the `distribute` loop.
    GenericSpmd,
}

impl ExecMode {
    /// From the flag byte of `<kernel>_exec_mode` (clang 14) or the kernel
    /// environment (clang 19/22): bit 0 generic, bit 1 SPMD; bit 2 (LLVM
    /// 21's SPMD-no-loop) runs as SPMD. `None` for a byte no release uses.
    pub fn from_flags(flags: u8) -> Option<Self> {
        match flags {
            1 => Some(Self::Generic),
            2 | 4 | 6 => Some(Self::Spmd),
            3 => Some(Self::GenericSpmd),
            _ => None,
        }
    }
}

/// The device's limits and defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK`.
    pub max_threads_per_block: u32,
    /// `CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X`.
    pub max_blocks: u32,
    /// `CU_DEVICE_ATTRIBUTE_WARP_SIZE`.
    pub warp_size: u32,
    /// Teams when nothing says how many (`OMP_NUM_TEAMS`, else 128).
    pub default_teams: u32,
    /// Threads when nothing says how many (`OMP_TEAMS_THREAD_LIMIT`, else 128).
    pub default_threads: u32,
    /// `OMP_NUM_TEAMS` was set: it wins over the trip count.
    pub teams_from_env: bool,
}

/// What the plugin knows of a kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLimits {
    /// Its execution mode.
    pub mode: ExecMode,
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK` (registers and shared
    /// memory limit it), and the kernel environment's `MaxThreads` when set.
    pub max_threads: u32,
}

/// `(blocks, threads per block)` for a launch; `teams` is `None` for a
/// plain target region, which LLVM runs as one team with a thread limit
/// of 1.
pub fn geometry(teams: Option<TeamConfig>, kernel: KernelLimits, device: Limits) -> (u32, u32) {
    let teams = teams.unwrap_or(TeamConfig {
        num_teams: 1,
        thread_limit: 1,
        loop_tripcount: 0,
    });
    let mut threads = match u32::try_from(teams.thread_limit) {
        Ok(limit) if limit > 0 => {
            // A generic kernel's main thread runs in a warp of its own.
            if kernel.mode == ExecMode::Generic {
                limit.saturating_add(device.warp_size)
            } else {
                limit
            }
        }
        _ => device.default_threads,
    };
    threads = threads
        .min(device.max_threads_per_block)
        .min(kernel.max_threads.max(1))
        .max(1);
    let max_blocks = device.max_blocks.max(1);
    let blocks = match u32::try_from(teams.num_teams) {
        Ok(n) if n > 0 => n.min(max_blocks),
        _ if teams.loop_tripcount > 0 && !device.teams_from_env => {
            let trip = teams.loop_tripcount;
            let wanted = match kernel.mode {
                // One loop iteration per thread.
                ExecMode::Spmd => (trip - 1) / u64::from(threads) + 1,
                // One `distribute` iteration per team.
                ExecMode::Generic | ExecMode::GenericSpmd => trip,
            };
            u32::try_from(wanted).unwrap_or(u32::MAX).min(max_blocks)
        }
        _ => device.default_teams.min(max_blocks),
    };
    (blocks.max(1), threads)
}

/// [`geometry`] for a typed launch (`__tgt_rtl_run_typed_region`, the Rust
/// API's `LaunchConfig`), where teams are the grid and threads the block:
/// what was asked is run exactly, or refused. A number of teams above the
/// device's grid, or of threads above what the device and the kernel run
/// per block (for a generic-mode kernel, the asked threads plus its main
/// warp), is an error saying the limit, never clamped. 0 (the plugin's
/// choice) and a region without teams follow [`geometry`].
pub fn typed_geometry(
    teams: Option<TeamConfig>,
    kernel: KernelLimits,
    device: Limits,
) -> Result<(u32, u32), String> {
    let (blocks, threads) = geometry(teams, kernel, device);
    let Some(asked) = teams else {
        return Ok((blocks, threads));
    };
    if let Ok(n) = u32::try_from(asked.num_teams) {
        if n > 0 && blocks != n {
            return Err(format!(
                "{n} teams cannot be honoured: the device runs at most {} blocks per launch",
                device.max_blocks
            ));
        }
    }
    if let Ok(n) = u32::try_from(asked.thread_limit) {
        let extra = if kernel.mode == ExecMode::Generic {
            device.warp_size
        } else {
            0
        };
        if n > 0 && u64::from(threads) != u64::from(n) + u64::from(extra) {
            let most = device
                .max_threads_per_block
                .min(kernel.max_threads.max(1))
                .saturating_sub(extra);
            return Err(format!(
                "{n} threads per team cannot be honoured: this kernel runs at most {most} \
                 (the device's {} per block, the kernel's own limit {}{})",
                device.max_threads_per_block,
                kernel.max_threads,
                if extra > 0 {
                    ", less a warp for a generic-mode kernel's main thread".to_owned()
                } else {
                    String::new()
                }
            ));
        }
    }
    Ok((blocks, threads))
}

#[cfg(test)]
mod tests {
    use super::*;

    const H200: Limits = Limits {
        max_threads_per_block: 1024,
        max_blocks: i32::MAX as u32,
        warp_size: 32,
        default_teams: DEFAULT_TEAMS,
        default_threads: DEFAULT_THREADS,
        teams_from_env: false,
    };

    fn kernel(mode: ExecMode) -> KernelLimits {
        KernelLimits {
            mode,
            max_threads: 1024,
        }
    }

    fn teams(num_teams: i32, thread_limit: i32, loop_tripcount: u64) -> Option<TeamConfig> {
        Some(TeamConfig {
            num_teams,
            thread_limit,
            loop_tripcount,
        })
    }

    #[test]
    fn a_plain_target_region_is_one_team() {
        assert_eq!(geometry(None, kernel(ExecMode::Generic), H200), (1, 33));
        assert_eq!(geometry(None, kernel(ExecMode::Spmd), H200), (1, 1));
    }

    #[test]
    fn clauses_are_used_and_clamped() {
        let spmd = kernel(ExecMode::Spmd);
        assert_eq!(geometry(teams(7, 64, 0), spmd, H200), (7, 64));
        assert_eq!(geometry(teams(7, 4096, 0), spmd, H200), (7, 1024));
        let small = Limits {
            max_blocks: 100,
            ..H200
        };
        assert_eq!(geometry(teams(1000, 0, 0), spmd, small), (100, 128));
        // Generic: the thread limit plus the main thread's warp.
        assert_eq!(
            geometry(teams(2, 64, 0), kernel(ExecMode::Generic), H200),
            (2, 96)
        );
        // The kernel's own limit (registers) wins over the clause.
        let heavy = KernelLimits {
            mode: ExecMode::Spmd,
            max_threads: 256,
        };
        assert_eq!(geometry(teams(1, 512, 0), heavy, H200), (1, 256));
    }

    #[test]
    fn the_trip_count_sizes_the_grid_by_mode() {
        // SPMD: one iteration per thread, rounded up.
        assert_eq!(
            geometry(teams(0, 0, 1000), kernel(ExecMode::Spmd), H200),
            (8, 128)
        );
        assert_eq!(
            geometry(teams(0, 256, 1024), kernel(ExecMode::Spmd), H200),
            (4, 256)
        );
        // Generic and generic-SPMD: one distribute iteration per team.
        assert_eq!(
            geometry(teams(0, 0, 40), kernel(ExecMode::Generic), H200),
            (40, 128)
        );
        assert_eq!(
            geometry(teams(0, 0, 40), kernel(ExecMode::GenericSpmd), H200),
            (40, 128)
        );
        // OMP_NUM_TEAMS wins over the trip count.
        let env = Limits {
            default_teams: 3,
            teams_from_env: true,
            ..H200
        };
        assert_eq!(
            geometry(teams(0, 0, 1000), kernel(ExecMode::Spmd), env),
            (3, 128)
        );
        // No trip count, no clause: the default.
        assert_eq!(
            geometry(teams(0, 0, 0), kernel(ExecMode::Spmd), H200),
            (128, 128)
        );
    }

    #[test]
    fn a_typed_launch_runs_what_it_asks_or_is_refused() {
        let spmd = kernel(ExecMode::Spmd);
        assert_eq!(typed_geometry(teams(7, 64, 0), spmd, H200), Ok((7, 64)));
        assert_eq!(typed_geometry(teams(0, 0, 0), spmd, H200), Ok((128, 128)));
        assert_eq!(typed_geometry(None, spmd, H200), Ok((1, 1)));
        // Generic: the threads asked plus the main thread's warp.
        let generic = kernel(ExecMode::Generic);
        assert_eq!(typed_geometry(teams(2, 64, 0), generic, H200), Ok((2, 96)));
        // Above the device's block, or the kernel's own limit: refused.
        let err = typed_geometry(teams(1, 4096, 0), spmd, H200).unwrap_err();
        assert!(err.contains("at most 1024"), "{err}");
        let heavy = KernelLimits {
            mode: ExecMode::Spmd,
            max_threads: 256,
        };
        let err = typed_geometry(teams(1, 512, 0), heavy, H200).unwrap_err();
        assert!(err.contains("at most 256"), "{err}");
        let err = typed_geometry(teams(1, 1024, 0), generic, H200).unwrap_err();
        assert!(err.contains("at most 992"), "{err}");
        // More blocks than the grid holds.
        let small = Limits {
            max_blocks: 100,
            ..H200
        };
        let err = typed_geometry(teams(1000, 0, 0), spmd, small).unwrap_err();
        assert!(err.contains("at most 100 blocks"), "{err}");
    }

    #[test]
    fn exec_mode_bytes() {
        assert_eq!(ExecMode::from_flags(1), Some(ExecMode::Generic));
        assert_eq!(ExecMode::from_flags(2), Some(ExecMode::Spmd));
        assert_eq!(ExecMode::from_flags(3), Some(ExecMode::GenericSpmd));
        assert_eq!(ExecMode::from_flags(0), None);
        assert_eq!(ExecMode::from_flags(9), None);
    }
}

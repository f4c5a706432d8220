//! Running a target region on a device: `run_target_region` for a region
//! without teams, `run_target_team_region` with teams, thread limit and loop
//! trip count (LLVM 14's plugin ABI). Arguments are pointer-sized: device
//! addresses for mapped data, values for scalars; each is adjusted by its
//! offset (`args[i] + offsets[i]`) by the plugin before the call.
use crate::device::{Device, PluginOp};
use crate::{Error, Result};
use std::ffi::c_void;

/// Which region entry to use (its blocking or `_async` form is chosen in
/// one place, the runtime's `device::plugin_op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegionLaunch {
    /// `#pragma omp target` without `teams`: one team, one thread.
    Single,
    /// A teams region; 0 for `num_teams`/`thread_limit` lets the plugin choose.
    Teams {
        /// Number of teams to launch (0: the plugin chooses).
        num_teams: i32,
        /// Maximum number of threads per team (0: the plugin chooses).
        thread_limit: i32,
        /// The loop's trip count, 0 if unknown.
        loop_tripcount: u64,
    },
}

impl Device {
    // The raw layer: the OpenMP layer's interface (docs/openmp.md), not the
    // API for programs, so hidden from these docs; reachable, `unsafe` where
    // memory is at stake.
    #[doc(hidden)]
    /// Run the region at `entry` with `args` (offsets applied by the
    /// plugin). Returns when the region has completed.
    ///
    /// # Safety
    /// `entry` is the device address of a kernel from the target table of an
    /// image loaded on this device; `args` match its parameters and every
    /// address among them is valid device memory for what the kernel does.
    pub unsafe fn run_region(
        &self,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        offsets: &mut [isize],
        launch: RegionLaunch,
    ) -> Result<()> {
        if args.len() != offsets.len() {
            return Err(Error::InvalidArgument(format!(
                "{} arguments but {} offsets",
                args.len(),
                offsets.len()
            )));
        }
        let _span = crate::profile::span(crate::profile::Kind::Launch, "launch").map(|s| {
            let s = s.device(self.id());
            // A host-plugin kernel is a symbol of its image; others have none.
            match crate::trace::profile::symbol_name(entry) {
                Some(name) => s.detail(&name),
                None => s,
            }
        });
        let num_args = i32::try_from(args.len())
            .map_err(|_| Error::InvalidArgument(format!("{} arguments", args.len())))?;
        self.ensure_initialized()?;
        let local = self.local_id();
        let (args_ptr, offsets_ptr) = (args.as_mut_ptr(), offsets.as_mut_ptr());
        tracing::debug!(plugin = %self.plugin_name(), device = self.id(), ?entry, num_args, ?launch, "launch");
        let op = match launch {
            RegionLaunch::Single => PluginOp::Region {
                device: local,
                entry,
                args: args_ptr,
                offsets: offsets_ptr,
                num_args,
            },
            RegionLaunch::Teams {
                num_teams,
                thread_limit,
                loop_tripcount,
            } => PluginOp::TeamRegion {
                device: local,
                entry,
                args: args_ptr,
                offsets: offsets_ptr,
                num_args,
                num_teams,
                thread_limit,
                loop_tripcount,
            },
        };
        let entry_name = match launch {
            RegionLaunch::Single => "run_target_region",
            RegionLaunch::Teams { .. } => "run_target_team_region",
        };
        // The plugin call beneath the launch, in the profile.
        let _call = crate::profile::span(crate::profile::Kind::Plugin, entry_name);
        // A kernel may end its thread: `launch` returns `ThreadExiting`,
        // the exit pending for the outermost frame.
        let exported = self.plugin().exported();
        let code = self.plugin().launch(|e| {
            // SAFETY: `entry` is a kernel of an image loaded on this
            // device and `args`/`offsets` match it (this function's
            // contract).
            unsafe { op.run_and_wait(e, exported) }
        })?;
        self.check(entry_name, code)
    }
}

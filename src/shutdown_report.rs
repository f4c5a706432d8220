//! What the teardown did: every step in order, what was freed, what the user
//! still held, and what could not be freed and why; and the plugins that
//! were skipped at load, which have no teardown steps of their own.
use crate::mapping::MappedRange;
use crate::plugin::SkippedPlugin;
use std::fmt;

pub use crate::image_dtors::{DtorKernels, DtorsOutcome, ImageDtors};
pub use crate::step_outcome::StepOutcome;

/// The phases of the teardown, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Step 1: each device's memory manager returns its cached blocks
    /// ([`TeardownStep::DrainMemoryManager`]).
    DrainMemoryManagers,
    /// Step 2: allocations the user never freed are freed ([`TeardownStep::FreeUserAllocations`]).
    FreeUserAllocations,
    /// Step 3: images still loaded are unloaded ([`TeardownStep::UnloadImages`]).
    UnloadImages,
    /// Step 4: initialised devices are deinitialised ([`TeardownStep::DeinitDevice`]).
    DeinitDevices,
    /// Step 5: each plugin's `deinit_plugin` runs ([`TeardownStep::DeinitPlugin`]).
    DeinitPlugins,
    /// Step 6: the plugin libraries are closed ([`TeardownStep::ClosePlugin`]).
    ClosePlugins,
}

/// One step of the teardown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeardownStep {
    /// (1) The memory manager's cached blocks returned through `data_delete`.
    DrainMemoryManager {
        /// Runtime-wide number of the device.
        device: usize,
        /// File name of the plugin library serving the device, then where the
        /// device is for one outside this process (`libomptarget.rtl.mpi.so at rank 1 on node7`).
        plugin: String,
        /// Number of cached blocks freed.
        blocks: usize,
        /// Total size of the freed blocks, in bytes.
        bytes: usize,
        /// How the step went; each block that could not be freed is listed in
        /// [`ShutdownReport::not_freed`].
        outcome: StepOutcome,
    },
    /// (2) Allocations the user never freed, freed through `data_delete`.
    FreeUserAllocations {
        /// Runtime-wide number of the device.
        device: usize,
        /// File name of the plugin library serving the device, then where the
        /// device is for one outside this process (`libomptarget.rtl.mpi.so at rank 1 on node7`).
        plugin: String,
        /// Number of user allocations freed.
        blocks: usize,
        /// Total size of the freed allocations, in bytes.
        bytes: usize,
        /// How the step went; each allocation that could not be freed is listed in
        /// [`ShutdownReport::not_freed`].
        outcome: StepOutcome,
    },
    /// (3) Images unloaded through `unload_binary`.
    UnloadImages {
        /// Runtime-wide number of the device.
        device: usize,
        /// File name of the plugin library serving the device, then where the
        /// device is for one outside this process (`libomptarget.rtl.mpi.so at rank 1 on node7`).
        plugin: String,
        /// Number of images unloaded successfully.
        images: usize,
        /// How the step went ([`StepOutcome::NotExported`] when the plugin has no
        /// `unload_binary`); each image that failed is listed in [`ShutdownReport::not_freed`].
        outcome: StepOutcome,
    },
    /// (4) `deinit_device` of an initialised device.
    DeinitDevice {
        /// Runtime-wide number of the device.
        device: usize,
        /// File name of the plugin library serving the device, then where the
        /// device is for one outside this process (`libomptarget.rtl.mpi.so at rank 1 on node7`).
        plugin: String,
        /// What `deinit_device` returned (or why it was not called).
        outcome: StepOutcome,
    },
    /// (5) `deinit_plugin`.
    DeinitPlugin {
        /// File name of the plugin library.
        plugin: String,
        /// What `deinit_plugin` returned (or why it was not called).
        outcome: StepOutcome,
    },
    /// (6) The library closed (dlclose).
    ClosePlugin {
        /// File name of the plugin library.
        plugin: String,
        /// Whether closing the library (dlclose) succeeded.
        outcome: StepOutcome,
    },
}

impl TeardownStep {
    /// The phase this step belongs to.
    pub fn phase(&self) -> Phase {
        match self {
            TeardownStep::DrainMemoryManager { .. } => Phase::DrainMemoryManagers,
            TeardownStep::FreeUserAllocations { .. } => Phase::FreeUserAllocations,
            TeardownStep::UnloadImages { .. } => Phase::UnloadImages,
            TeardownStep::DeinitDevice { .. } => Phase::DeinitDevices,
            TeardownStep::DeinitPlugin { .. } => Phase::DeinitPlugins,
            TeardownStep::ClosePlugin { .. } => Phase::ClosePlugins,
        }
    }

    /// How the step went.
    pub fn outcome(&self) -> &StepOutcome {
        match self {
            TeardownStep::DrainMemoryManager { outcome, .. }
            | TeardownStep::FreeUserAllocations { outcome, .. }
            | TeardownStep::UnloadImages { outcome, .. }
            | TeardownStep::DeinitDevice { outcome, .. }
            | TeardownStep::DeinitPlugin { outcome, .. }
            | TeardownStep::ClosePlugin { outcome, .. } => outcome,
        }
    }

    /// The device the step is about, if it is about one.
    pub fn device(&self) -> Option<usize> {
        match self {
            TeardownStep::DrainMemoryManager { device, .. }
            | TeardownStep::FreeUserAllocations { device, .. }
            | TeardownStep::UnloadImages { device, .. }
            | TeardownStep::DeinitDevice { device, .. } => Some(*device),
            TeardownStep::DeinitPlugin { .. } | TeardownStep::ClosePlugin { .. } => None,
        }
    }
}

impl fmt::Display for TeardownStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TeardownStep::DrainMemoryManager {
                device,
                plugin,
                blocks,
                bytes,
                outcome,
            } => write!(
                f,
                "drain memory manager   device {device} ({plugin}): {blocks} blocks, {bytes} bytes: {outcome}"
            ),
            TeardownStep::FreeUserAllocations {
                device,
                plugin,
                blocks,
                bytes,
                outcome,
            } => write!(
                f,
                "free user allocations  device {device} ({plugin}): {blocks} blocks, {bytes} bytes: {outcome}"
            ),
            TeardownStep::UnloadImages {
                device,
                plugin,
                images,
                outcome,
            } => write!(
                f,
                "unload images          device {device} ({plugin}): {images} images: {outcome}"
            ),
            TeardownStep::DeinitDevice {
                device,
                plugin,
                outcome,
            } => write!(f, "deinit device          device {device} ({plugin}): {outcome}"),
            TeardownStep::DeinitPlugin { plugin, outcome } => {
                write!(f, "deinit plugin          {plugin}: {outcome}")
            }
            TeardownStep::ClosePlugin { plugin, outcome } => {
                write!(f, "close plugin           {plugin}: {outcome}")
            }
        }
    }
}

/// An allocation the user still held at shutdown (freed by the teardown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserLeak {
    /// Runtime-wide number of the device the allocation was on.
    pub device: usize,
    /// Device address of the allocation.
    pub address: usize,
    /// Size of the allocation, in bytes.
    pub size: usize,
    /// The kind of memory it was allocated as (device, host, shared, default).
    pub kind: crate::abi::AllocKind,
    /// Where it was allocated (resolve it with [`crate::origin::AllocOrigin::resolve`]).
    pub origin: crate::origin::AllocOrigin,
}

/// An image a typed [`crate::Image`] handle loaded and never dropped
/// (`mem::forget`, a leaked `Rc` cycle): the teardown unloads it, and
/// reports it here as the user's leak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakedImage {
    /// Runtime-wide number of the device it was loaded on.
    pub device: usize,
    /// File name of the plugin library serving the device, then where the
    /// device is for one outside this process (`libomptarget.rtl.mpi.so at rank 1 on node7`).
    pub plugin: String,
    /// Address of its `__tgt_device_image`.
    pub image: usize,
    /// The entries it was loaded for.
    pub entries: Vec<String>,
}

/// A [`crate::Queue`] never dropped: the teardown synchronised it (before
/// the drain, so its work finished before memory was freed) and freed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakedQueue {
    /// Runtime-wide number of its device.
    pub device: usize,
    /// File name of the plugin library serving the device, then where the
    /// device is for one outside this process (`libomptarget.rtl.mpi.so at rank 1 on node7`).
    pub plugin: String,
    /// It still held a plugin queue (work queued and never synchronised).
    pub had_work: bool,
    /// How the teardown's synchronisation went.
    pub outcome: StepOutcome,
}

/// A mapping-table entry still present at shutdown.
#[derive(Debug, Clone)]
pub struct LiveMapping {
    /// Runtime-wide number of the device whose mapping table holds the entry.
    pub device: usize,
    /// The host range mapped, its device address and reference counts.
    pub range: MappedRange,
}

/// Something the teardown could not release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFreed {
    /// Runtime-wide number of the device it belongs to; `None` for something
    /// plugin-wide.
    pub device: Option<usize>,
    /// File name of the plugin library it belongs to.
    pub plugin: String,
    /// What it is: "cached block 0x… (64 bytes)", "image 0x…", …
    pub what: String,
    /// Why it was not released.
    pub reason: String,
}

/// A handle or block a front end's program left behind (never destroyed
/// or freed), which the front end released for it before the teardown:
/// liboffload's queues, events, programs, registrations and `olMemAlloc`
/// blocks at its last `olShutDown` (or at the session's end without one).
/// The API lets the program leave them to its shutdown, so they are
/// listed for the reader and do not make the report unclean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiLeak {
    /// The API it came from ("liboffload").
    pub api: String,
    /// What it is ("queue 0x12 on device 0x3, never destroyed (left to
    /// the last olShutDown)", ...).
    pub what: String,
}

/// What [`crate::Runtime::shutdown`] did.
#[derive(Debug, Clone, Default)]
pub struct ShutdownReport {
    /// Every step, in the order it ran.
    pub steps: Vec<TeardownStep>,
    /// Blocks freed through the plugins (cache drain plus user leaks).
    pub blocks_freed: usize,
    /// Bytes freed through the plugins (cache drain plus user leaks).
    pub bytes_freed: usize,
    /// Allocations the user still held.
    pub user_leaks: Vec<UserLeak>,
    /// Images whose [`crate::Image`] handle was never dropped.
    pub leaked_images: Vec<LeakedImage>,
    /// What the program left behind through another front end (liboffload),
    /// released for it before the teardown.
    pub api_leaks: Vec<ApiLeak>,
    /// [`crate::Queue`]s never dropped.
    pub leaked_queues: Vec<LeakedQueue>,
    /// Mapping-table entries still present.
    pub live_mappings: Vec<LiveMapping>,
    /// What could not be released, and why.
    pub not_freed: Vec<NotFreed>,
    /// The destructors of every image loaded at shutdown, per device and
    /// image: run by its unload (step 3, before `deinit_device`), or not
    /// run and why.
    pub image_dtors: Vec<ImageDtors>,
    /// The plugins skipped when the runtime was built: each one's path, why
    /// it was skipped and what was undone then (`deinit_plugin`, close).
    /// They have no steps above.
    pub skipped_plugins: Vec<SkippedPlugin>,
    /// The teardown ran from `Drop`, without an explicit shutdown.
    pub from_drop: bool,
    /// A partial teardown at process exit: calls were still in flight
    /// (why), so only cached blocks were freed and the rest was left to the
    /// OS ([`crate::Runtime::release_unused_at_exit`]).
    pub left_to_os: Option<String>,
}

impl ShutdownReport {
    /// No step failed (nor an undo step of a skipped plugin), nothing was
    /// left unreleased, and the user held nothing. A plugin skipped and
    /// undone without failure does not make the report unclean.
    pub fn is_clean(&self) -> bool {
        self.steps.iter().all(|s| s.outcome().is_ok())
            && self
                .skipped_plugins
                .iter()
                .flat_map(|p| &p.undone)
                .all(|(_, outcome)| outcome.is_ok())
            && self.not_freed.is_empty()
            && self.user_leaks.is_empty()
            && self.leaked_images.is_empty()
            && self.leaked_queues.is_empty()
            && self.live_mappings.is_empty()
            && self.left_to_os.is_none()
    }

    /// One line: what was freed, what the program still held, what could
    /// not be released, and whether every step succeeded.
    ///
    /// ```
    /// # use omptarget::{Config, DeviceBuffer, Runtime};
    /// let runtime = Runtime::new(Config::default())?;
    /// std::mem::forget(DeviceBuffer::<u8>::new(runtime.device(0)?, 100)?);
    /// let report = runtime.shutdown();
    /// assert_eq!(
    ///     report.summary(),
    ///     "6 steps, 1 blocks / 100 bytes freed; the program never freed 1 allocations (100 bytes); every step succeeded"
    /// );
    /// # Ok::<(), omptarget::Error>(())
    /// ```
    pub fn summary(&self) -> String {
        let mut line = format!(
            "{} steps, {} blocks / {} bytes freed",
            self.steps.len(),
            self.blocks_freed,
            self.bytes_freed
        );
        if !self.user_leaks.is_empty() {
            let bytes: usize = self.user_leaks.iter().map(|l| l.size).sum();
            line += &format!(
                "; the program never freed {} allocations ({bytes} bytes)",
                self.user_leaks.len()
            );
        }
        if !self.live_mappings.is_empty() {
            line += &format!("; {} mappings still live", self.live_mappings.len());
        }
        if !self.api_leaks.is_empty() {
            line += &format!(
                "; the program left {} handles or blocks through other APIs",
                self.api_leaks.len()
            );
        }
        if !self.not_freed.is_empty() {
            line += &format!("; {} things could not be released", self.not_freed.len());
        }
        let failed = self.steps.iter().filter(|s| !s.outcome().is_ok()).count();
        line += &match failed {
            0 => "; every step succeeded".to_owned(),
            n => format!("; {n} steps failed"),
        };
        line
    }

    /// The steps of one phase.
    pub fn steps_in(&self, phase: Phase) -> impl Iterator<Item = &TeardownStep> {
        self.steps.iter().filter(move |s| s.phase() == phase)
    }

    pub(crate) fn push(&mut self, step: TeardownStep) {
        match &step {
            TeardownStep::DrainMemoryManager { blocks, bytes, .. }
            | TeardownStep::FreeUserAllocations { blocks, bytes, .. } => {
                self.blocks_freed += blocks;
                self.bytes_freed += bytes;
            }
            _ => {}
        }
        self.steps.push(step);
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "omptarget shutdown{}: {} steps, {} blocks / {} bytes freed",
            if self.from_drop { " (from drop)" } else { "" },
            self.steps.len(),
            self.blocks_freed,
            self.bytes_freed
        )?;
        match self.skipped_plugins.len() {
            0 => writeln!(f)?,
            1 => writeln!(f, ", 1 plugin skipped at load")?,
            n => writeln!(f, ", {n} plugins skipped at load")?,
        }
        if let Some(why) = &self.left_to_os {
            writeln!(
                f,
                "  partial teardown at exit, the rest left to the OS: {why}"
            )?;
        }
        for (i, step) in self.steps.iter().enumerate() {
            writeln!(f, "  {:>2}. {step}", i + 1)?;
        }
        if !self.image_dtors.is_empty() {
            writeln!(
                f,
                "  image destructors (run by each image's unload, before deinit_device; or not run, and why):"
            )?;
            for dtors in &self.image_dtors {
                writeln!(f, "    {dtors}")?;
            }
        }
        if !self.skipped_plugins.is_empty() {
            writeln!(f, "  skipped at load (why; what was undone then):")?;
            for skipped in &self.skipped_plugins {
                writeln!(f, "    {skipped}")?;
            }
        }
        if !self.user_leaks.is_empty() {
            writeln!(f, "  still held by the user at shutdown:")?;
            for leak in &self.user_leaks {
                writeln!(
                    f,
                    "    device {}: {:#x}, {} bytes ({:?})",
                    leak.device, leak.address, leak.size, leak.kind
                )?;
            }
        }
        if !self.api_leaks.is_empty() {
            writeln!(
                f,
                "  left by the program through other APIs (released for it):"
            )?;
            for leak in &self.api_leaks {
                writeln!(f, "    {}: {}", leak.api, leak.what)?;
            }
        }
        if !self.leaked_images.is_empty() {
            writeln!(
                f,
                "  images whose Image handle was never dropped (unloaded by the teardown):"
            )?;
            for leak in &self.leaked_images {
                writeln!(
                    f,
                    "    device {} ({}): image {:#x}, entries {}",
                    leak.device,
                    leak.plugin,
                    leak.image,
                    leak.entries.join(", ")
                )?;
            }
        }
        if !self.leaked_queues.is_empty() {
            writeln!(
                f,
                "  queues never dropped (synchronised and freed by the teardown):"
            )?;
            for q in &self.leaked_queues {
                writeln!(
                    f,
                    "    device {} ({}): {}; synchronised: {}",
                    q.device,
                    q.plugin,
                    if q.had_work {
                        "work still queued"
                    } else {
                        "idle"
                    },
                    q.outcome
                )?;
            }
        }
        if !self.live_mappings.is_empty() {
            writeln!(f, "  mappings still present:")?;
            for m in &self.live_mappings {
                writeln!(
                    f,
                    "    device {}: host {:#x}+{} -> {:#x} (refcount {}, hold {})",
                    m.device,
                    m.range.host_begin,
                    m.range.size,
                    m.range.device_begin,
                    m.range.dynamic_refcount,
                    m.range.hold_refcount
                )?;
            }
        }
        if !self.not_freed.is_empty() {
            writeln!(f, "  could not be released:")?;
            for n in &self.not_freed {
                match n.device {
                    Some(d) => write!(f, "    device {d} ({}): ", n.plugin)?,
                    None => write!(f, "    {}: ", n.plugin)?,
                }
                writeln!(f, "{}: {}", n.what, n.reason)?;
            }
        }
        Ok(())
    }
}

/// Write `text()` where the environment variable `var` says, as the
/// runtime's reports go (`OMPTARGET_SHUTDOWN_REPORT`, `OMPTARGET_LEAK_REPORT`):
/// `1` or `stderr` prints it, any other non-empty value is a file it is
/// appended to (created if missing); unset, empty or `0`: nowhere, and
/// `text` is not called. `Err` names the file that could not be written.
/// Shared by the C shim and the MPI device server.
#[doc(hidden)]
pub fn write_where_var_says(var: &str, text: impl FnOnce() -> String) -> Result<(), String> {
    use std::io::Write;
    let Some(dest) = std::env::var_os(var) else {
        return Ok(());
    };
    if dest.is_empty() || dest == "0" {
        return Ok(());
    }
    let text = text();
    if dest == "1" || dest == "stderr" {
        eprint!("{text}");
        return Ok(());
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&dest)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .map_err(|err| format!("{}: {err}", dest.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::SkipReason;

    fn skipped(undone: Vec<(&'static str, StepOutcome)>) -> SkippedPlugin {
        SkippedPlugin {
            path: "/opt/lib/libomptarget.rtl.x.so".into(),
            reason: SkipReason::NoDevices(0),
            undone,
        }
    }

    #[test]
    fn skipped_plugins_are_shown_after_the_steps() {
        let report = ShutdownReport {
            steps: vec![TeardownStep::ClosePlugin {
                plugin: "libomptarget.rtl.y.so".into(),
                outcome: StepOutcome::Done,
            }],
            skipped_plugins: vec![skipped(vec![
                ("deinit_plugin", StepOutcome::Done),
                ("close", StepOutcome::Done),
            ])],
            ..Default::default()
        };
        assert!(report.is_clean());
        assert_eq!(
            report.to_string(),
            "omptarget shutdown: 1 steps, 0 blocks / 0 bytes freed, 1 plugin skipped at load\n\
             \x20  1. close plugin           libomptarget.rtl.y.so: ok\n\
             \x20 skipped at load (why; what was undone then):\n\
             \x20   /opt/lib/libomptarget.rtl.x.so: reports 0 devices; deinit_plugin: ok; close: ok\n"
        );
    }

    #[test]
    fn what_a_program_left_through_another_api_is_listed_and_still_clean() {
        let report = ShutdownReport {
            api_leaks: vec![ApiLeak {
                api: "liboffload".into(),
                what: "queue 0x5 (destroyed for it)".into(),
            }],
            ..Default::default()
        };
        assert!(report.is_clean(), "the API lets the shutdown release it");
        assert!(report
            .summary()
            .contains("left 1 handles or blocks through other APIs"));
        assert!(report.to_string().contains(
            "  left by the program through other APIs (released for it):\n    liboffload: queue 0x5 (destroyed for it)\n"
        ));
    }

    #[test]
    fn a_failed_undo_of_a_skipped_plugin_is_not_clean() {
        let report = ShutdownReport {
            skipped_plugins: vec![skipped(vec![
                ("deinit_plugin", StepOutcome::Failed("returned 1".into())),
                ("close", StepOutcome::Done),
            ])],
            ..Default::default()
        };
        assert!(!report.is_clean());
        assert!(report
            .to_string()
            .contains("deinit_plugin: FAILED: returned 1; close: ok\n"));
    }

    #[test]
    fn without_skipped_plugins_the_header_says_nothing_of_them() {
        let report = ShutdownReport::default();
        assert_eq!(
            report.to_string(),
            "omptarget shutdown: 0 steps, 0 blocks / 0 bytes freed\n"
        );
        assert!(report.is_clean());
    }
}

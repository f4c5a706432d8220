//! What a device is, as its plugin says ([`Device::properties`]), and the
//! launch limits a typed launch is checked against.
//!
//! The values come from the plugin's `__tgt_rtl_get_device_info` (this
//! project's entry; the plugin kit implements it, each backend fills in
//! what it knows). LLVM's plugins lack the entry: their devices have a
//! plugin name and path, and `None` for everything else.
use super::Device;
use crate::abi::plugin::{device_kind, DeviceInfoKey};
use crate::launch::RegionLaunch;
use crate::{Error, Result};
use std::fmt;
use std::path::PathBuf;

/// What kind of device it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceKind {
    /// The host's CPU: kernels are functions called in this process (the
    /// host plugin).
    HostCpu,
    /// An NVIDIA GPU, through CUDA (the CUDA plugin).
    CudaGpu,
    /// A kind this runtime has no name for: the plugin's code.
    Other(u64),
}

impl DeviceKind {
    fn from_code(code: u64) -> Self {
        match code {
            device_kind::HOST_CPU => DeviceKind::HostCpu,
            device_kind::CUDA_GPU => DeviceKind::CudaGpu,
            other => DeviceKind::Other(other),
        }
    }
}

impl fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceKind::HostCpu => f.write_str("host CPU"),
            DeviceKind::CudaGpu => f.write_str("CUDA GPU"),
            DeviceKind::Other(code) => write!(f, "device kind {code}"),
        }
    }
}

/// A device's properties, read from its plugin by [`Device::properties`].
/// What the plugin does not know is `None`; a plugin without this
/// project's `__tgt_rtl_get_device_info` entry (LLVM's own plugins) gives
/// only its name and path.
///
/// | | host plugin | CUDA plugin |
/// |---|---|---|
/// | `name` | the CPU's model name (`/proc/cpuinfo`) | `cuDeviceGetName` |
/// | `kind` | [`DeviceKind::HostCpu`] | [`DeviceKind::CudaGpu`] |
/// | `total_memory` | the machine's RAM (`MemTotal`) | `cuDeviceTotalMem` |
/// | `free_memory` | `MemAvailable` of `/proc/meminfo` | `cuMemGetInfo` |
/// | `max_teams` | 1 | the grid's largest x dimension |
/// | `max_threads` | 1 | threads per block |
///
/// ```
/// # use omptarget::{Config, DeviceKind, Runtime};
/// let runtime = Runtime::new(Config::default())?;
/// let properties = runtime.device(0)?.properties()?;
/// assert_eq!(properties.kind, Some(DeviceKind::HostCpu));
/// assert_eq!(properties.max_teams, Some(1));
/// println!("{properties}");
/// # Ok::<(), omptarget::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceProperties {
    /// The device's name.
    pub name: Option<String>,
    /// Where the device is, when it is not in this process (a remote
    /// device over MPI: "rank 1 on node7"); `None` for a local one.
    pub location: Option<String>,
    /// What kind of device it is.
    pub kind: Option<DeviceKind>,
    /// Bytes of memory the device has in all.
    pub total_memory: Option<u64>,
    /// Bytes of it free when the properties were read.
    pub free_memory: Option<u64>,
    /// The most teams one launch runs ([`crate::LaunchConfig::teams`]'s
    /// `teams`; CUDA's grid).
    pub max_teams: Option<u64>,
    /// The most threads per team one launch runs (`threads`; CUDA's
    /// block). A kernel may run fewer (a CUDA kernel's registers).
    pub max_threads: Option<u64>,
    /// The plugin's library file name (e.g. `libomptarget.rtl.cuda.so`).
    pub plugin_name: String,
    /// Where the plugin was loaded from.
    pub plugin_path: PathBuf,
}

impl fmt::Display for DeviceProperties {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name.as_deref().unwrap_or("unnamed device"))?;
        if let Some(kind) = self.kind {
            write!(f, " ({kind})")?;
        }
        let gib = |bytes: u64| bytes as f64 / f64::from(1u32 << 30);
        match (self.total_memory, self.free_memory) {
            (Some(total), Some(free)) => {
                write!(f, ", {:.1} GiB, {:.1} GiB free", gib(total), gib(free))?
            }
            (Some(total), None) => write!(f, ", {:.1} GiB", gib(total))?,
            (None, Some(free)) => write!(f, ", {:.1} GiB free", gib(free))?,
            (None, None) => {}
        }
        if let (Some(teams), Some(threads)) = (self.max_teams, self.max_threads) {
            write!(f, ", launches of up to {teams} teams x {threads} threads")?;
        }
        write!(f, ", plugin {}", self.plugin_name)?;
        if let Some(location) = &self.location {
            write!(f, " at {location}")?;
        }
        Ok(())
    }
}

/// The limits of one launch, read once per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LaunchLimits {
    pub max_teams: Option<u64>,
    pub max_threads: Option<u64>,
}

impl Device {
    /// The device's properties, from its plugin (see [`DeviceProperties`]
    /// for what each plugin reports). Like every operation of a device it
    /// initialises the device first, so that a plugin can report what only
    /// an initialised device knows (CUDA's free memory needs its context).
    ///
    /// # Errors
    /// The device fails to initialise ([`Error::DeviceInitFailed`]), the
    /// plugin is gone ([`Error::PluginDead`]), or it failed to read a
    /// property it knows ([`Error::PluginCallFailed`], with its reason). A
    /// plugin that does not know a property, or lacks the entry, is no
    /// error: the property is `None`.
    pub fn properties(&self) -> Result<DeviceProperties> {
        self.ensure_initialized()?;
        Ok(DeviceProperties {
            name: self.text_info(DeviceInfoKey::Name)?,
            location: self.location().map(str::to_owned),
            kind: self
                .number_info(DeviceInfoKey::Kind)?
                .map(DeviceKind::from_code),
            total_memory: self.number_info(DeviceInfoKey::TotalMemory)?,
            free_memory: self.number_info(DeviceInfoKey::FreeMemory)?,
            max_teams: self.number_info(DeviceInfoKey::MaxTeams)?,
            max_threads: self.number_info(DeviceInfoKey::MaxThreads)?,
            plugin_name: self.plugin.name().to_owned(),
            plugin_path: self.plugin.path().to_path_buf(),
        })
    }

    /// What kind of device it is, as its plugin says
    /// ([`DeviceInfoKey::Kind`]), without initialising it (a plugin knows
    /// its devices' kind before any starts): what a caller decides a
    /// capability on, never the plugin's file name. `None` when the plugin
    /// does not say (LLVM's plugins) or cannot be asked.
    pub fn kind(&self) -> Option<DeviceKind> {
        self.number_info(DeviceInfoKey::Kind)
            .ok()
            .flatten()
            .map(DeviceKind::from_code)
    }

    /// Whether the device is outside this process (its plugin reports a
    /// [`DeviceInfoKey::Location`]: a remote device over MPI).
    pub fn is_remote(&self) -> bool {
        self.location().is_some()
    }

    /// Where the device is, when it is outside this process (the
    /// plugin's [`DeviceInfoKey::Location`], kept once the plugin has
    /// answered). A failed question is not kept: it says nothing of where
    /// the device is, and a remote device taken for a local one for the
    /// rest of the process would be given none of the images the local
    /// plugins take ([`Device::is_remote`]); it is asked again next time.
    pub(crate) fn location(&self) -> Option<&str> {
        if let Some(known) = self.location.get() {
            return known.as_deref();
        }
        let answer = self.text_info(DeviceInfoKey::Location).ok()?;
        self.location.get_or_init(|| answer).as_deref()
    }

    /// How reports name the device's plugin: its library's file name,
    /// then where the device is for one outside this process
    /// ("libomptarget.rtl.mpi.so at rank 1 on node7").
    pub(crate) fn report_label(&self) -> String {
        match self.location() {
            Some(location) => format!("{} at {location}", self.plugin.name()),
            None => self.plugin.name().to_owned(),
        }
    }

    fn text_info(&self, key: DeviceInfoKey) -> Result<Option<String>> {
        Ok(self
            .plugin
            .device_info_bytes(self.id, self.local_id, key)?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned()))
    }

    fn number_info(&self, key: DeviceInfoKey) -> Result<Option<u64>> {
        let Some(bytes) = self.plugin.device_info_bytes(self.id, self.local_id, key)? else {
            return Ok(None);
        };
        match <[u8; 8]>::try_from(bytes.as_slice()) {
            Ok(raw) => Ok(Some(u64::from_ne_bytes(raw))),
            Err(_) => {
                tracing::warn!(
                    plugin = %self.plugin.name(),
                    device = self.id,
                    "get_device_info gave {} bytes for {key:?}, a number of 8: ignored",
                    bytes.len()
                );
                Ok(None)
            }
        }
    }

    /// The launch limits, read from the plugin on first use.
    pub(crate) fn launch_limits(&self) -> Result<LaunchLimits> {
        if let Some(limits) = self.launch_limits.get() {
            return Ok(*limits);
        }
        self.ensure_initialized()?;
        let limits = LaunchLimits {
            max_teams: self.number_info(DeviceInfoKey::MaxTeams)?,
            max_threads: self.number_info(DeviceInfoKey::MaxThreads)?,
        };
        Ok(*self.launch_limits.get_or_init(|| limits))
    }

    /// Refuse a typed launch of more teams, or more threads per team, than
    /// the plugin says one launch runs on this device
    /// ([`Error::UnsupportedLaunch`]) instead of letting it run fewer.
    /// Asking for at most one of each, or the plugin's choice (0), needs no
    /// check; a plugin that does not say (LLVM's) is given what was asked.
    pub(crate) fn check_launch(&self, launch: RegionLaunch) -> Result<()> {
        let RegionLaunch::Teams {
            num_teams,
            thread_limit,
            ..
        } = launch
        else {
            return Ok(());
        };
        if num_teams <= 1 && thread_limit <= 1 {
            return Ok(());
        }
        let limits = self.launch_limits()?;
        let above = |asked: i32, most: Option<u64>| {
            most.is_some_and(|most| u64::try_from(asked).unwrap_or(0) > most)
        };
        if above(num_teams, limits.max_teams) || above(thread_limit, limits.max_threads) {
            return Err(Error::UnsupportedLaunch {
                device: self.id,
                plugin: self.plugin.name().to_owned(),
                teams: u32::try_from(num_teams).unwrap_or(0),
                threads: u32::try_from(thread_limit).unwrap_or(0),
                max_teams: limits.max_teams,
                max_threads: limits.max_threads,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_have_names_and_unknown_codes_are_kept() {
        assert_eq!(DeviceKind::from_code(1), DeviceKind::HostCpu);
        assert_eq!(DeviceKind::from_code(2), DeviceKind::CudaGpu);
        assert_eq!(DeviceKind::from_code(77), DeviceKind::Other(77));
        assert_eq!(DeviceKind::CudaGpu.to_string(), "CUDA GPU");
    }

    #[test]
    fn properties_print_what_is_known() {
        let mut p = DeviceProperties {
            name: Some("Fake GPU 0".into()),
            location: None,
            kind: Some(DeviceKind::CudaGpu),
            total_memory: Some(1 << 30),
            free_memory: Some(1 << 29),
            max_teams: Some(2_147_483_647),
            max_threads: Some(1024),
            plugin_name: "libomptarget.rtl.cuda.so".into(),
            plugin_path: "/x/libomptarget.rtl.cuda.so".into(),
        };
        assert_eq!(
            p.to_string(),
            "Fake GPU 0 (CUDA GPU), 1.0 GiB, 0.5 GiB free, launches of up to 2147483647 teams \
             x 1024 threads, plugin libomptarget.rtl.cuda.so"
        );
        p.name = None;
        p.kind = None;
        p.total_memory = None;
        p.free_memory = None;
        p.max_teams = None;
        assert_eq!(
            p.to_string(),
            "unnamed device, plugin libomptarget.rtl.cuda.so"
        );
    }
}

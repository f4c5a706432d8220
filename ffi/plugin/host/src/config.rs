//! Settings of the host backend, and the environment variables behind them.
//!
//! * `OMPTARGET_HOST_DEVICES=N`: number of devices (default 4, like LLVM
//!   14's generic-elf-64bit plugin; 0 to [`MAX_DEVICES`]).
//! * `OMPTARGET_HOST_IMAGE_DIR=DIR`: load images from files in `DIR`
//!   instead of from memory. By default each load's private copy is an
//!   anonymous memfd (no directory needed, see [`super::image_memfd`]);
//!   only where that fails is a file written, in the system temp dir
//!   (`$TMPDIR` or `/tmp`).
//! * `OMPTARGET_HOST_KEEP_IMAGE_FILES=1`: load images from files (in
//!   `OMPTARGET_HOST_IMAGE_DIR` or the temp dir) and keep each file until
//!   its image is unloaded, so debuggers and profilers find its symbols by
//!   path; otherwise a file is removed as soon as it is loaded.
//!
//! An unusable value is reported on stderr and the default is used.

use omptarget_plugin_kit::diagnostics;
use std::path::PathBuf;

/// Devices a host plugin offers unless configured otherwise.
pub const DEFAULT_DEVICES: usize = 4;
/// Upper bound of `OMPTARGET_HOST_DEVICES`.
pub const MAX_DEVICES: usize = 4096;
/// Environment variable: number of devices.
pub const DEVICES_VAR: &str = "OMPTARGET_HOST_DEVICES";
/// Environment variable: directory for image files.
pub const IMAGE_DIR_VAR: &str = "OMPTARGET_HOST_IMAGE_DIR";
/// Environment variable: keep image files while loaded.
pub const KEEP_FILES_VAR: &str = "OMPTARGET_HOST_KEEP_IMAGE_FILES";

/// How a [`super::HostBackend`] is set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostConfig {
    /// Number of devices.
    pub devices: usize,
    /// Directory for the images' temporary files.
    pub image_dir: PathBuf,
    /// Keep each image's file until it is unloaded (implies files).
    pub keep_image_files: bool,
    /// Load images from memory (memfd) first; files are then only the
    /// fallback. Off when the environment asks for files.
    pub memfd_images: bool,
}

impl Default for HostConfig {
    fn default() -> Self {
        Self {
            devices: DEFAULT_DEVICES,
            image_dir: std::env::temp_dir(),
            keep_image_files: false,
            memfd_images: true,
        }
    }
}

impl HostConfig {
    /// Read the environment variables (see the module docs).
    pub fn from_env(plugin: &str) -> Self {
        let mut config = Self::default();
        if let Some(value) = std::env::var_os(DEVICES_VAR) {
            match parse_devices(&value.to_string_lossy()) {
                Ok(n) => config.devices = n,
                Err(e) => diagnostics::warning(
                    plugin,
                    &format_args!("{DEVICES_VAR}: {e}; using {DEFAULT_DEVICES} devices"),
                ),
            }
        }
        if let Some(dir) = std::env::var_os(IMAGE_DIR_VAR).filter(|d| !d.is_empty()) {
            config.image_dir = PathBuf::from(dir);
            config.memfd_images = false;
        }
        if let Some(value) = std::env::var_os(KEEP_FILES_VAR) {
            config.keep_image_files = !value.is_empty() && value != "0";
        }
        // A kept file is for tools that read it by path: a memfd has none.
        config.memfd_images &= !config.keep_image_files;
        config
    }
}

/// Parse a device count: a decimal number up to [`MAX_DEVICES`].
pub fn parse_devices(value: &str) -> Result<usize, String> {
    let n: usize = value
        .trim()
        .parse()
        .map_err(|_| format!("`{value}` is not a number of devices"))?;
    if n > MAX_DEVICES {
        return Err(format!(
            "{n} devices is more than the maximum, {MAX_DEVICES}"
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_counts() {
        assert_eq!(parse_devices("7"), Ok(7));
        assert_eq!(parse_devices(" 0 "), Ok(0));
        assert!(parse_devices("-1").is_err());
        assert!(parse_devices("four").is_err());
        assert!(parse_devices("5000").is_err());
    }
}

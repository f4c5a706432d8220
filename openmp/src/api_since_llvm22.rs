//! The OpenMP API calls LLVM 22 added (OpenMP 6.0): device UIDs
//! (`omp_get_uid_from_device`, `omp_get_device_from_uid`) and
//! `omp_target_is_accessible`. Checked by the differential program
//! `device_uid_accessible.c` (clang 22) and LLVM 22's lit tests
//! `api/omp_device_uid.c` and `mapping/is_accessible.cpp`.
//!
//! A device UID names a device independently of the device numbering.
//! LLVM 22's plugins name a device `<plugin>-<vendor id>`, falling back to
//! `<plugin>-<device number in the plugin>` where the vendor gives none (its
//! host plugin always: `x86_64-0` .. `x86_64-3`); the initial device is
//! `HOST`. Our plugins have LLVM 14's entry table, which has no UID entry,
//! so every device gets the fallback form: the same strings as LLVM's host
//! plugin, not the UUIDs LLVM's CUDA and AMDGPU plugins report.

use super::Offload;
use std::ffi::{c_char, c_void, CStr, CString};

/// `omp_invalid_device` in LLVM 22's `omp.h`.
pub const OMP_INVALID_DEVICE: i32 = -2;

/// The initial device's UID (LLVM's `getHostDeviceUid`).
const HOST_UID: &CStr = c"HOST";

/// The name LLVM 22's plugin of that kind calls itself (its `TARGET_NAME`):
/// the machine for host plugins, `CUDA` and `AMDGPU` for the GPU ones.
/// `library` is the plugin library's file name.
pub fn plugin_uid_name(library: &str) -> &str {
    let name = library
        .strip_prefix("libomptarget.rtl.")
        .and_then(|rest| rest.split('.').next())
        .unwrap_or(library);
    match name {
        "cuda" => "CUDA",
        "amdgpu" => "AMDGPU",
        other => other,
    }
}

/// The UID of device `local` of the plugin `library` (a file name), as
/// LLVM 22 forms it: the plugin's name and the device's number.
pub fn device_uid(library: &str, local: usize) -> String {
    format!("{}-{}", plugin_uid_name(library), local)
}

impl Offload<'_> {
    /// `omp_get_uid_from_device(device_num)`: the device's UID, `HOST`
    /// for the initial device, null for `omp_invalid_device` and for a
    /// number that is no device (LLVM 22's fatal error for that is the
    /// shim's, before this). The string lives as long as the runtime.
    pub fn uid_from_device(&self, device_num: i32) -> *const c_char {
        if device_num == OMP_INVALID_DEVICE {
            return std::ptr::null();
        }
        if device_num == self.registry.initial_device() {
            return HOST_UID.as_ptr();
        }
        // LLVM 22 looks the device up (`PM->getDevice`), which loads its
        // pending images and so runs their constructors.
        if self.api_device(device_num.into(), false).is_none() {
            return std::ptr::null();
        }
        let Some(slot) = self.registry.slot(device_num.into()) else {
            return std::ptr::null();
        };
        slot.uid
            .get_or_init(|| {
                let plugin = self.platform.plugin_name(slot.plugin).unwrap_or("device");
                let uid = device_uid(plugin, slot.local);
                // A file name holds no NUL byte; were one there, the UID
                // would end before it rather than fail.
                CString::new(uid).unwrap_or_else(|e| {
                    let end = e.nul_position();
                    let mut bytes = e.into_vec();
                    bytes.truncate(end);
                    CString::new(bytes).unwrap_or_default()
                })
            })
            .as_ptr()
    }

    /// `omp_target_is_accessible(ptr, size, device_num)`: can the device
    /// access host memory at `ptr` directly? False for a null `ptr`, true
    /// for the initial device (and `-1`, as LLVM 22 has it), and false for
    /// every device: LLVM 22 asks the plugin, and only its AMDGPU and Level
    /// Zero plugins ever say yes (its host and CUDA plugins, like ours, do
    /// not). A number that is no device is LLVM 22's fatal error, the
    /// shim's before this; here it is false.
    pub fn target_is_accessible(&self, ptr: *const c_void, _size: usize, device_num: i32) -> bool {
        if ptr.is_null() {
            return false;
        }
        if device_num == self.registry.initial_device() || device_num == -1 {
            return true;
        }
        // As LLVM 22, the device is looked up (its pending images load).
        let _ = self.api_device(device_num.into(), false);
        false
    }

    /// `omp_get_device_from_uid(uid)`: the number of the device whose UID
    /// is `uid`, the initial device's for `HOST`, `omp_invalid_device` for
    /// null or a UID no device has.
    ///
    /// # Safety
    /// `uid` is null or a NUL-terminated string.
    pub unsafe fn device_from_uid(&self, uid: *const c_char) -> i32 {
        if uid.is_null() {
            return OMP_INVALID_DEVICE;
        }
        // SAFETY: our `# Safety`: a NUL-terminated string.
        let uid = unsafe { CStr::from_ptr(uid) };
        if uid == HOST_UID {
            return self.registry.initial_device();
        }
        (0..self.registry.num_devices())
            .find(|&device| {
                let ours = self.uid_from_device(device);
                // SAFETY: `uid_from_device` returns null or the slot's
                // NUL-terminated string, alive as long as the registry.
                !ours.is_null() && unsafe { CStr::from_ptr(ours) } == uid
            })
            .unwrap_or(OMP_INVALID_DEVICE)
    }
}

#[cfg(test)]
mod tests {
    use super::plugin_uid_name;

    #[test]
    fn plugins_are_named_as_llvm_22_names_them() {
        assert_eq!(plugin_uid_name("libomptarget.rtl.x86_64.so"), "x86_64");
        assert_eq!(plugin_uid_name("libomptarget.rtl.cuda.so"), "CUDA");
        assert_eq!(plugin_uid_name("libomptarget.rtl.amdgpu.so"), "AMDGPU");
        assert_eq!(plugin_uid_name("libomptarget.rtl.test.so.1"), "test");
        assert_eq!(plugin_uid_name("other"), "other");
    }
}

//! Why an offload operation failed. Each variant's Display is the text LLVM
//! 14 prints for that failure; [`OffloadError::diagnostic`] says how it is
//! printed (`REPORT` -> `Libomptarget error:`, `MESSAGE` -> `Libomptarget
//! message:`, or nothing where LLVM only has a debug print).

use super::diag::Diagnostic;
use omptarget::mapping::{HexPtr, MappingError};

/// A failed offload step.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OffloadError {
    // ---- data mapping ----
    /// `targetDataBegin`: `getTargetPointer` gave no device address for a
    /// non-empty or `present` section, or for the pointer of a
    /// pointer-and-object entry.
    #[error("Call to getTargetPointer returned null pointer ({}).",
        if *.present { "'present' map type modifier" } else { "device failure or illegal mapping" })]
    NullTargetPointer {
        /// The entry had the `present` modifier (so the data was not
        /// mapped), which selects the text.
        present: bool,
    },
    /// A host-to-device copy failed: an attached pointer's device value
    /// (`targetDataBegin`, a target region's lambda captures), or `target
    /// update to` data or its pointers.
    #[error("Copying data to device failed.")]
    CopyToDeviceFailed,
    /// A device-to-host copy failed: `from` data at `targetDataEnd` or
    /// `target update from`.
    #[error("Copying data from device failed.")]
    CopyFromDeviceFailed,
    /// `targetDataEnd`: removing a mapping or freeing its device memory
    /// failed (after the [`Mapping`](Self::Mapping) error that says why).
    #[error("Deallocating data from device failed.")]
    DeallocFailed,
    /// `targetDataBegin`: mapping a user-defined mapper's components failed.
    #[error("Call to targetDataBegin via targetDataMapper for custom mapper failed.")]
    MapperBeginFailed,
    /// `targetDataEnd`: unmapping a user-defined mapper's components failed.
    #[error("Call to targetDataEnd via targetDataMapper for custom mapper failed.")]
    MapperEndFailed,
    /// `targetDataUpdate`: updating a user-defined mapper's components failed.
    #[error("Call to targetDataUpdate via targetDataMapper for custom mapper failed.")]
    MapperUpdateFailed,
    /// `targetDataEnd` (`target exit data`): a `present` section is not
    /// mapped (a MESSAGE, then failure).
    #[error("device mapping required by 'present' map type modifier does not exist for host address {} ({size} bytes)", HexPtr(*.host_begin))]
    PresentMissingOnExit {
        /// Host address of the section's first byte.
        host_begin: usize,
        /// Length of the section in bytes.
        size: i64,
    },
    /// `target update` with the `present` motion modifier: the section is
    /// not mapped (a MESSAGE).
    #[error("device mapping required by 'present' motion modifier does not exist for host address {} ({size} bytes)", HexPtr(*.host_begin))]
    PresentMotionMissing {
        /// Host address of the section's first byte.
        host_begin: usize,
        /// Length of the section in bytes.
        size: i64,
    },
    /// A mapping was refused; its MESSAGE lines were printed already.
    #[error("illegal mapping")]
    MappingRefused,
    /// The core's mapping table refused an association, a disassociation or a
    /// deallocation; printed with the core's text.
    #[error(transparent)]
    Mapping(#[from] MappingError),

    // ---- target regions ----
    /// `target`: the region's host entry address is in no registered binary's
    /// entry table.
    #[error("Host ptr {} does not have a matching target pointer.", HexPtr(*.host_ptr))]
    NoMatchingTargetPointer {
        /// The host entry address the call passed.
        host_ptr: usize,
    },
    /// `target`: the region's binary has no loaded entries table on the
    /// device: none of its images can run there (its plugin said so per
    /// device, `is_device_compatible`). LLVM 14 asserts (and, in release
    /// builds, crashes) here; the message starts as its assertion's.
    #[error("Global data has not been mapped: device {device} has no image of this program (none of its images can run there)")]
    TargetTableMissing {
        /// The device the region was to run on.
        device: i32,
    },
    /// `target`: mapping the region's arguments (`targetDataBegin`) failed.
    #[error("Call to targetDataBegin failed, abort target.")]
    TargetDataBeginFailed,
    /// `target`: unmapping the region's arguments after the kernel
    /// (`targetDataEnd`) failed.
    #[error("Call to targetDataEnd failed, abort target.")]
    TargetDataEndFailed,
    /// `target`: allocating (or, for first-private, copying) the device
    /// buffer of a private argument failed.
    #[error("Failed to process {}private argument {}",
        if *.first_private { "first-" } else { "" }, HexPtr(*.host_ptr))]
    PrivateArgumentFailed {
        /// The argument is first-private (its host value is copied in)
        /// rather than private.
        first_private: bool,
        /// Host address of the argument's data.
        host_ptr: usize,
    },
    /// Allocation or copy of a private argument failed (LLVM: debug only).
    #[error("Data allocation for private argument failed")]
    PrivateAllocFailed,
    /// Packing first-private arguments failed (LLVM: debug only).
    #[error("Failed to pack and transfer first private arguments")]
    PrivatePackFailed,
    /// `target`: freeing the device buffers of private arguments after the
    /// kernel failed.
    #[error("Failed to deallocate target memory for private args")]
    PrivateFreeFailed,
    /// `target`: preparing the kernel's arguments (mapping, private
    /// arguments, lambda captures) failed; follows the error that says why.
    #[error("Failed to process data before launching the kernel.")]
    ProcessDataBeforeFailed,
    /// `target`: the plugin failed to run the kernel.
    #[error("Executing target region abort target.")]
    ExecutionFailed,
    /// `target`: unmapping the region's arguments or freeing its private
    /// buffers after the kernel failed; follows the error that says why.
    #[error("Failed to process data after launching the kernel.")]
    ProcessDataAfterFailed,

    // ---- devices and images ----
    /// A target or data construct named a device that does not exist or
    /// failed to initialize (`checkDeviceAndCtors`).
    #[error("Device {device} is not ready.")]
    DeviceNotReady {
        /// The device number the construct named.
        device: i64,
    },
    /// Loading the registered images onto the device or running their
    /// constructors failed (`checkDeviceAndCtors`).
    #[error("Failed to init globals on device {device}")]
    InitGlobalsFailed {
        /// The device number the construct named.
        device: i64,
    },
    /// Device initialization: a registered binary has no image for this
    /// device.
    #[error("No image loaded for device id {device}.")]
    NoImageLoaded {
        /// The device being initialized.
        device: i32,
    },
    /// Device initialization: the plugin failed to load an image (gave no
    /// entries table).
    #[error("Unable to generate entries table for device id {device}.")]
    NoEntriesTable {
        /// The device being initialized.
        device: i32,
    },
    /// Device initialization: the loaded image has a different number of
    /// entries than the binary's host table.
    #[error("Host and Target tables mismatch for device id {device} [{host:x} != {target:x}].")]
    TablesMismatch {
        /// The device being initialized.
        device: i32,
        /// Number of entries in the binary's host table.
        host: usize,
        /// Number of entries the plugin returned for the loaded image.
        target: usize,
    },
    /// Device initialization: running a registered binary's global
    /// constructor on the device failed.
    #[error("Running ctor {} failed.", HexPtr(*.ctor))]
    CtorFailed {
        /// Host address of the constructor's entry.
        ctor: usize,
    },

    // ---- omp_target_* ----
    /// `omp_target_memcpy`: a null source or destination (with a non-zero
    /// length), or an offset range that wraps the address space.
    #[error("Call to omp_target_memcpy with invalid arguments")]
    MemcpyInvalidArguments,
    /// `omp_target_memcpy`: the source or destination device is not ready.
    #[error("omp_target_memcpy returns OFFLOAD_FAIL")]
    MemcpyFailed,
    /// `omp_target_memcpy_rect`: a null pointer or array, an element size or
    /// dimension count below 1, or a block that does not fit its arrays.
    #[error("Call to omp_target_memcpy_rect with invalid arguments")]
    MemcpyRectInvalidArguments,
    /// `omp_target_associate_ptr`: a null host or device pointer, or size 0.
    #[error("Call to omp_target_associate_ptr with invalid arguments")]
    AssociateInvalidArguments,
    /// `omp_target_associate_ptr` on the initial (host) device.
    #[error("omp_target_associate_ptr: no association possible on the host")]
    AssociateOnHost,
    /// `omp_target_associate_ptr`: the device is not ready.
    #[error("omp_target_associate_ptr returns OFFLOAD_FAIL")]
    AssociateFailed,
    /// `omp_target_disassociate_ptr` with a null host pointer. LLVM's text
    /// names the wrong function; kept byte-identical.
    #[error("Call to omp_target_associate_ptr with invalid host_ptr")]
    DisassociateInvalidHostPtr,
    /// `omp_target_disassociate_ptr` on the initial (host) device.
    #[error("omp_target_disassociate_ptr: no association possible on the host")]
    DisassociateOnHost,
    /// `omp_target_disassociate_ptr`: the device is not ready.
    #[error("omp_target_disassociate_ptr returns OFFLOAD_FAIL")]
    DisassociateFailed,
    /// A device operation failed where LLVM prints nothing.
    #[error("device operation failed: {0}")]
    Device(String),
}

impl OffloadError {
    /// How LLVM prints this failure, if it prints it.
    pub fn diagnostic(&self) -> Option<Diagnostic> {
        match self {
            OffloadError::PresentMissingOnExit { .. }
            | OffloadError::PresentMotionMissing { .. } => {
                Some(Diagnostic::Message(self.to_string()))
            }
            OffloadError::MappingRefused
            | OffloadError::PrivateAllocFailed
            | OffloadError::PrivatePackFailed
            | OffloadError::Device(_) => None,
            _ => Some(Diagnostic::Error(self.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_match_llvm() {
        assert_eq!(
            OffloadError::NullTargetPointer { present: true }.to_string(),
            "Call to getTargetPointer returned null pointer ('present' map type modifier)."
        );
        assert_eq!(
            OffloadError::NullTargetPointer { present: false }.to_string(),
            "Call to getTargetPointer returned null pointer (device failure or illegal mapping)."
        );
        assert_eq!(
            OffloadError::TablesMismatch {
                device: 0,
                host: 26,
                target: 3
            }
            .to_string(),
            "Host and Target tables mismatch for device id 0 [1a != 3]."
        );
        assert_eq!(
            OffloadError::PrivateArgumentFailed {
                first_private: true,
                host_ptr: 16
            }
            .to_string(),
            "Failed to process first-private argument 0x0000000000000010"
        );
        assert_eq!(
            OffloadError::PresentMotionMissing {
                host_begin: 16,
                size: 4
            }
            .diagnostic(),
            Some(Diagnostic::Message(
                "device mapping required by 'present' motion modifier does not exist for host \
                 address 0x0000000000000010 (4 bytes)"
                    .into()
            ))
        );
        assert_eq!(OffloadError::PrivatePackFailed.diagnostic(), None);
    }
}

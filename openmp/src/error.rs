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
    #[error("Call to getTargetPointer returned null pointer ({}).",
        if *.present { "'present' map type modifier" } else { "device failure or illegal mapping" })]
    NullTargetPointer { present: bool },
    #[error("Copying data to device failed.")]
    CopyToDeviceFailed,
    #[error("Copying data from device failed.")]
    CopyFromDeviceFailed,
    #[error("Deallocating data from device failed.")]
    DeallocFailed,
    #[error("Call to targetDataBegin via targetDataMapper for custom mapper failed.")]
    MapperBeginFailed,
    #[error("Call to targetDataEnd via targetDataMapper for custom mapper failed.")]
    MapperEndFailed,
    #[error("Call to targetDataUpdate via targetDataMapper for custom mapper failed.")]
    MapperUpdateFailed,
    /// `present` on exit (a MESSAGE, then failure).
    #[error("device mapping required by 'present' map type modifier does not exist for host address {} ({size} bytes)", HexPtr(*.host_begin))]
    PresentMissingOnExit { host_begin: usize, size: i64 },
    /// `present` motion modifier of `target update` (a MESSAGE).
    #[error("device mapping required by 'present' motion modifier does not exist for host address {} ({size} bytes)", HexPtr(*.host_begin))]
    PresentMotionMissing { host_begin: usize, size: i64 },
    /// A mapping was refused; its MESSAGE lines were printed already.
    #[error("illegal mapping")]
    MappingRefused,
    #[error(transparent)]
    Mapping(#[from] MappingError),

    // ---- target regions ----
    #[error("Host ptr {} does not have a matching target pointer.", HexPtr(*.host_ptr))]
    NoMatchingTargetPointer { host_ptr: usize },
    /// LLVM asserts (and, in release builds, crashes) here.
    #[error("Global data has not been mapped")]
    TargetTableMissing { device: i32 },
    #[error("Call to targetDataBegin failed, abort target.")]
    TargetDataBeginFailed,
    #[error("Call to targetDataEnd failed, abort target.")]
    TargetDataEndFailed,
    #[error("Failed to process {}private argument {}",
        if *.first_private { "first-" } else { "" }, HexPtr(*.host_ptr))]
    PrivateArgumentFailed {
        first_private: bool,
        host_ptr: usize,
    },
    /// Allocation or copy of a private argument failed (LLVM: debug only).
    #[error("Data allocation for private argument failed")]
    PrivateAllocFailed,
    /// Packing first-private arguments failed (LLVM: debug only).
    #[error("Failed to pack and transfer first private arguments")]
    PrivatePackFailed,
    #[error("Failed to deallocate target memory for private args")]
    PrivateFreeFailed,
    #[error("Failed to process data before launching the kernel.")]
    ProcessDataBeforeFailed,
    #[error("Executing target region abort target.")]
    ExecutionFailed,
    #[error("Failed to process data after launching the kernel.")]
    ProcessDataAfterFailed,

    // ---- devices and images ----
    #[error("Device {device} is not ready.")]
    DeviceNotReady { device: i64 },
    #[error("Failed to init globals on device {device}")]
    InitGlobalsFailed { device: i64 },
    #[error("No image loaded for device id {device}.")]
    NoImageLoaded { device: i32 },
    #[error("Unable to generate entries table for device id {device}.")]
    NoEntriesTable { device: i32 },
    #[error("Host and Target tables mismatch for device id {device} [{host:x} != {target:x}].")]
    TablesMismatch {
        device: i32,
        host: usize,
        target: usize,
    },
    #[error("Running ctor {} failed.", HexPtr(*.ctor))]
    CtorFailed { ctor: usize },

    // ---- omp_target_* ----
    #[error("Call to omp_target_memcpy with invalid arguments")]
    MemcpyInvalidArguments,
    #[error("omp_target_memcpy returns OFFLOAD_FAIL")]
    MemcpyFailed,
    #[error("Call to omp_target_memcpy_rect with invalid arguments")]
    MemcpyRectInvalidArguments,
    #[error("Call to omp_target_associate_ptr with invalid arguments")]
    AssociateInvalidArguments,
    #[error("omp_target_associate_ptr: no association possible on the host")]
    AssociateOnHost,
    #[error("omp_target_associate_ptr returns OFFLOAD_FAIL")]
    AssociateFailed,
    // LLVM's text names the wrong function; kept byte-identical.
    #[error("Call to omp_target_associate_ptr with invalid host_ptr")]
    DisassociateInvalidHostPtr,
    #[error("omp_target_disassociate_ptr: no association possible on the host")]
    DisassociateOnHost,
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

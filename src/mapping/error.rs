//! Why a mapping-table operation failed, with LLVM 14's message text.

use std::fmt;

/// An address printed as LLVM's `DPxMOD` prints it: `0x` and 16 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HexPtr(pub usize);

impl fmt::Display for HexPtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

/// A failure of `associate`, `disassociate` or `dealloc_tgt_ptr`. The
/// Display text is what LLVM's `REPORT` prints after `Libomptarget error: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    /// `associate` of a host address already mapped, with a different size
    /// or device address.
    #[error("Not allowed to re-associate a different device ptr+offset with the same host ptr")]
    ReassociateDifferent,
    /// `disassociate` of a mapping whose `ompx_hold` count is not zero.
    #[error("Trying to disassociate a pointer with a non-zero hold reference count")]
    DisassociateHeld,
    /// `disassociate` of a mapping that `associate` did not create (its
    /// dynamic count is not infinite).
    #[error("Trying to disassociate a pointer which was not mapped via omp_target_associate_ptr")]
    DisassociateNotAssociated,
    /// `disassociate` of a host address where no mapping starts.
    #[error("Association not found")]
    AssociationNotFound,
    /// `dealloc_tgt_ptr` of a section that no mapping overlaps.
    #[error("Section to delete (hst addr {}) does not exist in the allocated memory", HexPtr(*.host_begin))]
    SectionNotFound {
        /// First host address of the section to delete.
        host_begin: usize,
    },
}

/// Why `get_target_pointer` produced no target address. The OpenMP layer
/// prints these (LLVM prints the first two with `MESSAGE`, the last with
/// `REPORT`); [`MapFailure::messages`] gives the exact lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapFailure {
    /// An explicit map of a section that overlaps, but is not inside, an
    /// existing mapping.
    ExplicitExtension {
        /// First host address of the requested section.
        host_begin: usize,
        /// Size of the requested section, in bytes.
        size: i64,
        /// First host address of the existing mapping it overlaps.
        mapped_begin: usize,
        /// Size of that existing mapping, in bytes.
        mapped_size: i64,
        /// The request had the `present` modifier (LLVM then also prints
        /// the `present` message).
        present: bool,
    },
    /// `present` modifier and no mapping.
    PresentMissing {
        /// First host address of the requested section.
        host_begin: usize,
        /// Size of the requested section, in bytes.
        size: i64,
    },
    /// The device allocation returned null (LLVM prints nothing here).
    AllocFailed {
        /// Size of the requested allocation, in bytes.
        size: i64,
    },
    /// The host->device copy of a new or `always` mapping failed.
    SubmitFailed,
}

impl MapFailure {
    /// The `Libomptarget message:` lines LLVM prints for this failure, in
    /// order (without the prefix).
    pub fn messages(&self) -> Vec<String> {
        match *self {
            MapFailure::ExplicitExtension {
                host_begin,
                size,
                mapped_begin,
                mapped_size,
                present,
            } => {
                let mut lines = vec![format!(
                    "explicit extension not allowed: host address specified is {} ({} bytes), but \
                     device allocation maps to host at {} ({} bytes)",
                    HexPtr(host_begin),
                    size,
                    HexPtr(mapped_begin),
                    mapped_size
                )];
                if present {
                    lines.push(present_missing_text(host_begin, size));
                }
                lines
            }
            MapFailure::PresentMissing { host_begin, size } => {
                vec![present_missing_text(host_begin, size)]
            }
            MapFailure::AllocFailed { .. } | MapFailure::SubmitFailed => Vec::new(),
        }
    }

    /// The `Libomptarget error:` line (REPORT) LLVM prints, if any.
    pub fn report(&self) -> Option<&'static str> {
        match self {
            MapFailure::SubmitFailed => Some("Copying data to device failed."),
            _ => None,
        }
    }
}

/// "device mapping required by 'present' map type modifier does not exist
/// for host address ... (N bytes)".
pub(crate) fn present_missing_text(host_begin: usize, size: i64) -> String {
    format!(
        "device mapping required by 'present' map type modifier does not exist for host address \
         {} ({} bytes)",
        HexPtr(host_begin),
        size
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ptr_is_dpxmod() {
        assert_eq!(HexPtr(0x1234).to_string(), "0x0000000000001234");
        assert_eq!(HexPtr(usize::MAX).to_string(), "0xffffffffffffffff");
    }

    #[test]
    fn explicit_extension_text() {
        let f = MapFailure::ExplicitExtension {
            host_begin: 0x10,
            size: 40,
            mapped_begin: 0x8,
            mapped_size: 16,
            present: true,
        };
        assert_eq!(
            f.messages(),
            vec![
                "explicit extension not allowed: host address specified is 0x0000000000000010 \
                 (40 bytes), but device allocation maps to host at 0x0000000000000008 (16 bytes)"
                    .to_string(),
                "device mapping required by 'present' map type modifier does not exist for host \
                 address 0x0000000000000010 (40 bytes)"
                    .to_string()
            ]
        );
    }

    #[test]
    fn section_not_found_text() {
        assert_eq!(
            MappingError::SectionNotFound { host_begin: 0xff }.to_string(),
            "Section to delete (hst addr 0x00000000000000ff) does not exist in the allocated memory"
        );
    }
}

//! `OMP_TARGET_OFFLOAD` and what a failed or host-fallback target construct
//! does under each policy (LLVM's `handleTargetOutcome`,
//! `isOffloadDisabled`).

use super::diag::{Diagnostic, Fatal, Loc};
use super::info::INFO_DUMP_TABLE;
use super::Offload;

/// `kmp_target_offload_kind`: the value of `OMP_TARGET_OFFLOAD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(i32)]
pub enum TargetOffloadPolicy {
    /// `DISABLED`: constructs run on the host; one that did offload is a
    /// fatal error.
    Disabled = 0,
    /// Unset or any other value: becomes `Mandatory` if devices exist,
    /// else `Disabled`, when first needed (`isOffloadDisabled`).
    #[default]
    Default = 1,
    /// `MANDATORY`: a target construct that fails to offload is a fatal
    /// error.
    Mandatory = 2,
}

impl TargetOffloadPolicy {
    /// Decode `__kmpc_get_target_offload()`'s result (libomp).
    pub fn from_kmp(raw: i32) -> Self {
        match raw {
            0 => TargetOffloadPolicy::Disabled,
            2 => TargetOffloadPolicy::Mandatory,
            _ => TargetOffloadPolicy::Default,
        }
    }

    /// Parse an `OMP_TARGET_OFFLOAD` value as libomp does (case-insensitive;
    /// anything else, or unset, is `Default`), for hosts without libomp's
    /// `__kmpc_get_target_offload`.
    pub fn from_env_value(value: Option<&str>) -> Self {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("mandatory") => TargetOffloadPolicy::Mandatory,
            Some("disabled") => TargetOffloadPolicy::Disabled,
            _ => TargetOffloadPolicy::Default,
        }
    }
}

const CONSULT: &str = "Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.";
const NO_SOURCE: &str =
    "Source location information not present. Compile with -g or -gline-tables-only.";
const MANDATORY_FAILED: &str = "failure of target construct while offloading is mandatory";

impl Offload<'_> {
    /// LLVM's `isOffloadDisabled`: decide a `Default` policy now (devices
    /// found: mandatory; none: disabled) and say whether offload is off.
    pub fn is_offload_disabled(&self) -> bool {
        let mut policy = self.registry.policy();
        if policy == TargetOffloadPolicy::Default {
            let decided = if self.registry.num_devices() > 0 {
                TargetOffloadPolicy::Mandatory
            } else {
                TargetOffloadPolicy::Disabled
            };
            policy = self.registry.decide_default_policy(decided);
        }
        policy == TargetOffloadPolicy::Disabled
    }

    /// LLVM's `handleTargetOutcome`: after a target construct (or data
    /// construct) succeeded or failed. `Err` is the fatal error the caller
    /// must print and abort with.
    pub fn handle_target_outcome(&self, success: bool, loc: Loc<'_>) -> Result<(), Fatal> {
        match self.registry.policy() {
            TargetOffloadPolicy::Disabled => {
                if success {
                    return Err(Fatal::new(
                        1,
                        "expected no offloading while offloading is disabled",
                    ));
                }
                Ok(())
            }
            TargetOffloadPolicy::Default => Err(Fatal::new(
                1,
                "default offloading policy must be switched to mandatory or disabled",
            )),
            TargetOffloadPolicy::Mandatory => {
                let dump = self.registry.info_enabled(INFO_DUMP_TABLE);
                if !success {
                    if dump {
                        self.dump_all_mappings(loc);
                    } else {
                        self.emit(Diagnostic::Error(CONSULT.to_string()));
                    }
                    let info = loc.source_info();
                    if info.is_available() {
                        self.emit(Diagnostic::Raw(format!("{info}: ")));
                    } else {
                        self.emit(Diagnostic::Error(NO_SOURCE.to_string()));
                    }
                    return Err(Fatal::new(1, MANDATORY_FAILED));
                }
                if dump {
                    self.dump_all_mappings(loc);
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_decoding() {
        assert_eq!(
            TargetOffloadPolicy::from_kmp(0),
            TargetOffloadPolicy::Disabled
        );
        assert_eq!(
            TargetOffloadPolicy::from_kmp(2),
            TargetOffloadPolicy::Mandatory
        );
        assert_eq!(
            TargetOffloadPolicy::from_kmp(7),
            TargetOffloadPolicy::Default
        );
        assert_eq!(
            TargetOffloadPolicy::from_env_value(Some("MANDATORY")),
            TargetOffloadPolicy::Mandatory
        );
        assert_eq!(
            TargetOffloadPolicy::from_env_value(Some("Disabled")),
            TargetOffloadPolicy::Disabled
        );
        assert_eq!(
            TargetOffloadPolicy::from_env_value(None),
            TargetOffloadPolicy::Default
        );
    }
}

//! What the offload layer needs from the host OpenMP runtime (libomp),
//! looked up in the process at run time.

use crate::libomp;
use omptarget_openmp::{Diagnostic, HostEnv, Release, TargetOffloadPolicy};

/// libomp as the program linked it (or sensible answers without it).
pub(crate) struct Libomp;

impl HostEnv for Libomp {
    fn default_device(&self) -> i32 {
        libomp::default_device()
    }

    fn global_thread_num(&self) -> i32 {
        libomp::global_thread_num()
    }

    fn target_offload_policy(&self) -> TargetOffloadPolicy {
        target_offload_policy()
    }

    fn emit(&self, diagnostic: &Diagnostic) {
        // A launch whose kernel ended the thread did not fail: say nothing.
        if omptarget_thread_exit::is_pending() {
            return;
        }
        super::lifecycle::park_if_closed_by_another_thread();
        if super::lifecycle::deferred_call_after_close() {
            return;
        }
        // Worded as the caller's release words it (one write, as before).
        let text = diagnostic.render_as(self.caller_release());
        let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    }

    fn caller_release(&self) -> Release {
        crate::caller::calling_release()
    }

    fn kernel_section(&self, kernel: &mut dyn FnMut()) {
        super::lifecycle::kernel_section(kernel)
    }

    fn call_site(&self) -> omptarget_openmp::ompt::CallSite {
        crate::caller::call_site()
    }
}

/// `OMP_TARGET_OFFLOAD` as libomp parsed it, or as we parse it without libomp.
pub(crate) fn target_offload_policy() -> TargetOffloadPolicy {
    match libomp::target_offload() {
        Some(raw) => TargetOffloadPolicy::from_kmp(raw),
        None => {
            TargetOffloadPolicy::from_env_value(std::env::var("OMP_TARGET_OFFLOAD").ok().as_deref())
        }
    }
}

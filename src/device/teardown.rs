//! The device's part of the runtime's teardown (steps 1 to 4 of the order
//! in DESIGN.md, "Teardown order"). Each step records itself in the
//! report; the runtime runs each step for every device before the next
//! step.
use super::Device;
use crate::shutdown_report::{
    DtorsOutcome, ImageDtors, LiveMapping, NotFreed, ShutdownReport, StepOutcome, TeardownStep,
    UserLeak,
};
use crate::sync::lock;
use crate::Error;

impl Device {
    /// Step 1: return every block the memory manager caches.
    pub(crate) fn teardown_drain_memory_manager(&self, report: &mut ShutdownReport) {
        if !self.is_initialized() {
            return;
        }
        let drained = self.memory.drain();
        let mut errors = Vec::new();
        for (ptr, size, err) in drained.failed {
            report.not_freed.push(self.not_freed(
                format!("cached block {:#x} ({size} bytes)", ptr.addr()),
                &err,
            ));
            errors.push(err);
        }
        report.push(TeardownStep::DrainMemoryManager {
            device: self.id,
            plugin: self.report_label(),
            blocks: drained.blocks,
            bytes: drained.bytes,
            outcome: outcome_of(&errors),
        });
    }

    /// At exit with calls still in flight: list what the user still holds
    /// and what is still mapped, freeing none of it (a running kernel may
    /// be using it).
    pub(crate) fn teardown_list_in_use(&self, report: &mut ShutdownReport) {
        if !self.is_initialized() {
            return;
        }
        // Never wait for the mapping table: a call in flight holds it across
        // its plugin calls, and may never let it go (a call its plugin parks
        // until the process ends).
        match self.mappings.try_live_entries() {
            Some(live) => {
                let device = self.id;
                report
                    .live_mappings
                    .extend(live.into_iter().map(|range| LiveMapping { device, range }));
            }
            None => report.not_freed.push(NotFreed {
                device: Some(self.id),
                plugin: self.report_label(),
                what: "the mappings (not listed)".to_owned(),
                reason: "in use at exit: a call in flight holds the mapping table".to_owned(),
            }),
        }
        for (ptr, allocation) in self.memory.live() {
            report
                .user_leaks
                .push(self.user_leak(ptr.addr(), &allocation));
        }
    }

    fn report_live_mappings(&self, report: &mut ShutdownReport) {
        let device = self.id;
        report.live_mappings.extend(
            self.mappings
                .live_entries()
                .into_iter()
                .map(|range| LiveMapping { device, range }),
        );
    }

    fn user_leak(&self, address: usize, allocation: &crate::memory::LiveAllocation) -> UserLeak {
        UserLeak {
            device: self.id,
            address,
            size: allocation.size,
            kind: allocation.kind,
            origin: allocation.origin,
        }
    }

    /// Step 2: free what the user never freed, and report it (with the
    /// mapping-table entries still present).
    pub(crate) fn teardown_free_user_allocations(&self, report: &mut ShutdownReport) {
        if !self.is_initialized() {
            return;
        }
        self.report_live_mappings(report);
        let leaks = self.memory.live();
        let (mut blocks, mut bytes) = (0, 0);
        let mut errors = Vec::new();
        for (ptr, allocation) in leaks {
            report
                .user_leaks
                .push(self.user_leak(ptr.addr(), &allocation));
            match self.memory.release(ptr) {
                Ok(_) => {
                    blocks += 1;
                    bytes += allocation.size;
                }
                Err(err) => {
                    report.not_freed.push(self.not_freed(
                        format!(
                            "user allocation {:#x} ({} bytes)",
                            ptr.addr(),
                            allocation.size
                        ),
                        &err,
                    ));
                    errors.push(err);
                }
            }
        }
        if blocks > 0 || !errors.is_empty() {
            tracing::warn!(plugin = %self.plugin.name(), device = self.id, blocks, bytes, "freed allocations the user still held");
        }
        report.push(TeardownStep::FreeUserAllocations {
            device: self.id,
            plugin: self.report_label(),
            blocks,
            bytes,
            outcome: outcome_of(&errors),
        });
    }

    /// Step 3: unload every image still loaded. Their storage is released
    /// only after the plugin is closed ([`Device::release_image_storage`]).
    pub(crate) fn teardown_unload_images(&self, report: &mut ShutdownReport) {
        if !self.is_initialized() {
            return;
        }
        // Out of the list while the plugin unloads (no lock across a call
        // that may dlclose), back in afterwards: their storage is released
        // only after the plugin is closed.
        let images = std::mem::take(&mut *lock(&self.images));
        let mut unloaded = 0;
        let outcome = match self
            .plugin
            .exports(crate::abi::plugin::OptionalEntry::UnloadBinary)
        {
            false => {
                for record in images.iter() {
                    self.report_leaked_handle(report, record);
                    self.report_dtors(
                        report,
                        record,
                        DtorsOutcome::NotRun("the plugin exports no unload_binary".into()),
                    );
                }
                StepOutcome::NotExported
            }
            true => {
                let mut errors = Vec::new();
                for record in images.iter() {
                    self.report_leaked_handle(report, record);
                    let local = self.local_id;
                    let _call = crate::profile::span(crate::profile::Kind::Plugin, "unload_binary");
                    // SAFETY: the image was loaded on this device and its
                    // storage is still alive (released after close).
                    let result = self
                        .plugin
                        .call(|e| unsafe { e.unload_binary(local, record.image.0) })
                        .map(|code| code.unwrap_or(crate::abi::OFFLOAD_FAIL))
                        .and_then(|code| self.check("unload_binary", code));
                    let dtors = match &result {
                        Ok(()) => DtorsOutcome::RunByUnload,
                        Err(Error::PluginDead { .. }) => DtorsOutcome::NotRun(
                            "plugin already destroyed, unload_binary not called".into(),
                        ),
                        Err(err) => DtorsOutcome::NotRun(format!("unload_binary failed: {err}")),
                    };
                    self.report_dtors(report, record, dtors);
                    match result {
                        Ok(()) => unloaded += 1,
                        Err(err) => {
                            report
                                .not_freed
                                .push(self.not_freed(format!("image {:p}", record.image.0), &err));
                            errors.push(err);
                        }
                    }
                }
                outcome_of(&errors)
            }
        };
        lock(&self.images).splice(0..0, images);
        report.push(TeardownStep::UnloadImages {
            device: self.id,
            plugin: self.report_label(),
            images: unloaded,
            outcome,
        });
    }

    /// At exit with calls still in flight: every loaded image stays loaded,
    /// so its destructors do not run (and never run after it is gone).
    pub(crate) fn teardown_list_images_kept(&self, report: &mut ShutdownReport, why: &str) {
        if !self.is_initialized() {
            return;
        }
        // The records stay in the list: a later full teardown unloads them.
        let images = lock(&self.images);
        for record in images.iter() {
            self.report_dtors(
                report,
                record,
                DtorsOutcome::NotRun(format!(
                    "in use at exit: {why}; the image stays loaded, left to the OS"
                )),
            );
        }
    }

    /// An image whose typed handle was never dropped is the user's leak.
    fn report_leaked_handle(
        &self,
        report: &mut ShutdownReport,
        record: &super::images::ImageRecord,
    ) {
        if let Some(entries) = &record.handle {
            report
                .leaked_images
                .push(crate::shutdown_report::LeakedImage {
                    device: self.id,
                    plugin: self.report_label(),
                    image: record.image.0 as usize,
                    entries: entries.clone(),
                });
        }
    }

    fn report_dtors(
        &self,
        report: &mut ShutdownReport,
        record: &super::images::ImageRecord,
        outcome: DtorsOutcome,
    ) {
        // SAFETY: a loaded image's storage is alive until the plugin is
        // closed (`release_image_storage`), after every caller of this.
        let dtors = unsafe {
            ImageDtors::of(
                self.id,
                self.plugin.name(),
                record.image.0,
                record.dtor_kernels,
                outcome,
            )
        };
        report.image_dtors.push(dtors);
    }

    /// Step 4: `deinit_device`, for a device that was initialised.
    pub(crate) fn teardown_deinit(&self, report: &mut ShutdownReport) {
        if !self.is_initialized() {
            return;
        }
        let local = self.local_id;
        let _call = crate::profile::span(crate::profile::Kind::Plugin, "deinit_device")
            .map(|s| s.device(self.id));
        let outcome = if !self
            .plugin
            .exports(crate::abi::plugin::OptionalEntry::DeinitDevice)
        {
            StepOutcome::NotExported
        } else {
            // SAFETY: an initialised device whose memory and images are gone.
            match self.plugin.call(|e| unsafe { e.deinit_device(local) }) {
                Err(_) => StepOutcome::PluginDead,
                Ok(None) => StepOutcome::NotExported,
                Ok(Some(0)) => StepOutcome::Done,
                Ok(Some(code)) => StepOutcome::Failed(format!("deinit_device returned {code}")),
            }
        };
        if let StepOutcome::PluginDead | StepOutcome::Failed(_) = outcome {
            report.not_freed.push(NotFreed {
                device: Some(self.id),
                plugin: self.report_label(),
                what: "device state".into(),
                reason: outcome.to_string(),
            });
        }
        report.push(TeardownStep::DeinitDevice {
            device: self.id,
            plugin: self.report_label(),
            outcome,
        });
    }

    /// After the plugin is closed: drop the storage of the images it had.
    pub(crate) fn release_image_storage(&self) {
        lock(&self.images).clear();
    }

    fn not_freed(&self, what: String, err: &Error) -> NotFreed {
        NotFreed {
            device: Some(self.id),
            plugin: self.report_label(),
            what,
            reason: err.to_string(),
        }
    }
}

/// The outcome of a step that did several things.
fn outcome_of(errors: &[Error]) -> StepOutcome {
    match errors.first() {
        None => StepOutcome::Done,
        Some(_) if errors.iter().all(|e| matches!(e, Error::PluginDead { .. })) => {
            StepOutcome::PluginDead
        }
        Some(first) => StepOutcome::Failed(format!("{} failures, first: {first}", errors.len())),
    }
}

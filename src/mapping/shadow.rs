//! Shadow pointers: for each host pointer that PTR_AND_OBJ attached on the
//! device (made the device copy of the pointer point at the device copy of
//! the pointee), the host value it must keep and the device value it got.
//! When a struct holding such a pointer is copied back to the host, the
//! host pointer is restored from here; when it is copied to the device, the
//! device pointer is re-attached from here.

use std::collections::BTreeMap;

/// One attached pointer, keyed by the host address of the pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShadowPtr {
    /// The host pointer's value (the host pointee's address).
    pub host_ptr_value: usize,
    /// Device address of the device copy of the pointer.
    pub target_ptr_addr: usize,
    /// The value written there (the device pointee's base address).
    pub target_ptr_value: usize,
}

/// What a visitor wants done with a shadow entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShadowVisit {
    /// Keep the entry, go on.
    Keep,
    /// Remove the entry, go on.
    Remove,
    /// Keep the entry, stop visiting.
    Stop,
}

/// The shadow map: ordered by host pointer address, so visiting the
/// pointers inside one host range is a range walk.
#[derive(Debug, Default)]
pub(crate) struct ShadowMap {
    entries: BTreeMap<usize, ShadowPtr>,
}

impl ShadowMap {
    /// Insert or refresh the shadow of the pointer at `host_ptr_addr`.
    /// Returns true when the device pointer must be (re)written: there was
    /// no entry, or it recorded another device pointee (the pointee was
    /// unmapped and mapped again elsewhere).
    pub fn upsert(&mut self, host_ptr_addr: usize, shadow: ShadowPtr) -> bool {
        match self.entries.get(&host_ptr_addr) {
            Some(existing) if existing.target_ptr_value == shadow.target_ptr_value => false,
            _ => {
                self.entries.insert(host_ptr_addr, shadow);
                true
            }
        }
    }

    /// Visit the entries whose key lies in `[begin, begin+size)`, in order.
    pub fn visit_range(
        &mut self,
        begin: usize,
        size: usize,
        mut visit: impl FnMut(usize, &ShadowPtr) -> ShadowVisit,
    ) {
        let end = begin.saturating_add(size);
        if end <= begin {
            return;
        }
        let keys: Vec<usize> = self.entries.range(begin..end).map(|(&k, _)| k).collect();
        for key in keys {
            let Some(shadow) = self.entries.get(&key).copied() else {
                continue;
            };
            match visit(key, &shadow) {
                ShadowVisit::Keep => {}
                ShadowVisit::Remove => {
                    self.entries.remove(&key);
                }
                ShadowVisit::Stop => break,
            }
        }
    }

    pub fn get(&self, host_ptr_addr: usize) -> Option<ShadowPtr> {
        self.entries.get(&host_ptr_addr).copied()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Is there an entry whose key lies in `[begin, begin+size)`?
    pub fn any_in(&self, begin: usize, size: usize) -> bool {
        let end = begin.saturating_add(size);
        end > begin && self.entries.range(begin..end).next().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sp(v: usize) -> ShadowPtr {
        ShadowPtr {
            host_ptr_value: v,
            target_ptr_addr: v + 1,
            target_ptr_value: v + 2,
        }
    }

    #[test]
    fn upsert_reports_new_and_stale_entries_only() {
        let mut m = ShadowMap::default();
        assert!(m.upsert(8, sp(100)));
        assert!(!m.upsert(8, sp(100)));
        assert!(m.upsert(8, sp(200)));
        assert_eq!(m.get(8), Some(sp(200)));
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn visit_range_is_half_open_and_can_remove_and_stop() {
        let mut m = ShadowMap::default();
        for k in [8, 16, 24, 32] {
            m.upsert(k, sp(k));
        }
        let mut seen = Vec::new();
        m.visit_range(16, 16, |k, _| {
            seen.push(k);
            ShadowVisit::Remove
        });
        assert_eq!(seen, vec![16, 24]);
        assert_eq!(m.len(), 2);
        let mut seen = Vec::new();
        m.visit_range(0, 100, |k, _| {
            seen.push(k);
            ShadowVisit::Stop
        });
        assert_eq!(seen, vec![8]);
        assert_eq!(m.len(), 2);
    }
}

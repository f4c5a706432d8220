//! Notes kept per server rank (found dead, copies lost), read by every
//! call: a flag says whether any is kept, so that the usual answer, none,
//! takes no lock.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A note (why) per server rank, read by every call: a flag says
/// whether any is kept, so that the usual answer, none, takes no lock.
#[derive(Default)]
pub(super) struct RankNotes {
    notes: Mutex<HashMap<i32, Note>>,
    any: AtomicBool,
}

impl RankNotes {
    /// The note on `rank`, if any.
    pub(super) fn get(&self, rank: i32) -> Option<Note> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&rank)
            .cloned()
    }

    /// Note `why` on `rank`, unless it has a note already.
    pub(super) fn note(&self, rank: i32, why: &str, tells_death: bool) {
        self.notes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(rank)
            .or_insert_with(|| Note {
                text: why.to_owned(),
                tells_death,
            });
        self.any.store(true, Ordering::Release);
    }
}

/// A note: its text, and whether the text tells the server's death (so
/// that an error made of it does not say it twice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Note {
    /// The text.
    pub(super) text: String,
    /// Whether it tells the server's death.
    pub(super) tells_death: bool,
}

//! What a backend hands the kit to hold across a fork ([`crate::fork`]
//! says why): its own module, so that the `Backend` trait and the plugin
//! cell can name it without depending on the fork handlers, which use
//! both. Re-exported as `fork::{ForkLocks, HeldAcrossFork}`.

/// Anything held across a fork: lock guards, type-erased.
pub trait HeldAcrossFork {}
impl<T: ?Sized> HeldAcrossFork for T {}

/// Guards borrowed from the backend, held across a fork.
pub type ForkLocks<'a> = Vec<Box<dyn HeldAcrossFork + 'a>>;

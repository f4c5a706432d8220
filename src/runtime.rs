//! (H2)
/// The runtime value. (H2)
pub struct Runtime {}

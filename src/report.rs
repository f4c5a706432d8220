//! (H2)
/// What [`crate::Runtime::shutdown`] did. (H2)
#[derive(Debug, Default)]
pub struct ShutdownReport {}

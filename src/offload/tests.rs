//! Offload layer tests over host-memory test devices.

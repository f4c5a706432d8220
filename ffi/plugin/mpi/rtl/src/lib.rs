//! `libomptarget.rtl.mpi.so`: the omptarget-rs MPI plugin: devices of
//! other ranks of an MPI job, served by `omptarget-mpi-device`.
//!
//! The backend is [`omptarget_plugin_mpi::MpiBackend`]; outside an MPI job
//! it opens no MPI library and reports 0 devices. Nothing runs at load
//! time.

omptarget_plugin_kit::export_plugin!(omptarget_plugin_mpi::MpiBackend);

//! `libomptarget.rtl.x86_64.so`: the omptarget-rs host plugin.
//!
//! Runs x86_64 ELF offload images in-process, like LLVM 14's
//! generic-elf-64bit plugin; works under this project's runtime and under
//! LLVM 14's libomptarget. The backend is
//! [`omptarget_plugin_host::HostBackend`] (crate `omptarget-plugin-host`,
//! `ffi/plugin/host`); its documentation describes the behaviour and the
//! environment variables (`OMPTARGET_HOST_DEVICES`, default 4;
//! `OMPTARGET_HOST_IMAGE_DIR`). Nothing runs at load time.
//!
//! The export is a crate of its own, not part of the backend's library:
//! the test plugins link the backend too and export the same `__tgt_rtl_*`
//! names, which would clash with this one's.

omptarget_plugin_kit::export_plugin!(omptarget_plugin_host::HostBackend);

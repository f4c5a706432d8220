//! `libomptarget.rtl.x86_64.so`: the omptarget-rs host plugin.
//!
//! Runs x86_64 ELF offload images in-process, like LLVM 14's
//! generic-elf-64bit plugin; works under this project's runtime and under
//! LLVM 14's libomptarget. The backend is
//! [`omptarget_plugin_kit::host::HostBackend`]; its documentation describes
//! the behaviour and the environment variables (`OMPTARGET_HOST_DEVICES`,
//! default 4; `OMPTARGET_HOST_IMAGE_DIR`). Nothing runs at load time.

omptarget_plugin_kit::export_plugin!(omptarget_plugin_kit::host::HostBackend);

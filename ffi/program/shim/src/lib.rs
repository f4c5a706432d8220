//! `libomptarget.so`: LLVM's C ABI over the omptarget runtime.
//!
//! clang 14, 19 and 22 offload binaries load this library instead of LLVM's
//! (clang 19's and 22's under the names `libomptarget.so.19.1` and
//! `.so.22.1`, links to this one). Every exported function (see
//! `exports.map`) decodes its C arguments, passes them through one panic
//! boundary (`boundary::guard`) and calls the process-wide
//! `session::Session`, whose lifecycle the `session::lifecycle` module makes
//! explicit. Safe Rust begins past `session` (and the offload layer's
//! `MapArgs`); nothing here unwinds into C. The design of this boundary and
//! of the lifecycle: `docs/c-abi.md` and `docs/lifecycle.md` in the
//! repository.
//!
//! # Module map
//!
//! * The session (`session/`): `session` (one `omptarget::Runtime` plus the
//!   offload layer's `Registry`) and its parts: `session::lifecycle` (the
//!   process-wide session's lifecycle, fork handlers, the `.fini_array`
//!   function), `session::host_env` (what the offload layer needs from
//!   libomp, and the kernel section), `session::device_number` (device
//!   numbers as the caller's release checks them). Beside it:
//!   `report_sink` (where the shutdown and leak reports go), `info_level`
//!   (the process's info and debug levels each session starts from).
//! * The boundary: `boundary` (the one panic boundary), `export` (the
//!   `VERS1.0` symbol version of every export).
//! * The host OpenMP runtime: `libomp` (libomp's functions and types,
//!   looked up at run time), `caller` (which LLVM release built the
//!   calling binary), `ompt` (the OMPT connection with libomp: an OMPT
//!   tool's target and device callbacks), `helper_task` (the `_async`
//!   calls' hidden-helper tasks).
//! * Values and operations shared by exports: `rect` (a
//!   `memcpy_rect`'s shape), `copies` (the blocking copies and fill behind
//!   a boundary, for an export or a helper task).
//! * Exports: `registration` (`__tgt_register_lib` and friends), `data`
//!   (`__tgt_target_data_*`), `target` (`__tgt_target*`, trip counts),
//!   `kernel` (`__tgt_target_kernel*`, `__tgt_rtl_init/deinit`), `mapper`
//!   (user-defined mappers' callbacks), `api` (`omp_target_*` and LLVM's
//!   extensions), `api_since_llvm19` (the API calls LLVM 19 and 22 added),
//!   `info` (`LIBOMPTARGET_INFO`, `__tgt_set_info_flag`,
//!   `__tgt_print_device_info`), `interop` (OpenMP 5.1 interop objects).

mod api;
mod api_since_llvm19;
mod boundary;
mod caller;
mod copies;
mod data;
mod export;
mod helper_task;
mod info;
mod info_level;
mod interop;
mod kernel;
mod libomp;
mod mapper;
mod offload_api;
mod ompt;
mod rect;
mod registration;
mod report_sink;
mod session;
mod target;

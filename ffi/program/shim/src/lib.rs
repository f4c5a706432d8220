//! `libomptarget.so`: LLVM's C ABI over the omptarget runtime.
//!
//! clang 14, 19 and 22 offload binaries load this library instead of LLVM's
//! (clang 19's and 22's under the names `libomptarget.so.19.1` and
//! `.so.22.1`, links to this one). Every exported function (see
//! `exports.map`) decodes its C arguments, passes them through one panic
//! boundary (`boundary::guard`) and calls the process-wide
//! `session::Session`, whose lifecycle the `lifecycle` module makes
//! explicit. Safe Rust begins past `session` (and the offload layer's
//! `MapArgs`); nothing here unwinds into C. The design of this boundary and
//! of the lifecycle: `docs/c-abi.md` and `docs/lifecycle.md` in the
//! repository.
//!
//! # Module map
//!
//! * The session: `session` (one `omptarget::Runtime` plus the offload
//!   layer's `Registry`), `lifecycle` (the process-wide session's
//!   lifecycle, fork handlers, the `.fini_array` function), `report_sink`
//!   (where the shutdown and leak reports go).
//! * The boundary: `boundary` (the one panic boundary), `export` (the
//!   `VERS1.0` symbol version of every export).
//! * The host OpenMP runtime: `host_env` (what the offload layer needs
//!   from libomp, and the kernel section), `libomp` (libomp's functions,
//!   looked up at run time), `caller` (which LLVM release built the
//!   calling binary), `ompt` (the OMPT connection with libomp: an OMPT
//!   tool's target and device callbacks).
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
mod data;
mod device_number;
mod export;
mod helper_task;
mod host_env;
mod info;
mod interop;
mod kernel;
mod libomp;
mod lifecycle;
mod mapper;
mod ompt;
mod registration;
mod report_sink;
mod session;
mod target;

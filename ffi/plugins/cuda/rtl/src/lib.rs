//! `libomptarget.rtl.cuda.so`: the omptarget-rs CUDA plugin.
//!
//! Runs nvptx offload images (cubins, bare or in an OffloadBinary) on
//! NVIDIA GPUs through the CUDA driver, which is loaded at run time: with
//! no `libcuda.so.1` the plugin reports 0 devices and prints nothing. The
//! backend is [`omptarget_plugin_cuda::CudaBackend`] (crate
//! `omptarget-plugin-cuda`, `ffi/plugins/cuda`); its documentation
//! describes the lifecycle and the launch rules. Nothing runs at load time.

omptarget_plugin_kit::export_plugin!(omptarget_plugin_cuda::CudaBackend);

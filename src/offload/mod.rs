//! LLVM libomptarget's semantics over a [`crate::Runtime`]: registration of
//! host binaries, data mapping (`target data`, `enter/exit data`, `update`),
//! target regions, and the `omp_target_*` calls. The C shim is a thin layer
//! over this module. (H4)

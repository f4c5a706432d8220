//! Helpers shared by the workspace's tests (a dev-dependency of every
//! crate whose tests need them). Module map, one job each:
//!
//! | module | job |
//! |---|---|
//! | [`paths`] | where things are: the workspace, cargo's target directory (found from the running test executable), the C sources |
//! | [`lock`] | an exclusive `flock` on a file, for work shared by concurrent test processes |
//! | [`stage`] | [`staged`]: `cargo xtask stage` once (or not at all under `cargo xtask test`), and where the staged libraries are |
//! | [`scratch`] | [`Scratch`]: a per-test directory, kept when the test fails |
//! | [`run`] | [`Run`]/[`Outcome`]: a program of the shim's and plugins' tests set up with a clean offload environment and the staged shim, run by [`exec::run`], panicking on a hang |
//! | [`exec`] | the one program runner (every suite's, the MPI jobs' too): a run with a timeout that reports the timeout instead of panicking, in its own process group, its output captured in memory files |
//! | [`plugin`] | copies of the staged plugins: the test plugin with its conf and call log ([`TestPlugin`], [`CallLog`]), private copies of the others |
//! | [`clang`] | building C with clang-14 (the shim's programs, the kernels), the dynamic symbols of a binary, finding clang-N |
//! | [`cc_cache`] | those builds made once per staging, shared by the test processes |
//! | [`release`] | the LLVM releases (14, 19, 22): their compilers and reference runtimes |
//! | [`suite`] | the C suites' machinery (`tests/c`): program headers, builds, a job pool |
//! | [`compare`] | normalising outputs (one rule for addresses) and line diffs |
//! | [`valgrind`] | reading valgrind's XML report, charging stacks to an owner, the suppressions file, the runtime a run checks |
//! | [`cuda`] | the CUDA plugin's fixtures: the fake driver, cubins, scenario child processes |

pub mod cc_cache;
pub mod clang;
pub mod compare;
pub mod cuda;
pub mod exec;
pub mod lock;
pub mod paths;
pub mod plugin;
pub mod release;
pub mod run;
pub mod scratch;
pub mod stage;
pub mod suite;
pub mod valgrind;

pub use plugin::{CallLog, TestPlugin};
pub use run::{Outcome, Run};
pub use scratch::Scratch;
pub use stage::{staged, Staged};

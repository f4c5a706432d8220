//! `libomptarget.rtl.test.so`: a plugin for the runtime's tests.
//!
//! It is the host backend ([`omptarget_plugin_host::HostBackend`], so
//! kernels really run) wrapped with call recording and fault injection,
//! configured per copy of the library. The contract, which other tests are
//! written against:
//!
//! * **Isolation.** A test copies the staged library
//!   (`target/omptarget/test-plugins/libomptarget.rtl.test.so`) into its own
//!   temporary directory; each copy has its own state.
//! * **Configuration.** `<library path>.conf`, found through `dladdr`, is
//!   read when the plugin initialises (`init_plugin`, or the first other
//!   entry) and again at each re-initialisation. A missing file means the
//!   defaults. Lines are `key=value`; `#` starts a comment; blank lines and
//!   spaces around keys and values are ignored. Keys:
//!   - `devices=N`: number of devices (default 2);
//!   - `claimed_devices=N`: `number_of_devices` reports N (up to
//!     `i32::MAX`) while only `devices` are served: a plugin claiming
//!     absurdly many devices, without allocating for them;
//!   - `fail_init_device=I`: `init_device(I)` fails (may repeat);
//!   - `fail_init_plugin=1`: initialisation fails (`init_plugin`, or the
//!     lazy initialisation of the first entry);
//!   - `deinit_in_use=1`: `deinit_plugin` answers `OFFLOAD_IN_USE`, as the
//!     kit does when a kernel stayed inside the plugin for its whole wait
//!     (the state is still freed: a runtime cannot tell the difference);
//!   - `alloc_limit_bytes=N`: `data_alloc` on a device returns null when the
//!     bytes live on that device plus the size asked exceed N;
//!   - `log=PATH`: the call log (default `<library path>.log`);
//!   - `location=TEXT`: `get_device_info` answers `DeviceInfoKey::Location`
//!     with TEXT, as for a device outside this process (default: none);
//!   - `fail_location=N`: the first N questions for the location fail;
//!   - `incompatible_device=I` (may repeat): `is_device_compatible(I)`
//!     answers that device I runs no image (as a device of another kind
//!     would), so the runtime registers no image there;
//!   - `panic_in=ENTRY` (may repeat): the backend panics inside that entry
//!     (`init_plugin`, `init_device`, `is_device_compatible`, `deinit_device`, `load_binary`,
//!     `unload_binary`, `data_alloc`, `data_delete`, `data_submit`,
//!     `data_retrieve`, `run_target_region` (also team regions),
//!     `deinit_plugin`), to exercise the panic boundaries.
//!
//!   An unknown key or a bad value fails the initialisation, with a message.
//! * **Log.** One line per entry call, appended and flushed at once; the
//!   first token is the entry name without `__tgt_rtl_`, then its key
//!   arguments (see [`omptarget_plugin_kit::EntryCall`]):
//!   `init_plugin`, `number_of_devices`, `is_valid_binary`,
//!   `init_device <id>`, `load_binary <id>`, `unload_binary <id>`,
//!   `data_alloc <id> <size> <kind> <ptr|null>`, `data_delete <id> <ptr>`,
//!   `data_submit <id> <size>`, `data_retrieve <id> <size>`,
//!   `run_target_region <id>`, `run_target_team_region <id>`,
//!   `deinit_device <id>`, `deinit_plugin`, `register_destruction_cb`,
//!   `get_device_info <id> <key>` (it answers as the host backend); the
//!   async variants log their own names (`data_submit_async <id> <size>` …);
//!   pointers are `0x…` hex. `fini` is written by the `.fini_array` safety
//!   net when the library is unloaded or the process exits.
//!   A call is logged whether or not it succeeds (`data_alloc` after the
//!   fact, with its result; every other entry on entry).
//!   `data_delete_batch` is logged as one `data_delete <id> <ptr>` line per
//!   block it is given (before it runs), so a log of frees reads the same
//!   whichever entry the runtime used; its blocks go through the backend's
//!   `data_delete` one by one (`panic_in=data_delete` applies).
//!
//! Modules: `backend` (`TestBackend`: the host backend with recording and
//! fault injection), `conf` (the `<library>.conf` file), `recorder` (the
//! call log, and finding this library's own path).

mod backend;
mod conf;
mod recorder;

omptarget_plugin_kit::export_plugin!(backend::TestBackend);

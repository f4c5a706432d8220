//! Helpers for the plugins' own tests (feature `testing`): find and isolate
//! a built plugin, open it through its C entries, and build device images
//! with clang-14. Panics on failure, with a message: it is test code.

use omptarget_abi::plugin::{self as p, names};
use omptarget_abi::{DeviceImage, OffloadEntry};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The C compiler the tests use.
pub const CLANG: &str = "clang-14";

/// The cargo output directory of the running test (`target/debug`),
/// derived from the test executable (`target/debug/deps/<test>`), so that
/// `CARGO_TARGET_DIR` and profiles are respected.
pub fn target_profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    let deps = exe.parent().expect("test executable directory");
    deps.parent()
        .expect("target profile directory")
        .to_path_buf()
}

/// Path of a cdylib built by this workspace (e.g. `libomptarget_rtl_x86_64.so`),
/// after running `cargo build -p <package>` so that the file is current:
/// cargo does not rebuild a cdylib-only package's library before running
/// that package's integration tests. One build per package and process.
pub fn built_cdylib(package: &str, file: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let path = target_profile_dir().join(file);
    let mut built = BUILT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !built.iter().any(|p| p == package) {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "--quiet", "-p", package]);
        if target_profile_dir().file_name() == Some("release".as_ref()) {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("running cargo build");
        assert!(status.success(), "cargo build -p {package} failed");
        built.push(package.to_string());
    }
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// A private copy of a plugin library in a fresh temporary directory:
/// dlopen of a distinct path gives the copy its own state.
pub struct IsolatedCopy {
    /// The temporary directory; removed when this is dropped.
    pub dir: tempfile::TempDir,
    /// The copy of the library inside it.
    pub path: PathBuf,
}

/// Copy `library` into a new temporary directory under `name`.
pub fn isolated_copy(library: &Path, name: &str) -> IsolatedCopy {
    let dir = tempfile::Builder::new()
        .prefix("omptarget-plugin-test-")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().join(name);
    std::fs::copy(library, &path).expect("copying the plugin");
    IsolatedCopy { dir, path }
}

/// A plugin opened with dlopen, with its entries resolved. Optional entries
/// the plugin lacks are `None`. Dropping it dlcloses the library.
pub struct Plugin {
    /// `__tgt_rtl_number_of_devices` (required).
    pub number_of_devices: p::NumberOfDevicesFn,
    /// `__tgt_rtl_is_valid_binary` (required).
    pub is_valid_binary: p::IsValidBinaryFn,
    /// `__tgt_rtl_init_device` (required).
    pub init_device: p::InitDeviceFn,
    /// `__tgt_rtl_load_binary` (required).
    pub load_binary: p::LoadBinaryFn,
    /// `__tgt_rtl_data_alloc` (required).
    pub data_alloc: p::DataAllocFn,
    /// `__tgt_rtl_data_submit` (required).
    pub data_submit: p::DataSubmitFn,
    /// `__tgt_rtl_data_retrieve` (required).
    pub data_retrieve: p::DataRetrieveFn,
    /// `__tgt_rtl_data_delete` (required).
    pub data_delete: p::DataDeleteFn,
    /// `__tgt_rtl_run_target_region` (required).
    pub run_target_region: p::RunTargetRegionFn,
    /// `__tgt_rtl_run_target_team_region` (required).
    pub run_target_team_region: p::RunTargetTeamRegionFn,
    /// `__tgt_rtl_init_plugin`, if the plugin exports it.
    pub init_plugin: Option<p::InitPluginFn>,
    /// `__tgt_rtl_deinit_plugin`, if the plugin exports it.
    pub deinit_plugin: Option<p::DeinitPluginFn>,
    /// `__tgt_rtl_deinit_device`, if the plugin exports it.
    pub deinit_device: Option<p::DeinitDeviceFn>,
    /// `__tgt_rtl_unload_binary`, if the plugin exports it.
    pub unload_binary: Option<p::UnloadBinaryFn>,
    /// `__tgt_rtl_register_destruction_cb`, if the plugin exports it.
    pub register_destruction_cb: Option<p::RegisterDestructionCbFn>,
    /// `__tgt_rtl_data_submit_async`, if the plugin exports it.
    pub data_submit_async: Option<p::DataSubmitAsyncFn>,
    /// `__tgt_rtl_data_retrieve_async`, if the plugin exports it.
    pub data_retrieve_async: Option<p::DataRetrieveAsyncFn>,
    /// `__tgt_rtl_data_exchange`, if the plugin exports it.
    pub data_exchange: Option<p::DataExchangeFn>,
    /// `__tgt_rtl_is_data_exchangable`, if the plugin exports it.
    pub is_data_exchangable: Option<p::IsDataExchangableFn>,
    /// `__tgt_rtl_run_target_region_async`, if the plugin exports it.
    pub run_target_region_async: Option<p::RunTargetRegionAsyncFn>,
    /// `__tgt_rtl_run_target_team_region_async`, if the plugin exports it.
    pub run_target_team_region_async: Option<p::RunTargetTeamRegionAsyncFn>,
    /// `__tgt_rtl_synchronize`, if the plugin exports it.
    pub synchronize: Option<p::SynchronizeFn>,
    /// `__tgt_rtl_init_requires`, if the plugin exports it.
    pub init_requires: Option<p::InitRequiresFn>,
    /// `__tgt_rtl_set_info_flag`, if the plugin exports it.
    pub set_info_flag: Option<p::SetInfoFlagFn>,
    /// `__tgt_rtl_print_device_info`, if the plugin exports it.
    pub print_device_info: Option<p::PrintDeviceInfoFn>,
    /// `__tgt_rtl_data_delete_batch` (this project's), if the plugin
    /// exports it.
    pub data_delete_batch: Option<p::DataDeleteBatchFn>,
    /// `__tgt_rtl_load_binary_flags` (this project's), if the plugin
    /// exports it.
    pub load_binary_flags: Option<p::LoadBinaryFlagsFn>,
    /// `__tgt_rtl_is_device_compatible` (this project's), if the plugin
    /// exports it.
    pub is_device_compatible: Option<p::IsDeviceCompatibleFn>,
    /// `__tgt_rtl_last_error_message` (this project's), if the plugin
    /// exports it; [`Plugin::last_error`] reads it.
    pub last_error_message: Option<p::LastErrorFn>,
    /// `__tgt_rtl_get_device_info` (this project's), if the plugin
    /// exports it.
    pub get_device_info: Option<p::GetDeviceInfoFn>,
    library: libloading::Library,
}

impl Plugin {
    /// dlopen `path` (RTLD_NOW | RTLD_LOCAL, like a runtime) and resolve
    /// every entry; panics if a required one is missing.
    pub fn open(path: &Path) -> Self {
        // SAFETY: loading a plugin runs no code of ours at load time.
        let library = unsafe {
            libloading::os::unix::Library::open(Some(path), libc::RTLD_NOW | libc::RTLD_LOCAL)
        }
        .unwrap_or_else(|e| panic!("dlopen {}: {e}", path.display()));
        let library = libloading::Library::from(library);
        macro_rules! required {
            ($name:expr) => {
                // SAFETY: the symbol is the plugin ABI entry of that name,
                // whose C type is the field's function-pointer type
                // (omptarget_abi::plugin checks the names and types).
                *unsafe { library.get($name.as_bytes()) }
                    .unwrap_or_else(|e| panic!("{} lacks {}: {e}", path.display(), $name))
            };
        }
        macro_rules! optional {
            ($name:expr) => {
                // SAFETY: as for `required!`: the entry of that name has
                // the field's function-pointer type.
                unsafe { library.get($name.as_bytes()) }.ok().map(|s| *s)
            };
        }
        Self {
            number_of_devices: required!(names::NUMBER_OF_DEVICES),
            is_valid_binary: required!(names::IS_VALID_BINARY),
            init_device: required!(names::INIT_DEVICE),
            load_binary: required!(names::LOAD_BINARY),
            data_alloc: required!(names::DATA_ALLOC),
            data_submit: required!(names::DATA_SUBMIT),
            data_retrieve: required!(names::DATA_RETRIEVE),
            data_delete: required!(names::DATA_DELETE),
            run_target_region: required!(names::RUN_TARGET_REGION),
            run_target_team_region: required!(names::RUN_TARGET_TEAM_REGION),
            init_plugin: optional!(names::INIT_PLUGIN),
            deinit_plugin: optional!(names::DEINIT_PLUGIN),
            deinit_device: optional!(names::DEINIT_DEVICE),
            unload_binary: optional!(names::UNLOAD_BINARY),
            register_destruction_cb: optional!(names::REGISTER_DESTRUCTION_CB),
            data_submit_async: optional!(names::DATA_SUBMIT_ASYNC),
            data_retrieve_async: optional!(names::DATA_RETRIEVE_ASYNC),
            data_exchange: optional!(names::DATA_EXCHANGE),
            is_data_exchangable: optional!(names::IS_DATA_EXCHANGABLE),
            run_target_region_async: optional!(names::RUN_TARGET_REGION_ASYNC),
            run_target_team_region_async: optional!(names::RUN_TARGET_TEAM_REGION_ASYNC),
            synchronize: optional!(names::SYNCHRONIZE),
            init_requires: optional!(names::INIT_REQUIRES),
            set_info_flag: optional!(names::SET_INFO_FLAG),
            print_device_info: optional!(names::PRINT_DEVICE_INFO),
            data_delete_batch: optional!(names::DATA_DELETE_BATCH),
            load_binary_flags: optional!(names::LOAD_BINARY_FLAGS),
            is_device_compatible: optional!(names::IS_DEVICE_COMPATIBLE),
            last_error_message: optional!(names::LAST_ERROR_MESSAGE),
            get_device_info: optional!(names::GET_DEVICE_INFO),
            library,
        }
    }

    /// The calling thread's last failure message of this plugin (read
    /// once), if it exports `__tgt_rtl_last_error_message` and has one.
    pub fn last_error(&self) -> Option<String> {
        let entry = self.last_error_message?;
        let mut buf = vec![0u8; 4096];
        // SAFETY: `buf` is writable for `buf.len()` bytes, as the entry's
        // contract asks; it writes at most that many.
        let len = unsafe { entry(buf.as_mut_ptr().cast(), buf.len()) };
        if len == 0 {
            return None;
        }
        buf.truncate(len.min(buf.len()));
        Some(String::from_utf8_lossy(&buf).into_owned())
    }

    /// dlclose the library, reporting failure.
    pub fn close(self) {
        self.library.close().expect("dlclose of the plugin");
    }
}

/// A device image with a host entry table, as a host binary would
/// register it. The descriptor address is stable while this value lives.
pub struct ImageFixture {
    desc: Box<DeviceImage>,
    _bytes: Vec<u8>,
    _entries: Vec<OffloadEntry>,
    _names: Vec<CString>,
}

impl ImageFixture {
    /// An image of `bytes` whose host table lists `entries` (name, size;
    /// size 0 for a kernel).
    pub fn new(bytes: Vec<u8>, entries: &[(&str, usize)]) -> Self {
        let names: Vec<CString> = entries
            .iter()
            .map(|(name, _)| CString::new(*name).expect("entry name"))
            .collect();
        let mut host_entries: Vec<OffloadEntry> = entries
            .iter()
            .zip(&names)
            .map(|((_, size), name)| OffloadEntry {
                // A host address the plugin never uses; non-null like
                // clang's.
                addr: name.as_ptr().cast_mut().cast(),
                name: name.as_ptr().cast_mut(),
                size: *size,
                flags: 0,
                reserved: 0,
            })
            .collect();
        let mut bytes = bytes;
        let range = bytes.as_mut_ptr_range();
        let entry_range = host_entries.as_mut_ptr_range();
        let (entries_begin, entries_end) = if host_entries.is_empty() {
            (std::ptr::null_mut(), std::ptr::null_mut())
        } else {
            (entry_range.start, entry_range.end)
        };
        Self {
            desc: Box::new(DeviceImage {
                image_start: range.start.cast(),
                image_end: range.end.cast(),
                entries_begin,
                entries_end,
            }),
            _bytes: bytes,
            _entries: host_entries,
            _names: names,
        }
    }

    /// The `__tgt_device_image` to pass to the plugin.
    pub fn desc(&self) -> *mut DeviceImage {
        (&*self.desc as *const DeviceImage).cast_mut()
    }
}

/// Run clang-14 with `args` in `dir`; panics with its output on failure.
pub fn clang(dir: &Path, args: &[&str]) {
    let output = Command::new(CLANG)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running {CLANG}: {e}"));
    assert!(
        output.status.success(),
        "{CLANG} {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Compile C `source` into a shared object `name` in `dir`
/// (`clang-14 -shared -fPIC -O1`).
pub fn compile_shared(dir: &Path, name: &str, source: &str) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).expect("writing C source");
    let out = dir.join(name);
    clang(
        dir,
        &[
            "-shared",
            "-fPIC",
            "-O1",
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
    );
    out
}

/// An OpenMP offload program built by clang-14 for the x86_64 host device.
pub struct OpenMpBuild {
    /// The host executable (registers its image with libomptarget).
    pub program: PathBuf,
    /// The device image embedded in it, as a separate file.
    pub device_image: PathBuf,
}

/// Build C `source` with `clang-14 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu
/// -save-temps` in `dir`. With `-save-temps` the clang-14 driver keeps the
/// device image it links (and then wraps into the host binary) in the
/// working directory as `<output>-openmp-x86_64-pc-linux-gnu` (the output
/// name is `a.out` in clang 14 whatever `-o` says); it is the only file
/// there with that suffix and no extension.
pub fn compile_openmp(dir: &Path, name: &str, source: &str, extra: &[&str]) -> OpenMpBuild {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).expect("writing C source");
    let program = dir.join(name);
    let mut args = vec![
        "-fopenmp",
        "-fopenmp-targets=x86_64-pc-linux-gnu",
        "-save-temps",
        "-O1",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&[src.to_str().unwrap(), "-o", program.to_str().unwrap()]);
    clang(dir, &args);
    let images: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("reading the build dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with("-openmp-x86_64-pc-linux-gnu"))
        })
        .collect();
    assert_eq!(
        images.len(),
        1,
        "expected one device image from -save-temps in {}, found {images:?}",
        dir.display()
    );
    OpenMpBuild {
        program,
        device_image: images.into_iter().next().unwrap(),
    }
}

/// The offload entries a clang OpenMP device image defines, as (name,
/// size), read from its `.omp_offloading.entry.<name>` symbols and the
/// size field of each record in `omp_offloading_entries`.
pub fn openmp_entries(image: &[u8]) -> Vec<(String, usize)> {
    use object::{Object, ObjectSection, ObjectSymbol};
    const PREFIX: &str = ".omp_offloading.entry.";
    let file = object::File::parse(image).expect("parsing the device image");
    let section = file
        .section_by_name("omp_offloading_entries")
        .expect("no omp_offloading_entries section");
    let data = section.data().expect("section data");
    let mut entries = Vec::new();
    for symbol in file.symbols().chain(file.dynamic_symbols()) {
        let Ok(name) = symbol.name() else { continue };
        let Some(entry) = name.strip_prefix(PREFIX) else {
            continue;
        };
        if entries.iter().any(|(n, _)| n == entry) {
            continue;
        }
        let offset = (symbol.address() - section.address()) as usize;
        let size = u64::from_le_bytes(data[offset + 16..offset + 24].try_into().unwrap());
        entries.push((entry.to_string(), size as usize));
    }
    entries.sort();
    entries
}

/// The functions a shared object lists in an array section (`.init_array`
/// or `.fini_array`), as symbol names: what the dynamic loader runs when it
/// loads or unloads the library. Read from the section's relative
/// relocations and the symbol table (debug and release builds keep it).
pub fn array_section_functions(library: &Path, section: &str) -> Vec<String> {
    use object::{Object, ObjectSection, ObjectSymbol, RelocationTarget};
    let bytes = std::fs::read(library).expect("reading the library");
    let file = object::File::parse(&*bytes).expect("parsing the library");
    let Some(array) = file.section_by_name(section) else {
        return Vec::new();
    };
    let range = array.address()..array.address() + array.size();
    let symbols: std::collections::HashMap<u64, String> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text)
        .filter_map(|s| Some((s.address(), s.name().ok()?.to_string())))
        .collect();
    let mut functions = Vec::new();
    for (offset, relocation) in file.dynamic_relocations().into_iter().flatten() {
        if !range.contains(&offset) {
            continue;
        }
        let target = match relocation.target() {
            RelocationTarget::Absolute => relocation.addend() as u64,
            RelocationTarget::Symbol(index) => file
                .symbol_by_index(index)
                .map(|s| s.address())
                .unwrap_or(0)
                .wrapping_add(relocation.addend() as u64),
            _ => 0,
        };
        functions.push(
            symbols
                .get(&target)
                .cloned()
                .unwrap_or_else(|| format!("{target:#x}")),
        );
    }
    functions
}

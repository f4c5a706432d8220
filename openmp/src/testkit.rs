//! Test devices backed by host memory, a test platform of such plugins, a
//! host environment that records diagnostics, and builders for host binary
//! descriptors. Device "addresses" are real host addresses of buffers the
//! device owns, so kernels written in Rust can work on them.

use super::*;
use omptarget::abi::{AllocKind, BinDesc, DeviceImage, OffloadEntry};
use omptarget::mapping::MappingTable;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

/// A kernel: gets the argument pointers and offsets the runtime passed.
pub type Kernel = Box<dyn Fn(&[*mut c_void], &[isize], KernelLaunch) + Send + Sync>;

/// How a kernel was launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelLaunch {
    pub teams: Option<(i32, i32, u64)>,
}

/// Offset between a host entry address and the device entry address the
/// test device reports for it.
pub const ENTRY_TAG: usize = 1;

#[derive(Default)]
pub struct TestDevice {
    pub table: MappingTable,
    pub buffers: Mutex<HashMap<usize, Vec<u8>>>,
    pub kernels: Mutex<HashMap<usize, Kernel>>,
    pub init_calls: AtomicUsize,
    pub requires_seen: Mutex<Vec<i64>>,
    pub fail_init: AtomicBool,
    pub fail_alloc: AtomicBool,
    pub fail_submit: AtomicBool,
    pub fail_free: AtomicBool,
    pub fail_run: AtomicBool,
    pub loads: AtomicUsize,
    pub unloads: AtomicUsize,
    /// The `__tgt_device_image` addresses `load_binary` got, in order.
    pub loaded_images: Mutex<Vec<usize>>,
    /// Run (once) inside the next `load_binary`, before it reads the image:
    /// what another thread could do while this one loads.
    pub during_load: Mutex<Option<Box<dyn FnOnce() + Send>>>,
    /// Entry count the device reports beyond the image's (table mismatch).
    pub extra_entries: AtomicUsize,
    pub exchange: AtomicBool,
    pub exchanges: AtomicUsize,
    pub launches: Mutex<Vec<(usize, usize, KernelLaunch)>>,
}

impl TestDevice {
    /// Allocate a device buffer of `size` bytes and return its address.
    pub fn buffer(&self, size: usize) -> usize {
        let mut storage = vec![0u8; size.max(1) + 16];
        let addr = storage.as_mut_ptr() as usize;
        self.buffers.lock().unwrap().insert(addr, storage);
        addr
    }

    pub fn live_buffers(&self) -> usize {
        self.buffers.lock().unwrap().len()
    }

    /// Register a kernel for a host entry address.
    pub fn kernel(
        &self,
        host_entry: usize,
        f: impl Fn(&[*mut c_void], &[isize], KernelLaunch) + Send + Sync + 'static,
    ) {
        self.kernels.lock().unwrap().insert(host_entry, Box::new(f));
    }

    fn launch(
        &self,
        entry: *mut c_void,
        args: &[*mut c_void],
        offsets: &[isize],
        launch: KernelLaunch,
    ) -> Result<(), OpFailed> {
        if self.fail_run.load(Ordering::SeqCst) {
            return Err(injected("run_target_region"));
        }
        let host_entry = (entry as usize).wrapping_sub(ENTRY_TAG);
        self.launches
            .lock()
            .unwrap()
            .push((host_entry, args.len(), launch));
        if let Some(kernel) = self.kernels.lock().unwrap().get(&host_entry) {
            kernel(args, offsets, launch);
        }
        Ok(())
    }
}

impl DeviceOps for TestDevice {
    fn init(&self, requires_flags: i64) -> Result<(), OpFailed> {
        self.init_calls.fetch_add(1, Ordering::SeqCst);
        self.requires_seen.lock().unwrap().push(requires_flags);
        if self.fail_init.load(Ordering::SeqCst) {
            Err(injected("init_device"))
        } else {
            Ok(())
        }
    }
    unsafe fn alloc(
        &self,
        size: usize,
        _host: *mut c_void,
        _kind: AllocKind,
    ) -> Result<DevicePtr, OpFailed> {
        if self.fail_alloc.load(Ordering::SeqCst) || size > (1 << 30) {
            return Err(injected("data_alloc"));
        }
        Ok(DevicePtr::from_raw(self.buffer(size) as *mut c_void))
    }
    unsafe fn free(&self, ptr: DevicePtr) -> Result<(), OpFailed> {
        if self.fail_free.load(Ordering::SeqCst) {
            return Err(injected("data_delete"));
        }
        match self.buffers.lock().unwrap().remove(&(ptr.addr())) {
            Some(_) => Ok(()),
            None => Err(omptarget::Error::UnknownDevicePointer {
                device: 0,
                ptr: ptr.addr(),
            }),
        }
    }
    unsafe fn submit(
        &self,
        dst: DevicePtr,
        src: *const c_void,
        size: usize,
    ) -> Result<(), OpFailed> {
        if self.fail_submit.load(Ordering::SeqCst) {
            return Err(injected("data_submit"));
        }
        // SAFETY: the trait's `# Safety`: `src..src+size` is readable, and
        // `dst` is memory of this device, i.e. one of our host `buffers`
        // (test devices keep their memory on the host).
        unsafe { std::ptr::copy(src as *const u8, dst.as_ptr() as *mut u8, size) };
        Ok(())
    }
    unsafe fn retrieve(
        &self,
        dst: *mut c_void,
        src: DevicePtr,
        size: usize,
    ) -> Result<(), OpFailed> {
        // SAFETY: the trait's `# Safety`: `dst..dst+size` is writable, and
        // `src` is memory of this device, one of our host `buffers`.
        unsafe { std::ptr::copy(src.as_ptr() as *const u8, dst as *mut u8, size) };
        Ok(())
    }
    fn is_data_exchangable(&self, dst: &dyn DeviceOps) -> bool {
        self.exchange.load(Ordering::SeqCst) && dst.as_any().is::<TestDevice>()
    }
    unsafe fn data_exchange(
        &self,
        src: DevicePtr,
        _dst_device: &dyn DeviceOps,
        dst: DevicePtr,
        size: usize,
    ) -> Result<(), OpFailed> {
        self.exchanges.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the trait's `# Safety`: `src` is memory of this device and
        // `dst` of `dst_device` (a `TestDevice`, `is_data_exchangable`), both
        // host `buffers` of `size` bytes or more.
        unsafe { std::ptr::copy(src.as_ptr() as *const u8, dst.as_ptr() as *mut u8, size) };
        Ok(())
    }
    unsafe fn unload_binary(&self, _image: *mut DeviceImage) -> Result<bool, OpFailed> {
        self.unloads.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    }
    unsafe fn load_binary(
        &self,
        image: *mut DeviceImage,
        _storage: std::sync::Arc<dyn std::any::Any + Send + Sync>,
    ) -> Result<Vec<OffloadEntry>, OpFailed> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        self.loaded_images.lock().unwrap().push(image as usize);
        let hook = self.during_load.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        // SAFETY: the trait's `# Safety`: `image` points into `storage`,
        // alive for this call; the runtime loads its `ImageCopy`, a valid
        // image whose entry range it owns.
        let image = unsafe { &*image };
        // SAFETY: as above, the entry range of `image` is a valid array; the
        // slice is used only in this call.
        let host = unsafe { registration::entries(image.entries_begin, image.entries_end) };
        let mut out = Vec::new();
        for e in host {
            let addr = if e.size == 0 {
                (e.addr as usize + ENTRY_TAG) as *mut c_void
            } else {
                // A global starts with the image's initial value (here: the
                // host copy's bytes at load time).
                let device = self.buffer(e.size);
                // SAFETY: a sized entry is a test fixture's host global of
                // `e.size` readable bytes; `device` is a fresh buffer of
                // `e.size` bytes.
                unsafe { std::ptr::copy(e.addr as *const u8, device as *mut u8, e.size) };
                device as *mut c_void
            };
            out.push(OffloadEntry { addr, ..*e });
        }
        for _ in 0..self.extra_entries.load(Ordering::SeqCst) {
            out.push(host[0]);
        }
        Ok(out)
    }
    unsafe fn run_region(
        &self,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        offsets: &mut [isize],
    ) -> Result<(), OpFailed> {
        self.launch(entry, args, offsets, KernelLaunch { teams: None })
    }
    unsafe fn run_team_region(
        &self,
        entry: *mut c_void,
        args: &mut [*mut c_void],
        offsets: &mut [isize],
        num_teams: i32,
        thread_limit: i32,
        loop_tripcount: u64,
    ) -> Result<(), OpFailed> {
        self.launch(
            entry,
            args,
            offsets,
            KernelLaunch {
                teams: Some((num_teams, thread_limit, loop_tripcount)),
            },
        )
    }
    fn supports_empty_images(&self) -> bool {
        false
    }
    fn mappings(&self) -> &MappingTable {
        &self.table
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A plugin: accepts images whose bytes start with its tag.
pub struct TestPlugin {
    pub tag: &'static [u8],
    pub devices: Vec<TestDevice>,
}

#[derive(Default)]
pub struct TestPlatform {
    pub plugins: Vec<TestPlugin>,
}

impl TestPlatform {
    pub fn new(plugins: &[(&'static [u8], usize)]) -> Self {
        TestPlatform {
            plugins: plugins
                .iter()
                .map(|&(tag, n)| TestPlugin {
                    tag,
                    devices: (0..n).map(|_| TestDevice::default()).collect(),
                })
                .collect(),
        }
    }
    pub fn dev(&self, plugin: usize, local: usize) -> &TestDevice {
        &self.plugins[plugin].devices[local]
    }
}

impl Platform for TestPlatform {
    fn plugin_count(&self) -> usize {
        self.plugins.len()
    }
    fn plugin_device_count(&self, plugin: usize) -> usize {
        self.plugins[plugin].devices.len()
    }
    unsafe fn is_valid_binary(&self, plugin: usize, image: *mut DeviceImage) -> bool {
        // SAFETY: the trait's `# Safety`: `image` points to a valid device
        // image.
        let image = unsafe { &*image };
        let tag = self.plugins[plugin].tag;
        let len = image.len().unwrap_or(0);
        len >= tag.len()
            // SAFETY: a valid image's `image_start..image_end` is readable,
            // and it holds `len >= tag.len()` bytes (checked just before).
            && unsafe { std::slice::from_raw_parts(image.image_start as *const u8, tag.len()) }
                == tag
    }
    fn device(&self, plugin: usize, local: usize) -> Option<&dyn DeviceOps> {
        self.plugins
            .get(plugin)?
            .devices
            .get(local)
            .map(|d| d as &dyn DeviceOps)
    }
}

/// A test platform, a registry and a recording host: one runtime's worth.
pub struct World {
    pub platform: TestPlatform,
    pub registry: Registry,
    pub host: TestHost,
}

impl World {
    pub fn new(plugins: &[(&'static [u8], usize)], policy: TargetOffloadPolicy) -> Self {
        World {
            platform: TestPlatform::new(plugins),
            registry: Registry::new(),
            host: TestHost::new(policy),
        }
    }
    pub fn mandatory(plugins: &[(&'static [u8], usize)]) -> Self {
        Self::new(plugins, TargetOffloadPolicy::Mandatory)
    }
    pub fn off(&self) -> Offload<'_> {
        Offload::new(&self.registry, &self.platform, &self.host)
    }
    /// Everything printed so far, as stderr would show it; then cleared.
    pub fn stderr(&self) -> String {
        self.host.take_stderr()
    }
}

/// Host environment recording diagnostics.
pub struct TestHost {
    pub policy: TargetOffloadPolicy,
    pub default_device: AtomicI32,
    pub thread: AtomicI32,
    pub diags: Mutex<Vec<Diagnostic>>,
    /// What `caller_release` answers (LLVM 14 unless a test sets it).
    pub release: Mutex<crate::release::Release>,
    /// How many times `caller_release` was asked (the shim's answer walks
    /// the stack: hot paths must not ask).
    pub release_asked: AtomicUsize,
}

impl TestHost {
    pub fn new(policy: TargetOffloadPolicy) -> Self {
        TestHost {
            policy,
            default_device: AtomicI32::new(0),
            thread: AtomicI32::new(0),
            diags: Mutex::new(Vec::new()),
            release: Mutex::new(crate::release::Release::Llvm14),
            release_asked: AtomicUsize::new(0),
        }
    }
    /// Everything printed so far, as stderr would show it; then cleared.
    pub fn take_stderr(&self) -> String {
        let diags = std::mem::take(&mut *self.diags.lock().unwrap());
        diags.iter().map(Diagnostic::render).collect()
    }
}

impl HostEnv for TestHost {
    fn default_device(&self) -> i32 {
        self.default_device.load(Ordering::SeqCst)
    }
    fn global_thread_num(&self) -> i32 {
        self.thread.load(Ordering::SeqCst)
    }
    fn target_offload_policy(&self) -> TargetOffloadPolicy {
        self.policy
    }
    fn emit(&self, diagnostic: &Diagnostic) {
        self.diags.lock().unwrap().push(diagnostic.clone());
    }
    fn caller_release(&self) -> crate::release::Release {
        self.release_asked.fetch_add(1, Ordering::SeqCst);
        *self.release.lock().unwrap()
    }
}

/// One host entry to put in a binary.
pub enum HostItem {
    /// A kernel (size 0) with the given flags (ctor/dtor or 0).
    Kernel { flags: i32 },
    /// A global of this many bytes.
    Global { size: usize },
}

/// A host binary descriptor and everything it points to, kept alive.
pub struct TestBinary {
    pub desc: Box<BinDesc>,
    _images: Vec<DeviceImage>,
    _entries: Vec<OffloadEntry>,
    _names: Vec<CString>,
    /// Host addresses of the entries, in order.
    pub addrs: Vec<usize>,
    _storage: Vec<Vec<u8>>,
}

impl TestBinary {
    /// A binary with one image per tag and the given host entries.
    pub fn new(tags: &[&'static [u8]], items: &[HostItem]) -> Self {
        let mut storage = Vec::new();
        let mut names = Vec::new();
        let mut entries = Vec::new();
        let mut addrs = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let (size, flags) = match *item {
                HostItem::Kernel { flags } => (0, flags),
                HostItem::Global { size } => (size, 0),
            };
            let mut bytes = vec![0u8; size.max(8)];
            let addr = bytes.as_mut_ptr() as usize;
            storage.push(bytes);
            let name = CString::new(format!("entry{i}")).unwrap();
            entries.push(OffloadEntry {
                addr: addr as *mut c_void,
                name: name.as_ptr() as *mut c_char,
                size,
                flags,
                reserved: 0,
            });
            names.push(name);
            addrs.push(addr);
        }
        let range = entries.as_mut_ptr_range();
        let mut images: Vec<DeviceImage> = tags
            .iter()
            .map(|tag| DeviceImage {
                image_start: tag.as_ptr() as *mut c_void,
                image_end: (tag.as_ptr() as usize + tag.len()) as *mut c_void,
                entries_begin: range.start,
                entries_end: range.end,
            })
            .collect();
        let desc = Box::new(BinDesc {
            num_device_images: images.len() as i32,
            device_images: images.as_mut_ptr(),
            host_entries_begin: range.start,
            host_entries_end: range.end,
        });
        TestBinary {
            desc,
            _images: images,
            _entries: entries,
            _names: names,
            addrs,
            _storage: storage,
        }
    }

    pub fn desc(&self) -> *mut BinDesc {
        &*self.desc as *const BinDesc as *mut BinDesc
    }
}

/// Argument arrays built in a test.
#[derive(Default)]
pub struct Args {
    pub bases: Vec<*mut c_void>,
    pub begins: Vec<*mut c_void>,
    pub sizes: Vec<i64>,
    pub types: Vec<i64>,
    pub names: Vec<*mut c_void>,
    pub mappers: Vec<*mut c_void>,
}

impl Args {
    pub fn push(
        &mut self,
        base: *mut c_void,
        begin: *mut c_void,
        size: i64,
        map_type: i64,
    ) -> &mut Self {
        self.bases.push(base);
        self.begins.push(begin);
        self.sizes.push(size);
        self.types.push(map_type);
        self.names.push(std::ptr::null_mut());
        self.mappers.push(std::ptr::null_mut());
        self
    }
    /// Map `value` (base = begin) with a type.
    pub fn map<T>(&mut self, value: *mut T, size: usize, map_type: i64) -> &mut Self {
        self.push(
            value as *mut c_void,
            value as *mut c_void,
            size as i64,
            map_type,
        )
    }
    /// A view of these arrays, borrowing them.
    ///
    /// # Safety
    /// As [`OwnedMapArgs::view`]: each argument names host memory as its
    /// map type says, and each mapper is a mapper for its argument, while
    /// the view is used.
    pub unsafe fn view(&mut self) -> MapArgs<'_> {
        // SAFETY: the six arrays are `self`'s Vecs, `types.len()` elements
        // each (`push` keeps them parallel), `bases` borrowed mutably (for
        // the view's lifetime) and aliased by none of the others; the host
        // memory they name is our caller's contract.
        unsafe {
            MapArgs::from_raw(
                self.types.len() as i32,
                self.bases.as_mut_ptr(),
                self.begins.as_mut_ptr(),
                self.sizes.as_ptr(),
                self.types.as_ptr(),
                self.names.as_ptr(),
                self.mappers.as_ptr(),
            )
            .unwrap()
        }
    }
}

/// A failure the test asked for, as a plugin entry's failure code.
fn injected(entry: &'static str) -> OpFailed {
    omptarget::Error::PluginCallFailed {
        plugin: "test device".into(),
        device: 0,
        entry,
        code: -1,
        reason: None,
    }
}

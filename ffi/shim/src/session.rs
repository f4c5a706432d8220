//! The session: one `omptarget::Runtime` plus the offload state LLVM keeps
//! beside it. Every C entry point reaches the runtime through here.
//! (Adapter over the core's offload layer; filled in as that lands.)

use omptarget::{Config, Runtime};
use omptarget_abi::{AllocKind, AsyncInfo, BinDesc, DeviceInfo, OFFLOAD_FAIL};
use std::ffi::{c_char, c_int, c_void};

/// Which data operation a `__tgt_target_data_*` call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DataOp {
    Begin,
    End,
    Update,
}

/// The teams configuration of a `__tgt_target_teams*` launch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Teams {
    pub num_teams: i32,
    pub thread_limit: i32,
}

/// The outcome of preparing an interop object.
pub(crate) enum InteropInit {
    Ready,
    NotReady,
    Unsupported,
}

pub(crate) struct Session {
    runtime: Runtime,
}

impl Session {
    pub fn new() -> omptarget::Result<Self> {
        Ok(Session { runtime: Runtime::new(Config::from_env())? })
    }

    pub fn shutdown(self) {
        let report = self.runtime.shutdown();
        crate::report::emit(&report);
    }

    pub fn register_requires(&self, _flags: i64) {}
    pub fn register_lib(&self, _desc: *mut BinDesc) {}
    pub fn unregister_lib(&self, _desc: *mut BinDesc) -> bool {
        true
    }
    pub fn init_all_rtls(&self) {}
    pub fn target_data(&self, _op: DataOp, _loc: *mut c_void, _device_id: i64, _args: &crate::args::MapArgs<'_>) {}
    pub fn target(&self, _loc: *mut c_void, _device_id: i64, _host_ptr: *mut c_void, _args: &crate::args::MapArgs<'_>, _teams: Option<Teams>) -> i32 {
        OFFLOAD_FAIL
    }
    pub fn push_tripcount(&self, _device_id: i64, _count: u64) {}
    pub fn num_devices(&self) -> c_int {
        0
    }
    pub fn target_alloc(&self, _size: usize, _device_num: c_int, _kind: AllocKind) -> *mut c_void {
        std::ptr::null_mut()
    }
    pub fn target_free(&self, _ptr: *mut c_void, _device_num: c_int) {}
    pub fn target_is_present(&self, _ptr: *const c_void, _device_num: c_int) -> c_int {
        0
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn target_memcpy(&self, _dst: *mut c_void, _src: *const c_void, _length: usize, _dst_offset: usize, _src_offset: usize, _dst_device: c_int, _src_device: c_int) -> c_int {
        OFFLOAD_FAIL
    }
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn target_memcpy_rect(
        &self,
        _dst: *mut c_void,
        _src: *const c_void,
        _element_size: usize,
        _num_dims: c_int,
        _volume: *const usize,
        _dst_offsets: *const usize,
        _src_offsets: *const usize,
        _dst_dimensions: *const usize,
        _src_dimensions: *const usize,
        _dst_device: c_int,
        _src_device: c_int,
    ) -> c_int {
        OFFLOAD_FAIL
    }
    pub fn target_associate_ptr(&self, _host_ptr: *const c_void, _device_ptr: *const c_void, _size: usize, _device_offset: usize, _device_num: c_int) -> c_int {
        OFFLOAD_FAIL
    }
    pub fn target_disassociate_ptr(&self, _host_ptr: *const c_void, _device_num: c_int) -> c_int {
        OFFLOAD_FAIL
    }
    pub fn set_info_flag(&self, _flags: u32) {}
    pub fn print_device_info(&self, _device_id: i64) -> bool {
        false
    }
    pub fn interop_device_info(&self, _device_id: i32, _info: &mut DeviceInfo, _err: &mut *const c_char, _tasksync: bool, _async_info: &mut *mut AsyncInfo) -> InteropInit {
        InteropInit::Unsupported
    }
}

/// Placeholder for the offload layer's mapper component collector.
pub(crate) struct MapperComponents;
impl MapperComponents {
    pub unsafe fn from_handle(_h: *mut c_void) -> Option<&'static MapperComponents> {
        None
    }
    pub fn len(&self) -> usize {
        0
    }
    pub fn push(&self, _base: *mut c_void, _begin: *mut c_void, _size: i64, _ty: i64, _name: *mut c_void) {}
}

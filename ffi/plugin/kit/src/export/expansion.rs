use crate::{
    Backend, DeviceId, DeviceInfoValue, ImageRef, InitCause, LoadOptions, PluginError, TeamConfig,
};
use omptarget_abi::plugin::DeviceInfoKey;
use omptarget_abi::{AllocKind, DeviceImage, TargetTable, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use std::ffi::c_void;
use std::ptr::NonNull;

/// One device; every operation on it is refused.
struct Inert;

impl Backend for Inert {
    const NAME: &'static str = "inert";
    type Queue = ();

    fn init(_cause: InitCause) -> crate::error::Result<Self> {
        Ok(Inert)
    }

    fn deinit(self) -> crate::error::Result<()> {
        Ok(())
    }

    fn number_of_devices(&self) -> usize {
        1
    }

    fn is_valid_binary(&self, _image: &ImageRef<'_>) -> bool {
        false
    }

    fn init_device(&self, _device: DeviceId) -> crate::error::Result<()> {
        Ok(())
    }

    fn deinit_device(&self, _device: DeviceId) -> crate::error::Result<()> {
        Ok(())
    }

    fn load_binary(
        &self,
        _device: DeviceId,
        _image: &ImageRef<'_>,
        _options: LoadOptions,
    ) -> crate::error::Result<NonNull<TargetTable>> {
        Err(PluginError::Unsupported("load_binary"))
    }

    fn unload_binary(
        &self,
        _device: DeviceId,
        _image: NonNull<DeviceImage>,
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("unload_binary"))
    }

    fn data_alloc(
        &self,
        _device: DeviceId,
        size: usize,
        _host_ptr: *mut c_void,
        _kind: AllocKind,
    ) -> crate::error::Result<NonNull<c_void>> {
        // The boundary tests' panic outside a launch.
        assert_ne!(size, PANICKING_SIZE, "inert data_alloc panics");
        Err(PluginError::Unsupported("data_alloc"))
    }

    fn data_delete(
        &self,
        _device: DeviceId,
        _tgt_ptr: NonNull<c_void>,
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("data_delete"))
    }

    fn create_queue(&self, _device: DeviceId) -> crate::error::Result<()> {
        Ok(())
    }

    fn synchronize(&self, _device: DeviceId, _queue: ()) -> crate::error::Result<()> {
        Ok(())
    }

    unsafe fn data_submit(
        &self,
        _device: DeviceId,
        _tgt_ptr: NonNull<c_void>,
        _host_ptr: NonNull<c_void>,
        _size: usize,
        _queue: &mut (),
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("data_submit"))
    }

    unsafe fn data_retrieve(
        &self,
        _device: DeviceId,
        _host_ptr: NonNull<c_void>,
        _tgt_ptr: NonNull<c_void>,
        _size: usize,
        _queue: &mut (),
    ) -> crate::error::Result<()> {
        Err(PluginError::Unsupported("data_retrieve"))
    }

    unsafe fn run_region(
        &self,
        _device: DeviceId,
        _entry: NonNull<c_void>,
        _args: &[*mut c_void],
        _types: Option<&[omptarget_abi::plugin::KernelArgType]>,
        _teams: Option<TeamConfig>,
        _queue: &mut (),
    ) -> crate::error::Result<()> {
        // The boundary tests' panic in a launch.
        panic!("inert run_region panics")
    }

    fn print_device_info(&self, _device: DeviceId) {}

    fn device_info(
        &self,
        _device: DeviceId,
        key: DeviceInfoKey,
    ) -> crate::error::Result<Option<DeviceInfoValue>> {
        Ok(match key {
            DeviceInfoKey::Name => Some(DeviceInfoValue::Text("inert".into())),
            DeviceInfoKey::MaxTeams => Some(DeviceInfoValue::Number(7)),
            // The wrong shape: refused by the entry layer.
            DeviceInfoKey::TotalMemory => Some(DeviceInfoValue::Text("1 GiB".into())),
            _ => None,
        })
    }
}

crate::export_plugin!(Inert);

#[test]
fn the_expansion_is_a_working_plugin() {
    let table = crate::__entry_table!();
    assert_eq!(__tgt_rtl_init_plugin(), OFFLOAD_SUCCESS);
    // SAFETY: `number_of_devices` takes no arguments.
    assert_eq!(unsafe { (table.number_of_devices)() }, 1);
    assert_eq!(__tgt_rtl_init_device(0), OFFLOAD_SUCCESS);
    // A load flag the kit does not know fails before the image is read.
    // SAFETY: a null image is allowed (refused by the entry).
    let loaded = unsafe { (table.load_binary_flags.unwrap())(0, std::ptr::null_mut(), 1 << 31) };
    assert!(loaded.is_null());
    let reason = crate::last_error::take().unwrap_or_default();
    assert!(
        reason.starts_with("__tgt_rtl_load_binary_flags: ")
            && reason.contains("unknown load flags"),
        "{reason}"
    );
    get_device_info_follows_its_contract(table.get_device_info.expect("exported"));
    assert_eq!(__tgt_rtl_deinit_plugin(), OFFLOAD_SUCCESS);
}

/// `__tgt_rtl_get_device_info`'s contract (in the test above: the
/// expansion's plugin state is one static, which parallel tests would share).
fn get_device_info_follows_its_contract(get: omptarget_abi::plugin::GetDeviceInfoFn) {
    let query = |device: i32, key: i32, cap: usize| {
        let mut buf = [0u8; 16];
        let mut size = usize::MAX;
        // SAFETY: `buf` is writable for 16 >= `cap` bytes, `size` writable.
        let code = unsafe { get(device, key, buf.as_mut_ptr().cast(), cap, &mut size) };
        (code, size, buf)
    };
    // A text that fits is written, without a NUL; its size either way.
    let (code, size, buf) = query(0, DeviceInfoKey::Name as i32, 16);
    assert_eq!((code, size), (OFFLOAD_SUCCESS, 5));
    assert_eq!(&buf[..6], b"inert\0");
    let (code, size, buf) = query(0, DeviceInfoKey::Name as i32, 4);
    assert_eq!(
        (code, size, buf[0]),
        (OFFLOAD_SUCCESS, 5, 0),
        "too small: untouched"
    );
    // A number is 8 native-endian bytes.
    let (code, size, buf) = query(0, DeviceInfoKey::MaxTeams as i32, 8);
    assert_eq!((code, size), (OFFLOAD_SUCCESS, 8));
    assert_eq!(u64::from_ne_bytes(buf[..8].try_into().unwrap()), 7);
    // Not known, and a key newer than the plugin: size 0, no failure.
    assert_eq!(
        query(0, DeviceInfoKey::FreeMemory as i32, 8).0,
        OFFLOAD_SUCCESS
    );
    assert_eq!(query(0, DeviceInfoKey::FreeMemory as i32, 8).1, 0);
    assert_eq!(query(0, 999, 8).1, 0);
    // A size query: null value, no room.
    let mut size = 0;
    // SAFETY: a null value with cap 0 is allowed; `size` is writable.
    let code = unsafe {
        get(
            0,
            DeviceInfoKey::Name as i32,
            std::ptr::null_mut(),
            0,
            &mut size,
        )
    };
    assert_eq!((code, size), (OFFLOAD_SUCCESS, 5));
    // Failures: a device out of range, the wrong shape, null pointers.
    assert_eq!(query(1, DeviceInfoKey::Name as i32, 16).0, OFFLOAD_FAIL);
    assert_eq!(
        query(0, DeviceInfoKey::TotalMemory as i32, 16).0,
        OFFLOAD_FAIL
    );
    // SAFETY: null pointers, which the entry refuses without using them.
    unsafe {
        assert_eq!(get(0, 1, std::ptr::null_mut(), 8, &mut size), OFFLOAD_FAIL);
        let mut buf = [0u8; 8];
        assert_eq!(
            get(0, 1, buf.as_mut_ptr().cast(), 8, std::ptr::null_mut()),
            OFFLOAD_FAIL
        );
    }
}

/// What a built-in instance says it has is what the C entries export, so a
/// runtime sees the same plugin either way.
#[test]
fn a_native_instance_exports_what_the_c_entries_do() {
    use omptarget_abi::plugin::{OptionalEntry, PluginCalls};
    let table = crate::__entry_table!();
    for entry in OptionalEntry::ALL {
        assert_eq!(
            table.exports(entry),
            crate::builtin::kit_exports(entry),
            "{entry:?}"
        );
    }
}

crate::builtin_instances!(mod inert_instances, Inert, [first, second, third]);

/// The size for which `Inert::data_alloc` panics.
const PANICKING_SIZE: usize = 13;

/// A built-in instance is called natively (no C entry in between), has its
/// own state, and reports failures as the C entries do (code and message).
#[test]
fn a_builtin_instance_is_native_and_has_its_own_state() {
    let (a, b) = (
        inert_instances::instance(0).expect("instance 0"),
        inert_instances::instance(1).expect("instance 1"),
    );
    assert!(inert_instances::instance(3).is_none());
    assert_eq!(inert_instances::COUNT, 3);
    assert_ne!(a.key, b.key);
    assert!(a.calls.is_native());
    // SAFETY: the instance's code is this test binary's; every argument
    // is a plain value or a writable local.
    unsafe {
        assert_eq!(a.calls.init_plugin(), Some(OFFLOAD_SUCCESS));
        assert_eq!(a.calls.number_of_devices(), 1);
        assert_eq!(a.calls.init_device(0), OFFLOAD_SUCCESS);
        // Out of range: a failure with the reason, as from the C entry.
        assert_eq!(a.calls.init_device(5), OFFLOAD_FAIL);
        let mut buf = [0u8; 256];
        let len = a
            .calls
            .last_error_message(buf.as_mut_ptr().cast(), buf.len())
            .expect("exported");
        let reason = String::from_utf8_lossy(&buf[..len.min(buf.len())]).into_owned();
        assert!(reason.contains("init_device"), "{reason}");
        assert_eq!(a.calls.deinit_plugin(), Some(OFFLOAD_SUCCESS));
        // The other instance was never initialised: its deinit fails.
        assert_ne!(b.calls.deinit_plugin(), Some(OFFLOAD_SUCCESS));
    }
}

/// A built-in instance's one boundary in a launch is its caller's: a panic
/// in the backend's launch reaches the Rust caller. Any other entry still
/// catches it and fails, with the reason, as a C entry does: the runtime
/// calls plugins from `Drop` impls and its teardown, where a second panic
/// would abort the process.
#[test]
fn a_native_panic_fails_the_entry_except_in_a_launch() {
    let c = inert_instances::instance(2).expect("instance 2");
    // SAFETY: the instance's code is this test binary's; every argument is
    // a plain value, a null pointer the entry refuses or does not read, or
    // a writable local.
    unsafe {
        assert_eq!(c.calls.init_plugin(), Some(OFFLOAD_SUCCESS));
        assert_eq!(c.calls.init_device(0), OFFLOAD_SUCCESS);
        let block = c
            .calls
            .data_alloc(0, PANICKING_SIZE as i64, std::ptr::null_mut(), 0);
        assert!(block.is_null());
        let mut buf = [0u8; 256];
        let len = c
            .calls
            .last_error_message(buf.as_mut_ptr().cast(), buf.len())
            .expect("exported");
        let reason = String::from_utf8_lossy(&buf[..len.min(buf.len())]).into_owned();
        assert!(
            reason.contains("panic") && reason.contains("inert data_alloc panics"),
            "{reason}"
        );
        let entry = std::ptr::NonNull::<c_void>::dangling().as_ptr();
        let launched = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            c.calls
                .run_target_region(0, entry, std::ptr::null_mut(), std::ptr::null_mut(), 0)
        }));
        let payload = launched.expect_err("the launch's panic reaches its caller");
        let message = payload.downcast_ref::<&str>().copied().unwrap_or_default();
        assert_eq!(message, "inert run_region panics");
        assert_eq!(c.calls.deinit_plugin(), Some(OFFLOAD_SUCCESS));
    }
}

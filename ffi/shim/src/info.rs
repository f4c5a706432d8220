//! `__tgt_set_info_flag` and `__tgt_print_device_info`.

use crate::boundary::guard;
use crate::export::export_c;
use crate::lifecycle::with_session;

extern "C" fn __tgt_set_info_flag(flags: u32) {
    guard("__tgt_set_info_flag", (), || {
        with_session(|s| s.set_info_flag(flags));
    })
}

/// Returns true (1) if the device's plugin printed its information.
extern "C" fn __tgt_print_device_info(device_id: i64) -> i32 {
    guard("__tgt_print_device_info", 0, || {
        with_session(|s| s.print_device_info(device_id) as i32)
    })
}

export_c!(__tgt_set_info_flag, __tgt_print_device_info);

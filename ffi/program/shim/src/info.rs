//! `__tgt_set_info_flag` and `__tgt_print_device_info`; the levels they
//! set live in `info_level`.

use crate::boundary::guard;
use crate::export::export_c;
use crate::info_level;
use crate::session::lifecycle::with_session;

extern "C-unwind" fn __tgt_set_info_flag(flags: u32) {
    guard("__tgt_set_info_flag", (), || {
        info_level::set_info_level(flags);
        with_session(|s| s.set_info_flag(flags));
    })
}

/// Returns true (1) if the device's plugin printed its information.
extern "C-unwind" fn __tgt_print_device_info(device_id: i64) -> i32 {
    guard("__tgt_print_device_info", 0, || {
        with_session(|s| s.print_device_info(device_id) as i32)
    })
}

export_c!(__tgt_set_info_flag, __tgt_print_device_info);

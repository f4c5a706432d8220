//! Lay the plugin's code out hot first (../../../shared/link/text_order.rs). Its
//! list holds what a machine without a driver runs (probe, report no
//! device, unload): the plugin is loaded and dropped by every program
//! there, and its scattered code was ~0.4 MB of such a process's peak RSS.
include!("../../../shared/link/text_order.rs");

fn main() {
    link_in_text_order();
}

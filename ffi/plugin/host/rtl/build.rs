//! Lay the plugin's code out hot first (../../../shared/link/text_order.rs).
include!("../../../shared/link/text_order.rs");

fn main() {
    link_in_text_order();
}

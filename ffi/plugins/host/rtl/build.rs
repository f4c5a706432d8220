//! Lay the plugin's code out hot first (../../../link/text_order.rs).
include!("../../../link/text_order.rs");

fn main() {
    link_in_text_order();
}

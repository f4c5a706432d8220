//! Threads: concurrent enter/exit data keeps counts consistent.

use super::*;

#[test]
fn concurrent_enter_exit_keeps_counts_consistent() {
    let (w, _bin) = one_kernel_world(1);
    let mut a = vec![1u8; 256];
    let addr = a.as_mut_ptr() as usize;
    std::thread::scope(|scope| {
        for _ in 0..8 {
            let w = &w;
            scope.spawn(move || {
                let off = w.off();
                for _ in 0..200 {
                    let mut args = Args::default();
                    args.map(addr as *mut u8, 256, mt::TO | mt::FROM);
                    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map
                    // live host data of this test, as their map types say.
                    unsafe { off.target_data_begin(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
                    // SAFETY: `loc` is null; `args`'s arrays stay in place for the call and map
                    // live host data of this test, as their map types say.
                    unsafe { off.target_data_end(Loc::UNKNOWN, 0, &args.view()) }.unwrap();
                }
            });
        }
    });
    let dev = w.platform.dev(0, 0);
    assert!(dev.table.is_empty());
    assert_eq!(dev.live_buffers(), 0);
    assert_eq!(a[0], 1);
    assert_eq!(w.stderr(), "");
}

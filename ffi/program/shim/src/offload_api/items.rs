//! The items of a launch on a host device of this process, and what their
//! kernel asks of them.
//!
//! A GPU kernel (clang's `gpuintrin.h`) asks which group and which item
//! of its group it runs as, and waits for the other items of its group at
//! `__gpu_sync_threads`. A kernel built for a host device with this
//! project's `gpuintrin.h` (`ffi/program/shim/include/host-device`) asks
//! the same through a table of functions, [`HostGpu`], whose address the
//! program's exported variable `__omptarget_host_gpu` receives when the
//! program is loaded on a host device of this process ([`install`]).
//!
//! A launch of G groups of T items runs its groups one after the other,
//! and the T items of a group at once, each on a thread of its own (a
//! barrier needs every item of the group running): T threads are started
//! for the launch, and each runs its item of every group in turn, meeting
//! the others at the end of each group, so the variables a kernel keeps
//! as its group's memory (`__gpu_local`, ordinary globals on a host) are
//! one group's at a time. A launch of one item per group runs on the
//! calling thread. If an item fails (its plugin refuses the call), its
//! group's barrier is broken, so no item waits for it forever: the others
//! run on unsynchronised and the launch reports the failure.
//!
//! The ids live in a thread-local value without a destructor; outside a
//! launch (in a constructor run at load, say) a kernel is item 0 of one
//! group of one item.

use crate::boundary::guard;
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::{Condvar, Mutex, MutexGuard};

/// The most items of one group a host device runs: a thread each.
pub(crate) const MAX_GROUP_ITEMS: u32 = 1024;

/// The name of the variable a host kernel's program exports to receive
/// [`HOST_GPU`]'s address (`gpuintrin.h` for host devices defines it).
pub(crate) const TABLE_SYMBOL: &str = "__omptarget_host_gpu";

/// What a host kernel asks of its launch (`struct __omptarget_host_gpu` of
/// `gpuintrin.h` for host devices; a new member goes last, with a new
/// version).
#[repr(C)]
pub(crate) struct HostGpu {
    version: u32,
    num_blocks: extern "C" fn(c_int) -> u32,
    block_id: extern "C" fn(c_int) -> u32,
    num_threads: extern "C" fn(c_int) -> u32,
    thread_id: extern "C" fn(c_int) -> u32,
    sync_threads: extern "C" fn(),
}

/// The table every host program of this process is given.
pub(crate) static HOST_GPU: HostGpu = HostGpu {
    version: 1,
    num_blocks,
    block_id,
    num_threads,
    thread_id,
    sync_threads,
};

/// Give the program loaded at this process's addresses the table: write
/// [`HOST_GPU`]'s address into its `__omptarget_host_gpu` variable at
/// `addr`, of `size` bytes. A variable of another size is left alone (not
/// the table), and so is an address the dynamic loader does not know as
/// that symbol of an object of this process: a device taken for a local
/// one (its plugin failed to say where it is) must not have its address
/// written here.
///
/// # Safety
/// `addr` is the device address of the program's exported variable named
/// [`TABLE_SYMBOL`], and nothing reads it meanwhile (the program has just
/// been loaded, no launch of it has begun).
pub(crate) unsafe fn install(addr: usize, size: usize) -> bool {
    if size != std::mem::size_of::<*const HostGpu>() || addr == 0 {
        return false;
    }
    // SAFETY: all zeros is a `Dl_info` (null pointers, no names).
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: `dladdr` reads no memory at `addr`: it looks the address up
    // among the loaded objects and writes `info`.
    let found = unsafe { libc::dladdr(addr as *const libc::c_void, &mut info) } != 0;
    let known = found && !info.dli_sname.is_null() && info.dli_saddr as usize == addr && {
        // SAFETY: a NUL-terminated name the dynamic loader keeps.
        unsafe { std::ffi::CStr::from_ptr(info.dli_sname) }.to_bytes() == TABLE_SYMBOL.as_bytes()
    };
    if !known {
        return false;
    }
    // SAFETY: a writable variable of a pointer's size (our contract); the
    // object need not align it.
    unsafe { (addr as *mut *const HostGpu).write_unaligned(&HOST_GPU) };
    true
}

/// The group and item a thread runs as.
#[derive(Clone, Copy)]
struct Item {
    groups: [u32; 3],
    group: [u32; 3],
    items: [u32; 3],
    item: [u32; 3],
    /// Its group's barrier, alive while the item runs; null for a launch
    /// of one item per group.
    barrier: *const GroupBarrier,
}

/// Item 0 of one group of one item: a kernel outside a launch, and one
/// launched alone.
const SINGLE: Item = Item {
    groups: [1; 3],
    group: [0; 3],
    items: [1; 3],
    item: [0; 3],
    barrier: std::ptr::null(),
};

thread_local! {
    /// `Item` is `Copy`: no destructor is registered for this.
    static ITEM: Cell<Item> = const { Cell::new(SINGLE) };
}

/// `values[dim]`, or `outside` for a dimension that is not 0, 1 or 2.
fn of(values: [u32; 3], dim: c_int, outside: u32) -> u32 {
    usize::try_from(dim)
        .ok()
        .and_then(|d| values.get(d).copied())
        .unwrap_or(outside)
}

extern "C" fn num_blocks(dim: c_int) -> u32 {
    guard("__gpu_num_blocks", 1, || of(ITEM.get().groups, dim, 1))
}

extern "C" fn block_id(dim: c_int) -> u32 {
    guard("__gpu_block_id", 0, || of(ITEM.get().group, dim, 0))
}

extern "C" fn num_threads(dim: c_int) -> u32 {
    guard("__gpu_num_threads", 1, || of(ITEM.get().items, dim, 1))
}

extern "C" fn thread_id(dim: c_int) -> u32 {
    guard("__gpu_thread_id", 0, || of(ITEM.get().item, dim, 0))
}

extern "C" fn sync_threads() {
    guard("__gpu_sync_threads", (), || {
        let barrier = ITEM.get().barrier;
        if !barrier.is_null() {
            // SAFETY: set by `run_items` for the item this thread runs,
            // whose scope holds the barrier until the item returns.
            unsafe { &*barrier }.sync();
        }
    })
}

/// The barrier of a group's items, as a GPU's works: `__gpu_sync_threads`
/// waits for every item of the group still running its kernel (one that
/// has returned holds no one back), and the next group starts when every
/// item of this one has returned. A failed item breaks it, so that no
/// other item waits for it forever.
struct GroupBarrier {
    items: u64,
    state: Mutex<BarrierState>,
    turned: Condvar,
}

struct BarrierState {
    /// The group running now (0, 1, ...).
    group: u64,
    /// Its items whose kernel has not returned yet.
    running: u64,
    /// Of those, how many wait at `__gpu_sync_threads`.
    waiting: u64,
    /// Turned each time those waiting are let go.
    generation: u64,
    broken: bool,
}

impl GroupBarrier {
    fn new(items: u64) -> GroupBarrier {
        GroupBarrier {
            items,
            state: Mutex::new(BarrierState {
                group: 0,
                running: items,
                waiting: 0,
                generation: 0,
                broken: false,
            }),
            turned: Condvar::new(),
        }
    }

    /// Nothing panics while the lock is held: a poisoned lock is taken as
    /// it is.
    fn lock(&self) -> MutexGuard<'_, BarrierState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn wait_on<'a>(&self, state: MutexGuard<'a, BarrierState>) -> MutexGuard<'a, BarrierState> {
        self.turned.wait(state).unwrap_or_else(|p| p.into_inner())
    }

    /// Let go of those waiting at `__gpu_sync_threads` if they are all the
    /// group's running items.
    fn release_if_all_wait(&self, state: &mut BarrierState) {
        if state.waiting > 0 && state.waiting == state.running {
            state.waiting = 0;
            state.generation += 1;
            self.turned.notify_all();
        }
    }

    /// `__gpu_sync_threads`: wait until every running item of the group
    /// has come (or the barrier is broken).
    fn sync(&self) {
        let mut state = self.lock();
        if state.broken {
            return;
        }
        state.waiting += 1;
        let generation = state.generation;
        self.release_if_all_wait(&mut state);
        while state.generation == generation && !state.broken {
            state = self.wait_on(state);
        }
    }

    /// An item's kernel has returned for `group`: wait until every item of
    /// the group has, so that the next group starts together (or the
    /// barrier is broken); true if the launch goes on.
    fn finish(&self, group: u64) -> bool {
        let mut state = self.lock();
        state.running -= 1;
        if state.running == 0 {
            state.group += 1;
            state.running = self.items;
            state.waiting = 0;
            self.turned.notify_all();
        } else {
            // Those waiting at a barrier need not wait for this one.
            self.release_if_all_wait(&mut state);
        }
        while state.group == group && !state.broken {
            state = self.wait_on(state);
        }
        !state.broken
    }

    fn break_it(&self) {
        self.lock().broken = true;
        self.turned.notify_all();
    }
}

/// Why a launch's items did not all run.
pub(crate) enum ItemsFailed<E> {
    /// An item's run failed (the first failure).
    Item(E),
    /// Not every item's thread could be started; no item ran.
    Threads(std::io::Error),
    /// An item's run panicked (a bug of ours): the launch stopped.
    Panicked,
}

/// The coordinates of the `n`th of `shape` (x fastest).
fn coordinates(n: u64, shape: [u32; 3]) -> [u32; 3] {
    let [x, y, _] = shape.map(u64::from);
    // Each is below its dimension, which is a u32.
    [n % x, (n / x) % y, n / (x * y)].map(|c| c as u32)
}

/// The product of `shape`'s dimensions, `u64::MAX` if it is more.
pub(crate) fn count(shape: [u32; 3]) -> u64 {
    shape
        .iter()
        .fold(1u64, |all, &n| all.saturating_mul(u64::from(n)))
}

/// The stack of an item's thread: the process's stack limit (8 MiB
/// usually), as the calling thread, which runs a launch of one item, has;
/// 8 MiB where there is no limit.
fn item_stack() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: writes `limit`, which it may.
    let got = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } == 0;
    match usize::try_from(limit.rlim_cur) {
        Ok(bytes) if got && limit.rlim_cur != libc::RLIM_INFINITY && bytes >= 1 << 16 => bytes,
        _ => 8 << 20,
    }
}

/// Run `run` once per item of a launch of `groups` groups of `items`
/// items (the module's comment), each run seeing its ids; every dimension
/// is at least 1, `items` at most [`MAX_GROUP_ITEMS`] in all and the
/// launch at most `u32::MAX` items (the caller's checks).
pub(crate) fn run_items<E: Send>(
    groups: [u32; 3],
    items: [u32; 3],
    run: &(dyn Fn() -> Result<(), E> + Sync),
) -> Result<(), ItemsFailed<E>> {
    let group_count = count(groups);
    let item_count = count(items);
    let outer = ITEM.get();
    let as_item = |group: u64, item: u64, barrier: *const GroupBarrier| Item {
        groups,
        group: coordinates(group, groups),
        items,
        item: coordinates(item, items),
        barrier,
    };
    if item_count == 1 {
        let mut ran = Ok(());
        for group in 0..group_count {
            ITEM.set(as_item(group, 0, std::ptr::null()));
            ran = run().map_err(ItemsFailed::Item);
            if ran.is_err() {
                break;
            }
        }
        ITEM.set(outer);
        return ran;
    }
    let barrier = GroupBarrier::new(item_count);
    let start: (Mutex<Option<bool>>, Condvar) = (Mutex::new(None), Condvar::new());
    let failure: Mutex<Option<ItemsFailed<E>>> = Mutex::new(None);
    let fail = |why: ItemsFailed<E>| {
        failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(why);
        barrier.break_it();
    };
    let item_thread = |item: u64| {
        let (decided, told) = &start;
        let mut go = decided.lock().unwrap_or_else(|p| p.into_inner());
        while go.is_none() {
            go = told.wait(go).unwrap_or_else(|p| p.into_inner());
        }
        if *go != Some(true) {
            return;
        }
        drop(go);
        for group in 0..group_count {
            ITEM.set(as_item(group, item, &barrier));
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => fail(ItemsFailed::Item(e)),
                Err(_) => fail(ItemsFailed::Panicked),
            }
            if !barrier.finish(group) {
                break;
            }
        }
        // Nothing of the launch stays in the thread once it is joined.
        ITEM.set(SINGLE);
    };
    let started = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        let mut started = Ok(());
        for item in 0..item_count {
            let spawned = std::thread::Builder::new()
                .name("omptarget-item".into())
                .stack_size(item_stack())
                .spawn_scoped(scope, move || item_thread(item));
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(e) => {
                    started = Err(e);
                    break;
                }
            }
        }
        let (decided, told) = &start;
        *decided.lock().unwrap_or_else(|p| p.into_inner()) = Some(started.is_ok());
        told.notify_all();
        // Joined one by one: each thread has ended, not only its closure.
        for handle in handles {
            if handle.join().is_err() {
                fail(ItemsFailed::Panicked);
            }
        }
        started
    });
    started.map_err(ItemsFailed::Threads)?;
    match failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(failed) => Err(failed),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};

    #[test]
    fn coordinates_run_x_fastest() {
        assert_eq!(coordinates(0, [4, 2, 3]), [0, 0, 0]);
        assert_eq!(coordinates(5, [4, 2, 3]), [1, 1, 0]);
        assert_eq!(coordinates(23, [4, 2, 3]), [3, 1, 2]);
    }

    #[test]
    fn each_item_of_each_group_runs_once_with_its_ids() {
        let seen: Vec<AtomicU32> = (0..2 * 3 * 8).map(|_| AtomicU32::new(0)).collect();
        run_items::<()>([2, 3, 1], [4, 2, 1], &|| {
            let group = block_id(0) + 2 * block_id(1);
            let item = thread_id(0) + 4 * thread_id(1);
            assert_eq!((num_blocks(0), num_blocks(1), num_threads(0)), (2, 3, 4));
            seen[(group * 8 + item) as usize].fetch_add(1, SeqCst);
            Ok(())
        })
        .unwrap_or_else(|_| panic!("the launch failed"));
        assert!(seen.iter().all(|n| n.load(SeqCst) == 1));
        // Outside the launch, the thread is one item again.
        assert_eq!((num_threads(0), thread_id(0)), (1, 0));
    }

    #[test]
    fn a_barrier_holds_every_item_of_a_group() {
        let group_sum = AtomicU32::new(0);
        let wrong = AtomicU32::new(0);
        run_items::<()>([3, 1, 1], [16, 1, 1], &|| {
            group_sum.fetch_add(1, SeqCst);
            sync_threads();
            // Every item of this group has added, none of the next has.
            if group_sum.load(SeqCst) != 16 * (block_id(0) + 1) {
                wrong.fetch_add(1, SeqCst);
            }
            Ok(())
        })
        .unwrap_or_else(|_| panic!("the launch failed"));
        assert_eq!(wrong.load(SeqCst), 0);
    }

    #[test]
    fn an_item_that_returned_holds_no_barrier_back() {
        // Items 12..16 return at once, as `if (tid >= n) return;` does;
        // the others meet twice, and no group overlaps the next.
        let in_group = AtomicU32::new(0);
        let overlaps = AtomicU32::new(0);
        run_items::<()>([4, 1, 1], [16, 1, 1], &|| {
            if thread_id(0) >= 12 {
                return Ok(());
            }
            if in_group.fetch_add(1, SeqCst) >= 12 {
                overlaps.fetch_add(1, SeqCst);
            }
            sync_threads();
            sync_threads();
            in_group.fetch_sub(1, SeqCst);
            Ok(())
        })
        .unwrap_or_else(|_| panic!("the launch failed"));
        assert_eq!(overlaps.load(SeqCst), 0);
    }

    #[test]
    fn a_failed_item_breaks_its_group_and_is_reported() {
        let ran = run_items([2, 1, 1], [8, 1, 1], &|| {
            if thread_id(0) == 3 {
                return Err("item 3");
            }
            // Would wait for item 3 forever if the barrier held.
            sync_threads();
            Ok(())
        });
        assert!(matches!(ran, Err(ItemsFailed::Item("item 3"))));
    }
}

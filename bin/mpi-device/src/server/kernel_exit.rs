//! A kernel that calls `exit()`.
//!
//! On a local device, `exit(status)` in a kernel ends the program with that
//! status. On a remote device it runs in this server's process, whose
//! exit would take the device away from the program and, under `mpirun`,
//! end the whole job with the server's status. Instead the server takes
//! the exit over: an `on_exit` handler, armed only while a `Run` request's
//! kernel runs, answers that request with the kernel's status
//! ([`protocol::KERNEL_EXIT`]), then answers every later request with an
//! error (acknowledging each program rank's `Exit`), finalises MPI and
//! ends the process with status 0 (`_exit`: the exit in progress already
//! ran the handlers registered after this one, and will not come back).
//! The program's plugin, given the status, closes the servers and exits
//! with it, as it would have locally. The errors say so
//! ([`protocol::exiting_reply`]: the status and the kernel's program
//! rank): that rank's other threads, whose calls this server refuses
//! meanwhile, wait for its exit instead of failing (an offload failure
//! aborts the program).
//!
//! The runtime is not torn down: the kernel is still on the stack of the
//! thread that called `exit`, and the process is going away.
//!
//! The handler's state is plain statics with no destructor (the server
//! has no global destructors either): what it needs of the running
//! server, set by [`arm`] before the kernel runs and cleared after.
use super::data::send_reply;
use crate::error::ServeError;
use omptarget_mpi_wire::protocol::{
    self, Exited, Op, Reply, Request, REPLY_SLOT, REQUEST_SLOT, REQUEST_TAG,
};
use omptarget_mpi_wire::world::World;
use std::collections::BTreeSet;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};

static ARMED: AtomicBool = AtomicBool::new(false);
static WORLD: AtomicPtr<World> = AtomicPtr::new(std::ptr::null_mut());
static CLIENT: AtomicI32 = AtomicI32::new(-1);
static TAG: AtomicI32 = AtomicI32::new(-1);
/// The server's set of program ranks that have not said `Exit`.
static CLIENTS: AtomicPtr<BTreeSet<i32>> = AtomicPtr::new(std::ptr::null_mut());

extern "C" {
    /// glibc's `on_exit`: like `atexit`, and the handler gets the status.
    fn on_exit(handler: extern "C" fn(c_int, *mut c_void), arg: *mut c_void) -> c_int;
}

/// Register the handler: after MPI is initialised (its handlers, if any,
/// then run after this one) and before any image is loaded.
pub fn install() -> Result<(), ServeError> {
    // SAFETY: registers a handler with no argument; it does nothing
    // unless armed.
    if unsafe { on_exit(handle_exit, std::ptr::null_mut()) } != 0 {
        return Err(ServeError::OnExit);
    }
    Ok(())
}

/// Armed while a kernel of `client`'s request (reply tag `tag`) runs;
/// disarmed when dropped.
pub struct Armed(());

/// Arm the handler for a kernel about to run (per launch: a few atomic
/// stores, nothing allocated). `world` and `clients` must stay where they
/// are, unchanged, until the returned guard is dropped: they are the
/// server's, which is inside the launch meanwhile.
pub fn arm(world: &World, client: i32, tag: i32, clients: &BTreeSet<i32>) -> Armed {
    // The fields first, published by the release store of `ARMED` (the
    // handler reads them after its acquiring swap): plain stores on x86,
    // where sequentially consistent ones would each be a full barrier.
    CLIENTS.store(std::ptr::from_ref(clients).cast_mut(), Ordering::Relaxed);
    WORLD.store(std::ptr::from_ref(world).cast_mut(), Ordering::Relaxed);
    CLIENT.store(client, Ordering::Relaxed);
    TAG.store(tag, Ordering::Relaxed);
    ARMED.store(true, Ordering::Release);
    Armed(())
}

impl Drop for Armed {
    fn drop(&mut self) {
        // The fields are left as they are: read only while armed, and
        // written again by the next `arm` before it arms.
        ARMED.store(false, Ordering::Release);
    }
}

extern "C" fn handle_exit(status: c_int, _arg: *mut c_void) {
    // Never unwind into libc's exit.
    let _ = std::panic::catch_unwind(|| {
        if !ARMED.swap(false, Ordering::AcqRel) {
            return; // the server's own exit
        }
        let world = WORLD.load(Ordering::Relaxed);
        if world.is_null() {
            return;
        }
        // SAFETY: armed: `arm`'s caller keeps the world in place while the
        // kernel runs, and the kernel is still running (it called exit).
        let world = unsafe { &*world };
        serve_out(world, status);
        // Spawned: the program rank and the sibling servers disconnect
        // from this one, collectively, as they leave.
        if let Err(err) = world.detach() {
            super::say(&format!("omptarget-mpi-device rank {}: {err}", world.rank));
        }
        world.finalize_before_exit();
    });
    // SAFETY: ends the process at once; the exit in progress never returns
    // to the kernel, and the handlers left to run are those registered
    // before this one (none of ours).
    unsafe { libc::_exit(0) }
}

/// Answer the kernel's request with its status, then every later request
/// with an error, until every program rank has said `Exit` (or died).
fn serve_out(world: &World, status: c_int) {
    let rank = world.rank;
    let client = CLIENT.load(Ordering::Relaxed);
    let tag = TAG.load(Ordering::Relaxed);
    eprintln!(
        "omptarget-mpi-device rank {rank}: a kernel called exit({status}) for program rank {client}; the server exits, its runtime left to the OS"
    );
    let _ = send_reply(
        world,
        client,
        tag,
        REPLY_SLOT,
        &protocol::kernel_exit_reply(status),
    );
    let clients = CLIENTS.load(Ordering::Relaxed);
    let mut left: Vec<i32> = if clients.is_null() {
        vec![client]
    } else {
        // SAFETY: armed: the server's set, unchanged while its launch runs
        // (the kernel that called exit is that launch).
        unsafe { &*clients }.iter().copied().collect()
    };
    let why = format!("device server rank {rank} is exiting: a kernel called exit({status})");
    let refusal = protocol::exiting_reply(&why, status, client);
    while !left.is_empty() {
        // As the server's own loop: the receive ends only once no rank is
        // left alive, so that one's death costs no other its request.
        let someone_died = std::cell::Cell::new(false);
        let watch = || {
            let mut deaths = left.iter().filter_map(|&r| world.death_of(r));
            let first = deaths.next()?;
            someone_died.set(true);
            (1 + deaths.count() == left.len()).then_some(first)
        };
        let received = world
            .post(world.any_source(), REQUEST_TAG, Vec::new(), REQUEST_SLOT)
            .and_then(|posted| world.receive_message(posted, &watch, protocol::reply_tag_of));
        if someone_died.get() {
            left.retain(|&r| world.death_of(r).is_none());
        }
        let Ok((client, message)) = received else {
            // Every rank left is dead, or MPI failed: nobody to answer.
            if someone_died.get() {
                continue;
            }
            return;
        };
        let Ok(request) = Request::decode(&message) else {
            // Answered, if it says where: its client waits for a reply.
            if let Some(tag) = protocol::reply_tag_of(&message) {
                let _ = send_reply(world, client, tag, REPLY_SLOT, &refusal);
            }
            continue;
        };
        let tag = request.reply_tag;
        let slot = protocol::reply_slot(&request.op);
        let reply = match request.op {
            Op::SubmitInline { .. } => continue,
            Op::Submit { size, .. } => {
                // Its data follows: taken, so that MPI's order holds.
                // The error keeps `sink` if MPI may still write into it.
                let _ = world.recv_into(client, tag, vec![0u8; size as usize]);
                refusal.clone()
            }
            // A copy between two servers involves the other one, which
            // waits in its send or its receive until this one takes or
            // sends the bytes: it gets them (zeros, as a failed send gives
            // it), so that it serves on, and the client gets the refusal.
            Op::ExchangeIn {
                size,
                peer,
                tag: data_tag,
                ..
            } => {
                let _ = world.recv_into(peer, data_tag, vec![0u8; size as usize]);
                refusal.clone()
            }
            Op::ExchangeOut {
                size,
                peer,
                tag: data_tag,
                ..
            } => {
                let _ = world.send(peer, data_tag, &vec![0u8; size as usize]);
                refusal.clone()
            }
            Op::Exit => {
                left.retain(|&r| r != client);
                Reply::Ok(Exited {
                    summary: format!("rank {rank}: a kernel called exit({status}); not torn down"),
                })
                .encode()
            }
            _ => refusal.clone(),
        };
        let _ = send_reply(world, client, tag, slot, &reply);
    }
}

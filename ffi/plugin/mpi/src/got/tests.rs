//! The GOT redirect's tests: real slots of this test binary.
use super::*;
use std::cell::RefCell;

thread_local! {
    /// The permissions of each read-only page `write_slot` opened,
    /// seen while it was open.
    static SEEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

pub(super) fn seen_while_writing(page: usize) {
    let perms = perms_of(page);
    SEEN.with(|seen| seen.borrow_mut().push(perms));
}

/// The permissions (`r--p`, `rw-p`, ...) of the mapping holding
/// `address`, from /proc/self/maps.
fn perms_of(address: usize) -> String {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (range, perms) = (fields.next().unwrap(), fields.next().unwrap());
        let (start, end) = range.split_once('-').unwrap();
        let start = usize::from_str_radix(start, 16).unwrap();
        let end = usize::from_str_radix(end, 16).unwrap();
        if (start..end).contains(&address) {
            return perms.to_owned();
        }
    }
    panic!("{address:#x} is not mapped");
}

/// The tests below redirect the same function of this process.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Not a pid: above the kernel's largest (2^22).
const MAGIC: libc::pid_t = 0x0123_4567;

extern "C" fn fake_getppid() -> libc::pid_t {
    MAGIC
}

fn only_this_program(path: &Path) -> bool {
    path != std::env::current_exe().unwrap()
}

fn redirect_getppid() -> Redirected {
    // SAFETY: `fake_getppid` has getppid's signature and is part of
    // this program.
    unsafe {
        redirect(
            "getppid",
            fake_getppid as *const () as usize,
            only_this_program,
        )
    }
    .unwrap()
}

/// The test program calls libc's `getppid` through its GOT; the
/// redirect sends the call to the replacement, and restore back.
#[test]
fn a_redirected_call_reaches_the_replacement_until_restored() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: getppid has no preconditions.
    let real = unsafe { libc::getppid() };
    assert_ne!(real, MAGIC);
    let redirected = redirect_getppid();
    assert!(!redirected.is_empty());
    let objects: Vec<_> = redirected.objects().collect();
    assert_eq!(objects, [std::env::current_exe().unwrap().as_path()]);
    // SAFETY: as above (now the replacement, which has none either).
    assert_eq!(unsafe { libc::getppid() }, MAGIC);
    redirected.restore().unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::getppid() }, real);
}

/// The test program is linked with full RELRO (`-z now`): its slot is
/// read-only before, writable while written, and read-only again.
#[test]
fn a_read_only_slot_is_writable_only_while_written() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    SEEN.with(|seen| seen.borrow_mut().clear());
    let redirected = redirect_getppid();
    let slot = &redirected.slots()[0];
    assert!(
        slot.read_only,
        "the test program's GOT slot is in its RELRO pages"
    );
    let address = slot.address();
    assert_eq!(perms_of(address), "r--p");
    let seen = SEEN.with(|seen| seen.take());
    assert!(
        !seen.is_empty() && seen.iter().all(|p| p == "rw-p"),
        "{seen:?}"
    );
    redirected.restore().unwrap();
    assert_eq!(perms_of(address), "r--p");
    let seen = SEEN.with(|seen| seen.take());
    assert!(
        !seen.is_empty() && seen.iter().all(|p| p == "rw-p"),
        "{seen:?}"
    );
}

/// Every loaded object of the test process is read and parsed; a name
/// none binds yields nothing to restore, not an error.
#[test]
fn a_name_no_object_binds_redirects_nothing() {
    // SAFETY: nothing is rewritten (no object binds the name).
    let redirected = unsafe {
        redirect(
            "omptarget_got_no_such_function",
            fake_getppid as *const () as usize,
            |_| false,
        )
    }
    .unwrap();
    assert_eq!(redirected.len(), 0);
    assert_eq!(redirected.objects().count(), 0);
    redirected.restore().unwrap();
}

/// Skipped objects are not rewritten.
#[test]
fn skipped_objects_keep_their_slots() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: as in `redirect_getppid`.
    let redirected =
        unsafe { redirect("getppid", fake_getppid as *const () as usize, |_| true) }.unwrap();
    assert!(redirected.is_empty());
    // SAFETY: getppid has no preconditions.
    assert_ne!(unsafe { libc::getppid() }, MAGIC);
}

/// Names match whole, without a version suffix.
#[test]
fn names_match_whole_without_their_version() {
    assert!(same_name(b"MPI_Init", b"MPI_Init"));
    assert!(same_name(b"MPI_Init@@OMPI_1.0", b"MPI_Init"));
    assert!(!same_name(b"MPI_Init_thread", b"MPI_Init"));
    assert!(!same_name(b"MPI_Ini", b"MPI_Init"));
}

/// A file that is not ELF is an error naming it, not a panic.
#[test]
fn a_malformed_file_is_a_parse_error() {
    let path = Path::new("/some/object.so");
    let err = bound_offsets(b"\x7fELF garbage", b"getppid", path).unwrap_err();
    assert!(
        matches!(&err, GotError::Parse { path: p, .. } if p == path),
        "{err:?}"
    );
    let err = bound_offsets(&[], b"getppid", path).unwrap_err();
    assert!(matches!(err, GotError::Parse { .. }), "{err:?}");
}

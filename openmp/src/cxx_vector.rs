//! The mapper handle as LLVM defines it: a libstdc++ `std::vector` of
//! LLVM's 40-byte `MapComponentInfoTy`.
//!
//! `__tgt_push_mapper_component` gets a handle; LLVM's runtime makes it a
//! `MapperComponentsTy`, whose only member is
//! `std::vector<MapComponentInfoTy>`, and C++ programs (LLVM's own mapper
//! API test among them) build one themselves, push through the runtime,
//! then read and destroy it with C++. So the handle here has libstdc++'s
//! vector layout (three pointers: start, finish, end of storage), grows as
//! libstdc++ grows (capacity `len + max(len, 1)`), and takes its storage
//! from the C++ runtime's `operator new` (nothrow) and gives it back with
//! `operator delete`, as the C++ side will when it destroys the vector:
//! valgrind sees no mismatched free.
//!
//! The C++ operators are looked up in the process (`dlsym`), once found
//! kept. A C program has no libstdc++ and never owns such a vector: the
//! runtime's own handles then use `malloc`/`free`. (A process that loads
//! libstdc++ while one of the runtime's handles is alive would free that
//! one with `operator delete`; clang's mappers never span a `dlopen`.)

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One component a mapper pushed: LLVM's `MapComponentInfoTy` (40 bytes,
/// this field order).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapComponent {
    /// Base pointer (the pointer or object the section belongs to).
    pub base: *mut c_void,
    /// Address of the section's first byte.
    pub begin: *mut c_void,
    /// Length of the section in bytes.
    pub size: i64,
    /// Map type (`OMP_TGT_MAPTYPE_*` bits).
    pub map_type: i64,
    /// The section's `map_var_info_t` (a `;name;file;line;col;;` string),
    /// or null.
    pub name: *mut c_void,
}

/// libstdc++'s `std::vector<MapComponentInfoTy>`: `_M_start`,
/// `_M_finish`, `_M_end_of_storage`.
#[repr(C)]
#[derive(Debug)]
pub struct CxxVector {
    start: *mut MapComponent,
    finish: *mut MapComponent,
    end_of_storage: *mut MapComponent,
}

const ELEMENT: usize = std::mem::size_of::<MapComponent>();
const _: () = assert!(ELEMENT == 40, "LLVM's MapComponentInfoTy is 40 bytes");
const _: () = assert!(std::mem::size_of::<CxxVector>() == 24);

type NothrowNew = unsafe extern "C" fn(usize, *const c_void) -> *mut c_void;
type Delete = unsafe extern "C" fn(*mut c_void);

/// `operator new(size_t, const std::nothrow_t &)`, `std::nothrow` and
/// `operator delete(void *)`, once all three were found (0: not yet).
static NEW: AtomicUsize = AtomicUsize::new(0);
static NOTHROW: AtomicUsize = AtomicUsize::new(0);
static DELETE: AtomicUsize = AtomicUsize::new(0);

/// The C++ runtime's allocation functions, if the process has them.
fn cxx_operators() -> Option<(NothrowNew, *const c_void, Delete)> {
    let mut new = NEW.load(Ordering::Acquire);
    if new == 0 {
        // SAFETY: dlsym with NUL-terminated names on the global scope.
        let (n, t, d) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"_ZnwmRKSt9nothrow_t".as_ptr()),
                libc::dlsym(libc::RTLD_DEFAULT, c"_ZSt7nothrow".as_ptr()),
                libc::dlsym(libc::RTLD_DEFAULT, c"_ZdlPv".as_ptr()),
            )
        };
        if n.is_null() || t.is_null() || d.is_null() {
            return None;
        }
        NOTHROW.store(t as usize, Ordering::Relaxed);
        DELETE.store(d as usize, Ordering::Relaxed);
        NEW.store(n as usize, Ordering::Release);
        new = n as usize;
    }
    // SAFETY: the addresses are those of the C++ runtime's functions with
    // these signatures (looked up by their mangled names above).
    unsafe {
        Some((
            std::mem::transmute::<usize, NothrowNew>(new),
            NOTHROW.load(Ordering::Relaxed) as *const c_void,
            std::mem::transmute::<usize, Delete>(DELETE.load(Ordering::Relaxed)),
        ))
    }
}

fn allocate(bytes: usize) -> *mut MapComponent {
    let block = match cxx_operators() {
        // SAFETY: the C++ runtime's nothrow `operator new` (null on failure).
        Some((new, nothrow, _)) => unsafe { new(bytes, nothrow) },
        // SAFETY: plain malloc.
        None => unsafe { libc::malloc(bytes) },
    };
    if block.is_null() {
        // A push has no way to fail; LLVM's would throw std::bad_alloc.
        eprintln!("omptarget-rs: out of memory growing a mapper's component list");
        std::process::abort();
    }
    block.cast()
}

/// # Safety
/// `block` came from [`allocate`] and is not used afterwards.
unsafe fn deallocate(block: *mut MapComponent) {
    match cxx_operators() {
        // SAFETY: our `# Safety`: a block of `operator new`.
        Some((_, _, delete)) => unsafe { delete(block.cast()) },
        // SAFETY: our `# Safety`: a block of malloc.
        None => unsafe { libc::free(block.cast()) },
    }
}

impl CxxVector {
    /// An empty vector (all three pointers null, as libstdc++'s).
    pub const fn new() -> Self {
        CxxVector {
            start: std::ptr::null_mut(),
            finish: std::ptr::null_mut(),
            end_of_storage: std::ptr::null_mut(),
        }
    }

    /// `size()`.
    pub fn len(&self) -> usize {
        (self.finish as usize - self.start as usize) / ELEMENT
    }

    /// `empty()`.
    pub fn is_empty(&self) -> bool {
        self.start == self.finish
    }

    /// The elements.
    pub fn as_slice(&self) -> &[MapComponent] {
        if self.is_empty() {
            return &[];
        }
        // SAFETY: `start..finish` holds `len()` initialised elements (this
        // type's invariant, also libstdc++'s).
        unsafe { std::slice::from_raw_parts(self.start, self.len()) }
    }

    /// `push_back`, growing as libstdc++'s `_M_realloc_insert` does.
    ///
    /// # Safety
    /// `self` is a vector libstdc++ or this type built (its storage from the
    /// C++ runtime's `operator new`, or `malloc` in a process without one),
    /// not used by another thread meanwhile.
    pub unsafe fn push(&mut self, component: MapComponent) {
        if self.finish == self.end_of_storage {
            let len = self.len();
            let capacity = len + len.max(1);
            let bytes = capacity.checked_mul(ELEMENT).expect("component list size");
            let grown = allocate(bytes);
            if len > 0 {
                // SAFETY: `len` elements from `start` into a new block of
                // `capacity >= len` elements; blocks are distinct.
                unsafe { std::ptr::copy_nonoverlapping(self.start, grown, len) };
            }
            if !self.start.is_null() {
                // SAFETY: the old storage (our `# Safety`: from the same
                // allocator), no longer referenced.
                unsafe { deallocate(self.start) };
            }
            self.start = grown;
            // SAFETY: both within (or one past) the new block.
            unsafe {
                self.finish = grown.add(len);
                self.end_of_storage = grown.add(capacity);
            }
        }
        // SAFETY: `finish < end_of_storage`: a slot of the block.
        unsafe {
            self.finish.write(component);
            self.finish = self.finish.add(1);
        }
    }

    /// Give the storage back (the vector's destructor).
    ///
    /// # Safety
    /// As [`CxxVector::push`]; the vector is empty afterwards.
    pub unsafe fn release(&mut self) {
        if !self.start.is_null() {
            // SAFETY: our `# Safety`: storage of the process's allocator.
            unsafe { deallocate(self.start) };
        }
        *self = CxxVector::new();
    }
}

impl Default for CxxVector {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component(i: usize) -> MapComponent {
        MapComponent {
            base: i as *mut c_void,
            begin: (i + 1) as *mut c_void,
            size: i as i64,
            map_type: 3,
            name: std::ptr::null_mut(),
        }
    }

    #[test]
    fn grows_by_doubling_like_libstdcxx_and_keeps_every_element() {
        let mut v = CxxVector::new();
        let mut capacities = Vec::new();
        for i in 0..9 {
            // SAFETY: a vector of this type, on this thread only.
            unsafe { v.push(component(i)) };
            capacities.push((v.end_of_storage as usize - v.start as usize) / ELEMENT);
        }
        assert_eq!(capacities, [1, 2, 4, 4, 8, 8, 8, 8, 16]);
        assert_eq!(v.len(), 9);
        assert!(v
            .as_slice()
            .iter()
            .enumerate()
            .all(|(i, c)| c.size == i as i64));
        // SAFETY: as above; nothing uses it afterwards.
        unsafe { v.release() };
        assert!(v.is_empty() && v.as_slice().is_empty());
    }
}

//! The map arguments of a `__tgt_target*` / `__tgt_target_data_*` call: six
//! parallel C arrays (base pointers, begin pointers, sizes, map types,
//! names, mappers), viewed without copying.

use omptarget::abi::map_type;
use std::cell::Cell;
use std::ffi::c_void;
use std::marker::PhantomData;

/// A user-defined mapper function as clang emits it:
/// `void mapper(void *rt_mapper_handle, void *base, void *begin,
/// int64_t size, int64_t type, void *name)`.
pub type MapperFn = unsafe extern "C" fn(
    handle: *mut c_void,
    base: *mut c_void,
    begin: *mut c_void,
    size: i64,
    map_type: i64,
    name: *mut c_void,
);

/// A view of the argument arrays of one call, valid for `'a`. `bases` is
/// written through for RETURN_PARAM arguments, as LLVM does (a shared
/// view of cells: copies of the view may all write).
///
/// The view carries the call's whole contract, established once where it
/// is made ([`MapArgs::from_raw`], at the C boundary): the arrays, and the
/// host memory each argument names. The OpenMP layer's functions that
/// take only a view (and a [`crate::Loc`]) are therefore safe.
#[derive(Debug, Clone, Copy)]
pub struct MapArgs<'a> {
    len: usize,
    bases: *mut *mut c_void,
    begins: *const *mut c_void,
    sizes: *const i64,
    types: *const i64,
    names: *const *mut c_void,
    mappers: *const *mut c_void,
    _valid: PhantomData<&'a [Cell<*mut c_void>]>,
}

impl<'a> MapArgs<'a> {
    /// No arguments.
    pub const fn empty() -> Self {
        MapArgs {
            len: 0,
            bases: std::ptr::null_mut(),
            begins: std::ptr::null(),
            sizes: std::ptr::null(),
            types: std::ptr::null(),
            names: std::ptr::null(),
            mappers: std::ptr::null(),
            _valid: PhantomData,
        }
    }

    /// View the arrays of a call with `count` arguments. A negative count
    /// is no arguments. `names` and `mappers` may be null. When `count > 0`
    /// and one of the four required arrays is null, there is nothing
    /// sensible to map: `None` (LLVM would crash).
    ///
    /// # Safety
    /// For `'a`:
    /// - each non-null array holds `count` elements and stays valid (and
    ///   `bases` writable, and not aliased by the other arrays);
    /// - each argument names host memory as its map type says, as clang's
    ///   generated call guarantees: `begin..begin+size` is host memory
    ///   (readable for `to`/first-private, writable for `from`), a
    ///   PTR_AND_OBJ or ATTACH base holds a pointer, a NON_CONTIG begin is
    ///   an array of `size` dimension descriptors naming host memory;
    /// - each non-null name is a NUL-terminated `map_var_info_t` string;
    /// - each non-null mapper is a compiler-emitted mapper function for its
    ///   argument, whose components name host memory as above.
    pub unsafe fn from_raw(
        count: i32,
        bases: *mut *mut c_void,
        begins: *mut *mut c_void,
        sizes: *const i64,
        types: *const i64,
        names: *const *mut c_void,
        mappers: *const *mut c_void,
    ) -> Option<Self> {
        let len = usize::try_from(count).unwrap_or(0);
        if len > 0 && (bases.is_null() || begins.is_null() || sizes.is_null() || types.is_null()) {
            return None;
        }
        Some(MapArgs {
            len,
            bases,
            begins,
            sizes,
            types,
            names,
            mappers,
            _valid: PhantomData,
        })
    }

    /// Number of arguments.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no arguments.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn check(&self, i: usize) {
        assert!(i < self.len, "map argument index {i} out of range");
    }

    /// Base pointer of argument `i`.
    pub fn base(&self, i: usize) -> *mut c_void {
        self.check(i);
        // SAFETY: from_raw's contract: `len` valid elements.
        unsafe { *self.bases.add(i) }
    }

    /// Overwrite the base pointer of argument `i` (RETURN_PARAM). Not
    /// public: the safe functions that take a `MapArgs` dereference bases
    /// (PTR_AND_OBJ, ATTACH) under `from_raw`'s contract, which a base
    /// rewritten by safe code outside this crate would break.
    pub(crate) fn set_base(&self, i: usize, value: *mut c_void) {
        self.check(i);
        // SAFETY: from_raw's contract: `bases` is writable.
        unsafe { *self.bases.add(i) = value }
    }

    /// Begin pointer of argument `i`.
    pub fn begin(&self, i: usize) -> *mut c_void {
        self.check(i);
        // SAFETY: from_raw's contract.
        unsafe { *self.begins.add(i) }
    }

    /// Size in bytes of argument `i`.
    pub fn size(&self, i: usize) -> i64 {
        self.check(i);
        // SAFETY: from_raw's contract.
        unsafe { *self.sizes.add(i) }
    }

    /// Map type of argument `i`.
    pub fn map_type(&self, i: usize) -> i64 {
        self.check(i);
        // SAFETY: from_raw's contract.
        unsafe { *self.types.add(i) }
    }

    /// `map_var_info_t` of argument `i`, or null.
    pub fn name(&self, i: usize) -> *mut c_void {
        self.check(i);
        if self.names.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: from_raw's contract.
        unsafe { *self.names.add(i) }
    }

    /// The user-defined mapper of argument `i`, if any.
    pub fn mapper(&self, i: usize) -> Option<MapperFn> {
        self.check(i);
        if self.mappers.is_null() {
            return None;
        }
        // SAFETY: from_raw's contract; a non-null entry is a mapper function
        // emitted by the compiler.
        unsafe {
            let raw = *self.mappers.add(i);
            if raw.is_null() {
                None
            } else {
                Some(std::mem::transmute::<*mut c_void, MapperFn>(raw))
            }
        }
    }
}

/// The parent index of a MEMBER_OF map type, as LLVM's `getParentIndex`
/// (-1 when not a member).
pub fn parent_index(map_type: i64) -> i64 {
    (((map_type as u64) & (map_type::MEMBER_OF as u64)) >> 48) as i64 - 1
}

/// Arrays owned by the runtime, for the components a mapper produced.
#[derive(Debug, Default)]
pub struct OwnedMapArgs {
    /// Base pointer of each component (the pointer or object its section
    /// belongs to).
    pub bases: Vec<*mut c_void>,
    /// Address of the first byte of each component's section.
    pub begins: Vec<*mut c_void>,
    /// Length of each component's section in bytes.
    pub sizes: Vec<i64>,
    /// Map type of each component (`OMP_TGT_MAPTYPE_*` bits).
    pub types: Vec<i64>,
    /// Each component's `map_var_info_t` (a `;name;file;line;col;;`
    /// string), or null.
    pub names: Vec<*mut c_void>,
}

impl OwnedMapArgs {
    /// A view of these arrays (no mappers), borrowing them.
    ///
    /// # Safety
    /// Each component names host memory as its map type says and each
    /// non-null name is NUL-terminated ([`MapArgs::from_raw`]'s contract
    /// for the arguments), for as long as the view is used.
    pub unsafe fn view(&mut self) -> MapArgs<'_> {
        MapArgs {
            len: self.types.len(),
            bases: self.bases.as_mut_ptr(),
            begins: self.begins.as_ptr(),
            sizes: self.sizes.as_ptr(),
            types: self.types.as_ptr(),
            names: self.names.as_ptr(),
            mappers: std::ptr::null(),
            _valid: PhantomData,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_index_decodes_member_of() {
        assert_eq!(parent_index(map_type::TO), -1);
        assert_eq!(parent_index((1i64 << 48) | map_type::TO), 0);
        assert_eq!(parent_index((3i64 << 48) | map_type::PTR_AND_OBJ), 2);
        assert_eq!(parent_index(map_type::MEMBER_OF), 0xfffe);
    }

    #[test]
    fn null_required_arrays_are_refused() {
        // SAFETY: null arrays hold no elements to read; `from_raw` checks
        // the required ones for null before using them and returns `None`.
        let r = unsafe {
            MapArgs::from_raw(
                1,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert!(r.is_none());
        // SAFETY: with a count of 0 no array is ever read.
        let empty = unsafe {
            MapArgs::from_raw(
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
            )
        }
        .unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn owned_view_reads_and_writes() {
        let mut owned = OwnedMapArgs::default();
        owned.bases.push(8 as *mut c_void);
        owned.begins.push(16 as *mut c_void);
        owned.sizes.push(4);
        owned.types.push(map_type::FROM);
        owned.names.push(std::ptr::null_mut());
        // SAFETY: the view is only read and written through, never used to
        // reach the (made-up) host addresses it holds.
        let v = unsafe { owned.view() };
        assert_eq!(v.len(), 1);
        assert_eq!(v.size(0), 4);
        assert!(v.mapper(0).is_none());
        v.set_base(0, 24 as *mut c_void);
        assert_eq!(owned.bases[0] as usize, 24);
    }
}

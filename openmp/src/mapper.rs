//! User-defined mappers: the runtime calls the compiler's mapper function
//! with a handle; the mapper calls back `__tgt_push_mapper_component` and
//! `__tgt_mapper_num_components` with that handle. The handle is a pointer
//! to a libstdc++ `std::vector` of LLVM's 40-byte component struct
//! (`cxx_vector`), as in LLVM, so that a C++ program can own one:
//! the runtime's own (a [`MapperComponents`]) lives on its stack for the call.

use super::args::{MapArgs, MapperFn, OwnedMapArgs};
use super::cxx_vector::{CxxVector, MapComponent};
use std::ffi::c_void;

/// The components of one mapper call (LLVM's `MapperComponentsTy`, whose
/// only member is the vector: a pointer to it is a pointer to the vector).
#[repr(C)]
#[derive(Debug, Default)]
pub struct MapperComponents {
    vec: CxxVector,
}

impl Drop for MapperComponents {
    fn drop(&mut self) {
        // SAFETY: the vector was built by this value's pushes only (the
        // handle lent to the mapper does not outlive `collect`).
        unsafe { self.vec.release() }
    }
}

impl MapperComponents {
    /// Run `mapper` for one argument and collect what it pushes.
    ///
    /// # Safety
    /// `mapper` is a compiler-emitted mapper function; the pointers are the
    /// argument's, passed through unchanged. The mapper may only use the
    /// handle through [`push_mapper_component`] and [`mapper_num_components`]
    /// during this call.
    pub unsafe fn collect(
        mapper: MapperFn,
        base: *mut c_void,
        begin: *mut c_void,
        size: i64,
        map_type: i64,
        name: *mut c_void,
    ) -> Self {
        let mut components = MapperComponents::default();
        let handle = &mut components as *mut MapperComponents as *mut c_void;
        // SAFETY: our `# Safety`: `mapper` is a compiler-emitted mapper
        // and the pointers are the argument's, unchanged; `handle` points to
        // the live local `components`, which the mapper only reaches through
        // `push_mapper_component`/`mapper_num_components` during this call.
        unsafe { mapper(handle, base, begin, size, map_type, name) };
        components
    }

    /// The components pushed, in push order.
    pub fn components(&self) -> &[MapComponent] {
        self.vec.as_slice()
    }

    /// The components as argument arrays for targetDataBegin/End/Update.
    pub fn to_args(&self) -> OwnedMapArgs {
        let mut args = OwnedMapArgs::default();
        for c in self.components() {
            args.bases.push(c.base);
            args.begins.push(c.begin);
            args.sizes.push(c.size);
            args.types.push(c.map_type);
            args.names.push(c.name);
        }
        args
    }
}

/// `__tgt_mapper_num_components(handle)`: how many components were pushed.
///
/// # Safety
/// `handle` is null or the handle the runtime passed to the running mapper.
pub unsafe fn mapper_num_components(handle: *mut c_void) -> i64 {
    // SAFETY: our `# Safety`: `handle` is null (`None`) or a mapper's
    // handle, a live vector not mutated meanwhile.
    match unsafe { (handle as *const CxxVector).as_ref() } {
        Some(components) => components.len() as i64,
        None => 0,
    }
}

/// `__tgt_push_mapper_component(handle, base, begin, size, type, name)`.
/// A null handle is ignored.
///
/// # Safety
/// `handle` is null or the handle the runtime passed to the running mapper,
/// not used concurrently from another thread.
pub unsafe fn push_mapper_component(
    handle: *mut c_void,
    base: *mut c_void,
    begin: *mut c_void,
    size: i64,
    map_type: i64,
    name: *mut c_void,
) {
    // SAFETY: our `# Safety`: `handle` is null (`None`) or a mapper's
    // handle, a live vector that no other thread uses, so this is the only
    // reference to it.
    if let Some(components) = unsafe { (handle as *mut CxxVector).as_mut() } {
        // SAFETY: as above; its storage is the C++ runtime's (or ours).
        unsafe {
            components.push(MapComponent {
                base,
                begin,
                size,
                map_type,
                name,
            })
        };
    }
}

/// Run the mapper of argument `i` of `args`, if it has one.
pub(crate) fn run_mapper(args: &MapArgs<'_>, i: usize) -> Option<MapperComponents> {
    let mapper = args.mapper(i)?;
    // SAFETY: `args`'s contract (`MapArgs::from_raw`): a non-null mapper is
    // the compiler-emitted mapper of its argument; the pointers are
    // argument `i`'s, unchanged (`collect`'s contract).
    Some(unsafe {
        MapperComponents::collect(
            mapper,
            args.base(i),
            args.begin(i),
            args.size(i),
            args.map_type(i),
            args.name(i),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "C" fn two_component_mapper(
        handle: *mut c_void,
        base: *mut c_void,
        begin: *mut c_void,
        size: i64,
        map_type: i64,
        name: *mut c_void,
    ) {
        // SAFETY: `collect` calls us with its live handle, used on this
        // thread only.
        let before = unsafe { mapper_num_components(handle) };
        // SAFETY: as above.
        unsafe { push_mapper_component(handle, base, begin, size, map_type, name) };
        // SAFETY: as above.
        unsafe {
            push_mapper_component(
                handle,
                begin,
                (begin as usize + 8) as *mut c_void,
                before + 4,
                map_type | 0x10,
                name,
            )
        };
    }

    #[test]
    fn mapper_pushes_components_through_the_handle() {
        // SAFETY: `two_component_mapper` only uses the handle through
        // `push_mapper_component`/`mapper_num_components` and never
        // dereferences the (fake) argument pointers.
        let c = unsafe {
            MapperComponents::collect(
                two_component_mapper,
                16 as *mut c_void,
                32 as *mut c_void,
                24,
                3,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(c.components().len(), 2);
        assert_eq!(c.components()[1].size, 4);
        assert_eq!(c.components()[1].map_type, 0x13);
        let mut owned = c.to_args();
        // SAFETY: the view is only read, never used to reach the (fake)
        // host addresses it holds.
        let view = unsafe { owned.view() };
        assert_eq!(view.len(), 2);
        assert_eq!(view.begin(1) as usize, 40);
        // SAFETY: a null handle is allowed by the contract.
        assert_eq!(unsafe { mapper_num_components(std::ptr::null_mut()) }, 0);
    }
}

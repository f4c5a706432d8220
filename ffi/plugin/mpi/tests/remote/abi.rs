//! The binding's view of each family's ABI, against its installed
//! `mpi.h` (compiled with its own `mpicc`: `mpicc.openmpi`,
//! `mpicc.mpich`).
use omptarget_plugin_mpi::mpi::{self, abi::Abi, Family, Mpich, OpenMpi};
use std::ffi::c_void;
use std::process::Command;

/// The family's `mpicc`.
fn mpicc(family: Family) -> &'static str {
    match family {
        Family::OpenMpi => "mpicc.openmpi",
        Family::Mpich => "mpicc.mpich",
    }
}

/// `main` of a C program printing what the test compares, built with the
/// family's `mpicc` and run; its output.
fn run_c(family: Family, body: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("abi.c");
    std::fs::write(
        &source,
        format!(
            "#include <mpi.h>\n#include <stddef.h>\n#include <stdio.h>\nint main(void) {{\n{body}\n  return 0;\n}}\n"
        ),
    )
    .unwrap();
    let exe = dir.path().join("abi");
    let built = Command::new(mpicc(family))
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "{} runs (apt-get install libopenmpi-dev libmpich-dev): {e}",
                mpicc(family)
            )
        });
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// The constants and handle sizes every family's header must agree with.
fn common_lines(family: Family, handle_size: usize) -> String {
    let c = family.constants();
    format!(
        "handles {handle_size} {handle_size} {handle_size} {handle_size}\nconstants {} {} {} {} {} {} {} {}\n",
        mpi::SUCCESS,
        mpi::THREAD_MULTIPLE,
        c.any_source,
        c.max_processor_name,
        c.max_error_string,
        c.keyval_invalid,
        c.tag_ub,
        c.err_other
    )
}

const COMMON_C: &str = r#"
  printf("handles %zu %zu %zu %zu\n", sizeof(MPI_Comm), sizeof(MPI_Datatype),
         sizeof(MPI_Request), sizeof(MPI_Errhandler));
  printf("constants %d %d %d %d %d %d %d %d\n", MPI_SUCCESS, MPI_THREAD_MULTIPLE, MPI_ANY_SOURCE,
         MPI_MAX_PROCESSOR_NAME, MPI_MAX_ERROR_STRING, MPI_KEYVAL_INVALID, MPI_TAG_UB, MPI_ERR_OTHER);
"#;

#[test]
fn open_mpi_constants_and_layouts_match_its_mpi_h() {
    let text = run_c(
        Family::OpenMpi,
        &format!(
            r#"{COMMON_C}
  printf("status %zu %zu %zu %zu %zu %zu\n", sizeof(MPI_Status), offsetof(MPI_Status, MPI_SOURCE),
         offsetof(MPI_Status, MPI_TAG), offsetof(MPI_Status, MPI_ERROR),
         offsetof(MPI_Status, _cancelled), offsetof(MPI_Status, _ucount));
  printf("world %d\n", (void *)MPI_COMM_WORLD == (void *)&ompi_mpi_comm_world);
  printf("request_null %d\n", (void *)MPI_REQUEST_NULL == (void *)&ompi_request_null);
  printf("info_null %d\n", (void *)MPI_INFO_NULL == (void *)&ompi_mpi_info_null);
"#
        ),
    );
    let ptr = std::mem::size_of::<*mut u8>();
    let expected = format!(
        "{}status {} 0 4 8 12 16\nworld 1\nrequest_null 1\ninfo_null 1\n",
        common_lines(Family::OpenMpi, ptr),
        std::mem::size_of::<<OpenMpi as Abi>::Status>(),
    );
    assert_eq!(text, expected);
}

#[test]
fn mpich_constants_handles_and_layouts_match_its_mpi_h() {
    let text = run_c(
        Family::Mpich,
        &format!(
            r#"{COMMON_C}
  printf("status %zu %zu %zu %zu %zu %zu\n", sizeof(MPI_Status), offsetof(MPI_Status, count_lo),
         offsetof(MPI_Status, count_hi_and_cancelled), offsetof(MPI_Status, MPI_SOURCE),
         offsetof(MPI_Status, MPI_TAG), offsetof(MPI_Status, MPI_ERROR));
  printf("predefined %d %d %d %d %d %d %d %d\n", MPI_COMM_WORLD, MPI_COMM_SELF, MPI_COMM_NULL,
         MPI_REQUEST_NULL, MPI_BYTE, MPI_ERRORS_RETURN, MPI_INFO_NULL, MPI_COMM_NULL_COPY_FN == NULL);
"#
        ),
    );
    // Opening runs no MPI call: safe outside a job.
    let p = mpi::Mpi::open_family(Family::Mpich).unwrap().predefined;
    let expected = format!(
        "{}status {} 0 4 8 12 16\npredefined {} {} {} {} {} {} {} 1\n",
        common_lines(Family::Mpich, std::mem::size_of::<std::ffi::c_int>()),
        std::mem::size_of::<<Mpich as Abi>::Status>(),
        Mpich::raw(p.comm_world),
        Mpich::raw(p.comm_self),
        Mpich::raw(p.comm_null),
        Mpich::raw(p.request_null),
        Mpich::raw(p.byte),
        Mpich::raw(p.errors_return),
        Mpich::raw(p.info_null),
    );
    assert_eq!(text, expected);
    assert_eq!(p.comm_null_copy_fn, std::ptr::null_mut::<c_void>());
}

#[test]
fn each_family_library_opens_and_resolves_every_function() {
    // Opening runs no MPI call: safe outside a job.
    for family in Family::ALL {
        let m = mpi::Mpi::open_family(family)
            .unwrap_or_else(|e| panic!("{family}: every symbol resolves: {e}"));
        assert_eq!(m.family, family);
    }
}

//! The binding's view of Open MPI's ABI, against the installed `mpi.h`.
use omptarget_plugin_mpi::mpi;
use std::process::Command;

#[test]
fn constants_and_layouts_match_mpi_h() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("abi.c");
    std::fs::write(
        &source,
        r#"#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
int main(void) {
  printf("status %zu %zu %zu %zu\n", sizeof(MPI_Status), offsetof(MPI_Status, MPI_SOURCE),
         offsetof(MPI_Status, MPI_TAG), offsetof(MPI_Status, MPI_ERROR));
  printf("handles %zu %zu %zu %zu\n", sizeof(MPI_Comm), sizeof(MPI_Datatype),
         sizeof(MPI_Request), sizeof(MPI_Errhandler));
  printf("constants %d %d %d %d %d %d\n", MPI_SUCCESS, MPI_THREAD_MULTIPLE, MPI_ANY_SOURCE,
         MPI_MAX_PROCESSOR_NAME, MPI_KEYVAL_INVALID, MPI_TAG_UB);
  printf("world %d\n", MPI_COMM_WORLD == &ompi_mpi_comm_world);
  return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.path().join("abi");
    let built = Command::new("mpicc")
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("mpicc runs (apt-get install libopenmpi-dev)");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let ptr = std::mem::size_of::<*mut u8>();
    let expected = format!(
        "status {} 0 4 8\nhandles {ptr} {ptr} {ptr} {ptr}\nconstants {} {} {} {} {} {}\nworld 1\n",
        std::mem::size_of::<mpi::Status>(),
        mpi::SUCCESS,
        mpi::THREAD_MULTIPLE,
        mpi::ANY_SOURCE,
        mpi::MAX_PROCESSOR_NAME,
        mpi::KEYVAL_INVALID,
        mpi::TAG_UB
    );
    assert_eq!(text, expected);
}

#[test]
fn the_library_opens_and_resolves_every_function() {
    // Opening runs no MPI call: safe outside a job.
    mpi::Mpi::open().expect("libmpi.so.40 opens and every symbol resolves");
}

fn main() {
    println!("cargo:rerun-if-changed=src/intercept.c");
    cc::Build::new()
        .file("src/intercept.c")
        // Unwind tables, so that a Rust panic from the callback passes this
        // C frame on its way to the caller's panic boundary.
        .flag("-fexceptions")
        .warnings(true)
        .compile("omptarget_thread_exit");
}

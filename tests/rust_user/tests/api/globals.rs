//! Device globals: typed handles, read-only globals, and their exclusion with launches across threads.

use super::*;

#[test]
fn globals_have_typed_handles_and_are_not_kernels() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe {
        Image::load_file(
            device,
            kernel("typed.c")?,
            &["counter", "table", "bump", "sum_table"],
        )
    }?;
    // A global refused as a kernel, a kernel refused as a global.
    // SAFETY: refused before anything runs.
    let err = unsafe { image.kernel::<()>("counter") }.unwrap_err();
    assert!(
        err.to_string().contains("global variable of 4 bytes"),
        "{err}"
    );
    assert!(image.global::<i32>("bump").is_err());
    assert!(image.global::<i64>("counter").is_err(), "size checked");

    let counter = image.global::<i32>("counter")?;
    assert_eq!(counter.read()?, 41);
    // SAFETY: bump(int32_t) touches only the global.
    let bump: Kernel<(i32,)> = unsafe { image.kernel("bump")? };
    bump.launch(LaunchConfig::single(), (2,))?;
    assert_eq!(counter.read()?, 43);
    counter.write(&-7)?;
    assert_eq!(counter.read()?, -7);

    let table = image.global::<[f64; 4]>("table")?;
    table.write(&[10.0, 20.0, 30.0, 40.5])?;
    // SAFETY: sum_table(double *out, size_t n) writes out[0] if n >= 1.
    let sum: Kernel<(SliceMut<f64>,)> = unsafe { image.kernel("sum_table")? };
    let mut out = DeviceBuffer::<f64>::new(device, 1)?;
    sum.launch(LaunchConfig::single(), (&mut out,))?;
    assert_eq!(out.to_vec()?, [100.5]);
    drop((out, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A `const` global lies in the image's read-only memory (`ro_val` in
/// `.rodata`, `ro_name` in the `PT_GNU_RELRO` part): writing it from safe
/// code used to end the process with SIGSEGV in the host plugin's copy.
/// It is refused with a typed error, nothing is written, the raw copy to
/// its address is refused by the plugin too, and the process goes on.
#[test]
fn a_const_global_is_read_only_and_writing_it_is_an_error() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe {
        Image::load_file(
            device,
            kernel("typed.c")?,
            &["ro_val", "ro_name", "ro_get", "counter"],
        )
    }?;
    let ro_val = image.global::<i32>("ro_val")?;
    assert!(ro_val.is_read_only());
    assert_eq!(ro_val.read()?, 7, "reading a const global is fine");
    let err = ro_val.write(&42).unwrap_err();
    assert!(
        matches!(&err, Error::ReadOnlyGlobal { device: 0, global } if global == "ro_val"),
        "{err}"
    );
    assert_eq!(ro_val.read()?, 7, "nothing was written");

    let ro_name = image.global::<usize>("ro_name")?;
    assert!(ro_name.is_read_only(), "relocated const data is read-only");
    let name_ptr = ro_name.read()?;
    let err = ro_name.write(&0).unwrap_err();
    assert!(matches!(err, Error::ReadOnlyGlobal { .. }), "{err}");
    assert_eq!(ro_name.read()?, name_ptr);

    // The raw copy (the OpenMP layer's `target update to`) is refused by
    // the plugin itself, whole or in part.
    let value = [42i32; 2];
    for (dst, size) in [(ro_val.device_ptr(), 4), (ro_val.device_ptr(), 8)] {
        // SAFETY: `value` is readable for `size` bytes; the destination is
        // the plugin's to refuse.
        let err = unsafe { device.submit(dst, value.as_ptr().cast(), size) }.unwrap_err();
        assert!(matches!(err, Error::PluginCallFailed { .. }), "{err}");
        assert!(err.to_string().contains("read-only memory"), "{err}");
    }
    assert_eq!(ro_val.read()?, 7);

    // The kernel still sees the values, and a writable global stays so.
    // SAFETY: ro_get(int32_t *out, size_t n) writes out[0..2] if n >= 2.
    let get: Kernel<(SliceMut<i32>,)> = unsafe { image.kernel("ro_get")? };
    let mut out = DeviceBuffer::<i32>::new(device, 2)?;
    get.launch(LaunchConfig::single(), (&mut out,))?;
    assert_eq!(out.to_vec()?, [7, i32::from(b'r')]);
    let counter = image.global::<i32>("counter")?;
    assert!(!counter.is_read_only());
    counter.write(&5)?;
    assert_eq!(counter.read()?, 5);
    drop((out, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn global_handles_on_several_threads_are_serialised() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(3)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["table"]) }?;
    std::thread::scope(|s| {
        for t in 0..4 {
            let image = &image;
            s.spawn(move || -> anyhow::Result<()> {
                let table = image.global::<[f64; 4]>("table")?;
                for i in 0..200 {
                    let v = (t * 1000 + i) as f64;
                    table.write(&[v; 4])?;
                    let read = table.read()?;
                    // Whole values only: never a mix of two writers.
                    assert!(read.iter().all(|x| *x == read[0]), "{read:?}");
                }
                Ok(())
            });
        }
    });
    drop(image);
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A launch queued in a scope keeps its image's globals from the host
/// until its queue is synchronised: reading or writing one meanwhile is an
/// error, never a race with a kernel that may still run.
#[test]
fn globals_are_refused_while_a_queued_launch_is_pending() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(2)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image =
        unsafe { Image::load_file(device, kernel("typed.c")?, &["bump", "counter", "table"]) }?;
    // SAFETY: `void bump(int32_t by)` touches only `counter`, whatever it holds.
    let bump: Kernel<(i32,)> = unsafe { image.kernel("bump")? };
    let counter = image.global::<i32>("counter")?;
    let table = image.global::<[f64; 4]>("table")?;
    let mut long_lived = device.queue()?;
    omptarget::scope(|s| {
        let q = s.queue(device)?;
        counter.write(&0)?; // nothing queued yet
        q.launch(&bump, LaunchConfig::single(), (5,))?;
        let err = counter.write(&100).unwrap_err();
        assert!(
            matches!(&err, Error::LaunchesPending { global, queues: 1 } if global == "counter"),
            "{err}"
        );
        assert!(err.to_string().contains("synchronise the queue"), "{err}");
        // Every global of the image, reads too.
        assert!(matches!(table.read(), Err(Error::LaunchesPending { .. })));
        // A second queue with a launch: both must be synchronised.
        let attached = s.attach(&mut long_lived);
        attached.launch(&bump, LaunchConfig::single(), (1,))?;
        q.synchronize()?;
        assert!(matches!(
            counter.read(),
            Err(Error::LaunchesPending { queues: 1, .. })
        ));
        attached.synchronize()?;
        assert_eq!(counter.read()?, 6, "both launches ran, the write did not");
        counter.write(&10)?;
        // Pending again until the end of the scope, which synchronises.
        attached.launch(&bump, LaunchConfig::single(), (1,))?;
        assert!(counter.read().is_err());
        Ok(())
    })?;
    assert_eq!(counter.read()?, 11);
    // A scope whose closure fails releases the globals too.
    let err = omptarget::scope(|s| {
        s.queue(device)?
            .launch(&bump, LaunchConfig::single(), (1,))?;
        Err::<(), _>(Error::InvalidArgument("the closure fails".into()))
    })
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(counter.read()?, 12);
    drop((long_lived, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// Blocking launches on several threads and host accesses to the image's
/// globals on others exclude each other: no access ever sees a kernel in
/// progress (`busy` non-zero), and none is lost.
#[test]
fn blocking_launches_and_global_accesses_on_several_threads_exclude_each_other(
) -> anyhow::Result<()> {
    const LAUNCHERS: u64 = 2;
    const LAUNCHES: u64 = 200;
    let runtime = runtime();
    let device = runtime.device(1)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image =
        unsafe { Image::load_file(device, kernel("typed.c")?, &["busy_run", "busy", "runs"]) }?;
    // SAFETY: `void busy_run(uint64_t spins)` touches only `busy` and
    // `runs`, with atomics, whatever they hold.
    let busy_run: Kernel<(u64,)> = unsafe { image.kernel("busy_run")? };
    let busy = image.global::<i32>("busy")?;
    let runs = image.global::<i64>("runs")?;
    let launched = std::sync::atomic::AtomicU64::new(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    let accesses = std::thread::scope(|s| {
        let launchers: Vec<_> = (0..LAUNCHERS)
            .map(|_| {
                s.spawn(|| -> omptarget::Result<()> {
                    for _ in 0..LAUNCHES {
                        busy_run.launch(LaunchConfig::single(), (20_000,))?;
                        launched.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    Ok(())
                })
            })
            .collect();
        let accessors: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| -> omptarget::Result<u64> {
                    let mut accesses = 0;
                    loop {
                        let finished = done.load(std::sync::atomic::Ordering::SeqCst);
                        // Never inside a run ...
                        assert_eq!(busy.read()?, 0, "read while a kernel ran");
                        // ... so writing 0 loses nothing of one.
                        busy.write(&0)?;
                        let before = launched.load(std::sync::atomic::Ordering::SeqCst);
                        assert!(runs.read()? >= before as i64);
                        accesses += 1;
                        if finished {
                            return Ok(accesses);
                        }
                    }
                })
            })
            .collect();
        for launcher in launchers {
            launcher.join().expect("no panic")?;
        }
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        accessors
            .into_iter()
            .map(|a| a.join().expect("no panic"))
            .sum::<omptarget::Result<u64>>()
    })?;
    assert!(accesses >= 2);
    assert_eq!(busy.read()?, 0);
    assert_eq!(runs.read()?, (LAUNCHERS * LAUNCHES) as i64);
    drop(image);
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

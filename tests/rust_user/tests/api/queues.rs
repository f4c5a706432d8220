//! Queues: pipelines with events, scopes, long-lived queues holding owned buffers, forgotten queues.

use super::*;

#[test]
fn a_queue_pipeline_across_two_devices_with_events() -> anyhow::Result<()> {
    let runtime = runtime();
    let (d0, d1) = (runtime.device(0)?, runtime.device(1)?);
    let so = kernel("typed.c")?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image0 = unsafe { Image::load_file(d0, &so, &["scale"]) }?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image1 = unsafe { Image::load_file(d1, &so, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale0: Kernel<Scale> = unsafe { image0.kernel("scale")? };
    // SAFETY: as above.
    let scale1: Kernel<Scale> = unsafe { image1.kernel("scale")? };
    let n = 1000;
    let input: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut output = vec![0f32; n];
    let mut x0 = DeviceBuffer::<f32>::new(d0, n)?;
    let mut y0 = DeviceBuffer::<f32>::new(d0, n)?;
    let mut x1 = DeviceBuffer::<f32>::new(d1, n)?;
    let mut y1 = DeviceBuffer::<f32>::new(d1, n)?;
    omptarget::scope(|s| {
        let q0 = s.queue(d0)?;
        let q1 = s.queue(d1)?;
        let (x0, y0) = (s.bind(&mut x0), s.bind(&mut y0));
        let (x1, y1) = (s.bind(&mut x1), s.bind(&mut y1));
        q0.copy_from_host(x0, &input)?;
        q0.launch(&scale0, LaunchConfig::default(), (2.0f32, x0, y0))?;
        q0.copy_from(x1, y0)?; // device 0 -> device 1
        let copied = q0.record_event()?;
        q1.wait_for(&copied)?;
        q1.launch(&scale1, LaunchConfig::default(), (0.5f32, x1, y1))?;
        q1.copy_to_host(y1, &mut output)?;
        Ok(())
    })?;
    // 2 * 0.5 = 1: the pipeline ran, in order, and the scope waited.
    assert_eq!(output, input);
    drop((x0, y0, x1, y1, image0, image1));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn a_panicking_scope_still_waits_and_loses_nothing() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let buffer = DeviceBuffer::from_slice(device, &[5u32; 64])?;
    let mut host = vec![0u32; 64];
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        omptarget::scope(|s| -> omptarget::Result<()> {
            let queue = s.queue(device)?;
            queue.copy_to_host(&buffer, &mut host)?;
            panic!("the program panics with a copy queued");
        })
    }));
    assert!(outcome.is_err());
    assert_eq!(
        host, [5; 64],
        "the queued copy completed before the unwind went on"
    );
    // Queue errors: a buffer of another device.
    let mut other = DeviceBuffer::<u32>::new(runtime.device(1)?, 64)?;
    let err = omptarget::scope(|s| s.queue(device)?.copy_from_host(&mut other, &host)).unwrap_err();
    assert!(
        err.to_string()
            .contains("is on device 1, the queue on device 0"),
        "{err}"
    );
    drop((buffer, other));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A lent buffer is `Copy` inside its scope, so the same one can be passed
/// as a kernel's input and output: every launch checks that a buffer the
/// kernel writes is not passed again, queued as blocking.
#[test]
fn a_written_buffer_passed_twice_to_a_queued_launch_is_refused() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let mut y = DeviceBuffer::from_slice(device, &[1.0f32; 8])?;
    let x = DeviceBuffer::from_slice(device, &[1.0f32; 8])?;
    let err = omptarget::scope(|s| {
        let q = s.queue(device)?;
        let lent = s.bind(&mut y);
        // Reading one buffer and writing another is fine.
        q.launch(&scale, LaunchConfig::default(), (2.0f32, &x, lent))?;
        q.launch(&scale, LaunchConfig::default(), (2.0f32, lent, lent))
    })
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(
        err.to_string()
            .contains("arguments 1 and 2 of kernel scale overlap and the kernel may write 2"),
        "{err}"
    );
    assert_eq!(
        y.to_vec()?,
        [2.0; 8],
        "the first launch ran, the second did not"
    );
    drop((x, y, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// A pipeline object as a user writes one: a long-lived queue and its
/// buffers in a struct, moved to another thread, fed through scopes; its
/// events time it; views are launch arguments.
struct Pipeline<'rt> {
    queue: Queue<'rt>,
    x: DeviceBuffer<'rt, f32>,
    y: DeviceBuffer<'rt, f32>,
}

impl Pipeline<'_> {
    fn run(&mut self, scale: &Kernel<'_, Scale>, input: &[f32]) -> omptarget::Result<Vec<f32>> {
        let mut output = vec![0.0; input.len()];
        let (queue, x, y) = (&mut self.queue, &mut self.x, &mut self.y);
        omptarget::scope(|s| {
            let q = s.attach(queue);
            let (x, y) = (s.bind(x), s.bind(y));
            q.copy_from_host(x, input)?;
            q.fill(y, -1.0)?;
            // Only the first half is scaled: a view as the output.
            q.launch(
                scale,
                LaunchConfig::default(),
                (2.0f32, x, y.slice(..input.len() / 2)?),
            )?;
            q.copy_to_host(y, &mut output)?;
            Ok(())
        })?;
        Ok(output)
    }
}

#[test]
fn a_long_lived_queue_in_a_struct_runs_on_another_thread() -> anyhow::Result<()> {
    fn send<T: Send>(_: &T) {}
    let runtime = runtime();
    let device = runtime.device(1)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let mut pipeline = Pipeline {
        queue: Queue::new(device)?,
        x: DeviceBuffer::new(device, 4)?,
        y: DeviceBuffer::new(device, 4)?,
    };
    send(&pipeline.queue);
    let first = pipeline.run(&scale, &[1.0, 2.0, 3.0, 4.0])?;
    assert_eq!(first, [2.0, 4.0, -1.0, -1.0]);
    let mut pipeline = std::thread::scope(|t| {
        t.spawn(move || -> omptarget::Result<Pipeline<'_>> {
            assert_eq!(pipeline.run(&scale, &[5.0; 4])?, [10.0, 10.0, -1.0, -1.0]);
            Ok(pipeline)
        })
        .join()
        .expect("no panic")
    })?;
    // Events order and time the queue between scopes (the host plugin
    // completes work before an event is recorded: the time is exact).
    let start = pipeline.queue.record_event()?;
    std::thread::sleep(std::time::Duration::from_millis(20));
    let end = pipeline.queue.record_event()?;
    end.synchronize()?;
    assert!(end.elapsed_since(&start)? >= std::time::Duration::from_millis(20));
    let mut other = device.queue()?;
    other.wait_for(&end)?;
    drop((start, end, other, pipeline, image));
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

/// Outside a scope a long-lived queue copies owned buffers only: it holds
/// both sides until `wait` gives them back, and gives them back with the
/// error when it refuses a copy.
#[test]
fn a_long_lived_queue_holds_owned_buffers_until_waited_for() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(2)?;
    let mut queue = device.queue()?;
    let staging = PinnedBuffer::from_slice(device, &[1u32, 2, 3, 4])?;
    let upload = queue
        .copy_from_host(DeviceBuffer::new(device, 4)?, staging)
        .map_err(Error::from)?;
    let (buffer, staging) = queue.wait(upload)?;
    assert_eq!(buffer.to_vec()?, [1, 2, 3, 4]);
    // Into a Vec and a boxed slice; two copies in flight, waited out of order.
    let mut other = DeviceBuffer::from_slice(device, &[9u32; 4])?;
    other.fill(5)?;
    let first = queue
        .copy_to_host(buffer, vec![0u32; 4])
        .map_err(Error::from)?;
    let second = queue
        .copy_to_host(other, vec![0u32; 4].into_boxed_slice())
        .map_err(Error::from)?;
    let (other, boxed) = queue.wait(second)?;
    let (buffer, values) = queue.wait(first)?;
    assert_eq!((values, &boxed[..]), (vec![1, 2, 3, 4], &[5u32; 4][..]));

    // Refused copies give the buffers back, unchanged.
    let Returned {
        error,
        buffers: (buffer, short),
    } = queue
        .copy_from_host(buffer, vec![7u32; 3])
        .expect_err("lengths differ");
    assert!(
        matches!(
            error,
            Error::LengthMismatch {
                device_len: 4,
                host_len: 3
            }
        ),
        "{error:?}"
    );
    assert_eq!((buffer.to_vec()?, short), (vec![1, 2, 3, 4], vec![7; 3]));
    let Returned {
        error,
        buffers: (elsewhere, staging),
    } = queue
        .copy_to_host(DeviceBuffer::<u32>::new(runtime.device(3)?, 4)?, staging)
        .expect_err("another device");
    assert!(
        error
            .to_string()
            .contains("is on device 3, the queue on device 2"),
        "{error}"
    );
    assert_eq!(staging[..], [1, 2, 3, 4]);

    // A receipt is redeemed on its own queue only.
    let mut second_queue = device.queue()?;
    let receipt = queue
        .copy_from_host(buffer, vec![0u32; 4])
        .map_err(Error::from)?;
    let err = second_queue.wait(receipt).unwrap_err();
    assert!(err.to_string().contains("another queue"), "{err}");
    // A receipt never redeemed: the queue drops what it holds when it is
    // dropped, after synchronising; nothing leaks.
    let unredeemed = queue
        .copy_to_host(other, vec![0u32; 4])
        .map_err(Error::from)?;
    drop((unredeemed, queue, second_queue, elsewhere, staging, boxed));
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

/// A queue never dropped is synchronised and freed by the shutdown, and
/// reported as the user's leak.
#[test]
fn a_forgotten_queue_is_reported_and_freed() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let mut queue = device.queue()?;
    queue.synchronize()?;
    std::mem::forget(queue);
    drop(device.queue()?); // dropped: not a leak
    let report = runtime.shutdown();
    assert_eq!(report.leaked_queues.len(), 1, "{report}");
    assert!(!report.is_clean());
    assert!(
        report.to_string().contains("queues never dropped"),
        "{report}"
    );
    Ok(())
}

//! Device buffers, views and pinned buffers: copies, fills, ranges, empty and zero-sized values.

use super::*;

#[test]
fn views_device_to_device_and_fill() -> anyhow::Result<()> {
    let runtime = runtime();
    let (d0, d1) = (runtime.device(0)?, runtime.device(2)?);
    let mut a = DeviceBuffer::from_slice(d0, &[0u16, 1, 2, 3, 4, 5, 6, 7])?;
    a.slice_mut(6..)?.copy_from_host(&[60, 70])?;
    let mut middle = [0u16; 3];
    a.slice(2..5)?.copy_to_host(&mut middle)?;
    assert_eq!(middle, [2, 3, 4]);
    // Out of range: an error, and nothing changed.
    assert!(a.slice_mut(7..9).is_err());
    assert!(a.slice(usize::MAX..).is_err());
    assert!(matches!(
        a.slice_mut(7..)?.copy_from_host(&[1, 2]),
        Err(Error::LengthMismatch { .. })
    ));
    assert_eq!(a.to_vec()?, [0, 1, 2, 3, 4, 5, 60, 70]);
    // Two halves written independently.
    let (low, mut high) = a.split_at_mut(4)?;
    high.fill(1)?;
    assert_eq!(low.to_vec()?, [0, 1, 2, 3]);
    assert_eq!(a.to_vec()?, [0, 1, 2, 3, 1, 1, 1, 1]);
    a.slice_mut(4..)?.copy_from_host(&[4, 5, 60, 70])?;

    // Same device, then across devices, then a sub-range.
    let mut same = DeviceBuffer::<u16>::new(d0, 8)?;
    same.copy_from(&a)?;
    let mut other = DeviceBuffer::<u16>::new(d1, 8)?;
    other.copy_from(&same)?;
    assert_eq!(other.to_vec()?, [0, 1, 2, 3, 4, 5, 60, 70]);
    other.fill(9)?;
    other.slice_mut(1..4)?.copy_from(a.slice(5..8)?)?;
    assert_eq!(other.to_vec()?, [9, 5, 60, 70, 9, 9, 9, 9]);
    assert!(other.slice_mut(6..9).is_err(), "past the end");
    assert!(matches!(
        other.copy_from(&DeviceBuffer::<u16>::new(d0, 3)?),
        Err(Error::LengthMismatch { .. })
    ));

    // A fill larger than the staging chunk.
    let mut big = DeviceBuffer::<u64>::new(d1, 300_000)?;
    big.fill(u64::MAX - 1)?;
    assert!(big.to_vec()?.iter().all(|&v| v == u64::MAX - 1));
    drop((a, same, other, big));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

#[test]
fn a_reversed_source_range_is_an_error() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let src = DeviceBuffer::from_slice(device, &[1u8, 2, 3, 4, 5, 6])?;
    let mut dst = DeviceBuffer::from_slice(device, &[0u8; 6])?;
    #[allow(clippy::reversed_empty_ranges)]
    let err = src.slice(5..2).unwrap_err();
    assert!(
        err.to_string().contains("is not within the buffer"),
        "{err}"
    );
    dst.copy_from(&src)?;
    dst.fill(0)?;
    assert_eq!(dst.to_vec()?, [0; 6]);
    drop((src, dst));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

/// Generic code needs no special case for empty input: an empty buffer is
/// made, copied, filled, launched and freed like any other, allocates
/// nothing and leaks nothing.
#[test]
fn empty_buffers_work_everywhere() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    let empty: &[f32] = &[];
    let x = DeviceBuffer::from_slice(device, empty)?;
    let mut y = DeviceBuffer::<f32>::new(device, 0)?;
    assert!(x.is_empty() && y.is_empty());
    assert_eq!(device.live_allocations().0, 0, "nothing allocated");
    y.fill(1.0)?;
    y.copy_from_host(empty)?;
    y.copy_from(&x)?;
    assert_eq!(y.to_vec()?, Vec::<f32>::new());
    let mut back: Vec<f32> = Vec::new();
    x.copy_to_host(&mut back)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    scale.launch(LaunchConfig::default(), (2.0f32, &x, &mut y))?;
    let mut z = DeviceBuffer::<f32>::new(device, 0)?;
    omptarget::scope(|s| {
        let q = s.queue(device)?;
        let (lent_y, lent_z) = (s.bind(&mut y), s.bind(&mut z));
        q.copy_from_host(lent_y, empty)?;
        q.copy_from(lent_z, lent_y)?;
        q.launch(&scale, LaunchConfig::default(), (1.0f32, &x, lent_y))?;
        q.copy_to_host(lent_z, &mut back)
    })?;
    // Zero-sized values: any number of them, still nothing allocated.
    let units = DeviceBuffer::from_slice(device, &[[0u8; 0]; 5])?;
    assert_eq!(units.len(), 5);
    assert_eq!(units.to_vec()?.len(), 5);
    units.free()?;
    drop((x, y, z, image));
    let report = runtime.shutdown();
    assert!(report.is_clean(), "{report}");
    Ok(())
}

/// Pinned host memory from the plugin: a slice on the host, the host side
/// of every copy, freed on drop, and a leak when forgotten.
#[test]
fn pinned_buffers_are_host_slices_owned_through_the_plugin() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(2)?;
    let mut pinned = PinnedBuffer::<u32>::new(device, 1000)?;
    assert_eq!(pinned.len(), 1000);
    assert!(pinned.iter().all(|v| *v == 0), "zeroed");
    for (i, v) in pinned.iter_mut().enumerate() {
        *v = i as u32;
    }
    // A live allocation of the host kind, on its device.
    assert_eq!(device.live_allocations(), (1, 4000));
    // The host side of blocking copies ...
    let mut buffer = DeviceBuffer::<u32>::new(device, 1000)?;
    buffer.copy_from_host(&pinned)?;
    let mut back = PinnedBuffer::<u32>::new(device, 1000)?;
    buffer.copy_to_host(&mut back)?;
    assert_eq!(back[..], pinned[..]);
    // ... and of queued ones.
    let mut out = PinnedBuffer::<u32>::new(device, 1000)?;
    omptarget::scope(|s| {
        let q = s.queue(device)?;
        let lent = s.bind(&mut buffer);
        q.copy_from_host(lent, &back)?;
        q.copy_to_host(lent, &mut out)
    })?;
    assert_eq!(out[999], 999);
    let from = PinnedBuffer::from_slice(device, &[1.5f64, 2.5])?;
    assert_eq!(from[..], [1.5, 2.5]);
    // Empty ones allocate nothing.
    let empty = PinnedBuffer::<f32>::new(device, 0)?;
    assert!(empty.is_empty() && empty[..].is_empty());
    empty.free()?;
    from.free()?;
    drop((pinned, back, out, buffer));
    assert_eq!(device.live_allocations(), (0, 0));
    // A forgotten one is freed at shutdown and reported.
    std::mem::forget(PinnedBuffer::<u8>::new(device, 64)?);
    let report = runtime.shutdown();
    assert_eq!(report.user_leaks.len(), 1, "{report}");
    assert_eq!(report.user_leaks[0].size, 64);
    assert_eq!(report.user_leaks[0].kind, omptarget::abi::AllocKind::Host);
    assert!(report.not_freed.is_empty(), "freed at shutdown: {report}");
    Ok(())
}

/// Edges a review found: an empty view inside a buffer the kernel writes
/// overlaps nothing; a pinned buffer of zero-sized values keeps its length.
#[test]
fn empty_views_and_zero_sized_pinned_values() -> anyhow::Result<()> {
    let runtime = runtime();
    let device = runtime.device(0)?;
    // SAFETY: a test kernel object (tests/kernels): no initialiser or finaliser.
    let image = unsafe { Image::load_file(device, kernel("typed.c")?, &["scale"]) }?;
    // SAFETY: `Scale` is its signature; it stays below the lengths.
    let scale: Kernel<Scale> = unsafe { image.kernel("scale")? };
    let mut y = DeviceBuffer::from_slice(device, &[1.0f32; 4])?;
    omptarget::scope(|s| {
        let q = s.queue(device)?;
        let lent = s.bind(&mut y);
        q.launch(
            &scale,
            LaunchConfig::default(),
            (2.0f32, lent.slice(2..2)?, lent),
        )
    })?;
    assert_eq!(y.to_vec()?, [1.0; 4], "an empty input scales nothing");
    let units = PinnedBuffer::<[u8; 0]>::new(device, 5)?;
    assert_eq!(units.len(), 5);
    drop((y, units, image));
    assert!(runtime.shutdown().is_clean());
    Ok(())
}

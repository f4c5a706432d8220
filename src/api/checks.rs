//! Checks that copies make the same way launches do
//! (`params::checked_values`): a buffer of another runtime is refused,
//! and a copy's source and destination must not overlap.
use crate::{Device, DevicePtr, Error, Result};

/// `buffer` (what it is, for the message) is on a device of `runtime`'s
/// runtime: two runtimes both have a device 0, and each runtime's
/// lifecycle (its report, its teardown) covers its own buffers only.
pub(crate) fn same_runtime(what: &str, buffer: &Device, runtime: &Device) -> Result<()> {
    if buffer.same_runtime(runtime) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} is a buffer on device {} of another runtime",
            buffer.id()
        )))
    }
}

/// `buffer` (what it is, for the message) is on `queue`'s device: a
/// queue copies and launches on its own device only.
pub(crate) fn on_queue_device(what: &str, buffer: &Device, queue: &Device) -> Result<()> {
    if std::ptr::eq(buffer, queue) {
        Ok(())
    } else {
        Err(Error::InvalidArgument(format!(
            "{what} is on device {}{}, the queue on device {}",
            buffer.id(),
            if buffer.same_runtime(queue) {
                ""
            } else {
                " of another runtime"
            },
            queue.id()
        )))
    }
}

/// The `bytes` at `src` and at `dst` (on `src_device` and `dst_device`)
/// do not overlap: a device copy between overlapping ranges has no defined
/// result (CUDA's `cuMemcpyDtoD` neither).
pub(crate) fn disjoint(
    src_device: &Device,
    src: DevicePtr,
    dst_device: &Device,
    dst: DevicePtr,
    bytes: usize,
) -> Result<()> {
    let (s, d) = (src.addr(), dst.addr());
    let overlap =
        std::ptr::eq(src_device, dst_device) && bytes > 0 && s < d + bytes && d < s + bytes;
    if overlap {
        return Err(Error::InvalidArgument(format!(
            "the copy's source and destination overlap ({bytes} bytes at {s:#x} and {d:#x} on device {})",
            src_device.id()
        )));
    }
    Ok(())
}

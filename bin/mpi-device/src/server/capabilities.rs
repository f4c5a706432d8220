//! What the served devices are, as their plugin reports them (the kind of
//! each device), never guessed from a file name: the ELF machine of the
//! images they run (sent in `Hello`), and whether their memory is this
//! process's.
use omptarget::DeviceKind;

/// `EM_CUDA`: the ELF machine of CUDA images.
const EM_CUDA: u32 = 190;
/// The ELF machine of this host's own code (the host plugin's images).
const EM_HOST: u32 = if cfg!(target_arch = "aarch64") {
    183
} else if cfg!(target_arch = "powerpc64") {
    21
} else {
    62
};

/// The ELF machine the images of a device of `kind` are built for (what
/// the program's MPI plugin checks images against): a kind no plugin
/// reported is taken for the host's.
pub(super) fn elf_machine(kind: Option<DeviceKind>) -> u32 {
    match kind {
        Some(DeviceKind::CudaGpu) => EM_CUDA,
        _ => EM_HOST,
    }
}

/// Whether the served devices' memory is this process's memory, so that
/// MPI can send and receive it in place: every device a host CPU, as its
/// plugin reports.
pub(super) fn memory_is_this_process(mut kinds: impl Iterator<Item = Option<DeviceKind>>) -> bool {
    kinds.all(|kind| kind == Some(DeviceKind::HostCpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_are_for_the_machine_of_the_reported_device_kind() {
        assert_eq!(elf_machine(Some(DeviceKind::CudaGpu)), 190);
        assert_eq!(elf_machine(Some(DeviceKind::HostCpu)), EM_HOST);
        assert_eq!(elf_machine(None), EM_HOST);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(EM_HOST, 62);
    }

    #[test]
    fn only_host_cpu_devices_are_served_in_place() {
        use DeviceKind::*;
        assert!(memory_is_this_process(
            [Some(HostCpu), Some(HostCpu)].into_iter()
        ));
        assert!(!memory_is_this_process(
            [Some(HostCpu), Some(CudaGpu)].into_iter()
        ));
        assert!(!memory_is_this_process([None].into_iter()));
    }
}

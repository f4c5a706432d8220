//! [`MpiBackend`]: the plugin kit's backend whose devices are other
//! ranks' devices.
use crate::client::{self, Client, Server, Side};
use crate::protocol::{
    self, Allocated, EntrySpec, Loaded, Op, Reply, Runners, INLINE_SUBMIT_LIMIT,
};
use omptarget_plugin_kit::abi::plugin::{DeviceInfoKey, KernelArgType};
use omptarget_plugin_kit::abi::{AllocKind, DeviceImage, OffloadEntry, TargetTable};
use omptarget_plugin_kit::error::Result;
use omptarget_plugin_kit::{
    Backend, DeviceId, DeviceInfoValue, ImageRef, InitCause, LoadOptions, PluginError, TeamConfig,
};
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One remote device: which server, and its number there.
#[derive(Debug, Clone, Copy)]
struct Remote {
    server: usize,
    device: u32,
}

/// An image loaded on a remote device: the target table handed to the
/// runtime, with the remote addresses.
struct RemoteImage {
    table: Box<TargetTable>,
    _entries: Box<[OffloadEntry]>,
    _names: Box<[CString]>,
}

// SAFETY: the raw pointers point into this value's own boxes.
unsafe impl Send for RemoteImage {}

/// The MPI plugin's state: the connection and the remote devices. With
/// no MPI launcher, or no server in the job, it has no connection and
/// reports 0 devices, silently (as the CUDA plugin without a driver).
pub struct MpiBackend {
    client: Option<Arc<Client>>,
    devices: Vec<Remote>,
    images: Mutex<HashMap<(usize, usize), RemoteImage>>,
    hook: Option<crate::finalize_hook::FinalizeHook>,
    /// The program's `MPI_Init` answered by the plugin, which initialised
    /// MPI first (spawned servers): put back at deinit, before this
    /// library can be closed.
    program_init: Option<crate::program_init::ProgramInit>,
    /// The program's `requires` flags (`init_requires`).
    requires: AtomicI64,
    /// Images whose bytes each server holds: (server, image key, bytes'
    /// address, length) -> the number they were shipped under.
    shipped: Mutex<HashMap<(usize, usize, usize, usize), u64>>,
    next_image_id: AtomicU64,
    /// Which devices of each server run an image: (server, the image's
    /// length, its bytes' XXH3) -> the server's answer to `CanRun`
    /// (`None`: it could not tell, and every device of it is offered the
    /// image). Only an answer: the loads ship the bytes themselves.
    runners: Mutex<HashMap<ImageOnServer, Option<Vec<u32>>>>,
}

/// The `requires` clauses no remote device can honour: memory on another
/// machine is not the program's memory.
const UNSHAREABLE: i64 = omptarget_plugin_kit::abi::requires::UNIFIED_ADDRESS
    | omptarget_plugin_kit::abi::requires::UNIFIED_SHARED_MEMORY;

/// The ELF machine (`e_machine`) of an image; `None` for what is not an
/// ELF file.
fn elf_machine(bytes: &[u8]) -> Option<u16> {
    if bytes.len() < 20 || &bytes[..4] != b"\x7fELF" {
        return None;
    }
    Some(u16::from_le_bytes([bytes[18], bytes[19]]))
}

/// An image's bytes as a server sees them: (server, length, XXH3-64).
type ImageOnServer = (usize, usize, u64);

/// Where `server` may hold `image`'s bytes: (server, image key, bytes'
/// address, length), the key of [`MpiBackend`]'s `shipped`.
fn shipped_key(server: usize, image: &ImageRef<'_>) -> (usize, usize, usize, usize) {
    (
        server,
        image.desc.as_ptr() as usize,
        image.bytes.as_ptr() as usize,
        image.bytes.len(),
    )
}

/// An image's bytes as a key (an address may be reused by another image
/// once the first is unregistered): XXH3-64, computed for each remote
/// device the image is registered on, so fast (a byte-at-a-time FNV-1a
/// took about a millisecond per MiB of image, per device).
fn content_key(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

fn backend_err(err: String) -> PluginError {
    PluginError::Backend(err)
}

impl MpiBackend {
    fn client(&self) -> Result<&Client> {
        self.client
            .as_deref()
            .ok_or_else(|| backend_err("no MPI device server in this job".into()))
    }

    fn remote(&self, device: DeviceId) -> Remote {
        self.devices[device.index()]
    }

    fn server_of(&self, device: DeviceId) -> &Server {
        let client = self
            .client
            .as_deref()
            .expect("a device implies a connection");
        &client.servers()[self.remote(device).server]
    }

    /// For a release (free, unload, deinit): true when the servers already
    /// tore their devices down (the program finalised MPI first: see
    /// [`crate::finalize_hook`]), which released it; nothing is left to do.
    fn released_by_server(&self) -> bool {
        self.client.as_deref().is_some_and(Client::is_closed)
    }

    fn call(&self, device: DeviceId, op: Op) -> Result<Vec<u8>> {
        let remote = self.remote(device);
        self.client()?
            .call_ok(remote.server, op)
            .map_err(|e| self.located(device, e))
    }

    /// An error that names where it happened.
    fn located(&self, device: DeviceId, err: impl std::fmt::Display) -> PluginError {
        let server = self.server_of(device);
        backend_err(format!(
            "remote device {} (rank {} on {}, its device {}): {err}",
            device.index(),
            server.rank,
            server.host,
            self.remote(device).device
        ))
    }
}

/// The backend's queue: its copies back, not yet fetched. Everything
/// else runs when it is queued (after the copies back queued before it
/// are fetched, so the queue keeps its order); its synchronisation fetches
/// them all in one request (`RetrieveBatch`).
pub struct PendingRetrieves {
    /// The device the copies come from (a queue is one device's).
    device: DeviceId,
    /// (device address, host address, bytes).
    ranges: Vec<(u64, *mut c_void, usize)>,
}

impl MpiBackend {
    /// Fetch `queue`'s pending copies back in one request, leaving it empty.
    fn flush(&self, queue: &mut PendingRetrieves) -> Result<()> {
        if queue.ranges.is_empty() {
            return Ok(());
        }
        let ranges = std::mem::take(&mut queue.ranges);
        let remote = self.remote(queue.device);
        // SAFETY: the operations' contract: each host range stays writable
        // until the queue is synchronised, which is now.
        unsafe {
            self.client()?
                .retrieve_batch(remote.server, remote.device, &ranges)
        }
        .map_err(|e| self.located(queue.device, e))
    }
}

impl Backend for MpiBackend {
    const NAME: &'static str = "mpi";
    type Queue = Box<PendingRetrieves>;

    fn init(_cause: InitCause) -> Result<Self> {
        let mut backend = MpiBackend {
            client: None,
            devices: Vec::new(),
            images: Mutex::new(HashMap::new()),
            hook: None,
            program_init: None,
            requires: AtomicI64::new(0),
            shipped: Mutex::new(HashMap::new()),
            next_image_id: AtomicU64::new(1),
            runners: Mutex::new(HashMap::new()),
        };
        if !client::should_connect() {
            return Ok(backend);
        }
        let Some(client) = Client::connect().map_err(|e| backend_err(e.to_string()))? else {
            return Ok(backend);
        };
        for (server, s) in client.servers().iter().enumerate() {
            backend
                .devices
                .extend((0..s.devices).map(|device| Remote { server, device }));
        }
        let world = client.world();
        if world.keeps_mpi_for_the_program() {
            // An MPI program calls MPI_Init in main, after this: it must
            // find MPI ready, not refuse to start it twice.
            backend.program_init =
                crate::program_init::ProgramInit::install(&world.mpi, world.thread_level)
                    .map_err(|e| {
                        // Said where the user sees it: MPI's own abort
                        // ("initialised more than once") may follow.
                        eprintln!(
                            "omptarget-rs plugin mpi: the program's MPI_Init cannot be answered by the plugin, which initialised MPI for its servers: {e}"
                        )
                    })
                    .ok();
        }
        let client = Arc::new(client);
        backend.hook = crate::finalize_hook::FinalizeHook::install(&client)
            .map_err(|e| tracing::warn!("no MPI_Finalize hook: {e}"))
            .ok();
        backend.client = Some(client);
        Ok(backend)
    }

    fn deinit(self) -> Result<()> {
        let MpiBackend {
            client,
            hook,
            images,
            program_init,
            ..
        } = self;
        drop(images);
        // No server, and MPI initialised here for a program that links it
        // (its MPI_Init slots were redirected): this is the early deinit
        // of a plugin with no device, before `main`. MPI stays the
        // program's, initialised, its MPI_Init answered by the wrappers,
        // which stay mapped (this library is pinned); the program
        // finalises MPI. Finalised here, its MPI_Init could only fail.
        let hand_over = client.as_deref().is_some_and(|c| {
            c.servers().is_empty()
                && c.world().keeps_mpi_for_the_program()
                && !c.world().finalized()
        }) && program_init.as_ref().is_some_and(|p| !p.is_empty());
        let mut handed_over = false;
        // Before anything can fail: this library may be closed next.
        let restored = program_init.map(|p| {
            if hand_over {
                match p.hand_over() {
                    Ok(()) => {
                        handed_over = true;
                        return Ok(());
                    }
                    Err(p) => return p.remove(),
                }
            }
            p.remove()
        });
        let Some(client) = client else {
            return Ok(());
        };
        let mut failures = Vec::new();
        if let Some(Err(err)) = restored {
            failures.push(format!("the program's MPI_Init: {err}"));
        }
        for (rank, ack) in client.close("the plugin was deinitialised") {
            match ack {
                Ok(summary) => tracing::info!(rank, "device server: {summary}"),
                Err(err) => failures.push(format!("rank {rank}: {err}")),
            }
        }
        if let Some(hook) = hook {
            hook.remove(&client);
        }
        match Arc::try_unwrap(client) {
            Ok(client) if handed_over => client
                .leave_mpi_to_the_program()
                .map_err(|e| backend_err(e.to_string()))?,
            Ok(client) => client.leave().map_err(|e| backend_err(e.to_string()))?,
            Err(_) => failures.push("the connection is still in use".into()),
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(backend_err(format!(
                "device servers: {}",
                failures.join("; ")
            )))
        }
    }

    /// The safety net, at exit: MPI handed over to a program that never
    /// claimed it is finalised ([`crate::program_init::finalize_unclaimed`]).
    fn on_unload() {
        crate::program_init::finalize_unclaimed();
    }

    fn number_of_devices(&self) -> usize {
        self.devices.len()
    }

    fn is_valid_binary(&self, image: &ImageRef<'_>) -> bool {
        // An ELF file for the machine some server's plugin runs; which of
        // their devices can run it, each server says (is_device_compatible).
        let Some(machine) = elf_machine(image.bytes) else {
            return false;
        };
        self.client
            .as_deref()
            .is_some_and(|c| c.servers().iter().any(|s| s.machine == machine))
    }

    fn is_device_compatible(&self, device: DeviceId, image: &ImageRef<'_>) -> Result<bool> {
        let remote = self.remote(device);
        // A server whose devices run images for another machine is not
        // asked (a CUDA server, for an x86-64 image).
        if elf_machine(image.bytes) != Some(self.server_of(device).machine) {
            return Ok(false);
        }
        let key = (remote.server, image.bytes.len(), content_key(image.bytes));
        let known = self
            .runners
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let runners = match known {
            Some(runners) => runners,
            None => {
                let answer = self
                    .client()
                    .and_then(|c| {
                        c.call(
                            remote.server,
                            Op::CanRun {
                                image: image.bytes.to_vec(),
                            },
                        )
                        .map_err(|e| self.located(device, e))
                    })
                    .and_then(|reply| {
                        Reply::<Runners>::payload(&reply).map_err(|e| self.located(device, e))
                    });
                // A server that cannot tell (one that does not know the
                // question, or is gone) is offered the image, as a runtime
                // without this question offers it: its load then says
                // what is wrong.
                let runners = match answer {
                    Ok(runners) => Some(runners.devices),
                    Err(why) => {
                        omptarget_plugin_kit::diagnostics::warning(
                            Self::NAME,
                            &format_args!("{why}; offering it the image"),
                        );
                        None
                    }
                };
                self.runners
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key, runners.clone());
                runners
            }
        };
        Ok(runners.is_none_or(|r| r.contains(&remote.device)))
    }

    fn init_device(&self, device: DeviceId) -> Result<()> {
        let requires = self.requires.load(Ordering::Relaxed);
        if requires & UNSHAREABLE != 0 {
            return Err(self.located(
                device,
                format!(
                    "the program requires {} (requires flags {requires:#x}), which no remote device can give: its memory is on another host",
                    if requires & omptarget_plugin_kit::abi::requires::UNIFIED_SHARED_MEMORY != 0 {
                        "unified_shared_memory"
                    } else {
                        "unified_address"
                    }
                ),
            ));
        }
        let remote = self.remote(device);
        self.call(
            device,
            Op::InitDevice {
                device: remote.device,
            },
        )
        .map(drop)
    }

    fn deinit_device(&self, device: DeviceId) -> Result<()> {
        let remote = self.remote(device);
        let result = if self.released_by_server() {
            Ok(Vec::new())
        } else {
            self.call(
                device,
                Op::DeinitDevice {
                    device: remote.device,
                },
            )
        };
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(d, _), _| *d != device.index());
        result.map(drop)
    }

    fn load_binary(
        &self,
        device: DeviceId,
        image: &ImageRef<'_>,
        options: LoadOptions,
    ) -> Result<NonNull<TargetTable>> {
        let remote = self.remote(device);
        let mut names = Vec::with_capacity(image.entries.len());
        let mut specs = Vec::with_capacity(image.entries.len());
        for entry in image.entries {
            if entry.name.is_null() {
                return Err(PluginError::InvalidImage("an entry has no name".into()));
            }
            // SAFETY: the runtime's entries hold NUL-terminated names.
            let name = unsafe { CStr::from_ptr(entry.name) };
            specs.push(EntrySpec {
                name: name.to_string_lossy().into_owned(),
                size: entry.size as u64,
                flags: entry.flags,
            });
            names.push(name.to_owned());
        }
        let key = image.desc.as_ptr() as usize;
        let flags = if options.bind_now {
            omptarget_plugin_kit::abi::plugin::load_flags::BIND_NOW
        } else {
            0
        };
        // The bytes go to each server once: the loads on its other devices
        // name them (a server that no longer holds them says so, and gets
        // them again).
        let shipped_key = shipped_key(remote.server, image);
        let shipped = self
            .shipped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&shipped_key)
            .copied();
        let image_id =
            shipped.unwrap_or_else(|| self.next_image_id.fetch_add(1, Ordering::Relaxed));
        let load = |bytes: Option<Vec<u8>>| -> Result<Vec<u8>> {
            let op = Op::LoadBinary {
                device: remote.device,
                key: key as u64,
                flags,
                image_id,
                image: bytes,
                entries: specs.clone(),
            };
            self.client()?
                .call(remote.server, op)
                .map_err(|e| self.located(device, e))
        };
        let mut reply = load(shipped.is_none().then(|| image.bytes.to_vec()))?;
        if protocol::is_not_shipped(&reply) {
            reply = load(Some(image.bytes.to_vec()))?;
        }
        let addrs = Reply::<Loaded>::payload(&reply)
            .map_err(|e| self.located(device, e))?
            .entries;
        if addrs.len() < names.len() {
            return Err(backend_err(format!(
                "a load's reply holds {} entry addresses for {} entries",
                addrs.len(),
                names.len()
            )));
        }
        self.shipped
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(shipped_key, image_id);
        let mut entries = Vec::with_capacity(names.len());
        for ((entry, name), addr) in image.entries.iter().zip(&names).zip(addrs) {
            entries.push(OffloadEntry {
                addr: addr as usize as *mut c_void,
                name: name.as_ptr().cast_mut(),
                size: entry.size,
                flags: entry.flags,
                reserved: 0,
            });
        }
        let mut entries = entries.into_boxed_slice();
        let range = entries.as_mut_ptr_range();
        let table = Box::new(TargetTable {
            entries_begin: range.start,
            entries_end: range.end,
        });
        let loaded = RemoteImage {
            table,
            _entries: entries,
            _names: names.into_boxed_slice(),
        };
        let ptr = NonNull::from(&*loaded.table);
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((device.index(), key), loaded);
        Ok(ptr)
    }

    fn unload_binary(&self, device: DeviceId, image: NonNull<DeviceImage>) -> Result<()> {
        let remote = self.remote(device);
        let key = image.as_ptr() as usize;
        if !self.released_by_server() {
            let op = Op::UnloadBinary {
                device: remote.device,
                key: key as u64,
            };
            self.call(device, op)?;
        }
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(device.index(), key));
        Ok(())
    }

    fn data_alloc(
        &self,
        device: DeviceId,
        size: usize,
        _host_ptr: *mut c_void,
        kind: AllocKind,
    ) -> Result<NonNull<c_void>> {
        if matches!(kind, AllocKind::Host | AllocKind::Shared) {
            // Memory on another machine cannot be the program's host
            // memory: refuse rather than hand out an address the program
            // would dereference.
            return Err(PluginError::InvalidArgument(format!(
                "{kind:?} memory (host-accessible) cannot be allocated on a remote device"
            )));
        }
        let remote = self.remote(device);
        let reply = self.call(
            device,
            Op::Alloc {
                device: remote.device,
                size: size as u64,
                kind: kind as i32,
            },
        )?;
        let addr = Reply::<Allocated>::payload(&reply)
            .map_err(|e| backend_err(e.to_string()))?
            .addr;
        NonNull::new(addr as usize as *mut c_void).ok_or_else(|| {
            PluginError::OutOfMemory(format!("{size} bytes on remote device {}", device.index()))
        })
    }

    fn data_delete(&self, device: DeviceId, tgt_ptr: NonNull<c_void>) -> Result<()> {
        if self.released_by_server() {
            return Ok(());
        }
        let remote = self.remote(device);
        self.call(
            device,
            Op::Delete {
                device: remote.device,
                ptr: tgt_ptr.as_ptr() as u64,
            },
        )
        .map(drop)
    }

    fn create_queue(&self, device: DeviceId) -> Result<Box<PendingRetrieves>> {
        Ok(Box::new(PendingRetrieves {
            device,
            ranges: Vec::new(),
        }))
    }

    fn synchronize(&self, _device: DeviceId, mut queue: Box<PendingRetrieves>) -> Result<()> {
        // Everything but copies back ran when it was queued.
        self.flush(&mut queue)
    }

    fn is_done(&self, queue: &Box<PendingRetrieves>) -> bool {
        queue.ranges.is_empty()
    }

    fn synchronize_device(&self, device: DeviceId) -> Result<()> {
        let remote = self.remote(device);
        self.call(
            device,
            Op::Synchronize {
                device: remote.device,
            },
        )
        .map(drop)
    }

    unsafe fn data_submit(
        &self,
        device: DeviceId,
        tgt_ptr: NonNull<c_void>,
        host_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut Box<PendingRetrieves>,
    ) -> Result<()> {
        // In queue order: what the queue holds first.
        self.flush(queue)?;
        let remote = self.remote(device);
        if size <= INLINE_SUBMIT_LIMIT {
            // The bytes are taken now, so the copy is done as far as the
            // program can tell: the server applies it before this rank's
            // next request, and that request's reply carries a failure.
            // SAFETY: per this function's contract, readable for `size`.
            let data = unsafe { std::slice::from_raw_parts(host_ptr.as_ptr().cast::<u8>(), size) };
            return self
                .client()?
                .submit_inline(
                    remote.server,
                    remote.device,
                    tgt_ptr.as_ptr() as u64,
                    data.to_vec(),
                )
                .map_err(|e| self.located(device, e));
        }
        // SAFETY: per this function's contract.
        unsafe {
            self.client()?.submit(
                remote.server,
                remote.device,
                tgt_ptr.as_ptr() as u64,
                host_ptr.as_ptr(),
                size,
            )
        }
        .map_err(|e| self.located(device, e))
    }

    unsafe fn data_retrieve(
        &self,
        device: DeviceId,
        host_ptr: NonNull<c_void>,
        tgt_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut Box<PendingRetrieves>,
    ) -> Result<()> {
        if queue.device != device {
            // A queue is one device's; keep it so if asked otherwise.
            self.flush(queue)?;
            queue.device = device;
        }
        // Copies back wait in the queue: its synchronisation fetches them
        // all in one round trip (a blocking entry's local queue at once).
        queue
            .ranges
            .push((tgt_ptr.as_ptr() as u64, host_ptr.as_ptr(), size));
        Ok(())
    }

    fn is_data_exchangable(&self, _src: DeviceId, _dst: DeviceId) -> bool {
        true
    }

    unsafe fn data_exchange(
        &self,
        src: DeviceId,
        src_ptr: NonNull<c_void>,
        dst: DeviceId,
        dst_ptr: NonNull<c_void>,
        size: usize,
        queue: &mut Box<PendingRetrieves>,
    ) -> Result<()> {
        self.flush(queue)?;
        let (s, d) = (self.remote(src), self.remote(dst));
        self.client()?
            .exchange(
                (s.server, s.device, src_ptr.as_ptr() as u64),
                (d.server, d.device, dst_ptr.as_ptr() as u64),
                size as u64,
            )
            .map_err(|e| {
                let device = match e.side {
                    Side::Source => src,
                    Side::Destination => dst,
                };
                self.located(device, e.error)
            })
    }

    unsafe fn run_region(
        &self,
        device: DeviceId,
        entry: NonNull<c_void>,
        args: &[*mut c_void],
        types: Option<&[KernelArgType]>,
        teams: Option<TeamConfig>,
        queue: &mut Box<PendingRetrieves>,
    ) -> Result<()> {
        self.flush(queue)?;
        self.run(device, entry, args, types, teams)
    }

    fn init_requires(&self, flags: i64) -> i64 {
        // `requires unified_shared_memory` and `unified_address` cannot
        // hold across machines: not accepted, and `init_device` refuses
        // every device to such a program.
        self.requires.store(flags, Ordering::Relaxed);
        flags & !UNSHAREABLE
    }

    fn print_device_info(&self, device: DeviceId) {
        let server = self.server_of(device);
        println!(
            "    MPI remote device: rank {} on {}, its device {} ({})",
            server.rank,
            server.host,
            self.remote(device).device,
            server.plugin
        );
    }

    fn device_info(&self, device: DeviceId, key: DeviceInfoKey) -> Result<Option<DeviceInfoValue>> {
        let server = self.server_of(device);
        Ok(match key {
            DeviceInfoKey::Name => Some(DeviceInfoValue::Text(format!(
                "rank {} on {}, device {} of {}",
                server.rank,
                server.host,
                self.remote(device).device,
                server.plugin
            ))),
            DeviceInfoKey::Location => Some(DeviceInfoValue::Text(format!(
                "rank {} on {}",
                server.rank, server.host
            ))),
            _ => None,
        })
    }
}

impl MpiBackend {
    fn run(
        &self,
        device: DeviceId,
        entry: NonNull<c_void>,
        args: &[*mut c_void],
        types: Option<&[KernelArgType]>,
        teams: Option<TeamConfig>,
    ) -> Result<()> {
        let remote = self.remote(device);
        let op = Op::Run {
            device: remote.device,
            entry: entry.as_ptr() as u64,
            args: args.iter().map(|a| *a as u64).collect(),
            types: types.map(|t| t.iter().map(|t| *t as u8).collect()),
            teams: teams.map(|t| {
                (
                    t.num_teams as c_int,
                    t.thread_limit as c_int,
                    t.loop_tripcount,
                )
            }),
        };
        let client = self.client()?;
        let reply = client
            .call(remote.server, op)
            .map_err(|e| self.located(device, e))?;
        match protocol::read_reply(&reply) {
            Ok(_) => Ok(()),
            Err(err) => match protocol::kernel_exit_status(&reply) {
                Some(status) => self.exit_as_the_kernel_did(client, device, status),
                None => Err(self.located(device, err)),
            },
        }
    }

    /// The kernel called `exit(status)` on a remote device: the program
    /// exits with that status, as it would have on a local device. The
    /// servers are closed first (that one acknowledges and exits 0, the
    /// others tear down as usual) and MPI finalised if the plugin started
    /// it: the exit's teardown is partial (this thread is inside a plugin
    /// call), so `deinit_plugin` would not come. Other threads' calls that
    /// fail meanwhile park rather than abort the program, and MPI is
    /// finalised only once none is inside MPI ([`crate::kernel_exit`]).
    fn exit_as_the_kernel_did(&self, client: &Client, device: DeviceId, status: i32) -> ! {
        client.kernel_exit().claim();
        let server = self.server_of(device);
        let why = format!(
            "a kernel called exit({status}) on rank {} on {}",
            server.rank, server.host
        );
        tracing::info!("{why}: the program exits with status {status}");
        for (rank, ack) in client.close_from(Some(server.rank), &why) {
            if let Err(err) = ack {
                tracing::warn!(rank, "{err}");
            }
        }
        // Held until the process ends: no call of another thread starts.
        let _no_call = client.kernel_exit().quiesce();
        client.world().finalize_before_exit();
        std::process::exit(status)
    }
}

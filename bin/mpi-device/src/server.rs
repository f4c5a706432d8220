//! The request loop: one request at a time, each answered before the next.
use omptarget::abi::{self, plugin::KernelArgType, AllocKind, DeviceImage, OffloadEntry};
use omptarget::{Config, Device, DeviceKind, DevicePtr, RegionLaunch, Runtime};
use omptarget_plugin_mpi::mpi::ANY_SOURCE;
use omptarget_plugin_mpi::protocol::{
    self, EntrySpec, Op, Request, Writer, REPLY_SLOT, REQUEST_SLOT, REQUEST_TAG,
};
use omptarget_plugin_mpi::world::{Role, World};
use std::collections::{BTreeSet, HashMap};
use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::sync::{Arc, Weak};

/// How to start.
#[derive(Debug, Default)]
pub struct ServerConfig {
    /// The plugin library whose devices are served; `None`: the built-in
    /// host plugin.
    pub plugin: Option<PathBuf>,
}

/// An image a client loaded here: its bytes and entry table, which the
/// plugin may use while it is loaded (the keepalive of the load).
struct ImageStorage {
    desc: Box<DeviceImage>,
    /// Shared by the image's loads on this server's devices.
    _bytes: Arc<Vec<u8>>,
    _entries: Vec<OffloadEntry>,
    _names: Vec<CString>,
}

// SAFETY: the raw pointers point into this value's own heap blocks, read
// only by the plugin while the image is loaded.
unsafe impl Send for ImageStorage {}
// SAFETY: as above; nothing is written through them.
unsafe impl Sync for ImageStorage {}

/// A running server.
pub struct Server {
    world: World,
    runtime: Option<Runtime>,
    /// Memory in this process is the device's (the host plugin): bulk data
    /// moves straight between MPI and device memory, with no staging copy.
    direct: bool,
    /// What each client loaded, by (device, client rank, image key).
    images: HashMap<(u32, i32, u64), Arc<ImageStorage>>,
    /// The image bytes each client shipped, by (client rank, image id):
    /// held while an image of them is loaded.
    shipped: HashMap<(i32, u64), Weak<Vec<u8>>>,
    /// Images shipped here, and their bytes (for the shutdown summary).
    received: (usize, u64),
    /// Requests answered, and one-way copies (for the shutdown summary:
    /// what a program costs in round trips).
    served: u64,
    one_way: u64,
    /// A client's failed `SubmitInline`, for its next request's reply.
    deferred: HashMap<i32, String>,
    /// What each client allocated, by device: freed at its `DeinitDevice`.
    allocations: HashMap<(u32, i32), BTreeSet<u64>>,
    /// The program ranks that have not said `Exit` (nor died).
    clients: BTreeSet<i32>,
}

/// How serving ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Ended {
    /// Every program rank said `Exit`.
    Exited,
    /// Every program rank said `Exit` or died, and at least one died
    /// (only possible under `mpirun --enable-recovery`): the runtime was
    /// shut down all the same. The text says who died.
    ProgramsDied(String),
}

type Reply = Result<Vec<u8>, String>;

impl Server {
    /// Join the job and build the runtime over the local plugin.
    pub fn start(config: ServerConfig) -> Result<Server, String> {
        let world = World::join(Role::Server)?;
        world.check_thread_level()?;
        let mut runtime_config = Config::default();
        // Never the program's plugin list (OMPTARGET_PLUGINS may name the
        // MPI plugin itself): only the plugin this server was told to use.
        match &config.plugin {
            Some(path) => {
                // SAFETY: the plugin library the server's command line
                // names (`--plugin`): whoever starts the job vouches for it,
                // as for the program's own libraries.
                runtime_config = unsafe { runtime_config.with_plugins([path.clone()]) };
            }
            None => {
                // SAFETY: an empty list: no library is loaded (the
                // built-in host plugin, turned back on, is this crate's).
                runtime_config = unsafe { runtime_config.with_plugins(Vec::<PathBuf>::new()) }
                    .with_builtin_host(true);
            }
        }
        // The program's profile, one file per server: FILE.rankN.
        if let Some(file) = std::env::var_os("LIBOMPTARGET_PROFILE").filter(|f| !f.is_empty()) {
            let mut file = file;
            file.push(format!(".rank{}", world.rank));
            runtime_config.profile = Some(file.into());
        }
        let runtime = Runtime::new(runtime_config).map_err(|e| format!("its runtime: {e}"))?;
        // After MPI and the runtime started, before any image is loaded.
        crate::kernel_exit::install()?;
        // Served devices must be this process's own: the MPI plugin (whose
        // devices are other servers') has none here (main turns MPI off
        // for the server's own runtime), and any other plugin's remote
        // device is refused by what it reports, not by its file name.
        if let Some(remote) = runtime.devices().find(|d| d.is_remote()) {
            return Err(format!(
                "a device server cannot serve remote devices ({}'s)",
                remote.plugin_name()
            ));
        }
        let direct = memory_is_this_process(runtime.devices().map(|d| d.kind()));
        let clients = world.ranks(Role::Program).into_iter().collect();
        Ok(Server {
            world,
            runtime: Some(runtime),
            direct,
            images: HashMap::new(),
            allocations: HashMap::new(),
            shipped: HashMap::new(),
            received: (0, 0),
            served: 0,
            one_way: 0,
            deferred: HashMap::new(),
            clients,
        })
    }

    fn runtime(&self) -> &Runtime {
        self.runtime
            .as_ref()
            .expect("the runtime lives until the last Exit")
    }

    fn device(&self, id: u32) -> Result<&Device, String> {
        self.runtime()
            .device(id as usize)
            .map_err(|e| format!("device {id}: {e}"))
    }

    /// Answer requests until every client has said `Exit` (or died); then
    /// tear down and leave the job.
    ///
    /// While it waits for a request it checks, every
    /// [`omptarget_plugin_mpi::world::CHECK_EVERY`], whether the clients
    /// still live; a dead one is forgotten, and when none is left the
    /// runtime is shut down and the server leaves: no server outlives a
    /// killed program, even under `mpirun --enable-recovery`.
    pub fn serve(mut self) -> Result<Ended, String> {
        let mut deaths = Vec::new();
        // The posted receive's buffer, reused from request to request.
        let mut buffer = Vec::with_capacity(REQUEST_SLOT);
        while !self.clients.is_empty() {
            // The receive takes a request from any program rank, so one
            // rank's death does not end it (another's request may be on
            // its way into it): it ends only once no rank is left alive.
            // A death is noted, and the dead are forgotten after it.
            let someone_died = std::cell::Cell::new(false);
            let watch = || {
                let mut deaths = self
                    .clients
                    .iter()
                    .filter_map(|&rank| self.world.death_of(rank));
                let first = deaths.next()?;
                someone_died.set(true);
                (1 + deaths.count() == self.clients.len()).then_some(first)
            };
            let received = self
                .world
                .post(
                    ANY_SOURCE,
                    REQUEST_TAG,
                    std::mem::take(&mut buffer),
                    REQUEST_SLOT,
                )
                .and_then(|posted| {
                    self.world
                        .receive_message(posted, &watch, protocol::reply_tag_of)
                });
            if someone_died.get() {
                self.forget_dead_clients(&mut deaths);
            }
            let (client, message) = match received {
                Ok(received) => received,
                Err(_) if self.clients.is_empty() => continue,
                Err(err) => return Err(err.into()),
            };
            let request = match Request::decode(&message) {
                Ok(request) => request,
                Err(err) => {
                    // Answered on the reply tag the request starts with, if
                    // it has one, so that the client does not wait for ever.
                    say(&format!("omptarget-mpi-device: from rank {client}: {err}"));
                    if let Some(tag) = protocol::reply_tag_of(&message) {
                        let reply = match protocol::message_len(&message) {
                            // Its rest was dropped (World::receive_message).
                            Ok(said) if said > message.len() as u64 => protocol::error_reply(
                                &format!("a request of {said} bytes cannot be held on this server"),
                            ),
                            _ => protocol::error_reply(&format!("malformed request: {err}")),
                        };
                        let _ = send_reply(&self.world, client, tag, REPLY_SLOT, &reply);
                    }
                    buffer = message;
                    continue;
                }
            };
            // Decoded, the request owns what it needs: its buffer takes
            // the next one (unless a long request, an image, grew it).
            if message.capacity() <= 4 * REQUEST_SLOT {
                buffer = message;
            }
            let tag = request.reply_tag;
            if let Op::SubmitInline { copies } = &request.op {
                // No reply: a failure answers the client's next request.
                for copy in copies {
                    self.one_way += 1;
                    if let Err(err) = self.submit_inline(copy.device, copy.ptr, &copy.data) {
                        self.deferred.entry(client).or_insert(format!(
                            "an earlier copy to device {} failed: {err}",
                            copy.device
                        ));
                    }
                }
                continue;
            }
            // A retrieve's reply precedes its data: an earlier failure is
            // its answer, and nothing is sent after it.
            let replies_first =
                matches!(request.op, Op::Retrieve { .. } | Op::RetrieveBatch { .. });
            let slot = protocol::reply_slot(&request.op);
            self.served += 1;
            let earlier = match request.op {
                Op::Exit => {
                    // Nothing left to answer it: said here.
                    if let Some(err) = self.deferred.remove(&client) {
                        say(&format!(
                            "omptarget-mpi-device rank {}: program rank {client}: {err}",
                            self.world.rank
                        ));
                    }
                    None
                }
                // Usually none: no hash of the rank per request.
                _ if self.deferred.is_empty() => None,
                _ => self.deferred.remove(&client),
            };
            let reply = match earlier {
                Some(err) if replies_first => Err(err),
                earlier => {
                    let reply = self.handle(client, request);
                    match (earlier, reply) {
                        (Some(err), Ok(_)) => Err(err),
                        (Some(err), Err(now)) => Err(format!("{now}; {err}")),
                        (None, reply) => reply,
                    }
                }
            };
            let message = match reply {
                Ok(message) => message,
                Err(err) => protocol::error_reply(&err),
            };
            // A transfer's data was sent or received inside `handle`; a
            // retrieve's reply went first (it precedes the data).
            if !message.is_empty() {
                if let Err(err) = send_reply(&self.world, client, tag, slot, &message) {
                    if !self.forget_dead_clients(&mut deaths) {
                        return Err(err);
                    }
                }
            }
        }
        let ended = if deaths.is_empty() {
            Ended::Exited
        } else {
            // The last client died without saying `Exit`: the teardown it
            // would have asked for.
            if self.runtime.is_some() {
                self.shut_down();
            }
            Ended::ProgramsDied(deaths.join("; "))
        };
        self.world.leave()?;
        Ok(ended)
    }

    /// Drop the clients found dead, noting each in `deaths`; whether any was.
    fn forget_dead_clients(&mut self, deaths: &mut Vec<String>) -> bool {
        let dead: Vec<(i32, String)> = self
            .clients
            .iter()
            .filter_map(|&rank| self.world.death_of(rank).map(|why| (rank, why)))
            .collect();
        for (rank, why) in &dead {
            self.clients.remove(rank);
            say(&format!(
                "omptarget-mpi-device rank {}: {why}; {} program rank(s) left",
                self.world.rank,
                self.clients.len()
            ));
            deaths.push(why.clone());
        }
        !dead.is_empty()
    }

    fn handle(&mut self, client: i32, request: Request) -> Reply {
        let tag = request.reply_tag;
        match request.op {
            Op::Hello => {
                let runtime = self.runtime();
                let count = runtime.devices().count() as u32;
                let first = runtime.devices().next();
                let plugin = first
                    .map(|d| d.plugin_name().to_owned())
                    .unwrap_or_else(|| "no plugin".into());
                let machine = elf_machine(first.and_then(|d| d.kind()));
                let host = self.world.mpi.processor_name();
                Ok(protocol::ok_reply(|w| {
                    w.u32(count).str(&host).str(&plugin).u32(machine);
                }))
            }
            Op::InitDevice { device } => {
                self.device(device)?
                    .ensure_initialized()
                    .map_err(|e| e.to_string())?;
                ok()
            }
            Op::DeinitDevice { device } => self.release(client, device),
            Op::LoadBinary {
                device,
                key,
                flags,
                image_id,
                image,
                entries,
            } => {
                let bytes = match image {
                    Some(bytes) => {
                        self.received.0 += 1;
                        self.received.1 += bytes.len() as u64;
                        let bytes = Arc::new(bytes);
                        self.shipped.retain(|_, held| held.strong_count() > 0);
                        self.shipped
                            .insert((client, image_id), Arc::downgrade(&bytes));
                        bytes
                    }
                    None => match self
                        .shipped
                        .get(&(client, image_id))
                        .and_then(Weak::upgrade)
                    {
                        Some(bytes) => bytes,
                        None => return Ok(protocol::not_shipped_reply()),
                    },
                };
                self.load(client, device, key, flags, bytes, entries)
            }
            Op::UnloadBinary { device, key } => {
                let storage = self
                    .images
                    .remove(&(device, client, key))
                    .ok_or_else(|| format!("no image {key:#x} loaded on device {device}"))?;
                let desc = (&*storage.desc as *const DeviceImage).cast_mut();
                // SAFETY: loaded from `desc`, which `storage` keeps alive.
                unsafe { self.device(device)?.unload_image(desc) }.map_err(|e| e.to_string())?;
                ok()
            }
            Op::Alloc { device, size, kind } => {
                let kind =
                    AllocKind::from_raw(kind).ok_or_else(|| format!("allocation kind {kind}"))?;
                let dev = self.device(device)?;
                // SAFETY: no host pointer: the memory mirrors nothing here.
                let ptr = unsafe { dev.alloc(size as usize, std::ptr::null_mut(), kind) }
                    .map_err(|e| e.to_string())?;
                let addr = ptr.addr() as u64;
                self.allocations
                    .entry((device, client))
                    .or_default()
                    .insert(addr);
                Ok(protocol::ok_reply(|w| {
                    w.u64(addr);
                }))
            }
            Op::Delete { device, ptr } => {
                if !self
                    .allocations
                    .get_mut(&(device, client))
                    .is_some_and(|set| set.remove(&ptr))
                {
                    return Err(format!(
                        "{ptr:#x} is not an allocation of yours on device {device}"
                    ));
                }
                // SAFETY: the client owned it and gave it up.
                unsafe {
                    self.device(device)?
                        .free(DevicePtr::from_raw(ptr as usize as *mut c_void))
                }
                .map_err(|e| e.to_string())?;
                ok()
            }
            Op::Submit { device, ptr, size } => {
                self.submit(client, tag, device, ptr, size as usize)
            }
            Op::SubmitInline { copies } => {
                for copy in copies {
                    self.submit_inline(copy.device, copy.ptr, &copy.data)?;
                }
                ok()
            }
            Op::RetrieveBatch { device, ranges } => {
                self.retrieve_batch(client, tag, device, &ranges)?;
                Ok(Vec::new())
            }
            Op::Retrieve { device, ptr, size } => {
                // The reply goes first, then the data: nothing more to send.
                let header = protocol::ok_reply(|_| {});
                self.send_from(client, tag, device, ptr, size as usize, Some(header))?;
                Ok(Vec::new())
            }
            Op::ExchangeOut {
                device,
                ptr,
                size,
                peer,
                tag: data_tag,
            } => {
                // The peer server waits for `size` bytes whatever happens
                // here: on failure it gets zeros, and the client the error.
                match self.send_from(peer, data_tag, device, ptr, size as usize, None) {
                    Ok(()) => ok(),
                    Err(err) => {
                        let zeros = vec![0u8; size as usize];
                        // SAFETY: `zeros` holds `size` bytes.
                        unsafe {
                            self.world.send_raw(
                                peer,
                                data_tag,
                                zeros.as_ptr().cast(),
                                zeros.len(),
                            )?
                        };
                        Err(err)
                    }
                }
            }
            Op::ExchangeIn {
                device,
                ptr,
                size,
                peer,
                tag: data_tag,
            } => {
                self.receive_into(peer, data_tag, device, ptr, size as usize)?;
                ok()
            }
            Op::ExchangeLocal {
                src,
                src_ptr,
                dst,
                dst_ptr,
                size,
            } => {
                let (from, to) = (self.device(src)?, self.device(dst)?);
                let mut staging = vec![0u8; size as usize];
                // SAFETY: `staging` holds `size` bytes; the addresses are
                // the client's, as for any plugin's exchange.
                unsafe {
                    from.retrieve(
                        staging.as_mut_ptr().cast(),
                        DevicePtr::from_raw(src_ptr as usize as *mut c_void),
                        staging.len(),
                    )
                    .map_err(|e| e.to_string())?;
                    to.submit(
                        DevicePtr::from_raw(dst_ptr as usize as *mut c_void),
                        staging.as_ptr().cast(),
                        staging.len(),
                    )
                    .map_err(|e| e.to_string())?;
                }
                ok()
            }
            Op::Run {
                device,
                entry,
                args,
                types,
                teams,
            } => {
                let dev = self.device(device)?;
                let mut slots: Vec<*mut c_void> =
                    args.iter().map(|a| *a as usize as *mut c_void).collect();
                // A kernel that calls exit() is answered from its handler.
                let _armed = crate::kernel_exit::arm(&self.world, client, tag, &self.clients);
                let launch = match teams {
                    Some((num_teams, thread_limit, loop_tripcount)) => RegionLaunch::Teams {
                        num_teams,
                        thread_limit,
                        loop_tripcount,
                    },
                    None => RegionLaunch::Single,
                };
                let entry = entry as usize as *mut c_void;
                match types {
                    None => {
                        let mut offsets = vec![0isize; slots.len()];
                        // SAFETY: the client's launch: its entry and
                        // arguments, as any plugin's caller passes them.
                        unsafe { dev.run_region(entry, &mut slots, &mut offsets, launch) }
                    }
                    Some(types) => {
                        let types = types
                            .iter()
                            .map(|t| {
                                KernelArgType::from_code(*t)
                                    .ok_or_else(|| format!("argument type {t}"))
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        // SAFETY: as above, with the kernel's types.
                        unsafe { dev.run_typed_region(entry, &mut slots, &types, launch) }
                    }
                }
                .map_err(|e| e.to_string())?;
                ok()
            }
            Op::Synchronize { device } => {
                self.device(device)?
                    .synchronize()
                    .map_err(|e| e.to_string())?;
                ok()
            }
            Op::Exit => {
                self.clients.remove(&client);
                let summary = if self.clients.is_empty() {
                    self.shut_down()
                } else {
                    format!("{} more program rank(s) to say exit", self.clients.len())
                };
                Ok(protocol::ok_reply(|w| {
                    w.str(&summary);
                }))
            }
        }
    }

    /// The teardown, in the runtime's fixed order; its one-line summary.
    fn shut_down(&mut self) -> String {
        let runtime = self.runtime.take().expect("shut down once");
        let report = runtime.shutdown();
        // The images' storage outlives their unload, which the shutdown did.
        self.images.clear();
        let rank = self.world.rank;
        let host = self.world.mpi.processor_name();
        let (images, bytes) = self.received;
        let shipped = format!(
            "{} request(s) answered, {} one-way copies; {images} image(s) shipped here ({bytes} bytes)",
            self.served, self.one_way
        );
        emit_report(&format!(
            "omptarget-mpi-device rank {rank} on {host}: {shipped}\n{report}\n"
        ));
        format!("rank {rank}: {}; {shipped}", report.summary())
    }

    /// What `client` left on `device`: its images unloaded, its memory freed.
    fn release(&mut self, client: i32, device: u32) -> Reply {
        let ptrs = self
            .allocations
            .remove(&(device, client))
            .unwrap_or_default();
        let dev = self.device(device)?;
        let mut errors = Vec::new();
        let keys: Vec<_> = self
            .images
            .keys()
            .filter(|(d, c, _)| *d == device && *c == client)
            .copied()
            .collect();
        let dev_ptr_errors = {
            for key in &keys {
                let storage = &self.images[key];
                let desc = (&*storage.desc as *const DeviceImage).cast_mut();
                // SAFETY: loaded from `desc`, kept alive by `storage`.
                if let Err(err) = unsafe { dev.unload_image(desc) } {
                    errors.push(err.to_string());
                }
            }
            for ptr in ptrs {
                let ptr = DevicePtr::from_raw(ptr as usize as *mut c_void);
                // SAFETY: the client's allocation, given up with its device.
                if let Err(err) = unsafe { dev.free(ptr) } {
                    errors.push(err.to_string());
                }
            }
            errors
        };
        for key in keys {
            self.images.remove(&key);
        }
        if dev_ptr_errors.is_empty() {
            ok()
        } else {
            Err(dev_ptr_errors.join("; "))
        }
    }

    fn load(
        &mut self,
        client: i32,
        device: u32,
        key: u64,
        flags: u32,
        bytes: Arc<Vec<u8>>,
        specs: Vec<EntrySpec>,
    ) -> Reply {
        let names = specs
            .iter()
            .map(|e| {
                CString::new(e.name.as_str())
                    .map_err(|_| format!("entry name {:?} holds a NUL", e.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut entries: Vec<OffloadEntry> = specs
            .iter()
            .zip(&names)
            .map(|(spec, name)| OffloadEntry {
                // A host address stands for the entry in the program; here
                // only its name matters. Any non-null value will do.
                addr: name.as_ptr().cast_mut().cast(),
                name: name.as_ptr().cast_mut(),
                size: spec.size as usize,
                flags: spec.flags,
                reserved: 0,
            })
            .collect();
        let range = bytes.as_ptr_range();
        let entry_range = entries.as_mut_ptr_range();
        let storage = Arc::new(ImageStorage {
            desc: Box::new(DeviceImage {
                // The plugin only reads an image's bytes.
                image_start: range.start.cast_mut().cast(),
                image_end: range.end.cast_mut().cast(),
                entries_begin: entry_range.start,
                entries_end: entry_range.end,
            }),
            _bytes: bytes,
            _entries: entries,
            _names: names,
        });
        let desc = (&*storage.desc as *const DeviceImage).cast_mut();
        let keep: Arc<dyn std::any::Any + Send + Sync> = storage.clone();
        let dev = self.device(device)?;
        // SAFETY: `desc` and what it points to live in `storage`, kept by
        // the device while the image is loaded (and by `self.images`).
        let loaded = unsafe {
            if flags & abi::plugin::load_flags::BIND_NOW != 0 {
                dev.load_image_bind_now(desc, Some(keep))
            } else {
                dev.load_image_kept(desc, Some(keep))
            }
        }
        .map_err(|e| e.to_string())?;
        self.images.insert((device, client, key), storage);
        Ok(protocol::ok_reply(|w| {
            for entry in &loaded.entries {
                w.u64(entry.addr as u64);
            }
        }))
    }

    fn submit(&mut self, client: i32, tag: i32, device: u32, ptr: u64, size: usize) -> Reply {
        self.receive_into(client, tag, device, ptr, size)?;
        ok()
    }

    /// Copy `data` (a request's own bytes) to `ptr` on `device`.
    fn submit_inline(&self, device: u32, ptr: u64, data: &[u8]) -> Result<(), String> {
        let target = DevicePtr::from_raw(ptr as usize as *mut c_void);
        // SAFETY: `data` is readable; the address is the client's, as for
        // any plugin's submit.
        unsafe {
            self.device(device)?
                .submit(target, data.as_ptr().cast(), data.len())
        }
        .map_err(|e| e.to_string())
    }

    /// The reply, then each of `ranges` (device address, bytes) on
    /// `device` to `client` (tag `tag`); or, when they are small enough
    /// ([`protocol::retrieve_inline`]), the reply holding their bytes.
    /// Staged ranges are all read before anything is sent, so that a
    /// failure leaves nothing sent.
    fn retrieve_batch(
        &self,
        client: i32,
        tag: i32,
        device: u32,
        ranges: &[(u64, u64)],
    ) -> Result<(), String> {
        let dev = self.device(device)?;
        let slot = protocol::retrieve_reply_slot(ranges);
        if protocol::retrieve_inline(ranges) {
            // Inside the reply: one message.
            let mut failed = None;
            let reply = protocol::ok_reply(|w| {
                for &(ptr, size) in ranges {
                    let into = w.raw_mut(size as usize);
                    let source = DevicePtr::from_raw(ptr as usize as *mut c_void);
                    if self.direct {
                        // SAFETY: host-plugin device memory is this
                        // process's memory; the range is the client's, as
                        // for any plugin's retrieve (a copy, no reference
                        // made to it).
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                source.as_ptr().cast::<u8>(),
                                into.as_mut_ptr(),
                                into.len(),
                            )
                        };
                    } else if failed.is_none() {
                        // SAFETY: `into` holds `size` bytes.
                        let got =
                            unsafe { dev.retrieve(into.as_mut_ptr().cast(), source, into.len()) };
                        failed = got.err().map(|e| e.to_string());
                    }
                }
            });
            if let Some(err) = failed {
                return Err(err);
            }
            return send_reply(&self.world, client, tag, slot, &reply);
        }
        let mut staged = Vec::new();
        if !self.direct {
            for &(ptr, size) in ranges {
                let mut buffer = vec![0u8; size as usize];
                let source = DevicePtr::from_raw(ptr as usize as *mut c_void);
                // SAFETY: `buffer` holds `size` bytes.
                unsafe { dev.retrieve(buffer.as_mut_ptr().cast(), source, buffer.len()) }
                    .map_err(|e| e.to_string())?;
                staged.push(buffer);
            }
        }
        send_reply(&self.world, client, tag, slot, &protocol::ok_reply(|_| {}))?;
        for (i, &(ptr, size)) in ranges.iter().enumerate() {
            let data: *const c_void = match staged.get(i) {
                Some(buffer) => buffer.as_ptr().cast(),
                None => ptr as usize as *const c_void,
            };
            // SAFETY: device memory of this process (direct) or `staged`.
            unsafe { self.world.send_raw(client, tag, data, size as usize)? };
        }
        Ok(())
    }

    /// Receive `size` bytes from `peer` (tag `tag`) into `ptr` on `device`.
    fn receive_into(
        &self,
        peer: i32,
        tag: i32,
        device: u32,
        ptr: u64,
        size: usize,
    ) -> Result<(), String> {
        let dev = self.device(device);
        let target = DevicePtr::from_raw(ptr as usize as *mut c_void);
        if self.direct && dev.is_ok() {
            // SAFETY: host-plugin device memory is this process's memory;
            // the address and size are the sender's, as for any plugin's
            // submit.
            return Ok(unsafe { self.world.recv_raw(peer, tag, target.as_ptr(), size) }?);
        }
        // Staged: the data must be received whatever happens next, or it
        // would be taken for the next message.
        let staging = self.world.recv_into(peer, tag, vec![0u8; size])?;
        let dev = dev?;
        // SAFETY: as above.
        unsafe { dev.submit(target, staging.as_ptr().cast(), size) }.map_err(|e| e.to_string())
    }

    /// Send `size` bytes at `ptr` on `device` to `peer` (tag `tag`),
    /// after `header` (a retrieve's successful reply) if any. An error
    /// before anything was sent leaves nothing sent.
    fn send_from(
        &self,
        peer: i32,
        tag: i32,
        device: u32,
        ptr: u64,
        size: usize,
        header: Option<Vec<u8>>,
    ) -> Result<(), String> {
        let dev = self.device(device)?;
        let source = DevicePtr::from_raw(ptr as usize as *mut c_void);
        let staging;
        let data: *const c_void = if self.direct {
            source.as_ptr()
        } else {
            let mut buffer = vec![0u8; size];
            // SAFETY: `buffer` holds `size` bytes.
            unsafe { dev.retrieve(buffer.as_mut_ptr().cast(), source, size) }
                .map_err(|e| e.to_string())?;
            staging = buffer;
            staging.as_ptr().cast()
        };
        if let Some(header) = header {
            send_reply(&self.world, peer, tag, REPLY_SLOT, &header)?;
        }
        // SAFETY: device memory of this process (direct) or `staging`.
        Ok(unsafe { self.world.send_raw(peer, tag, data, size) }?)
    }
}

/// Send `reply` to `client` with `tag`: its first `slot` bytes land in
/// the receive the client posted (`protocol::reply_slot` of the request,
/// which both sides compute; [`REPLY_SLOT`] where the request is not
/// known); the rest, if any, follows on the same tag.
pub fn send_reply(
    world: &World,
    client: i32,
    tag: i32,
    slot: usize,
    reply: &[u8],
) -> Result<(), String> {
    Ok(world.send_message(client, tag, tag, slot, reply)?)
}

/// The server's shutdown report, where the program's goes
/// (`OMPTARGET_SHUTDOWN_REPORT`: `stderr` or a file appended to).
fn emit_report(text: &str) {
    let written =
        omptarget::shutdown_report::write_where_var_says("OMPTARGET_SHUTDOWN_REPORT", || {
            text.to_owned()
        });
    if let Err(err) = written {
        say(&format!(
            "omptarget-mpi-device: cannot write the shutdown report to {err}"
        ));
    }
}

/// `line` and a newline on stderr in one write, so that the lines of the
/// job's servers (one stderr, through mpirun) do not interleave.
pub fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

fn ok() -> Reply {
    Ok(protocol::ok_reply(|_: &mut Writer| {}))
}

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
fn elf_machine(kind: Option<DeviceKind>) -> u32 {
    match kind {
        Some(DeviceKind::CudaGpu) => EM_CUDA,
        _ => EM_HOST,
    }
}

/// Whether the served devices' memory is this process's memory, so that
/// MPI can send and receive it in place: every device a host CPU, as its
/// plugin reports.
fn memory_is_this_process(mut kinds: impl Iterator<Item = Option<DeviceKind>>) -> bool {
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

//! What each request does.
use super::capabilities::elf_machine;
use super::{ok, Reply, Server};
use crate::error::ServeError;
use omptarget::abi::{self, plugin::KernelArgType, AllocKind, DeviceImage, OffloadEntry};
use omptarget::{DevicePtr, RegionLaunch};
use omptarget_mpi_wire::protocol::{
    Allocated, EntrySpec, Exited, Hello, Loaded, Op, Reply as Answer, Request, Runners,
};
use std::ffi::{c_void, CString};
use std::sync::{Arc, Weak};

/// An image a client loaded here: its bytes and entry table, which the
/// plugin may use while it is loaded (the keepalive of the load).
pub(super) struct ImageStorage {
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

impl Server {
    pub(super) fn handle(&mut self, client: i32, request: Request) -> Reply {
        let tag = request.reply_tag;
        match request.op {
            Op::Hello => {
                let runtime = self.runtime();
                let first = runtime.devices().next();
                let hello = Hello {
                    devices: runtime.devices().count() as u32,
                    host: self.world.mpi.processor_name(),
                    plugin: first
                        .map(|d| d.plugin_name().to_owned())
                        .unwrap_or_else(|| "no plugin".into()),
                    machine: elf_machine(first.and_then(|d| d.kind())),
                };
                Ok(Answer::Ok(hello).encode())
            }
            Op::InitDevice { device } => {
                self.device(device)?.ensure_initialized()?;
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
                        None => return Ok(Answer::<()>::NotShipped.encode()),
                    },
                };
                self.load(client, device, key, flags, bytes, entries)
            }
            Op::CanRun { image } => {
                self.asked.0 += 1;
                self.asked.1 += image.len() as u64;
                Ok(Answer::Ok(self.runners(&image)).encode())
            }
            Op::UnloadBinary { device, key } => {
                let storage = self.images.remove(&(device, client, key)).ok_or_else(|| {
                    ServeError::Refused(format!("no image {key:#x} loaded on device {device}"))
                })?;
                let desc = (&*storage.desc as *const DeviceImage).cast_mut();
                // SAFETY: loaded from `desc`, which `storage` keeps alive.
                unsafe { self.device(device)?.unload_image(desc) }?;
                ok()
            }
            Op::Alloc { device, size, kind } => {
                let kind = AllocKind::from_raw(kind)
                    .ok_or_else(|| ServeError::Refused(format!("allocation kind {kind}")))?;
                let dev = self.device(device)?;
                // SAFETY: no host pointer: the memory mirrors nothing here.
                let ptr = unsafe { dev.alloc(size as usize, std::ptr::null_mut(), kind) }?;
                let addr = ptr.addr() as u64;
                self.allocations
                    .entry((device, client))
                    .or_default()
                    .insert(addr);
                Ok(Answer::Ok(Allocated { addr }).encode())
            }
            Op::Delete { device, ptr } => {
                if !self
                    .allocations
                    .get_mut(&(device, client))
                    .is_some_and(|set| set.remove(&ptr))
                {
                    return Err(ServeError::Refused(format!(
                        "{ptr:#x} is not an allocation of yours on device {device}"
                    )));
                }
                // SAFETY: the client owned it and gave it up.
                unsafe {
                    self.device(device)?
                        .free(DevicePtr::from_raw(ptr as usize as *mut c_void))
                }?;
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
                    )?;
                    to.submit(
                        DevicePtr::from_raw(dst_ptr as usize as *mut c_void),
                        staging.as_ptr().cast(),
                        staging.len(),
                    )?;
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
                let _armed = super::kernel_exit::arm(&self.world, client, tag, &self.clients);
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
                                KernelArgType::from_code(*t).ok_or_else(|| {
                                    ServeError::Refused(format!("argument type {t}"))
                                })
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        // SAFETY: as above, with the kernel's types.
                        unsafe { dev.run_typed_region(entry, &mut slots, &types, launch) }
                    }
                }?;
                ok()
            }
            Op::Synchronize { device } => {
                self.device(device)?.synchronize()?;
                ok()
            }
            Op::Exit => {
                self.clients.remove(&client);
                let summary = if self.clients.is_empty() {
                    self.shut_down()
                } else {
                    format!("{} more program rank(s) to say exit", self.clients.len())
                };
                Ok(Answer::Ok(Exited { summary }).encode())
            }
        }
    }

    /// What `client` left on `device`: its images unloaded, its memory freed.
    pub(super) fn release(&mut self, client: i32, device: u32) -> Reply {
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
                    errors.push(err);
                }
            }
            for ptr in ptrs {
                let ptr = DevicePtr::from_raw(ptr as usize as *mut c_void);
                // SAFETY: the client's allocation, given up with its device.
                if let Err(err) = unsafe { dev.free(ptr) } {
                    errors.push(err);
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
            Err(ServeError::Several(dev_ptr_errors))
        }
    }

    /// The devices here whose plugin accepts `image` and that can run it
    /// (`CanRun`). Nothing is loaded and no device is initialised.
    fn runners(&self, image: &[u8]) -> Runners {
        let range = image.as_ptr_range();
        // No entries: the plugins' questions read only an image's bytes.
        let mut desc = DeviceImage {
            image_start: range.start.cast_mut().cast(),
            image_end: range.end.cast_mut().cast(),
            entries_begin: std::ptr::null_mut(),
            entries_end: std::ptr::null_mut(),
        };
        let desc: *mut DeviceImage = &mut desc;
        let devices = self
            .runtime()
            .devices()
            .enumerate()
            // SAFETY: `desc` points to `image`'s bytes, alive for this call.
            .filter(|(_, d)| unsafe { d.is_valid_image(desc) }.unwrap_or(false))
            // SAFETY: as above.
            .filter(|(_, d)| unsafe { d.can_run_image(desc) })
            .map(|(i, _)| i as u32)
            .collect();
        Runners { devices }
    }

    pub(super) fn load(
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
                CString::new(e.name.as_str()).map_err(|_| {
                    ServeError::Refused(format!("entry name {:?} holds a NUL", e.name))
                })
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
        }?;
        self.images.insert((device, client, key), storage);
        let entries = loaded.entries.iter().map(|e| e.addr as u64).collect();
        Ok(Answer::Ok(Loaded { entries }).encode())
    }
}

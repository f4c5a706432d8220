//! The program's side of the protocol: one request, one reply, from any
//! thread.
//!
//! Its parts: [`error`] ([`CallError`], why a call failed), `notes`
//! (what is known of each server: dead, copies lost), `gathered` (the
//! one-way copies to a device), `transfer` (bulk data) and [`close`]
//! (telling every server this rank is done).
use crate::kernel_exit::KernelExit;
use crate::mpi;
use crate::protocol::{
    self, Hello, Op, Reply, ReplyError, Request, REPLY_SLOT, REQUEST_SLOT, REQUEST_TAG,
};
use crate::world::{Posted, Role, World};
use gathered::Gathered;
use notes::RankNotes;
use omptarget_plugin_kit::state_lock::{self, ReadGuard, ReadMostly};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::Mutex;

pub mod close;
pub mod error;
mod gathered;
mod notes;
mod transfer;

pub use close::Acks;
pub use error::{CallError, ExchangeError, Side};

/// One device server, as its `Hello` reply describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Its rank in the plugin's communicator.
    pub rank: i32,
    /// How many devices it serves.
    pub devices: u32,
    /// Its host name.
    pub host: String,
    /// The plugin it serves them with (file name).
    pub plugin: String,
    /// The ELF machine of the images that plugin runs (62: x86_64, 190: CUDA).
    pub machine: u16,
}

/// The connection to every server of the job.
pub struct Client {
    world: World,
    servers: Vec<Server>,
    next_tag: AtomicI32,
    /// Numbers the copies between servers ([`World::exchange_tag`]).
    next_exchange: AtomicU32,
    /// Why no request may be sent any more (the servers were told to exit).
    closed: Mutex<Option<String>>,
    /// Whether `closed` is set: read by every call without a lock.
    is_closed: AtomicBool,
    /// Held (read) by a call from its check that the client is open until
    /// its messages to servers are sent; written by [`Client::close_from`]
    /// to mark the client closed. So every request either goes before the
    /// servers are told to exit, and is answered (MPI keeps the messages
    /// of one rank to one server on the request tag in the order the
    /// lock gives them), or is refused here: none goes after a server's
    /// `Exit`, which that server would never answer. It would not die
    /// either (its `MPI_Finalize` waits for this rank's), so the call
    /// would wait for ever.
    sending: ReadMostly<()>,
    /// Device-to-device copies between two servers run one at a time: two
    /// servers sending to each other at once, each blocked in its send,
    /// would wait for each other for ever.
    exchanges: Mutex<()>,
    /// Whether the job has other program ranks, which may ask the same
    /// servers for copies between them at the same time as this one: such
    /// copies are then relayed through this process ([`Client::relay`]).
    other_clients: bool,
    /// The servers found dead, by rank, and how they were found: every
    /// later call on their devices fails at once with that text.
    dead: RankNotes,
    /// The one-way copies gathered for each server, by rank.
    gathered: Vec<Gathered>,
    /// Servers whose gathered copies could not be sent, by rank, and why:
    /// the copies' own calls returned success, so every later call on
    /// that server fails with this text instead of computing on stale
    /// data. (A server found dead is in `dead` too.)
    lost: RankNotes,
    /// Whether a kernel of this rank called `exit`, and the calls in
    /// flight meanwhile.
    kernel_exit: KernelExit,
}

impl Client {
    /// Join the job as a program rank and greet every server. `Ok(None)`:
    /// the job has no server.
    pub fn connect() -> Result<Option<Client>, CallError> {
        // Claimed before MPI starts: a wrapper that finds its mark gone
        // once this process ended must not join as this rank again.
        crate::rank_mark::taking_the_rank();
        let world = match crate::spawn::configured()? {
            Some(spawn) => World::spawn(&spawn)?,
            None => World::join(Role::Program)?,
        };
        let ranks = world.ranks(Role::Server);
        let other_clients = world.ranks(Role::Program).len() > 1;
        let mut client = Client {
            world,
            servers: Vec::new(),
            next_tag: AtomicI32::new(0),
            next_exchange: AtomicU32::new(0),
            closed: Mutex::new(None),
            is_closed: AtomicBool::new(false),
            sending: ReadMostly::new(()),
            exchanges: Mutex::new(()),
            other_clients,
            dead: RankNotes::default(),
            gathered: Vec::new(),
            lost: RankNotes::default(),
            kernel_exit: KernelExit::new(),
        };
        client.gathered = (0..client.world.roles.len())
            .map(|_| Gathered::default())
            .collect();
        if let Some(why) = client.world.spawn_error() {
            // One line: the ranks share the launcher's stderr.
            let line = format!(
                "omptarget-rs plugin mpi: {why}; no remote devices (spawned servers need free slots: mpirun --oversubscribe, or an allocation with room for them)\n"
            );
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        }
        if ranks.is_empty() {
            if client.world.keeps_mpi_for_the_program() {
                // Kept until the plugin's deinit, which finalises MPI
                // unless the program did.
                return Ok(Some(client));
            }
            client.world.leave()?;
            return Ok(None);
        }
        if let Err(err) = client.world.check_limit() {
            return client.give_up(&ranks, err.into());
        }
        if let Err(err) = client.world.check_thread_level() {
            // Still one thread here: tell the servers this rank is done, so
            // that the job can end.
            return client.give_up(&ranks, err.into());
        }
        let mut servers = Vec::with_capacity(ranks.len());
        for &rank in &ranks {
            let greeted = client.call_rank(rank, Op::Hello).and_then(|reply| {
                match Reply::<Hello>::payload(&reply) {
                    Ok(hello) => Ok(Server {
                        rank,
                        devices: hello.devices,
                        host: hello.host,
                        plugin: hello.plugin,
                        machine: hello.machine as u16,
                    }),
                    Err(ReplyError::Malformed(source)) => Err(CallError::Greeting { rank, source }),
                    Err(err) => Err(err.into()),
                }
            });
            match greeted {
                Ok(server) => servers.push(server),
                Err(err) => {
                    // Every server still waits for this rank's Exit, and
                    // MPI is ours to finalise: end the job cleanly.
                    return client.give_up(&ranks, err);
                }
            }
        }
        client.servers = servers;
        Ok(Some(client))
    }

    /// Joining failed with `err`: tell every server this rank is done and
    /// leave MPI, so that the job can end; `err` back.
    fn give_up(mut self, ranks: &[i32], err: CallError) -> Result<Option<Client>, CallError> {
        self.servers = ranks
            .iter()
            .map(|&rank| Server {
                rank,
                devices: 0,
                host: String::new(),
                plugin: String::new(),
                machine: 0,
            })
            .collect();
        self.close(&err.to_string());
        if self.world.keeps_mpi_for_the_program() {
            // MPI stays for the program (its MPI_Init is answered by the
            // plugin), with no server: said here, as the plugin's init
            // goes on without remote devices.
            let line = format!("omptarget-rs plugin mpi: {err}; no remote devices\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            let _ = self.world.detach();
            self.servers.clear();
            return Ok(Some(self));
        }
        let _ = self.world.leave();
        Err(err)
    }

    /// The servers, in rank order.
    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    /// This rank's number.
    pub fn rank(&self) -> i32 {
        self.world.rank
    }

    /// A reply tag, in turn over [`World::reply_tags`]: with Open MPI's
    /// tags, a tag comes back after 2^30 requests, so one still waited for
    /// is not handed out again in practice (with MPI's guaranteed 32767,
    /// after 32752).
    fn fresh_tag(&self) -> i32 {
        let tags = self.world.reply_tags();
        let span = (*tags.end() - *tags.start()) as i64 + 1;
        let n = self.next_tag.fetch_add(1, Ordering::Relaxed) as u32 as i64;
        (*tags.start() as i64 + n % span) as i32
    }

    /// Whether the servers were told to exit ([`Client::close`]): each
    /// tore its devices down then, freeing whatever was left on them.
    pub fn is_closed(&self) -> bool {
        self.is_closed.load(Ordering::Acquire)
    }

    /// [`Client::check_open`], and the client kept open while the guard
    /// is held: a call's messages to servers are sent under it (see
    /// `sending`). Not taken twice by one thread, nor around a wait for a
    /// reply (a close waits for every guard).
    fn open_for_sending(&self) -> Result<ReadGuard<'_, ()>, CallError> {
        let open = state_lock::read(&self.sending);
        self.check_open()?;
        Ok(open)
    }

    fn check_open(&self) -> Result<(), CallError> {
        if !self.is_closed() {
            return Ok(());
        }
        match &*self.closed.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(why) => Err(CallError::Closed(why.clone())),
            None => Ok(()),
        }
    }

    /// Why server rank `rank` is known dead, if it is.
    pub fn dead(&self, rank: i32) -> Option<String> {
        self.dead.get(rank).map(|note| note.text)
    }

    /// Run `f`, an exchange of messages with server `rank`: at once `Err`
    /// if it is known dead; and when `f` fails and the server is found
    /// dead, mark it so (the error then says it died).
    fn with_rank<T>(
        &self,
        rank: i32,
        f: impl FnOnce() -> Result<T, CallError>,
    ) -> Result<T, CallError> {
        if let Some(why) = self.dead(rank) {
            return Err(CallError::Dead(why));
        }
        let err = match f() {
            Ok(done) => return Ok(done),
            Err(err) => err,
        };
        if let Some(why) = self.world.death_of(rank) {
            tracing::warn!("{why}");
            self.dead.note(rank, &why, true);
            // Said once: a wait that the death ended says it already.
            if !err.tells_death() {
                return Err(CallError::DiedDuring {
                    why,
                    source: Box::new(err),
                });
            }
        }
        Err(err)
    }

    /// [`Client::with_rank`], the one-way copies gathered for server
    /// `rank` sent first: every exchange with a server that follows a copy
    /// to it (a launch, a copy back, a free) finds the copy done.
    fn with_server<T>(
        &self,
        rank: i32,
        f: impl FnOnce() -> Result<T, CallError>,
    ) -> Result<T, CallError> {
        self.check_not_lost(rank)?;
        self.with_rank(rank, || {
            {
                let _open = self.open_for_sending()?;
                self.flush(rank)?;
            }
            f()
        })
    }

    /// `Err` once one-way copies to server `rank` were lost: every later
    /// call on it fails, a one-way copy too (it would never be sent).
    fn check_not_lost(&self, rank: i32) -> Result<(), CallError> {
        match self.lost.get(rank) {
            Some(note) => Err(CallError::Lost {
                text: note.text,
                tells_death: note.tells_death,
            }),
            None => Ok(()),
        }
    }

    /// Send `op` to server `server` and wait for its reply message.
    pub fn call(&self, server: usize, op: Op) -> Result<Vec<u8>, CallError> {
        self.kernel_exit.call(|| self.call_server(server, op))
    }

    fn call_server(&self, server: usize, op: Op) -> Result<Vec<u8>, CallError> {
        self.check_open()?;
        self.call_rank(self.servers[server].rank, op)
    }

    fn call_rank(&self, rank: i32, op: Op) -> Result<Vec<u8>, CallError> {
        self.with_server(rank, || self.request_reply(rank, op))
    }

    /// Send `op` to server `rank` and wait for its reply, nothing sent
    /// before it.
    fn request_reply(&self, rank: i32, op: Op) -> Result<Vec<u8>, CallError> {
        let reply_tag = self.fresh_tag();
        self.send_request(rank, &Request { reply_tag, op })?;
        let posted = self.post_reply(rank, reply_tag)?;
        self.reply(rank, reply_tag, posted)
    }

    /// Tell server `rank` to exit and wait for its acknowledgement: the
    /// close's own request, sent once the client is closed.
    fn exit_request(&self, rank: i32) -> Result<Vec<u8>, CallError> {
        let reply_tag = self.fresh_tag();
        let request = Request {
            reply_tag,
            op: Op::Exit,
        };
        self.send_request_anyway(rank, &request)?;
        let posted = self.post_reply(rank, reply_tag)?;
        self.reply(rank, reply_tag, posted)
    }

    /// Post the receive of the reply on `tag` from server `rank`, just
    /// after its request went: while the server works on it (the
    /// receive's cost off the round trip's path), so that the reply lands
    /// straight in its buffer. One that came first waits in MPI's queue
    /// and is matched all the same. Dropped unfinished, it is cancelled.
    fn post_reply(&self, rank: i32, tag: i32) -> Result<Posted<'_>, CallError> {
        Ok(self.world.post(rank, tag, Vec::new(), REPLY_SLOT)?)
    }

    /// Send `request` to server `rank`, a call's, while the client is
    /// open ([`Client::open_for_sending`]).
    fn send_request(&self, rank: i32, request: &Request) -> Result<(), CallError> {
        let _open = self.open_for_sending()?;
        self.send_request_anyway(rank, request)
    }

    /// Send `request` to server `rank`: its first [`REQUEST_SLOT`] bytes
    /// on the request tag, the rest (a long one: an image) on its reply
    /// tag.
    fn send_request_anyway(&self, rank: i32, request: &Request) -> Result<(), CallError> {
        let message = request.encode();
        Ok(self
            .world
            .send_message(rank, REQUEST_TAG, request.reply_tag, REQUEST_SLOT, &message)?)
    }

    /// The reply `posted` receives from server `rank` (its rest, if long,
    /// on the same tag).
    fn reply(&self, rank: i32, tag: i32, posted: Posted<'_>) -> Result<Vec<u8>, CallError> {
        let watch = self.world.watch_rank(rank);
        let reply = self.world.receive_message(posted, &watch, |_| Some(tag))?.1;
        if protocol::kernel_exit_status(&reply).is_some() {
            // The launch whose kernel called exit: its caller exits.
            self.kernel_exit.note();
        } else if protocol::exiting_of(&reply).is_some_and(|(_, client)| client == self.rank()) {
            // Another request refused by that kernel's server, which may
            // reach this thread before the launch's reply reaches its own:
            // a failure (whatever the call), and the process is exiting.
            self.kernel_exit.note();
            return Err(match protocol::read_reply(&reply) {
                Err(err) => err.into(),
                Ok(_) => ReplyError::Refused(String::new()).into(),
            });
        }
        Ok(reply)
    }

    /// Whether a kernel of this rank called `exit` (a reply said so).
    pub fn kernel_exit(&self) -> &KernelExit {
        &self.kernel_exit
    }

    /// `call`, then the reply's payload or the server's error.
    pub fn call_ok(&self, server: usize, op: Op) -> Result<Vec<u8>, CallError> {
        self.kernel_exit.call(|| self.call_server_ok(server, op))
    }

    fn call_server_ok(&self, server: usize, op: Op) -> Result<Vec<u8>, CallError> {
        let reply = self.call_server(server, op)?;
        protocol::read_reply(&reply)?;
        Ok(reply)
    }

    /// The world, for the finalize hook.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// Close (if not yet) and leave the job: free the communicator, and
    /// finalise MPI if the plugin initialised it.
    pub fn leave(self) -> Result<(), CallError> {
        Ok(self.world.leave()?)
    }

    /// Leave without finalising MPI, which the program owns from now on
    /// ([`World::leave_mpi_to_the_program`]).
    pub fn leave_mpi_to_the_program(self) -> Result<(), CallError> {
        Ok(self.world.leave_mpi_to_the_program()?)
    }
}

/// Whether [`Client::connect`] should be tried at all: only in a process
/// an MPI launcher started (no library is opened otherwise).
pub fn should_connect() -> bool {
    mpi::job_may_have_servers()
}

//! A step of `cargo xtask test` run in the background ([`crate::test::Run::Background`]):
//! its command starts in a process group of its own with its output in a
//! file, and the step, in its turn, waits for it and shows that output.
//! A job dropped unfinished (an earlier step failed) is killed, group and
//! all, so that nothing of it outlives the run.

use anyhow::{Context, Result};
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Job {
    pub name: &'static str,
    shown: String,
    child: Option<Child>,
    log: PathBuf,
    started: Instant,
}

impl Job {
    /// Start `cmd` for the step `name`, its output into a file under
    /// `target/omptarget/background/`.
    pub fn start(name: &'static str, mut cmd: Command) -> Result<Job> {
        let dir = crate::stage::target_dir()
            .join("omptarget")
            .join("background");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let slug: String = name
            .split(':')
            .next()
            .unwrap_or(name)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let log = dir.join(format!("{slug}.log"));
        let out = File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let shown = crate::cmd::show(&cmd);
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .process_group(0);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {shown}"))?;
        println!(
            "==> started in the background: {name}\n$ {shown}\n  (output: {})",
            log.display()
        );
        Ok(Job {
            name,
            shown,
            child: Some(child),
            log,
            started: Instant::now(),
        })
    }

    /// Wait for the command, show its output, and say whether it passed;
    /// with the time since it started.
    pub fn finish(mut self) -> (Result<()>, Duration) {
        let mut child = self.child.take().expect("a job is finished once");
        let status = child.wait();
        let wall = self.started.elapsed();
        println!("$ {}", self.shown);
        match std::fs::read_to_string(&self.log) {
            Ok(text) => print!("{text}"),
            Err(e) => println!("(cannot read {}: {e})", self.log.display()),
        }
        let result = match status {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(anyhow::anyhow!("{} failed ({status})", self.shown)),
            Err(e) => Err(anyhow::anyhow!("waiting for {}: {e}", self.shown)),
        };
        (result, wall)
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        println!("==> stopping the background step: {}", self.name);
        // SAFETY: plain syscall; the child is not reaped yet, so its id
        // still names the process group it leads.
        unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
        let _ = child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_reports_its_status() {
        let mut fail = Command::new("sh");
        fail.args(["-c", "echo from-the-job; exit 3"]);
        let (result, _) = Job::start("xtask background test: failing", fail)
            .unwrap()
            .finish();
        assert!(result.unwrap_err().to_string().contains("exit status: 3"));
        let mut pass = Command::new("true");
        pass.arg("x");
        let (result, _) = Job::start("xtask background test: passing", pass)
            .unwrap()
            .finish();
        result.unwrap();
    }

    /// A job dropped unfinished is killed with its whole process group.
    #[test]
    fn a_dropped_job_is_stopped_with_its_children() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 100 & sleep 100; wait"]);
        let job = Job::start("xtask background test: dropped", cmd).unwrap();
        let group = job.child.as_ref().unwrap().id() as libc::pid_t;
        let started = Instant::now();
        drop(job);
        assert!(started.elapsed() < Duration::from_secs(50));
        // Killed members may linger as zombies until their new parent
        // reaps them: only a member that still runs counts.
        let stopped = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            running_members(group) == 0
        });
        assert!(stopped, "the job's background sleep outlived it");
    }

    /// Processes of process group `group` that are not zombies.
    fn running_members(group: libc::pid_t) -> usize {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return 0;
        };
        procs
            .flatten()
            .filter_map(|p| std::fs::read_to_string(p.path().join("stat")).ok())
            .filter(|stat| {
                // pid (comm) state ppid pgrp ...: after the last ')'.
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                let mut fields = rest.split_whitespace();
                let state = fields.next();
                let pgrp = fields.nth(1).and_then(|g| g.parse::<libc::pid_t>().ok());
                pgrp == Some(group) && state != Some("Z")
            })
            .count()
    }
}

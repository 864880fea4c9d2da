//! A process's CPU time and resident memory during a run, sampled from `/proc/<pid>/stat`
//! and `/proc/<pid>/status` every 100 ms. Parsing is pure; [`Sampler`] reads the files.

use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Clock ticks per second of `utime` and `stime` in `/proc/<pid>/stat`: the kernel reports
/// them in USER_HZ, which Linux fixes at 100 on every architecture it runs this on.
const USER_HZ: f64 = 100.0;

/// How often the files are read.
const PERIOD: Duration = Duration::from_millis(100);

/// CPU ticks used so far (user + system) from a `/proc/<pid>/stat` line. The command name
/// in parentheses may hold spaces and parentheses itself, so fields are counted after the
/// last `)`.
pub fn cpu_ticks(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // Fields 14 (utime) and 15 (stime) of proc(5); the first after `)` is field 3.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    utime.checked_add(stime)
}

/// Resident memory in bytes from `/proc/<pid>/status` (`VmRSS:   1234 kB`).
pub fn rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

/// One reading of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// CPU ticks so far.
    pub ticks: u64,
    /// Resident bytes now.
    pub rss: u64,
}

/// Reads the process now; `None` once it is gone or the files cannot be read.
pub fn read(pid: u32) -> Option<Reading> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(Reading {
        ticks: cpu_ticks(&stat)?,
        rss: rss_bytes(&status)?,
    })
}

/// What a process used during the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Usage {
    /// Its role (`scheduler`, `controller-manager`, `apiserver`).
    pub name: String,
    /// Its process id.
    pub pid: u32,
    /// CPU seconds (user + system) used between the first and the last reading.
    pub cpu_seconds: f64,
    /// Resident bytes at the first reading.
    pub rss_start_bytes: u64,
    /// Resident bytes at the last reading.
    pub rss_end_bytes: u64,
    /// Highest resident bytes read.
    pub rss_peak_bytes: u64,
    /// Readings taken.
    pub samples: u64,
    /// Whether the process ended (or became unreadable) before the run did.
    pub exited: bool,
}

/// Folds readings into a [`Usage`]; `None` without any reading.
pub fn usage(name: &str, pid: u32, readings: &[Reading], exited: bool) -> Option<Usage> {
    let (first, last) = (readings.first()?, readings.last()?);
    let ticks = last.ticks.saturating_sub(first.ticks);
    // Tick counts stay far below 2^52, where the conversion is exact.
    let cpu_seconds = ticks as f64 / USER_HZ;
    Some(Usage {
        name: name.to_string(),
        pid,
        cpu_seconds,
        rss_start_bytes: first.rss,
        rss_end_bytes: last.rss,
        rss_peak_bytes: readings.iter().map(|r| r.rss).max().unwrap_or(0),
        samples: readings.len() as u64,
        exited,
    })
}

/// A task reading one process every 100 ms until stopped.
pub struct Sampler {
    stop: watch::Sender<bool>,
    task: JoinHandle<Option<Usage>>,
}

impl Sampler {
    /// Starts sampling `pid`, which must be readable now.
    pub fn start(name: &'static str, pid: u32) -> anyhow::Result<Sampler> {
        let first = read(pid).ok_or_else(|| {
            anyhow::anyhow!("cannot read /proc/{pid}/stat and /proc/{pid}/status (no such process on this machine?)")
        })?;
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            // Ten readings a second for an hour is under a megabyte: keep them all.
            let mut readings = vec![first];
            let mut exited = false;
            let mut tick = tokio::time::interval(PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let stopping = tokio::select! {
                    _ = stopped.changed() => true,
                    _ = tick.tick() => false,
                };
                match read(pid) {
                    Some(r) => readings.push(r),
                    None => {
                        exited = true;
                        break;
                    }
                }
                if stopping {
                    break;
                }
            }
            usage(name, pid, &readings, exited)
        });
        Ok(Sampler { stop, task })
    }

    /// Stops sampling and gives what the process used.
    pub async fn finish(self) -> Option<Usage> {
        let _ = self.stop.send(true);
        self.task.await.ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn cpu_counts_user_and_system_ticks_after_the_command_name() {
        let stat = "4242 (volcano (x) y) S 1 4242 4242 0 -1 4194560 5000 0 0 0 \
                    250 75 0 0 20 0 12 0 123456 987654321 2500 18446744073709551615";
        assert_eq!(cpu_ticks(stat), Some(325));
        assert_eq!(cpu_ticks("4242 (short) S 1"), None);
        assert_eq!(cpu_ticks("no parenthesis"), None);
    }

    #[test]
    fn rss_reads_kilobytes() {
        let status = "Name:\tvolcano\nVmHWM:\t  9999 kB\nVmRSS:\t   2048 kB\n";
        assert_eq!(rss_bytes(status), Some(2 * 1024 * 1024));
        assert_eq!(rss_bytes("Name:\tkthreadd\n"), None);
    }

    #[test]
    fn usage_differences_cpu_and_keeps_the_peak() {
        let r = |ticks, rss| Reading { ticks, rss };
        let u = usage("scheduler", 7, &[r(100, 10), r(150, 40), r(350, 30)], false).unwrap();
        assert_eq!(u.cpu_seconds, 2.5);
        assert_eq!(
            (u.rss_start_bytes, u.rss_end_bytes, u.rss_peak_bytes),
            (10, 30, 40)
        );
        assert_eq!(usage("s", 7, &[], false), None);
    }

    #[tokio::test]
    async fn this_process_can_be_sampled() {
        let sampler = Sampler::start("self", std::process::id()).unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
        let u = sampler.finish().await.unwrap();
        assert!(u.samples >= 2 && u.rss_peak_bytes > 0 && !u.exited, "{u:?}");
        assert!(Sampler::start("none", u32::MAX).is_err());
    }
}

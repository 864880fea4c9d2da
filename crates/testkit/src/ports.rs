//! Loopback ports for test servers.

use std::hash::{BuildHasher, RandomState};
use std::net::TcpListener;

use crate::HarnessError;

/// The lowest port a restartable server is given; below it sit well-known and registered
/// services a developer's machine may run.
const RESTARTABLE_FLOOR: u16 = 20000;

/// A loopback port free now, chosen by the kernel.
pub fn free_port() -> Result<u16, HarnessError> {
    let l = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| HarnessError::io("find a free loopback port", e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| HarnessError::io("find a free loopback port", e))
}

/// A free loopback port below the kernel's ephemeral range, for a server a test stops and
/// starts again on the same port. A port the kernel picked can be handed out again, between
/// the stop and the start, as the local end of any outgoing connection (the API server's own
/// connections to etcd and to other tests' webhooks), and the restart then fails with
/// "Address already in use". Ports below the range are never handed out that way.
pub fn restartable_port() -> Result<u16, HarnessError> {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let span = u64::from(ephemeral_low.saturating_sub(RESTARTABLE_FLOOR));
    if span == 0 {
        return free_port();
    }
    let seed = RandomState::new();
    for attempt in 0..256u64 {
        let offset = seed.hash_one(attempt) % span;
        let port = RESTARTABLE_FLOOR + offset as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(HarnessError::io(
        "find a free loopback port below the ephemeral range",
        std::io::Error::new(std::io::ErrorKind::AddrInUse, "256 ports tried"),
    ))
}

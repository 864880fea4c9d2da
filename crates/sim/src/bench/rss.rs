//! The process's peak resident memory, as the kernel counts it.

/// Peak resident set size (`VmHWM` of `/proc/self/status`), in bytes; `None` where there is no
/// such file (not Linux) or it cannot be read.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_hwm(&status)
}

/// Resident set size now (`VmRSS`), in bytes; `None` where it cannot be read.
pub fn current_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_kb_field(&status, "VmRSS:")
}

/// `VmHWM:   123456 kB` → bytes.
fn parse_vm_hwm(status: &str) -> Option<u64> {
    parse_kb_field(status, "VmHWM:")
}

/// The value of a `/proc/self/status` line in kB, in bytes.
fn parse_kb_field(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::{parse_kb_field, parse_vm_hwm};

    #[test]
    fn reads_the_peak_in_bytes() {
        let status = "Name:\tvolcano\nVmPeak:\t  999 kB\nVmHWM:\t    2048 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(2048 * 1024));
        assert_eq!(parse_vm_hwm("Name: x\n"), None);
        assert_eq!(parse_kb_field(status, "VmRSS:"), Some(1024));
    }
}

//! `cargo +nightly fuzz run job_validation`: see `volcano_fuzz::job_validation`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volcano_fuzz::job_validation(data));

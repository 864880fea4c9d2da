//! `cargo +nightly fuzz run scheduler_conf`: see `volcano_fuzz::scheduler_conf`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volcano_fuzz::scheduler_conf(data));

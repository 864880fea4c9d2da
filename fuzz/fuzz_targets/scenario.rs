//! `cargo +nightly fuzz run scenario`: see `volcano_fuzz::scenario`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volcano_fuzz::scenario(data));

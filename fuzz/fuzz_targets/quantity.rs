//! `cargo +nightly fuzz run quantity`: see `volcano_fuzz::quantity`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| volcano_fuzz::quantity(data));

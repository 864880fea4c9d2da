//! Placeholder until the session benchmark lands.
fn main() {}

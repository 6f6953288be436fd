//! placeholder until the benchmark is written.
fn main() {}

//! Prints the figures of the README (filled in later).
fn main() {}

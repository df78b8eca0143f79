//! The `paraes` command-line tool (glue only; the work happens in paraes-core).
fn main() {}

//! What Weft asks of the operating system beyond files: whether a process
//! is alive and which process it is, and signals to process groups.
//!
//! Below the store, so that the store (which records the process executing
//! a run), the engine (which kills commands' process groups) and the daemon
//! (which finds runs whose process died) share one reading of `/proc`.

pub mod process;

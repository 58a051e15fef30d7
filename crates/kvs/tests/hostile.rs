//! The hostile review's tests (issue 63): what a buggy or hostile C program does with
//! handles and callbacks (stale iterator handles, one kind of handle passed for another,
//! callbacks that re-enter the library, closes racing async calls, a full queue, one
//! iterator read from two threads), against a device this test starts.

#[path = "hostile/callbacks.rs"]
mod callbacks;
#[path = "hostile/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "stress/device.rs"]
mod device;
#[allow(dead_code)]
#[path = "stress/ffi.rs"]
mod ffi;
#[path = "hostile/handles.rs"]
mod handles;
#[path = "shared/wire.rs"]
mod wire;

//! Panics of the device's own code, caught where they happen: a command's panic answers its
//! client with an internal error and the device keeps serving.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs a command's work; a panic becomes the internal error its client is answered with
/// (the device keeps serving).
pub fn catch_command<T>(
    nsid: u32,
    opcode: u8,
    f: impl FnOnce() -> T,
) -> Result<T, (cerberus_proto::Status, String)> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|payload| {
        let msg = panic_message(payload.as_ref());
        tracing::error!(nsid, opcode, panic = msg, "command panicked");
        (
            cerberus_proto::Status::InternalError,
            format!("the command panicked in the device ({msg}); the device is still serving"),
        )
    })
}

/// The text of a panic payload (`panic!` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a panic without a message"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_read_from_either_payload() {
        let p = catch_unwind(|| panic!("static text")).unwrap_err();
        assert_eq!(panic_message(p.as_ref()), "static text");
        let n = 7;
        let p = catch_unwind(|| panic!("formatted {n}")).unwrap_err();
        assert_eq!(panic_message(p.as_ref()), "formatted 7");
    }
}

//! Test-only faults (feature `fault-injection`), armed over the wire since tests drive the
//! device as a client: a store of [`PANIC_NEXT_KEY`] whose value is a decimal count N
//! makes the next N commands that reach a worker panic; a store of [`SLEEP_KEY`] whose value
//! is a decimal count of milliseconds takes that long, then answers without writing (a
//! write the engine holds up, on demand).

use cerberus_proto::{Command, Reply, Request, Response, Status};
use std::sync::atomic::{AtomicU32, Ordering};

/// The NUL keeps it apart from any key a real client would pick.
const PANIC_NEXT_KEY: &[u8] = b"\0fault-injection:panic-next";

const SLEEP_KEY: &[u8] = b"\0fault-injection:sleep-ms";

/// Process-global: a test that arms it must be the only one serving commands in its
/// process (tests/worker_panic.rs holds one test).
static PANIC_NEXT: AtomicU32 = AtomicU32::new(0);

/// Arms on the arming store (and answers it); panics if armed; else lets `cmd` run.
pub(crate) fn intercept(cmd: &Command) -> Option<Response> {
    let opcode = cmd.request.opcode() as u8;
    if let Request::Store { key, value, .. } = &cmd.request {
        if key.as_ref() == SLEEP_KEY {
            let ms = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
            std::thread::sleep(std::time::Duration::from_millis(ms.min(60_000)));
            return Some(Response {
                cid: cmd.cid,
                nsid: cmd.nsid,
                opcode,
                status: Status::Success,
                reply: Reply::Empty,
            });
        }
        if key.as_ref() == PANIC_NEXT_KEY {
            let n = std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.trim().parse::<u32>().ok());
            return Some(match n {
                Some(n) => {
                    PANIC_NEXT.store(n, Ordering::SeqCst);
                    Response {
                        cid: cmd.cid,
                        nsid: cmd.nsid,
                        opcode,
                        status: Status::Success,
                        reply: Reply::Empty,
                    }
                }
                None => Response::error(
                    cmd.cid,
                    cmd.nsid,
                    opcode,
                    Status::InvalidField,
                    "the fault count is a decimal number".into(),
                ),
            });
        }
    }
    let armed = PANIC_NEXT
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if armed {
        panic!("injected fault (fault-injection feature)");
    }
    None
}

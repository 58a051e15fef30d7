//! The device's vendor-specific I/O commands on NVMe/TCP (`docs/protocol.md`, "Over NVMe/TCP:
//! vendor commands"): a pair that tunnels one native command. An NVMe command moves data one
//! way only, so the request goes with one opcode and its response comes back with another.
//! Bits 1:0 of an opcode give its data direction: 01 host to controller, 10 controller to
//! host.

/// Submit: the data is one native request frame (header and body); the target runs it and
/// keeps its encoded response for the queue, under the frame's command id. CDW10: the frame's length in bytes. CQE DW0:
/// the kept response's length.
pub const VENDOR_SUBMIT: u8 = 0x81;

/// Fetch: the target sends the response the queue kept for a native command id (a native
/// response frame) and forgets it. CDW10: the host's buffer size in bytes; CDW11: the
/// native command id. CQE DW0: the response's length.
pub const VENDOR_FETCH: u8 = 0x82;

/// Generic status "Data SGL Length Invalid": a fetch whose buffer is smaller than the kept
/// response (which stays kept).
pub const SC_DATA_SGL_LENGTH_INVALID: u8 = 0x0F;

/// Generic status "Command Sequence Error": a fetch with no response kept for its id, or a
/// Submit while the queue keeps as many unfetched responses as it may.
pub const SC_COMMAND_SEQUENCE_ERROR: u8 = 0x0C;

// Vendor-specific (0x80 on), and each says its data direction in bits 1:0.
const _: () = assert!(VENDOR_SUBMIT >= 0x80 && VENDOR_SUBMIT & 0b11 == 0b01);
const _: () = assert!(VENDOR_FETCH >= 0x80 && VENDOR_FETCH & 0b11 == 0b10);

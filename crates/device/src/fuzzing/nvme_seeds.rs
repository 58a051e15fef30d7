//! Seed inputs for the `nvme_session` fuzz target: sessions as a host would run them, in
//! the op bytes `nvme_ops` reads, one for each kind of opening.

use super::nvme_ops::op;

/// Seeds: sessions as a host would run them, for each kind of opening.
pub(super) fn seeds() -> Vec<Vec<u8>> {
    let ic = [op::IC_REQ, 0];
    let connect = [op::CONNECT, 0, 2];
    let enable = [op::PROPERTY, 0];
    let key = [b'k', b'e', b'y', b'1'];
    let mut io = vec![0x10];
    io.extend(ic);
    io.extend(connect);
    io.extend([op::STORE, 0x63]);
    io.extend(key);
    io.extend([4, op::KV, 0x63]);
    io.extend(key);
    io.extend([0]);
    io.extend([op::STORE_R2T, 0x63]);
    io.extend(key);
    io.extend([2, op::H2C_DATA, 0x05]);
    io.extend([op::KV, 0x63]);
    io.extend(key);
    io.extend([3, op::SUBMIT, 0x03, 1, 2, 3, 4, 1, 9, op::FETCH, 0x04]);
    io.extend([op::ADMIN, 0x65]);
    let mut admin = vec![0x00];
    admin.extend(ic);
    admin.extend(connect);
    admin.extend(enable);
    admin.extend([
        op::ADMIN,
        0x00,
        1,
        op::ADMIN,
        0x01,
        2,
        0,
        0,
        1,
        op::ADMIN,
        0x06,
    ]);
    admin.extend([op::PROPERTY, 0x0f, op::PROPERTY, 1]);
    let mut auth = vec![0x01];
    auth.extend(ic);
    auth.extend(connect);
    // SHA-256; the NULL group and ffdhe2048.
    auth.extend([op::AUTH_NEGOTIATE, 0x01, 0x03, op::AUTH_RECEIVE, 0]);
    auth.extend([op::AUTH_REPLY, 0x40, op::AUTH_RECEIVE, 0, op::AUTH_END, 0]);
    auth.extend(enable);
    auth.extend([op::ADMIN, 0x00, 1]);
    let mut spoiled = auth.clone();
    spoiled[0] = 0x0d; // the authenticated host, with both digests
    let at = spoiled.len() - 10;
    spoiled[at] = 0x80; // a wrong response
    let mut stranger = vec![0x03];
    stranger.extend(ic);
    stranger.extend(connect);
    stranger.extend([op::STORE, 0x63, b'x', 1]);
    let garbage = vec![0x00, op::RAW, 8, 1, 2, 3, 4, 5, 6, 7, 8];
    vec![io, admin, auth, spoiled, stranger, garbage]
}

//! Background threads at a lower CPU priority than the threads serving clients.

/// Gives the calling thread nice value `nice` (Linux: a thread's own). Raising one's own nice
/// value needs no privilege; a failure leaves the thread as it was, which is only slower for
/// the clients beside it.
#[cfg(target_os = "linux")]
pub(crate) fn lower_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    // SAFETY: a plain system call on the calling thread's own id.
    let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    if done != 0 {
        tracing::debug!(nice, error = %std::io::Error::last_os_error(), "background priority unchanged");
    }
}

/// Elsewhere the nice value is the whole process's: nothing is done.
#[cfg(not(target_os = "linux"))]
pub(crate) fn lower_priority(_nice: i32) {}

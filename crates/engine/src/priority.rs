//! Background threads at a lower CPU priority than the threads serving clients.

/// Gives the calling thread nice value `nice` (on Linux a thread's own; elsewhere it would
/// be the process's, so nothing is done). Raising one's own nice value needs no privilege;
/// a failure leaves the thread as it was, which is only slower for the clients beside it.
pub(crate) fn lower_priority(nice: i32) {
    if nice == 0 || !cfg!(target_os = "linux") {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on the calling thread's own id.
    let done = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
    #[cfg(not(target_os = "linux"))]
    let done = 0;
    if done != 0 {
        tracing::debug!(nice, error = %std::io::Error::last_os_error(), "background priority unchanged");
    }
}

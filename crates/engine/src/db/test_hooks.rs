//! Pause points for tests that need one interleaving of the background, the writers and a
//! reader. Compiled for tests only.

use super::Inner;
use parking_lot::Mutex;

type Hook = Mutex<Option<Box<dyn Fn(&Inner) + Send + Sync>>>;

#[derive(Default)]
pub(super) struct TestHooks {
    /// Run by `install` after the manifest took its edit, before the new super version is
    /// swapped in.
    pub(super) before_swap: Hook,
    /// Run by a get between loading the super version and reading the visible seqno.
    pub(super) after_super_version: Hook,
}

fn run(hook: &Hook, inner: &Inner) {
    if let Some(f) = &*hook.lock() {
        f(inner);
    }
}

impl TestHooks {
    pub(super) fn before_swap(&self, inner: &Inner) {
        run(&self.before_swap, inner);
    }

    pub(super) fn after_super_version(&self, inner: &Inner) {
        run(&self.after_super_version, inner);
    }
}

//! Pause points for tests that need one interleaving of the background, the writers and a
//! reader. Compiled for tests only. Generic over what a hook is shown (the database's
//! parts), so this module needs nothing above it.

use parking_lot::Mutex;

type Hook<T> = Mutex<Option<Box<dyn Fn(&T) + Send + Sync>>>;

pub(super) struct TestHooks<T> {
    /// Run by `install` after the manifest took its edit, before the new super version is
    /// swapped in.
    pub(super) before_swap: Hook<T>,
    /// Run by a get between loading the super version and reading the visible seqno.
    pub(super) after_super_version: Hook<T>,
    /// Run by a query between loading its super version and its second read of the index
    /// set.
    pub(super) query_super_version: Hook<T>,
}

impl<T> Default for TestHooks<T> {
    fn default() -> Self {
        TestHooks {
            before_swap: Mutex::new(None),
            after_super_version: Mutex::new(None),
            query_super_version: Mutex::new(None),
        }
    }
}

fn run<T>(hook: &Hook<T>, inner: &T) {
    if let Some(f) = &*hook.lock() {
        f(inner);
    }
}

impl<T> TestHooks<T> {
    pub(super) fn before_swap(&self, inner: &T) {
        run(&self.before_swap, inner);
    }

    pub(super) fn after_super_version(&self, inner: &T) {
        run(&self.after_super_version, inner);
    }

    pub(super) fn query_super_version(&self, inner: &T) {
        run(&self.query_super_version, inner);
    }
}

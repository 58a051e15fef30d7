//! The database under test and its storage: open, crash, reopen.

use super::config::{count_gc, cov, fast_nand, Config, StorageSpec};
use cerberus_engine::storage::{CrashModel, FaultStorage, MemStorage, NandStorage, StorageRef};
use cerberus_engine::{BackgroundRunner, BackgroundStep, Db, StorageKind};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// ---------------------------------------------------------------------------------------
// The database under test and its storage.

pub struct Host {
    pub cfg: Config,
    dir: Option<tempfile::TempDir>,
    mem: Option<StorageRef>,
    pub fault: Option<FaultStorage>,
    pub db: Option<Arc<Db>>,
    runner: Vec<std::thread::JoinHandle<()>>,
    /// Bumped by every reopen: snapshots and iterators of older instances must fail.
    pub epoch: u64,
}

impl Host {
    pub fn new(cfg: &Config) -> Result<Host, String> {
        let mut h = Host {
            cfg: cfg.clone(),
            dir: None,
            mem: None,
            fault: None,
            db: None,
            runner: Vec::new(),
            epoch: 0,
        };
        match cfg.storage {
            StorageSpec::Posix | StorageSpec::Nand => {
                h.dir = Some(tempfile::tempdir().map_err(|e| e.to_string())?)
            }
            StorageSpec::Mem => h.mem = Some(Arc::new(MemStorage::new())),
            StorageSpec::NandMem => {
                h.mem = Some(Arc::new(NandStorage::new(
                    Arc::new(MemStorage::new()),
                    fast_nand(),
                )))
            }
            StorageSpec::Fault => {
                // Crashes leave what a disk can: torn lengths, unsynced pages kept or zeroed
                // in any order. The draws follow the log, so a failure replays.
                let fs = FaultStorage::new();
                fs.set_crash_model(CrashModel::Disk { seed: 0x5eed });
                h.fault = Some(fs);
            }
        }
        h.open()?;
        Ok(h)
    }

    pub fn open(&mut self) -> Result<(), String> {
        let mut opts = self.cfg.opts.clone();
        // Calls since open, and the runner threads' wake-up.
        let due = Arc::new((Mutex::new(0u64), std::sync::Condvar::new()));
        if self.cfg.runner {
            let due = due.clone();
            opts.background_runner = Some(BackgroundRunner(Arc::new(move || {
                *due.0.lock().unwrap() += 1;
                due.1.notify_all();
            })));
        }
        let db = if let Some(d) = &self.dir {
            let kind = match self.cfg.storage {
                StorageSpec::Nand => StorageKind::Nand(fast_nand()),
                _ => StorageKind::Posix,
            };
            Db::builder(opts).storage(kind).open(d.path())
        } else if let Some(m) = &self.mem {
            Db::builder(opts).open_storage(m.clone())
        } else {
            let fs = self.fault.as_ref().unwrap();
            Db::builder(opts).open_storage(Arc::new(fs.clone()))
        };
        let db = Arc::new(db.map_err(|e| format!("open failed: {e}"))?);
        if self.cfg.runner {
            // `background_threads` runner threads (a backfill job waits for a flush job, so
            // one thread is not enough): each runs jobs whenever the database asks, and at
            // least every idle_settle_ms, until it is idle.
            let idle = Duration::from_millis(self.cfg.opts.idle_settle_ms.max(1));
            for _ in 0..self.cfg.opts.background_threads {
                let (weak, due) = (Arc::downgrade(&db), due.clone());
                self.runner.push(std::thread::spawn(move || {
                    let mut seen = 0;
                    loop {
                        {
                            let mut n = due.0.lock().unwrap();
                            if *n == seen {
                                n = due.1.wait_timeout(n, idle).unwrap().0;
                            }
                            seen = *n;
                        }
                        let Some(db) = weak.upgrade() else {
                            return;
                        };
                        loop {
                            cov("Db::run_background_job");
                            match db.run_background_job() {
                                BackgroundStep::Ran(_) => continue,
                                BackgroundStep::Idle(_) => break,
                                BackgroundStep::Stopped => return,
                            }
                        }
                    }
                }));
            }
        }
        self.db = Some(db);
        self.epoch += 1;
        cov("Db::open");
        Ok(())
    }

    pub fn db(&self) -> &Db {
        self.db.as_ref().expect("database open")
    }

    /// Closes (or, `crash` on the fault storage, cuts power) and opens again.
    pub fn reopen(&mut self, crash: bool) -> Result<(), String> {
        match (self.fault.clone(), crash) {
            (Some(fs), true) => {
                if let Some(db) = &self.db {
                    count_gc(db);
                }
                fs.inject(None);
                fs.crash();
                drop(self.db.take());
                self.join_runner();
                fs.restart();
            }
            _ => {
                if let Some(db) = self.db.take() {
                    cov("Db::close");
                    count_gc(&db);
                    let r = db.close();
                    drop(db);
                    self.join_runner();
                    r.map_err(|e| format!("close failed: {e}"))?;
                }
            }
        }
        self.open()
    }

    pub fn join_runner(&mut self) {
        for t in self.runner.drain(..) {
            t.join().expect("runner thread");
        }
    }
}

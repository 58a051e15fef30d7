//! A PostgreSQL server this run starts and stops: a cluster in a temporary directory
//! (`initdb`, trust authentication, C locale so text sorts by bytes as the engine's keys do),
//! started by `pg_ctl` on a free loopback port with its socket in that directory, stopped
//! (`pg_ctl stop -m fast`) and the directory removed when the guard drops, also on an error
//! or a panic. PostgreSQL refuses to run as root: as root, its programs run as the `postgres`
//! user (the Debian package's), who is given the directory.

use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// Where the Debian package puts PostgreSQL 15's programs (`initdb` is not on its PATH).
const DEBIAN_BIN: &str = "/usr/lib/postgresql/15/bin";

/// The directory holding `initdb` and `pg_ctl`: PATH's, else the Debian package's.
pub fn bin_dir() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from(DEBIAN_BIN)])
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
}

/// A running server; stopped and removed on drop.
pub struct PgServer {
    bin: PathBuf,
    dir: tempfile::TempDir,
    /// (uid, gid) the programs run as when this process is root.
    user: Option<(u32, u32)>,
    pub port: u16,
}

/// The settings a user would give the server for the comparison (see `flights_pg.rs`).
pub struct Settings {
    pub shared_buffers_bytes: u64,
    /// `synchronous_commit`: off when the device acknowledges a write before it is synced.
    pub synchronous_commit: bool,
}

impl std::fmt::Display for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "shared_buffers = {}kB, synchronous_commit = {}, fsync = on",
            self.shared_buffers_bytes / 1024,
            if self.synchronous_commit { "on" } else { "off" }
        )
    }
}

impl PgServer {
    pub fn start(settings: &Settings) -> Result<PgServer> {
        let bin = bin_dir().context(
            "PostgreSQL's initdb is not on PATH nor in /usr/lib/postgresql/15/bin \
             (scripts/install-peers installs it)",
        )?;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let user = match unsafe { libc::geteuid() } {
            0 => Some(postgres_user()?),
            _ => None,
        };
        let dir = tempfile::Builder::new().prefix("cerberus-pg").tempdir()?;
        if let Some((uid, gid)) = user {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
        }
        let data = dir.path().join("data");
        let mut server = PgServer {
            bin,
            dir,
            user,
            port: 0,
        };
        server.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "cerberus".as_ref(),
                "--auth=trust".as_ref(),
                "--locale=C".as_ref(),
                "--encoding=UTF8".as_ref(),
            ],
        )?;
        server.port = free_port()?;
        let opts = format!(
            "-p {} -h 127.0.0.1 -k {} -c shared_buffers={}kB -c synchronous_commit={} \
             -c fsync=on",
            server.port,
            server.dir.path().display(),
            settings.shared_buffers_bytes / 1024,
            if settings.synchronous_commit {
                "on"
            } else {
                "off"
            },
        );
        let log = server.dir.path().join("server.log");
        server.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                opts.as_ref(),
                "-w".as_ref(),
                "start".as_ref(),
            ],
        )?;
        Ok(server)
    }

    /// A client over loopback TCP.
    pub fn connect(&self) -> Result<postgres::Client> {
        let url = format!(
            "host=127.0.0.1 port={} user=cerberus dbname=postgres",
            self.port
        );
        postgres::Client::connect(&url, postgres::NoTls).context("connecting to PostgreSQL")
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs one of PostgreSQL's programs (as `postgres` when root); fails with its output.
    fn run(&self, program: &str, args: &[&std::ffi::OsStr]) -> Result<()> {
        let mut cmd = Command::new(self.bin.join(program));
        cmd.args(args).current_dir(self.dir.path());
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
        }
        let out = cmd.output().with_context(|| format!("running {program}"))?;
        if !out.status.success() {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            bail!(
                "{program} failed: {}{}{log}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(())
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.port == 0 {
            return;
        }
        let data = self.data();
        let args = [
            "-D".as_ref(),
            data.as_os_str(),
            "-m".as_ref(),
            "fast".as_ref(),
        ];
        let stop = ["stop".as_ref()];
        let all: Vec<&std::ffi::OsStr> = args.iter().chain(&stop).copied().collect();
        if let Err(e) = self.run("pg_ctl", &all) {
            eprintln!("stopping PostgreSQL: {e:#}");
        }
    }
}

/// The `postgres` user's ids.
fn postgres_user() -> Result<(u32, u32)> {
    let name = CString::new("postgres")?;
    // SAFETY: a NUL-terminated name; the record getpwnam returns is static (not thread-safe:
    // read at once, and only the one server a run starts looks it up).
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        bail!("running as root, and there is no `postgres` user to run PostgreSQL as");
    }
    // SAFETY: not null, checked above.
    let pw = unsafe { &*pw };
    Ok((pw.pw_uid, pw.pw_gid))
}

/// A loopback port free now (bound to port 0 and let go).
fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

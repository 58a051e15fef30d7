//! `cerberus ns create|configure|destroy|list`: namespaces, with the admin credential.

use crate::session::{connect, NsRef, Session};
use crate::target::{AdminTarget, DataTarget, NsAuth};
use crate::transfer;
use anyhow::{bail, Context, Result};
use cerberus_device::ADMIN_SECRET_FILE;
use cerberus_host::{BlockingClient, NamespaceSettings};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// A namespace's settings on the command line: each one given replaces the one it had.
#[derive(Args, Clone, Debug, Default)]
#[command(next_help_heading = "Settings")]
pub struct SettingsArgs {
    /// Live bytes it may hold (K, M, G, T; `none`)
    ///
    /// Keys, values and index entries of its newest versions; stores past it are refused
    /// with "capacity exceeded". A number with an optional K, M, G or T (powers of 1024), or
    /// `none`.
    #[arg(long, value_name = "BYTES", value_parser = parse_capacity)]
    pub capacity: Option<Capacity>,
    /// I/O share beyond reservations (1 to 10000)
    #[arg(long, value_name = "W")]
    pub weight: Option<u32>,
    /// Operations/s served even under contention
    #[arg(long, value_name = "OPS")]
    pub reservation_ops: Option<u64>,
    /// Bytes/s served even under contention
    #[arg(long, value_name = "BYTES")]
    pub reservation_bytes: Option<u64>,
    /// Operations/s never exceeded (0: no limit)
    #[arg(long, value_name = "OPS")]
    pub limit_ops: Option<u64>,
    /// Bytes/s never exceeded (0: no limit)
    #[arg(long, value_name = "BYTES")]
    pub limit_bytes: Option<u64>,
}

/// A capacity given on the command line: a number of bytes, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity(pub Option<u64>);

fn parse_capacity(s: &str) -> Result<Capacity, String> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(Capacity(None));
    }
    let (digits, shift) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(format!("unknown unit {c:?} (K, M, G or T)")),
            };
            (&s[..i], shift)
        }
        _ => (s, 0),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a number of bytes"))?;
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{s} is too large"))?;
    if bytes == 0 {
        return Err("a capacity is at least 1 byte (`none` for no capacity)".into());
    }
    Ok(Capacity(Some(bytes)))
}

impl SettingsArgs {
    fn any(&self) -> bool {
        self.capacity.is_some()
            || self.weight.is_some()
            || self.reservation_ops.is_some()
            || self.reservation_bytes.is_some()
            || self.limit_ops.is_some()
            || self.limit_bytes.is_some()
    }

    /// `base` with the settings given here in place of its own.
    pub fn over(&self, base: NamespaceSettings) -> NamespaceSettings {
        NamespaceSettings {
            capacity: self.capacity.map_or(base.capacity, |c| c.0),
            weight: self.weight.unwrap_or(base.weight),
            reservation_ops: self.reservation_ops.unwrap_or(base.reservation_ops),
            reservation_bytes: self.reservation_bytes.unwrap_or(base.reservation_bytes),
            limit_ops: self.limit_ops.unwrap_or(base.limit_ops),
            limit_bytes: self.limit_bytes.unwrap_or(base.limit_bytes),
        }
    }
}

/// Namespace `nsid`'s settings as its stats show them.
fn current_settings(client: &BlockingClient, nsid: u32) -> Result<NamespaceSettings> {
    let doc = client.namespace(nsid).stats()?;
    let Some(shares) = doc.get("shares") else {
        bail!("the device does not report namespace settings (older than quotas)");
    };
    let n = |v: &serde_json::Value, k: &str| v.get(k).and_then(serde_json::Value::as_u64);
    Ok(NamespaceSettings {
        capacity: n(&doc, "capacity"),
        weight: n(shares, "weight").unwrap_or(1) as u32,
        reservation_ops: n(shares, "reservation_ops").unwrap_or(0),
        reservation_bytes: n(shares, "reservation_bytes").unwrap_or(0),
        limit_ops: n(shares, "limit_ops").unwrap_or(0),
        limit_bytes: n(shares, "limit_bytes").unwrap_or(0),
    })
}

#[derive(Subcommand)]
pub enum NsCmd {
    /// Creates a namespace; prints its id and credential (shown only once).
    ///
    /// With --export the output is shell code that sets CERBERUS_NS and CERBERUS_SECRET, the
    /// variables the data commands read: `eval "$(cerberus ns create app --export)"`.
    Create {
        /// A name for it (shown by `ns list`).
        name: String,
        /// Print {"nsid": ..., "secret": ...}.
        #[arg(long, conflicts_with = "export")]
        json: bool,
        /// Print `export CERBERUS_NS=... CERBERUS_SECRET=...` for a shell's eval.
        #[arg(long)]
        export: bool,
        #[command(flatten)]
        settings: SettingsArgs,
        #[command(flatten)]
        target: AdminTarget,
    },
    /// Issues a namespace a new credential and prints it (shown only once); the old one is
    /// refused from then on, on every wire, by connections that proved it too.
    ///
    /// For a lost credential, or one that leaked. With --export the output is shell code,
    /// as `ns create --export` prints: `eval "$(cerberus ns rekey app --export)"`.
    Rekey {
        /// The namespace: its id or its name.
        ns: String,
        /// Print {"nsid": ..., "secret": ...}.
        #[arg(long, conflicts_with = "export")]
        json: bool,
        /// Print `export CERBERUS_NS=... CERBERUS_SECRET=...` for a shell's eval.
        #[arg(long)]
        export: bool,
        #[command(flatten)]
        target: AdminTarget,
    },
    /// Changes a namespace's settings: those given replace its own, the others stay.
    Configure {
        /// The namespace: its id or its name.
        ns: String,
        #[command(flatten)]
        settings: SettingsArgs,
        /// Refuse its writes ("namespace is read-only"); reads go on (a cluster move sets it)
        #[arg(long, conflicts_with = "writable")]
        read_only: bool,
        /// Take its writes again
        #[arg(long)]
        writable: bool,
        #[command(flatten)]
        target: AdminTarget,
    },
    /// Destroys a namespace and all its data.
    Destroy {
        /// The namespace: its id or its name.
        ns: String,
        #[command(flatten)]
        target: AdminTarget,
    },
    /// Writes a namespace's records and index definitions, as JSON lines, to standard output
    /// (or --output): `cerberus ns export app > app.jsonl`.
    ///
    /// Read at one snapshot, through a device iterator (writes made meanwhile are not in
    /// it), with the namespace's own credential (--secret or CERBERUS_SECRET). The last line
    /// holds the count and digest `ns import` checks.
    Export {
        /// The namespace: its id or its name.
        namespace: String,
        /// Write here instead of standard output (made with mode 0600: it holds the data).
        #[arg(short, long)]
        output: Option<PathBuf>,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Stores what `ns export` wrote into a namespace: its indexes first, then its records
    /// in batches, then checks the count and digest of the export's end line.
    ///
    /// The namespace exists (`ns create` it, empty or not: keys of the export replace its
    /// own) and is opened with its own credential. Reads FILE, or standard input.
    Import {
        /// The namespace: its id or its name.
        namespace: String,
        /// The export (default or `-`: standard input).
        file: Option<PathBuf>,
        #[command(flatten)]
        target: DataTarget,
    },
    /// Lists namespaces: id and name, one a line (and `read-only` after a read-only one's).
    List {
        /// Print a JSON array of {"nsid": ..., "name": ..., "read_only": ...}.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: AdminTarget,
    },
}

pub fn run(cmd: NsCmd) -> Result<()> {
    let export = matches!(
        &cmd,
        NsCmd::Create { export: true, .. } | NsCmd::Rekey { export: true, .. }
    );
    let done = run_command(cmd);
    if export && done.is_err() {
        // The output goes to a shell's eval, which would run nothing and succeed, leaving
        // the variables unset for the next command to trip on: a command that fails.
        println!("false");
    }
    done
}

fn run_command(cmd: NsCmd) -> Result<()> {
    let target = match &cmd {
        NsCmd::Export {
            namespace,
            output,
            target,
        } => return export(namespace, output.as_deref(), target),
        NsCmd::Import {
            namespace,
            file,
            target,
        } => return import(namespace, file.as_deref(), target),
        NsCmd::Create { target, .. }
        | NsCmd::Rekey { target, .. }
        | NsCmd::Configure { target, .. }
        | NsCmd::Destroy { target, .. }
        | NsCmd::List { target, .. } => target,
    };
    let secret = target.auth.admin_secret.as_deref().with_context(|| {
        format!(
            "namespace commands need the admin credential: --admin-secret or \
             CERBERUS_ADMIN_SECRET (the device writes it to DATA_DIR/{ADMIN_SECRET_FILE})"
        )
    })?;
    let client = connect(&target.conn)?;
    client
        .authenticate_admin(secret)
        .context("authenticating as admin")?;
    match &cmd {
        NsCmd::Create {
            name,
            json,
            export,
            settings,
            ..
        } => create(&client, name, settings, *json, *export)?,
        NsCmd::Rekey {
            ns, json, export, ..
        } => {
            let nsid = NsRef::parse(ns).resolve(&client)?;
            let secret = client
                .rekey_namespace(nsid)
                .with_context(|| format!("rekeying namespace {ns}"))?;
            print_credential(nsid, &secret, *json, *export);
            eprintln!("namespace {ns}: new secret issued; the old one is refused from now on");
        }
        NsCmd::Configure {
            ns,
            settings,
            read_only,
            writable,
            ..
        } => {
            let nsid = &NsRef::parse(ns).resolve(&client)?;
            if !settings.any() && !read_only && !writable {
                bail!(
                    "nothing to change: give --capacity, --weight, --reservation-ops, ..., \
                     --read-only or --writable"
                );
            }
            if settings.any() {
                let s = settings.over(current_settings(&client, *nsid)?);
                client.configure_namespace(*nsid, &s)?;
            }
            if *read_only || *writable {
                client.set_read_only(*nsid, *read_only)?;
            }
            eprintln!("namespace {nsid} configured");
        }
        NsCmd::Destroy { ns, .. } => {
            let nsid = NsRef::parse(ns).resolve(&client)?;
            client.destroy_namespace(nsid)?;
            eprintln!("namespace {nsid} destroyed");
        }
        // Taken with the namespace's credential, above.
        NsCmd::Export { .. } | NsCmd::Import { .. } => {}
        NsCmd::List { json, .. } => {
            let list = client.list_namespaces()?;
            // From each one's stats (false if it went meanwhile).
            let read_only = |nsid: u32| {
                let doc = client.namespace(nsid).stats().ok();
                doc.and_then(|d| d.get("read_only")?.as_bool())
                    .unwrap_or(false)
            };
            if *json {
                let v: Vec<_> = list
                    .iter()
                    .map(|e| {
                        serde_json::json!({
                            "nsid": e.nsid, "name": e.name, "read_only": read_only(e.nsid)
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(v));
            } else {
                for e in list {
                    match read_only(e.nsid) {
                        true => println!("{}\t{}\tread-only", e.nsid, e.name),
                        false => println!("{}\t{}", e.nsid, e.name),
                    }
                }
            }
        }
    }
    Ok(())
}

/// Creates namespace `name` with `settings` and prints its credential.
fn create(
    client: &BlockingClient,
    name: &str,
    settings: &SettingsArgs,
    json: bool,
    export: bool,
) -> Result<()> {
    if !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()) {
        bail!(
            "a name of digits only ({name}) would read as a namespace id wherever a command \
             takes one: pick a name with a letter in it"
        );
    }
    let created = if settings.any() {
        let s = settings.over(NamespaceSettings::default());
        client.create_namespace_with(name, &s)
    } else {
        client.create_namespace(name)
    };
    let (nsid, secret) = created.map_err(|e| match e {
        cerberus_host::Error::NamespaceExists(_) => anyhow::anyhow!(
            "namespace {name:?} exists: its secret was printed when it was created; \
                 pick another name, or `cerberus ns rekey {name}` for a new secret (the \
                 old one stops working)"
        ),
        e => e.into(),
    })?;
    print_credential(nsid, &secret, json, export);
    Ok(())
}

/// `target` with the namespace named on the command line.
fn session_for(namespace: &str, target: &DataTarget) -> Result<Session> {
    let with = DataTarget {
        conn: target.conn.clone(),
        auth: NsAuth {
            ns: Some(namespace.to_string()),
            secret: target.auth.secret.clone(),
        },
        tenant: target.tenant.clone(),
    };
    Session::open(&with)
}

fn export(namespace: &str, output: Option<&std::path::Path>, target: &DataTarget) -> Result<()> {
    let s = session_for(namespace, target)?;
    let done = match output {
        Some(path) => {
            let mut o = std::fs::OpenOptions::new();
            o.write(true).create_new(true);
            #[cfg(unix)]
            std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
            let f = o
                .open(path)
                .with_context(|| format!("creating {}", path.display()))?;
            transfer::export(&s.ns, &mut std::io::BufWriter::new(f))?
        }
        None => transfer::export(
            &s.ns,
            &mut std::io::BufWriter::new(std::io::stdout().lock()),
        )?,
    };
    eprintln!("exported namespace {namespace}: {done}");
    Ok(())
}

fn import(namespace: &str, file: Option<&std::path::Path>, target: &DataTarget) -> Result<()> {
    let s = session_for(namespace, target)?;
    let frame =
        s.ns.client()
            .device_info()
            .map_or(1 << 20, |i| i.max_frame_body as usize);
    let done = match file.filter(|f| f.as_os_str() != "-") {
        Some(path) => {
            let f =
                std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
            transfer::import(&s.ns, s.limits, frame, &mut std::io::BufReader::new(f))?
        }
        None => transfer::import(&s.ns, s.limits, frame, &mut std::io::stdin().lock())?,
    };
    eprintln!("imported into namespace {namespace}: {done}");
    Ok(())
}

/// A namespace's id and secret, as `--json`, `--export` or plain lines ask.
fn print_credential(nsid: u32, secret: &str, json: bool, export: bool) {
    if json {
        println!("{}", serde_json::json!({"nsid": nsid, "secret": secret}));
    } else if export {
        println!(
            "export CERBERUS_NS={nsid} CERBERUS_SECRET={}",
            shell_quote(secret)
        );
    } else {
        println!("nsid: {nsid}");
        println!("secret: {secret}");
    }
}

/// `s` as one shell word: kept as it is when it holds only characters no shell treats
/// specially (the device's hex secrets), else in single quotes, since `eval` runs it.
fn shell_quote(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_.:/+=@%,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_capacity, shell_quote, Capacity};

    #[test]
    fn capacities_take_units_and_none() {
        assert_eq!(parse_capacity("1000"), Ok(Capacity(Some(1000))));
        assert_eq!(parse_capacity("2K"), Ok(Capacity(Some(2048))));
        assert_eq!(parse_capacity("3g"), Ok(Capacity(Some(3 << 30))));
        assert_eq!(parse_capacity("none"), Ok(Capacity(None)));
        assert!(parse_capacity("0").is_err());
        assert!(parse_capacity("5X").is_err());
        assert!(parse_capacity("99999999999T").is_err());
        assert!(parse_capacity("").is_err());
    }

    #[test]
    fn secrets_are_one_shell_word() {
        assert_eq!(shell_quote("0a1b2c"), "0a1b2c");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b$(x)"), "'a b$(x)'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}

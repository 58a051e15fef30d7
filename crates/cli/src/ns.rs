//! `cerberus ns create|destroy|list`: namespaces, with the admin credential.

use crate::session::connect;
use crate::AdminTarget;
use anyhow::{Context, Result};
use cerberus_device::ADMIN_SECRET_FILE;
use clap::Subcommand;

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
        target: AdminTarget,
    },
    /// Destroys a namespace and all its data.
    Destroy {
        /// Id of the namespace.
        nsid: u32,
        #[command(flatten)]
        target: AdminTarget,
    },
    /// Lists namespaces: id and name, one a line.
    List {
        /// Print a JSON array of {"nsid": ..., "name": ...}.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        target: AdminTarget,
    },
}

pub fn run(cmd: NsCmd) -> Result<()> {
    let target = match &cmd {
        NsCmd::Create { target, .. }
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
            name, json, export, ..
        } => {
            let (nsid, secret) = client.create_namespace(name.as_str())?;
            if *json {
                println!("{}", serde_json::json!({"nsid": nsid, "secret": secret}));
            } else if *export {
                println!(
                    "export CERBERUS_NS={nsid} CERBERUS_SECRET={}",
                    shell_quote(&secret)
                );
            } else {
                println!("nsid: {nsid}");
                println!("secret: {secret}");
            }
        }
        NsCmd::Destroy { nsid, .. } => {
            client.destroy_namespace(*nsid)?;
            eprintln!("namespace {nsid} destroyed");
        }
        NsCmd::List { json, .. } => {
            let list = client.list_namespaces()?;
            if *json {
                let v: Vec<_> = list
                    .iter()
                    .map(|e| serde_json::json!({"nsid": e.nsid, "name": e.name}))
                    .collect();
                println!("{}", serde_json::Value::Array(v));
            } else {
                for e in list {
                    println!("{}\t{}", e.nsid, e.name);
                }
            }
        }
    }
    Ok(())
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
    use super::shell_quote;

    #[test]
    fn secrets_are_one_shell_word() {
        assert_eq!(shell_quote("0a1b2c"), "0a1b2c");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("a b$(x)"), "'a b$(x)'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}

//! How the CLI prints an error: the error and its causes on one line.

/// The error and its causes on one line, each said once: a cause whose text is already in
/// the line (an error that prints its source too) is left out.
pub(crate) fn error_text(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let msg = cause.to_string();
        if out.is_empty() {
            out = msg;
        } else if !msg.is_empty() && !out.contains(&msg) {
            out.push_str(": ");
            out.push_str(&msg);
        }
    }
    out
}

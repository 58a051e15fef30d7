//! The one place an engine error becomes a wire status (by its kind, through proto's
//! `engine_status!`, the mapping the Python bindings share).

use cerberus_engine::Error as EngineError;
use cerberus_proto::Status;

/// The status and message a command fails with for engine error `e`. Internal errors and
/// corruption are logged: the client sees only the message.
pub(crate) fn engine(e: EngineError) -> (Status, String) {
    let status = cerberus_proto::engine_status!(e.kind());
    if status == Status::InternalError || status == Status::Corrupted {
        tracing::error!(error = %e, "engine error");
    }
    (status, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::engine;
    use cerberus_engine::Error as EngineError;
    use cerberus_proto::Status;

    #[test]
    fn engine_errors_answer_with_the_status_of_their_kind() {
        let io = || std::io::Error::other("x");
        for (e, want) in [
            (EngineError::UnknownNamespace(3), Status::InvalidNamespace),
            (EngineError::io("f", io()), Status::InternalError),
            (EngineError::corruption("f", 1, "bad"), Status::Corrupted),
            (EngineError::InvalidQuery("q".into()), Status::InvalidField),
            (
                EngineError::InvalidArgument("a".into()),
                Status::InvalidField,
            ),
            (EngineError::UnknownIndex("a".into()), Status::IndexNotFound),
            (
                EngineError::NamespaceExists("n".into()),
                Status::NamespaceExists,
            ),
            (EngineError::Closed, Status::ShuttingDown),
            (
                EngineError::TooManyIndexes { ns: 1, limit: 16 },
                Status::IndexLimit,
            ),
            (
                EngineError::SnapshotExpired { max_age_ms: 1 },
                Status::SnapshotExpired,
            ),
            (EngineError::Background("b".into()), Status::InternalError),
            (EngineError::NamespaceReadOnly(4), Status::NamespaceReadOnly),
            (
                EngineError::KeyTooLarge { len: 2, limit: 1 },
                Status::InvalidKeySize,
            ),
            (
                EngineError::ValueTooLarge { len: 2, limit: 1 },
                Status::InvalidValueSize,
            ),
        ] {
            let message = e.to_string();
            assert_eq!(engine(e), (want, message));
        }
    }
}

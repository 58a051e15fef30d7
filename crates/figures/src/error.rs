//! The one error of the figures: what was being done, and why, as a chain of sources (which
//! `{:#}` of an `anyhow::Error` made of it prints `: `-separated, as the bench does).

/// Why a figure or table could not be made.
#[derive(Debug, thiserror::Error)]
pub enum FigureError {
    /// A file or directory could not be read, written or made.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A file is not JSON, or not the document it should be.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The input cannot be drawn: nothing to plot, a field missing, no font.
    #[error("{0}")]
    Input(String),
    /// The drawing library failed.
    #[error("{0}")]
    Draw(String),
    /// What was being done when `source` happened.
    #[error("{what}")]
    While {
        /// What was being done, e.g. `reading FILE`.
        what: String,
        /// The error it met.
        #[source]
        source: Box<FigureError>,
    },
}

/// A result of the figures.
pub type Result<T, E = FigureError> = std::result::Result<T, E>;

impl FigureError {
    /// The error and its sources, `: `-separated (the warnings of skipped files).
    pub fn chain(&self) -> String {
        let mut out = self.to_string();
        let mut next = std::error::Error::source(self);
        while let Some(e) = next {
            out += &format!(": {e}");
            next = e.source();
        }
        out
    }
}

/// The error of input that cannot be drawn.
pub(crate) fn input(msg: impl Into<String>) -> FigureError {
    FigureError::Input(msg.into())
}

/// Returns an [`FigureError::Input`] made with `format!`.
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::input(format!($($arg)*)))
    };
}
pub(crate) use bail;

/// Says what was being done when a result failed (or an option was empty).
pub(crate) trait Context<T> {
    fn context(self, what: impl Into<String>) -> Result<T>;
    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: Into<FigureError>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.with_context(|| what)
    }

    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| FigureError::While {
            what: what().into(),
            source: Box::new(e.into()),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, what: impl Into<String>) -> Result<T> {
        self.ok_or_else(|| input(what))
    }

    fn with_context<S: Into<String>>(self, what: impl FnOnce() -> S) -> Result<T> {
        self.ok_or_else(|| input(what()))
    }
}

#[cfg(feature = "plot")]
impl<E: std::error::Error + Send + Sync> From<plotters::drawing::DrawingAreaErrorKind<E>>
    for FigureError
{
    fn from(e: plotters::drawing::DrawingAreaErrorKind<E>) -> FigureError {
        FigureError::Draw(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_says_what_was_done_then_why() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = Err::<(), _>(io).context("reading x").unwrap_err();
        assert_eq!(e.chain(), "reading x: gone");
        assert_eq!(format!("{:#}", anyhow::Error::from(e)), "reading x: gone");
        assert_eq!(
            None::<u8>.context("no summary").unwrap_err().chain(),
            "no summary"
        );
    }
}

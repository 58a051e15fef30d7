//! The device's data directory: checked before anything is created, and taken away again
//! when a start fails after creating it, so a failed start leaves nothing behind.

use crate::error::DeviceError;
use std::path::{Path, PathBuf};

/// Directories a start created; removed on drop unless the start succeeded.
pub(crate) struct Created {
    outermost: Option<PathBuf>,
}

impl Created {
    /// The start succeeded: what it created stays.
    pub fn keep(mut self) {
        self.outermost = None;
    }
}

impl Drop for Created {
    fn drop(&mut self) {
        if let Some(top) = self.outermost.take() {
            // Only directories this start made, so nothing a user had is touched.
            let _ = std::fs::remove_dir_all(top);
        }
    }
}

/// Makes `dir` (and missing parents), after checking that nothing on its path is a file.
pub(crate) fn create(dir: &Path) -> Result<Created, DeviceError> {
    let created = Created {
        outermost: missing(dir)?,
    };
    std::fs::create_dir_all(dir).map_err(|e| DeviceError::io(dir, e))?;
    Ok(created)
}

/// The outermost of the directories that creating `dir` would make (`None` if it exists).
fn missing(dir: &Path) -> Result<Option<PathBuf>, DeviceError> {
    let mut outermost = None;
    // An error other than "not found" (such as "not a directory" under a file): the
    // ancestors may say why; if they do not, it is the answer.
    let mut unexplained: Option<(PathBuf, std::io::Error)> = None;
    for p in dir.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => break,
            Ok(_) if p == dir => {
                return Err(DeviceError::DataDir(format!(
                    "{} is a file, not a directory",
                    p.display()
                )))
            }
            Ok(_) => {
                return Err(DeviceError::DataDir(format!(
                    "{}: {} is a file, not a directory",
                    dir.display(),
                    p.display()
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                outermost = Some(p.to_path_buf());
            }
            Err(e) => {
                unexplained.get_or_insert((p.to_path_buf(), e));
            }
        }
    }
    match unexplained {
        Some((p, e)) => Err(DeviceError::io(p, e)),
        None => Ok(outermost),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_outermost_missing_directory_and_refuses_files() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        assert_eq!(missing(t).unwrap(), None);
        assert_eq!(missing(&t.join("a/b/c")).unwrap(), Some(t.join("a")));
        std::fs::write(t.join("f"), b"x").unwrap();
        let e = missing(&t.join("f")).unwrap_err().to_string();
        assert!(e.ends_with("f is a file, not a directory"), "{e}");
        let e = missing(&t.join("f/sub")).unwrap_err().to_string();
        assert!(e.contains("f is a file, not a directory"), "{e}");
    }

    #[test]
    fn a_failed_start_removes_what_it_created_and_only_that() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        drop(create(&dir).unwrap());
        assert!(!tmp.path().join("a").exists());
        create(&dir).unwrap().keep();
        assert!(dir.is_dir());
        // It existed: a failed start leaves it alone.
        drop(create(&dir).unwrap());
        assert!(dir.is_dir());
    }
}

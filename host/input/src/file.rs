//! The one safe-file reader: every file wink and its simulator read goes
//! through [`read_file`] (or [`read_text`]).
//!
//! A file is read only when it is a regular file: it is opened without
//! blocking (a FIFO opens at once), and checked as opened, so a symlink's
//! target is what is checked and nothing is swapped in between; a FIFO,
//! device, socket or directory is refused. Its size is checked against the
//! cap from its metadata before anything is read, and the read itself stops
//! one byte past the cap (a file that grows meanwhile, or a `/proc` file
//! whose metadata says 0, is refused too). Errors never echo the content.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("{path}: cannot read: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}: is {what}, not a regular file")]
    NotAFile { path: PathBuf, what: &'static str },
    #[error("{path}: is {size} bytes, more than the {limit} bytes a {kind} may have")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
        kind: &'static str,
    },
    #[error("{path}: is not UTF-8 text")]
    NotText { path: PathBuf },
}

impl FileError {
    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Read { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

fn kind_of(md: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = md.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

/// Read the regular file `path` of at most `limit` bytes; `kind` names it
/// in the size error ("a grants file may have").
pub fn read_file(path: &Path, limit: u64, kind: &'static str) -> Result<Vec<u8>, FileError> {
    use std::os::unix::fs::OpenOptionsExt;
    let read_error = |source| FileError::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(read_error)?;
    let md = file.metadata().map_err(read_error)?;
    if !md.file_type().is_file() {
        return Err(FileError::NotAFile {
            path: path.to_path_buf(),
            what: kind_of(&md),
        });
    }
    let too_large = |size| FileError::TooLarge {
        path: path.to_path_buf(),
        size,
        limit,
        kind,
    };
    if md.len() > limit {
        return Err(too_large(md.len()));
    }
    let mut bytes = Vec::with_capacity(md.len() as usize);
    // Read one byte past the limit: a file that grew meanwhile is refused too.
    file.take(limit + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_file`], as UTF-8 text.
pub fn read_text(path: &Path, limit: u64, kind: &'static str) -> Result<String, FileError> {
    String::from_utf8(read_file(path, limit, kind)?).map_err(|_| FileError::NotText {
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;
    use std::time::{Duration, Instant};

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("wink-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn only_regular_files_within_the_cap_are_read() {
        let dir = scratch("kinds");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = Instant::now();
        let e = read_file(&fifo, 10, "thing").unwrap_err();
        assert!(
            e.to_string().ends_with("fifo: is a FIFO, not a regular file"),
            "{e}"
        );
        let e = read_file(Path::new("/dev/zero"), 10, "thing").unwrap_err();
        assert_eq!(e.to_string(), "/dev/zero: is a device, not a regular file");
        let e = read_file(&dir, 10, "thing").unwrap_err();
        assert!(
            e.to_string().ends_with(": is a directory, not a regular file"),
            "{e}"
        );
        let sparse = dir.join("sparse");
        std::fs::File::create(&sparse).unwrap().set_len(3 << 30).unwrap();
        let e = read_file(&sparse, 1 << 20, "grants file").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("is 3221225472 bytes, more than the 1048576 bytes a grants file may have"),
            "{e}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "nothing blocked or read it all"
        );
        std::fs::write(dir.join("ok"), b"abc").unwrap();
        assert_eq!(read_file(&dir.join("ok"), 3, "thing").unwrap(), b"abc");
        assert!(matches!(
            read_file(&dir.join("ok"), 2, "thing"),
            Err(FileError::TooLarge { size: 3, .. })
        ));
        std::fs::write(dir.join("bin"), b"\xff").unwrap();
        assert!(matches!(
            read_text(&dir.join("bin"), 3, "thing"),
            Err(FileError::NotText { .. })
        ));
        assert!(
            read_file(&dir.join("none"), 3, "thing")
                .unwrap_err()
                .is_not_found()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_whose_metadata_says_nothing_is_still_capped_while_read() {
        // /proc files are regular files of size 0 that read as more.
        let whole = read_file(Path::new("/proc/self/status"), 1 << 20, "thing").unwrap();
        assert!(!whole.is_empty());
        let e = read_file(Path::new("/proc/self/status"), 10, "thing").unwrap_err();
        assert!(
            matches!(
                e,
                FileError::TooLarge {
                    size: 11,
                    limit: 10,
                    ..
                }
            ),
            "{e}"
        );
    }
}

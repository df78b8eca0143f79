//! The files a job reads (its input, key, passphrase, identity and recipients files), known by
//! device and inode, so that an output naming one of them (directly, through a link or a
//! `/proc/self/fd` path) is refused: writing it would destroy what the job reads, a key file
//! among them, and with it every other file that key opens.

use std::fs::{self, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::FileError;

/// The identity of a file (through links): its device and inode.
pub fn file_id(meta: &Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

/// The identity of the file at `path` (through links), if it exists.
pub fn path_id(path: &Path) -> Option<(u64, u64)> {
    fs::metadata(path).ok().map(|m| file_id(&m))
}

/// The identity of what descriptor `fd` of this process is open on, if it is open.
pub fn fd_id(fd: u32) -> Option<(u64, u64)> {
    path_id(Path::new(&format!("/proc/self/fd/{fd}")))
}

/// The files a job reads, each with what it is in words ("key file k.key").
#[derive(Debug, Default)]
pub struct FilesRead {
    files: Vec<(String, (u64, u64))>,
}

impl FilesRead {
    /// Nothing read yet.
    pub fn new() -> Self {
        FilesRead::default()
    }

    /// Notes the file at `path` (`what` says what it is), if it exists.
    pub fn path(&mut self, what: impl Into<String>, path: &Path) {
        self.id(what, path_id(path));
    }

    /// Notes the file `id` names (`what` says what it is), if there is one.
    pub fn id(&mut self, what: impl Into<String>, id: Option<(u64, u64)>) {
        if let Some(id) = id {
            self.files.push((what.into(), id));
        }
    }

    /// Refuses the output `name` (what the user called it) whose file has the metadata
    /// `output` (`None`: nothing there yet) when it is one of the files read. Only a regular
    /// file can be destroyed by writing: a pipe, terminal or device passes.
    pub fn refuse_as_output(&self, name: &str, output: Option<&Metadata>) -> Result<(), FileError> {
        let Some(output) = output.filter(|m| m.is_file()) else {
            return Ok(());
        };
        let id = file_id(output);
        match self.files.iter().find(|(_, read)| *read == id) {
            Some((what, _)) => Err(FileError::OutputIsRead {
                output: name.to_owned(),
                read: what.clone(),
            }),
            None => Ok(()),
        }
    }

    /// [`FilesRead::refuse_as_output`] for the output at `path`.
    pub fn refuse_as_output_path(&self, path: &Path) -> Result<(), FileError> {
        let meta = fs::metadata(path).ok();
        self.refuse_as_output(&path.display().to_string(), meta.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_that_is_a_file_read_is_refused_through_links() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("k.key");
        fs::write(&key, b"00112233445566778899aabbccddeeff").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&key, &link).unwrap();
        let hard = dir.path().join("hard");
        fs::hard_link(&key, &hard).unwrap();
        let mut read = FilesRead::new();
        read.path("key file k.key", &key);
        read.path("nothing there", &dir.path().join("missing"));
        for output in [&key, &link, &hard] {
            let err = read.refuse_as_output_path(output).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "{} is the same file as key file k.key, which is read to make it (writing \
                     to it would destroy it)",
                    output.display()
                )
            );
        }
        read.refuse_as_output_path(&dir.path().join("new")).unwrap();
        read.refuse_as_output_path(Path::new("/dev/null")).unwrap();
    }
}

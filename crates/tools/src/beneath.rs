//! Opening paths beneath a folder in one step the kernel checks, so that
//! nothing racing the tool — a symlink or folder swapped in between a
//! check and the open — can lead a read or a write outside.
//!
//! `openat2(RESOLVE_BENEATH)` (Linux 5.6) resolves the whole path against
//! the folder and fails if any step (`..`, an absolute or relative
//! symlink) would leave it. Where the call is missing, each component is
//! opened with `O_NOFOLLOW` from the one before, so symlinks are refused
//! outright. Every open returns a descriptor; the tools then work on that
//! descriptor, never on the path again.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// `struct open_how` of `openat2(2)`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// A concurrent rename can make the kernel ask for a retry (EAGAIN).
const RETRIES: usize = 16;

/// How to open the last component.
#[derive(Clone, Copy)]
pub enum Open {
    /// A handle on a folder, to create in or list.
    Dir,
    /// A file for reading; a FIFO or device never blocks the open.
    Read,
    /// A file for writing, created when missing (never truncated here: the
    /// caller checks what it opened first).
    Write,
}

impl Open {
    fn flags(self) -> i32 {
        let common = libc::O_CLOEXEC | libc::O_NOCTTY;
        common
            | match self {
                Open::Dir => libc::O_RDONLY | libc::O_DIRECTORY,
                Open::Read => libc::O_RDONLY | libc::O_NONBLOCK,
                Open::Write => libc::O_WRONLY | libc::O_CREAT | libc::O_NONBLOCK,
            }
    }
}

/// Which symlinks a path may pass through.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Those whose targets stay beneath the folder, relative ones only (the
    /// kernel refuses an absolute target under `RESOLVE_BENEATH`).
    Beneath,
    /// None at all: for a path already resolved, so that nothing swapped
    /// in since can add one.
    None,
}

/// Opens `rel` (relative, no `..`) beneath the folder `root`.
pub fn open(root: &Path, rel: &Path, how: Open, links: Links) -> io::Result<File> {
    let root_fd = open_root(root)?;
    let fd = open_at(&root_fd, rel, how, links)?;
    Ok(File::from(fd))
}

/// Makes `rel` and the folders above it beneath `root`; existing ones are fine.
pub fn create_dir_all(root: &Path, rel: &Path, links: Links) -> io::Result<()> {
    let root_fd = open_root(root)?;
    let mut so_far = std::path::PathBuf::new();
    for part in rel.components() {
        let Component::Normal(name) = part else { continue };
        let parent = if so_far.as_os_str().is_empty() { root_fd.try_clone()? } else { open_at(&root_fd, &so_far, Open::Dir, links)? };
        let c_name = c_string(name)?;
        // SAFETY: a plain system call on a descriptor and a NUL-ended name.
        let made = unsafe { libc::mkdirat(parent.as_raw_fd(), c_name.as_ptr(), 0o777) };
        if made != 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(e);
            }
        }
        so_far.push(name);
    }
    // What now stands there must be a folder reached beneath the root.
    open_at(&root_fd, rel, Open::Dir, links).map(drop)
}

/// Removes the file or empty folder `name` in the folder `parent` beneath
/// `root`: the entry itself, never what a symlink there points to.
pub fn remove(root: &Path, parent: &Path, name: &OsStr, links: Links) -> io::Result<()> {
    let root_fd = open_root(root)?;
    let parent = open_at(&root_fd, parent, Open::Dir, links)?;
    let c_name = c_string(name)?;
    // SAFETY: plain system calls on a descriptor and a NUL-ended name.
    let removed = unsafe {
        let mut r = libc::unlinkat(parent.as_raw_fd(), c_name.as_ptr(), 0);
        if r != 0 && *libc::__errno_location() == libc::EISDIR {
            r = libc::unlinkat(parent.as_raw_fd(), c_name.as_ptr(), libc::AT_REMOVEDIR);
        }
        r
    };
    if removed != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn open_root(root: &Path) -> io::Result<OwnedFd> {
    let c_root = c_string(root.as_os_str())?;
    // SAFETY: a plain system call with a NUL-ended path.
    let fd = unsafe { libc::open(c_root.as_ptr(), libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    owned(fd)
}

fn open_at(root: &OwnedFd, rel: &Path, how: Open, links: Links) -> io::Result<OwnedFd> {
    if rel.as_os_str().is_empty() || rel == Path::new(".") {
        return match how {
            Open::Dir => reopen_dir(root),
            _ => Err(io::Error::from_raw_os_error(libc::EISDIR)),
        };
    }
    match openat2(root.as_raw_fd(), rel, how, links) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => walk(root, rel, how),
        other => other,
    }
}

fn openat2(dir: RawFd, rel: &Path, how: Open, links: Links) -> io::Result<OwnedFd> {
    let c_rel = c_string(rel.as_os_str())?;
    // openat2 refuses a mode unless it creates.
    let mode = if matches!(how, Open::Write) { 0o666 } else { 0 };
    let no_links = if links == Links::None { libc::RESOLVE_NO_SYMLINKS } else { 0 };
    let open_how = OpenHow { flags: how.flags() as u64, mode, resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS | no_links };
    for _ in 0..RETRIES {
        // SAFETY: `open_how` and the path outlive the call, and the size
        // passed is the structure's.
        let fd = unsafe { libc::syscall(libc::SYS_openat2, dir, c_rel.as_ptr(), &open_how as *const OpenHow, std::mem::size_of::<OpenHow>()) };
        match owned(fd as RawFd) {
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => continue,
            other => return other,
        }
    }
    Err(io::Error::from_raw_os_error(libc::EAGAIN))
}

/// The fallback: one component at a time, none of them a symlink.
fn walk(root: &OwnedFd, rel: &Path, how: Open) -> io::Result<OwnedFd> {
    let parts: Vec<&OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::from_raw_os_error(libc::EXDEV)),
        })
        .collect::<io::Result<_>>()?;
    let mut dir = reopen_dir(root)?;
    for (i, name) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let flags = if last { how.flags() } else { libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC };
        let c_name = c_string(name)?;
        // SAFETY: a plain system call on a descriptor and a NUL-ended name.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), c_name.as_ptr(), flags | libc::O_NOFOLLOW, 0o666) };
        dir = owned(fd)?;
    }
    Ok(dir)
}

fn reopen_dir(root: &OwnedFd) -> io::Result<OwnedFd> {
    // SAFETY: a plain system call; "." names the folder itself.
    let fd = unsafe { libc::openat(root.as_raw_fd(), c".".as_ptr(), Open::Dir.flags()) };
    owned(fd)
}

fn owned(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the descriptor was just returned by the kernel and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn c_string(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path contains a NUL byte"))
}

/// The names in a folder opened with [`Open::Dir`], each with whether it is a folder.
pub fn list(dir: &File) -> io::Result<Vec<(String, bool)>> {
    // The descriptor's own entry in /proc names exactly the folder opened,
    // whatever has been renamed since.
    let entries = std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))?;
    Ok(entries.filter_map(|e| e.ok()).map(|e| (e.file_name().to_string_lossy().into_owned(), e.file_type().is_ok_and(|t| t.is_dir()))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_out_is_refused_and_one_inside_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("in")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("in", dir.path().join("alias")).unwrap();
        let e = open(dir.path(), Path::new("out/x"), Open::Write, Links::Beneath).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{e}");
        assert!(!outside.path().join("x").exists());
        open(dir.path(), Path::new("alias/x"), Open::Write, Links::Beneath).unwrap();
        assert!(dir.path().join("in/x").exists());
        assert!(open(dir.path(), Path::new("alias/x"), Open::Read, Links::None).is_err(), "no link at all when asked");
        create_dir_all(dir.path(), Path::new("a/b/c"), Links::Beneath).unwrap();
        assert!(dir.path().join("a/b/c").is_dir());
        assert!(create_dir_all(dir.path(), Path::new("out/made"), Links::Beneath).is_err());
        assert!(!outside.path().join("made").exists());
    }

    #[test]
    fn the_fallback_walk_refuses_every_symlink() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("in")).unwrap();
        std::os::unix::fs::symlink("in", dir.path().join("alias")).unwrap();
        let root = open_root(dir.path()).unwrap();
        walk(&root, Path::new("in/x"), Open::Write).unwrap();
        assert!(walk(&root, Path::new("in"), Open::Dir).is_ok());
        assert!(walk(&root, Path::new("alias/y"), Open::Write).is_err());
        assert!(walk(&root, Path::new("../y"), Open::Write).is_err());
    }
}

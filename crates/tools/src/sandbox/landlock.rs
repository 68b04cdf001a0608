//! Landlock, spoken with raw system calls: a ruleset is built once in the
//! parent (opening each granted path) and only `landlock_restrict_self` runs
//! in the child between fork and exec, where nothing may allocate or lock.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

const CREATE_RULESET_VERSION: libc::c_uint = 1;
const RULE_PATH_BENEATH: libc::c_uint = 1;

const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
/// Removing and making every kind of file and folder (bits 4–12).
const MAKE_AND_REMOVE: u64 = 0b1_1111_1111 << 4;
const REFER: u64 = 1 << 13;
const TRUNCATE: u64 = 1 << 14;
const IOCTL_DEV: u64 = 1 << 15;
/// The rights a rule on a file (not a folder) may carry.
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;

const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

/// What a grant allows beneath its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read and run files, list folders.
    Read,
    /// Everything: create, write, remove, rename.
    Write,
    /// Read and write an existing device file (`/dev/null`).
    Device,
}

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version this kernel speaks; an error when it has none
/// (too old, or Landlock not enabled at boot).
pub fn abi() -> io::Result<u32> {
    // SAFETY: the version query takes no attribute pointer.
    let v = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<RulesetAttr>(), 0usize, CREATE_RULESET_VERSION) };
    if v < 0 {
        return Err(io::Error::last_os_error());
    }
    u32::try_from(v).map_err(|_| io::Error::other("the kernel reported an impossible Landlock version"))
}

/// A ruleset ready to be enforced on a child.
#[derive(Debug)]
pub struct Ruleset {
    fd: OwnedFd,
}

impl Ruleset {
    /// A ruleset that handles every file-system right this `abi` knows and
    /// allows only `grants`. `scope_sockets` also keeps abstract Unix
    /// sockets outside the sandbox out of reach (ABI 6).
    pub fn new(abi: u32, grants: &[(PathBuf, Access)], scope_sockets: bool) -> io::Result<Self> {
        let handled = handled_rights(abi);
        let mut scoped = 0;
        if abi >= 6 {
            scoped |= SCOPE_SIGNAL;
            if scope_sockets {
                scoped |= SCOPE_ABSTRACT_UNIX_SOCKET;
            }
        }
        let attr = RulesetAttr { handled_access_fs: handled, handled_access_net: 0, scoped };
        // Older kernels take a prefix of the structure.
        let size = match abi {
            ..=3 => 8usize,
            4 | 5 => 16,
            _ => std::mem::size_of::<RulesetAttr>(),
        };
        // SAFETY: `attr` outlives the call and `size` does not exceed it.
        let fd = unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, &attr as *const RulesetAttr, size, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("the kernel returned an impossible descriptor"))?;
        // SAFETY: the descriptor was just created and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let ruleset = Self { fd };
        for (path, access) in grants {
            // A path that cannot be opened (gone, or unreadable to us) simply
            // carries no rule: the command cannot reach it either.
            let _ = ruleset.add(path, *access, handled);
        }
        Ok(ruleset)
    }

    fn add(&self, path: &Path, access: Access, handled: u64) -> io::Result<()> {
        // O_PATH: a handle on the path itself, which needs no read right.
        let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_PATH | libc::O_CLOEXEC).open(path)?;
        let is_dir = file.metadata()?.is_dir();
        let wanted = match access {
            Access::Read => EXECUTE | READ_FILE | READ_DIR,
            Access::Write => handled,
            Access::Device => READ_FILE | WRITE_FILE | IOCTL_DEV,
        };
        let allowed = wanted & handled & if is_dir { u64::MAX } else { FILE_RIGHTS };
        let rule = PathBeneathAttr { allowed_access: allowed, parent_fd: file.as_raw_fd() };
        // SAFETY: `rule` and both descriptors outlive the call.
        let r = unsafe { libc::syscall(libc::SYS_landlock_add_rule, self.fd.as_raw_fd(), RULE_PATH_BENEATH, &rule as *const PathBeneathAttr, 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Enforces the ruleset `fd` on the calling process (and everything it
/// starts). Only system calls: safe between fork and exec.
pub fn restrict_self(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain system calls on integers.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

fn handled_rights(abi: u32) -> u64 {
    let mut rights = EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | MAKE_AND_REMOVE;
    if abi >= 2 {
        rights |= REFER;
    }
    if abi >= 3 {
        rights |= TRUNCATE;
    }
    if abi >= 5 {
        rights |= IOCTL_DEV;
    }
    rights
}

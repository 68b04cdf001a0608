//! Dropping every capability before a command runs. For an ordinary user
//! there is nothing to drop; for root it is what keeps a confined command
//! from reading other processes' memory and environment
//! (`CAP_SYS_PTRACE`), overriding file permissions (`CAP_DAC_*`,
//! `CAP_FOWNER`, `CAP_CHOWN`) or regaining any of it by running a setuid
//! or file-capability program: the bounding set is emptied, so no exec can
//! grant a capability back.

use std::io;

const PR_CAPBSET_DROP: libc::c_int = 24;
const PR_SET_SECUREBITS: libc::c_int = 28;
const PR_CAP_AMBIENT: libc::c_int = 47;
const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
/// Capability numbers the kernel may know (it reports EINVAL past its last).
const CAP_MAX: libc::c_ulong = 64;
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drops every capability of the calling process for good. Only system
/// calls: safe between fork and exec. `privileged` says whether the
/// process may change its bounding set (it runs as root).
pub fn drop_all(privileged: bool) -> io::Result<()> {
    // SAFETY: plain system calls on integers and on structures that
    // outlive them.
    unsafe {
        if privileged {
            // Root's special treatment at exec is switched off and locked.
            let bits = libc::SECBIT_NOROOT | libc::SECBIT_NOROOT_LOCKED | libc::SECBIT_NO_SETUID_FIXUP | libc::SECBIT_NO_SETUID_FIXUP_LOCKED;
            if libc::prctl(PR_SET_SECUREBITS, bits as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            for cap in 0..CAP_MAX {
                if libc::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && *libc::__errno_location() != libc::EINVAL {
                    return Err(io::Error::last_os_error());
                }
            }
        }
        // Ambient capabilities may be missing on old kernels: nothing to clear then.
        libc::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
        let header = CapHeader { version: CAPABILITY_VERSION_3, pid: 0 };
        let none = [CapData { effective: 0, permitted: 0, inheritable: 0 }; 2];
        if libc::syscall(libc::SYS_capset, &header as *const CapHeader, none.as_ptr()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

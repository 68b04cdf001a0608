//! The network switch: a seccomp filter under which `socket` succeeds only
//! for Unix sockets (local pipes between processes) and io_uring, which
//! could open sockets without calling `socket`, cannot be set up. Every
//! refused call fails with EPERM; nothing is killed.

use std::io;

use libc::sock_filter;

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E;
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7;

/// x32 system calls carry this bit on x86-64; none of them is allowed, so
/// the filter cannot be bypassed through the other numbering.
#[cfg(target_arch = "x86_64")]
const X32_BIT: u32 = 0x4000_0000;

const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
const OFFSET_ARG0: u32 = 16;

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;

/// A compiled filter program, kept alive by its owner while children start.
#[derive(Debug)]
pub struct Filter(Vec<sock_filter>);

fn op(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

impl Filter {
    /// The filter that turns the network off.
    pub fn no_network() -> Self {
        let refused = [libc::SYS_io_uring_setup, libc::SYS_io_uring_enter, libc::SYS_io_uring_register];
        let mut p = vec![op(LD_W_ABS, OFFSET_ARCH, 0, 0)];
        // A foreign architecture's calls are refused outright: placeholder
        // jumps, fixed once the two endings' positions are known.
        p.push(op(JEQ_K, NATIVE_ARCH, 0, 0));
        let mut to_deny = vec![p.len() - 1];
        p.push(op(LD_W_ABS, OFFSET_NR, 0, 0));
        #[cfg(target_arch = "x86_64")]
        {
            p.push(op(JGE_K, X32_BIT, 0, 0));
            to_deny.push(p.len() - 1);
        }
        for nr in refused {
            p.push(op(JEQ_K, nr as u32, 0, 0));
            to_deny.push(p.len() - 1);
        }
        // Not `socket`: allowed (the jump to ALLOW is fixed below).
        p.push(op(JEQ_K, libc::SYS_socket as u32, 0, 0));
        let socket_check = p.len() - 1;
        p.push(op(LD_W_ABS, OFFSET_ARG0, 0, 0));
        p.push(op(JEQ_K, libc::AF_UNIX as u32, 0, 0));
        let family_check = p.len() - 1;
        let deny = p.len();
        p.push(op(RET_K, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32, 0, 0));
        let allow = p.len();
        p.push(op(RET_K, libc::SECCOMP_RET_ALLOW, 0, 0));

        let rel = |from: usize, to: usize| u8::try_from(to - from - 1).unwrap_or(u8::MAX);
        // The architecture check jumps to DENY when it does not match.
        let arch = to_deny[0];
        p[arch].jt = 0;
        p[arch].jf = rel(arch, deny);
        for &i in &to_deny[1..] {
            p[i].jt = rel(i, deny);
        }
        p[socket_check].jf = rel(socket_check, allow);
        p[family_check].jt = rel(family_check, allow);
        p[family_check].jf = rel(family_check, deny);
        Self(p)
    }

    /// Installs the filter on the calling process. Only system calls: safe
    /// between fork and exec (after `PR_SET_NO_NEW_PRIVS`).
    pub fn apply(&self) -> io::Result<()> {
        let program = libc::sock_fprog { len: self.0.len() as u16, filter: self.0.as_ptr() as *mut sock_filter };
        // SAFETY: `program` points at instructions that outlive the call;
        // the kernel copies them.
        let r = unsafe { libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &program as *const libc::sock_fprog) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

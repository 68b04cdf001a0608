//! The seccomp filter every confined command runs under. Always: `ioctl`
//! may not push keystrokes into a terminal (`TIOCSTI`) or drive the
//! console (`TIOCLINUX`). With the network off: `socket` succeeds only for
//! Unix sockets (local pipes between processes), and io_uring, which could
//! open sockets without calling `socket`, cannot be set up. Every refused
//! call fails with EPERM; nothing is killed.

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
/// The low word of the second argument (little-endian): `ioctl` takes its
/// request as a 32-bit number, so the high word never matters to the kernel.
const OFFSET_ARG1_LOW: u32 = 24;

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const RET_K: u16 = 0x06;

/// Terminal requests no command may make.
const REFUSED_IOCTLS: [u32; 2] = [libc::TIOCSTI as u32, libc::TIOCLINUX as u32];

/// A compiled filter program, kept alive by its owner while children start.
#[derive(Debug)]
pub struct Filter(Vec<sock_filter>);

/// Where a jump goes, resolved once the program is laid out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Next,
    Deny,
    Ioctl,
    Socket,
}

/// An instruction whose jump targets are labels.
struct Op {
    code: u16,
    k: u32,
    yes: Label,
    no: Label,
}

fn load(offset: u32) -> Op {
    Op { code: LD_W_ABS, k: offset, yes: Label::Next, no: Label::Next }
}

fn jump_if(code: u16, k: u32, yes: Label, no: Label) -> Op {
    Op { code, k, yes, no }
}

fn ret(value: u32) -> Op {
    Op { code: RET_K, k: value, yes: Label::Next, no: Label::Next }
}

impl Filter {
    /// The filter for a command: terminal injection always refused, and
    /// sockets other than Unix ones too when `network` is off.
    pub fn new(network: bool) -> Self {
        let mut ops = vec![load(OFFSET_ARCH), jump_if(JEQ_K, NATIVE_ARCH, Label::Next, Label::Deny), load(OFFSET_NR)];
        #[cfg(target_arch = "x86_64")]
        ops.push(jump_if(JGE_K, X32_BIT, Label::Deny, Label::Next));
        ops.push(jump_if(JEQ_K, libc::SYS_ioctl as u32, Label::Ioctl, Label::Next));
        if !network {
            for nr in [libc::SYS_io_uring_setup, libc::SYS_io_uring_enter, libc::SYS_io_uring_register] {
                ops.push(jump_if(JEQ_K, nr as u32, Label::Deny, Label::Next));
            }
            ops.push(jump_if(JEQ_K, libc::SYS_socket as u32, Label::Socket, Label::Next));
        }
        let mut at = Vec::new();
        ops.push(ret(libc::SECCOMP_RET_ALLOW));
        at.push((Label::Ioctl, ops.len()));
        ops.push(load(OFFSET_ARG1_LOW));
        for request in REFUSED_IOCTLS {
            ops.push(jump_if(JEQ_K, request, Label::Deny, Label::Next));
        }
        ops.push(ret(libc::SECCOMP_RET_ALLOW));
        if !network {
            at.push((Label::Socket, ops.len()));
            ops.push(load(OFFSET_ARG0));
            ops.push(jump_if(JEQ_K, libc::AF_UNIX as u32, Label::Next, Label::Deny));
            ops.push(ret(libc::SECCOMP_RET_ALLOW));
        }
        at.push((Label::Deny, ops.len()));
        ops.push(ret(libc::SECCOMP_RET_ERRNO | libc::EPERM as u32));

        // Jumps only go forward; every label used lies ahead of its jumps
        // (checked by the tests), and the program is far shorter than 256.
        let target = |from: usize, label: Label| -> u8 {
            let to = match label {
                Label::Next => from + 1,
                other => at.iter().find(|(l, _)| *l == other).map_or(from + 1, |(_, i)| *i),
            };
            u8::try_from(to.saturating_sub(from + 1)).unwrap_or(u8::MAX)
        };
        Self(ops.iter().enumerate().map(|(i, op)| sock_filter { code: op.code, jt: target(i, op.yes), jf: target(i, op.no), k: op.k }).collect())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the program on one call, as the kernel would.
    fn verdict(filter: &Filter, nr: i64, arg0: u32, arg1: u32) -> u32 {
        let data = |offset: u32| match offset {
            OFFSET_ARCH => NATIVE_ARCH,
            OFFSET_NR => nr as u32,
            OFFSET_ARG0 => arg0,
            OFFSET_ARG1_LOW => arg1,
            _ => 0,
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let op = &filter.0[pc];
            match op.code {
                LD_W_ABS => acc = data(op.k),
                RET_K => return op.k,
                JEQ_K | JGE_K => {
                    let yes = if op.code == JEQ_K { acc == op.k } else { acc >= op.k };
                    pc += usize::from(if yes { op.jt } else { op.jf });
                }
                _ => panic!("unknown instruction"),
            }
            pc += 1;
        }
    }

    #[test]
    fn unix_sockets_pass_others_and_terminal_injection_do_not() {
        let deny = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let off = Filter::new(false);
        assert_eq!(verdict(&off, libc::SYS_socket, libc::AF_UNIX as u32, 0), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&off, libc::SYS_socket, libc::AF_INET as u32, 0), deny);
        assert_eq!(verdict(&off, libc::SYS_io_uring_setup, 0, 0), deny);
        assert_eq!(verdict(&off, libc::SYS_ioctl, 0, libc::TIOCSTI as u32), deny);
        assert_eq!(verdict(&off, libc::SYS_ioctl, 0, libc::TIOCGWINSZ as u32), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&off, libc::SYS_read, 0, 0), libc::SECCOMP_RET_ALLOW);
        let on = Filter::new(true);
        assert_eq!(verdict(&on, libc::SYS_socket, libc::AF_INET as u32, 0), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&on, libc::SYS_ioctl, 0, libc::TIOCLINUX as u32), deny);
    }
}

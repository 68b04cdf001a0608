//! The seccomp filter every confined command runs under. Always:
//!
//! - `ioctl` may not push keystrokes into a terminal (`TIOCSTI`) or drive
//!   the console (`TIOCLINUX`);
//! - no file may gain a setuid or setgid bit (`chmod` and its kin, and a
//!   file created with such a mode): a file made inside the workspace must
//!   not give anyone more rights outside it;
//! - the kernel's keyrings are out of reach (`keyctl`, `add_key`,
//!   `request_key`): a key the user's session holds is not the command's;
//! - io_uring cannot be set up: it could open sockets and files with modes
//!   this filter never sees;
//! - `openat2` answers "not implemented", as on an older kernel, so callers
//!   fall back to `openat`, whose mode the filter can read.
//!
//! With the network off, `socket` succeeds only for Unix sockets (local
//! pipes between processes). Every refused call fails with an error;
//! nothing is killed.

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

/// The low word of argument `i` (little-endian): the modes, families and
/// `ioctl` requests read here are 32-bit numbers, so the high word never
/// matters to the kernel.
const fn arg_low(i: u32) -> u32 {
    16 + 8 * i
}

const LD_W_ABS: u16 = 0x20;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

/// Terminal requests no command may make.
const REFUSED_IOCTLS: [u32; 2] = [libc::TIOCSTI as u32, libc::TIOCLINUX as u32];
/// The mode bits no file a command makes or changes may carry.
const PRIVILEGE_BITS: u32 = libc::S_ISUID | libc::S_ISGID;

/// What the filter does with one system call.
#[derive(Clone, Copy)]
enum Rule {
    /// Refused with `EPERM`.
    Deny,
    /// Refused with `ENOSYS`: the caller takes it for an older kernel.
    Absent,
    /// Refused with `EPERM` when argument `.0` (a mode) holds a setuid or setgid bit.
    ModeAt(u32),
    /// `ioctl`: refused for the requests in [`REFUSED_IOCTLS`].
    Ioctl,
    /// `socket`: only Unix sockets.
    UnixOnly,
}

/// The system calls the filter looks at, and how.
fn rules(network: bool) -> Vec<(i64, Rule)> {
    let mut rules = vec![
        (libc::SYS_ioctl, Rule::Ioctl),
        (libc::SYS_fchmod, Rule::ModeAt(1)),
        (libc::SYS_fchmodat, Rule::ModeAt(2)),
        (libc::SYS_fchmodat2, Rule::ModeAt(2)),
        (libc::SYS_openat, Rule::ModeAt(3)),
        (libc::SYS_mknodat, Rule::ModeAt(2)),
        (libc::SYS_openat2, Rule::Absent),
        (libc::SYS_keyctl, Rule::Deny),
        (libc::SYS_add_key, Rule::Deny),
        (libc::SYS_request_key, Rule::Deny),
        (libc::SYS_io_uring_setup, Rule::Deny),
        (libc::SYS_io_uring_enter, Rule::Deny),
        (libc::SYS_io_uring_register, Rule::Deny),
    ];
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        (libc::SYS_chmod, Rule::ModeAt(1)),
        (libc::SYS_open, Rule::ModeAt(2)),
        (libc::SYS_creat, Rule::ModeAt(1)),
        (libc::SYS_mknod, Rule::ModeAt(1)),
    ]);
    if !network {
        rules.push((libc::SYS_socket, Rule::UnixOnly));
    }
    rules
}

/// A compiled filter program, kept alive by its owner while children start.
#[derive(Debug)]
pub struct Filter(Vec<sock_filter>);

/// Where a jump goes, resolved once the program is laid out.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Next,
    Allow,
    Deny,
    Absent,
    /// The checks of the `n`th rule.
    Rule(usize),
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
    /// The filter for a command; sockets other than Unix ones are refused
    /// too when `network` is off.
    pub fn new(network: bool) -> Self {
        let rules = rules(network);
        let mut ops = vec![load(OFFSET_ARCH), jump_if(JEQ_K, NATIVE_ARCH, Label::Next, Label::Deny), load(OFFSET_NR)];
        #[cfg(target_arch = "x86_64")]
        ops.push(jump_if(JGE_K, X32_BIT, Label::Deny, Label::Next));
        for (i, (nr, _)) in rules.iter().enumerate() {
            ops.push(jump_if(JEQ_K, *nr as u32, Label::Rule(i), Label::Next));
        }
        // A call no rule names is allowed.
        ops.push(ret(libc::SECCOMP_RET_ALLOW));
        let mut at = Vec::new();
        for (i, (_, rule)) in rules.iter().enumerate() {
            at.push((Label::Rule(i), ops.len()));
            match rule {
                Rule::Deny => ops.push(jump_if(JEQ_K, 0, Label::Deny, Label::Deny)),
                Rule::Absent => ops.push(jump_if(JEQ_K, 0, Label::Absent, Label::Absent)),
                Rule::ModeAt(arg) => {
                    ops.push(load(arg_low(*arg)));
                    ops.push(jump_if(JSET_K, PRIVILEGE_BITS, Label::Deny, Label::Allow));
                }
                Rule::Ioctl => {
                    ops.push(load(arg_low(1)));
                    for request in REFUSED_IOCTLS {
                        ops.push(jump_if(JEQ_K, request, Label::Deny, Label::Next));
                    }
                    ops.push(jump_if(JEQ_K, 0, Label::Allow, Label::Allow));
                }
                Rule::UnixOnly => {
                    ops.push(load(arg_low(0)));
                    ops.push(jump_if(JEQ_K, libc::AF_UNIX as u32, Label::Allow, Label::Deny));
                }
            }
        }
        at.push((Label::Allow, ops.len()));
        ops.push(ret(libc::SECCOMP_RET_ALLOW));
        at.push((Label::Absent, ops.len()));
        ops.push(ret(libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32));
        at.push((Label::Deny, ops.len()));
        ops.push(ret(libc::SECCOMP_RET_ERRNO | libc::EPERM as u32));

        // Jumps only go forward; every label lies ahead of its jumps, and the
        // program is far shorter than 256 instructions (checked by the tests).
        let target = |from: usize, label: Label| -> u8 {
            let to = match label {
                Label::Next => from + 1,
                other => at.iter().find(|(l, _)| *l == other).map_or(from + 1, |(_, i)| *i),
            };
            u8::try_from(to.saturating_sub(from + 1)).unwrap_or(u8::MAX)
        };
        let program = ops.iter().enumerate().map(|(i, op)| sock_filter { code: op.code, jt: target(i, op.yes), jf: target(i, op.no), k: op.k }).collect();
        Self(program)
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
    fn verdict(filter: &Filter, nr: i64, args: [u32; 4]) -> u32 {
        let data = |offset: u32| match offset {
            OFFSET_ARCH => NATIVE_ARCH,
            OFFSET_NR => nr as u32,
            o if o >= 16 && (o - 16) % 8 == 0 && ((o - 16) / 8) < 4 => args[((o - 16) / 8) as usize],
            _ => 0,
        };
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let op = &filter.0[pc];
            match op.code {
                LD_W_ABS => acc = data(op.k),
                RET_K => return op.k,
                JEQ_K | JGE_K | JSET_K => {
                    let yes = match op.code {
                        JEQ_K => acc == op.k,
                        JGE_K => acc >= op.k,
                        _ => acc & op.k != 0,
                    };
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
        assert!(off.0.len() < 200);
        assert_eq!(verdict(&off, libc::SYS_socket, [libc::AF_UNIX as u32, 0, 0, 0]), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&off, libc::SYS_socket, [libc::AF_INET as u32, 0, 0, 0]), deny);
        assert_eq!(verdict(&off, libc::SYS_io_uring_setup, [0; 4]), deny);
        assert_eq!(verdict(&off, libc::SYS_ioctl, [0, libc::TIOCSTI as u32, 0, 0]), deny);
        assert_eq!(verdict(&off, libc::SYS_ioctl, [0, libc::TIOCGWINSZ as u32, 0, 0]), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&off, libc::SYS_read, [0; 4]), libc::SECCOMP_RET_ALLOW);
        let on = Filter::new(true);
        assert_eq!(verdict(&on, libc::SYS_socket, [libc::AF_INET as u32, 0, 0, 0]), libc::SECCOMP_RET_ALLOW);
        assert_eq!(verdict(&on, libc::SYS_ioctl, [0, libc::TIOCLINUX as u32, 0, 0]), deny);
        assert_eq!(verdict(&on, libc::SYS_io_uring_setup, [0; 4]), deny, "io_uring is refused with the network on too");
    }

    #[test]
    fn no_file_gains_a_setuid_bit_and_keyrings_are_out_of_reach() {
        let deny = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        for f in [Filter::new(false), Filter::new(true)] {
            assert_eq!(verdict(&f, libc::SYS_fchmodat, [0, 0, 0o4755, 0]), deny);
            assert_eq!(verdict(&f, libc::SYS_fchmodat, [0, 0, 0o2755, 0]), deny);
            assert_eq!(verdict(&f, libc::SYS_fchmodat, [0, 0, 0o755, 0]), libc::SECCOMP_RET_ALLOW);
            assert_eq!(verdict(&f, libc::SYS_fchmod, [3, 0o6777, 0, 0]), deny);
            assert_eq!(verdict(&f, libc::SYS_openat, [0, 0, libc::O_CREAT as u32, 0o4755]), deny);
            assert_eq!(verdict(&f, libc::SYS_openat, [0, 0, libc::O_CREAT as u32, 0o644]), libc::SECCOMP_RET_ALLOW);
            assert_eq!(verdict(&f, libc::SYS_openat2, [0; 4]), libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32);
            assert_eq!(verdict(&f, libc::SYS_keyctl, [0; 4]), deny);
            assert_eq!(verdict(&f, libc::SYS_add_key, [0; 4]), deny);
            #[cfg(target_arch = "x86_64")]
            assert_eq!(verdict(&f, libc::SYS_chmod, [0, 0o4755, 0, 0]), deny);
        }
    }
}

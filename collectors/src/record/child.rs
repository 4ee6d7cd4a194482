//! Running the recorded program: it inherits stdin, stdout and stderr.
//! Ctrl-C from the terminal reaches it directly (it is in our process
//! group); a signal sent to gapscope alone (`kill`) is passed on to it, and
//! gapscope stays to merge what it recorded.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};

/// The running child's pid, for the signal handler (0: none).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal sent to us before the child's pid was known (the program may
/// run, and signal us, before `spawn` returns); passed on once it is.
static PENDING: AtomicI32 = AtomicI32::new(0);
const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Passes a signal on to the child when another process sent it to us
/// alone (`kill`: `si_code` ≤ 0). One from the terminal (Ctrl-C, hang-up;
/// `si_code` > 0) went to the whole foreground process group, the child
/// included, so it is not sent twice. Either way gapscope stays to merge.
extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo.
    if info.is_null() || unsafe { (*info).si_code } > 0 {
        return;
    }
    // Pending first, then the pid: whichever of this handler and
    // `run_child` comes second sees the other's store, so the signal is
    // passed on at least once.
    PENDING.store(sig, Ordering::SeqCst);
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0 && PENDING.swap(0, Ordering::SeqCst) != 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(child, sig) };
    }
}

/// Runs the program with the signal handling above; restores the default
/// handlers once it has exited (Ctrl-C while merging stops gapscope).
pub fn run_child(cmd: &mut Command) -> io::Result<ExitStatus> {
    set_handlers(true);
    let status = cmd.spawn().and_then(|mut child| {
        CHILD.store(child.id() as i32, Ordering::SeqCst);
        let pending = PENDING.swap(0, Ordering::SeqCst);
        if pending != 0 {
            // SAFETY: plain kill of our own child.
            unsafe { libc::kill(child.id() as i32, pending) };
        }
        let s = child.wait();
        CHILD.store(0, Ordering::SeqCst);
        s
    });
    set_handlers(false);
    status
}

fn set_handlers(on: bool) {
    for sig in FORWARDED {
        // SAFETY: installs a handler that only reads an atomic and calls
        // kill (or restores the default).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            if on {
                sa.sa_sigaction =
                    forward as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            } else {
                sa.sa_sigaction = libc::SIG_DFL;
            }
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The child's status as a shell reports it.
pub fn exit_code(s: ExitStatus) -> u8 {
    match (s.code(), s.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => (128 + sig).min(255) as u8,
        _ => 1,
    }
}

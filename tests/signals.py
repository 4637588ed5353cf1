"""The processes a test signals start with the default signal dispositions, wherever the suite was launched from.

A background job of a non-interactive shell (`.ci/run &` in a script, `nohup ... &`, some CI runners) starts with
SIGINT and SIGQUIT ignored, nohup adds SIGHUP, `trap "" INT` (or TERM) in a wrapper does the same, and every child
inherits an ignored signal across fork and exec. Python's subprocess puts back only SIGPIPE, SIGXFZ and SIGXFSZ
(restore_signals), so a test that "presses Ctrl-C" on a Rally it started would send a signal the race ignores, and
the race would run on to the end. A test that signals a process it started starts it with popen_with_default_signals.

Only those: the suite's other processes keep what the suite was given (a race of a nohup'd suite survives a hangup,
and one of a script's background job a Ctrl-C meant for the script's foreground), as the shell intended.
"""

import signal
import subprocess

# the signals a test or a terminal sends (Ctrl-C, Ctrl-\, kill, a hangup): put back to the default in the child
DEFAULT_SIGNALS = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP)


def restore_default_signals():
    """In the child, between fork and exec (a preexec_fn): each of DEFAULT_SIGNALS at its default disposition and no
    signal blocked, as a process started from an interactive terminal has them. An ignored signal stays ignored
    across exec, and so does the signal mask; a handler of the parent's is reset by exec anyway."""
    for number in DEFAULT_SIGNALS:
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def popen_with_default_signals(args, **how):
    """subprocess.Popen for a process the test will signal: started with the default dispositions of
    DEFAULT_SIGNALS and an empty signal mask, whatever this process was given (restore_default_signals)."""
    if "preexec_fn" in how:
        raise TypeError("popen_with_default_signals sets preexec_fn itself")
    return subprocess.Popen(args, preexec_fn=restore_default_signals, **how)

"""A seccomp filter for candidate programs: the system calls a program under test has no use for, and that widen
the kernel surface it can attack, fail with EPERM; every other call is allowed.

The filter is classic BPF, built here without libseccomp, for the two architectures evalkit runs on. bubblewrap
loads it (`--seccomp FD`) after setting up the sandbox and before starting the launcher, so it binds the launcher
and everything the program starts. A call made through another architecture's ABI (x32 on x86-64, or a 32-bit
binary) kills the process instead: its numbers are not the ones checked.
"""

from __future__ import annotations

import platform
import struct

__all__ = ["DENIED", "seccomp_filter"]

DENIED = ("ptrace", "process_vm_readv", "process_vm_writev", "keyctl", "add_key", "request_key", "bpf",
          "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load", "mount", "umount2", "pivot_root",
          "unshare", "setns", "init_module", "finit_module", "delete_module", "io_uring_setup", "io_uring_enter",
          "io_uring_register", "open_by_handle_at", "name_to_handle_at", "acct", "swapon", "swapoff", "reboot",
          "syslog", "quotactl", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "mount_setattr")
"""Debugging and reading other processes, kernel keyrings, eBPF, perf, userfaultfd, mounts and namespaces, kernel
modules, io_uring, file handles, and machine administration."""

# (audit architecture, the x32 bit to refuse or 0, system call numbers) per `platform.machine()`
_ARCHES: dict[str, tuple[int, int, dict[str, int]]] = {
    "x86_64": (0xC000003E, 0x40000000, {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "keyctl": 250, "add_key": 248,
        "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "kexec_load": 246,
        "kexec_file_load": 320, "mount": 165, "umount2": 166, "pivot_root": 155, "unshare": 272, "setns": 308,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_by_handle_at": 304, "name_to_handle_at": 303, "acct": 163, "swapon": 167,
        "swapoff": 168, "reboot": 169, "syslog": 103, "quotactl": 179, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "mount_setattr": 442}),
    "aarch64": (0xC00000B7, 0, {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "keyctl": 219, "add_key": 217,
        "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "kexec_load": 104,
        "kexec_file_load": 294, "mount": 40, "umount2": 39, "pivot_root": 41, "unshare": 97, "setns": 268,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_by_handle_at": 265, "name_to_handle_at": 264, "acct": 89, "swapon": 224,
        "swapoff": 225, "reboot": 142, "syslog": 116, "quotactl": 60, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "mount_setattr": 442}),
}
_ARCHES["arm64"] = _ARCHES["aarch64"]

_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW, _KILL_PROCESS, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_EPERM = 1
_NR, _ARCH = 0, 4  # offsets in struct seccomp_data


def seccomp_filter(machine: str | None = None) -> bytes | None:
    """The filter as bubblewrap reads it (struct sock_filter, native byte order), or None for an architecture
    evalkit has no system call table for."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, x32, numbers = arch
    program = [(_LD_W_ABS, 0, 0, _ARCH), (_JEQ_K, 1, 0, audit), (_RET_K, 0, 0, _KILL_PROCESS),
               (_LD_W_ABS, 0, 0, _NR)]
    if x32:
        program.append((_JGE_K, 0, 1, x32))
        program.append((_RET_K, 0, 0, _KILL_PROCESS))
    for name in DENIED:
        program.append((_JEQ_K, 0, 1, numbers[name]))
        program.append((_RET_K, 0, 0, _ERRNO | _EPERM))
    program.append((_RET_K, 0, 0, _ALLOW))
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)

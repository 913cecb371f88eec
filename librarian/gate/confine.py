"""Confining a recipe's process on Linux to the effects its approved manifest declares.

Standard library only, and only its cheapest modules (no json, re, typing, dataclasses or
pathlib: each costs milliseconds at start-up), so that it also runs as a script: ``python
-I -S confine.py KEY=VALUE… -- ARGV…`` applies the policy to itself and then ``execv``s
``ARGV`` (the re-exec helper). ``apply`` is the same work as a ``preexec_fn``, used when the
starting process has a single thread (docs/decisions.md, "Confining a run"). What the
kernel supports is probed here too (``landlock_abi``, ``userns_allowed``,
``seccomp_allowed``); ``enforcement.py`` decides with it.

What is applied, in this order:

1. rlimits: ``RLIMIT_DATA`` (writable memory, per process) and ``RLIMIT_NPROC``
   (processes, counted per user);
2. ``PR_SET_NO_NEW_PRIVS`` (Landlock and seccomp need it; nothing gains privileges by exec);
3. ``network: deny``: a seccomp filter that refuses ``socket()`` for every family (unix
   sockets too) and ``io_uring_setup``; where seccomp is not available, a fresh user and
   network namespace (``unshare``) instead (either or both, as the policy says);
4. Landlock (its three system calls): filesystem rules for ``none`` and ``read``, TCP
   bind and connect denied for ``network: deny`` (ABI >= 4), abstract unix sockets and
   signals scoped to the run (ABI >= 6).

Everything is inherited by the process's children, and none of it can be undone.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import stat
import struct
import sys

TYPE_CHECKING = False  # not typing's: importing typing costs the helper ~10 ms
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

# x86_64 and aarch64 share the Landlock numbers (they were added to every architecture).
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_ARCH = {  # machine -> (seccomp audit arch, socket, io_uring_setup)
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000

# Landlock filesystem rights (bit, first ABI that has it).
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_READ = _READ_FILE | _READ_DIR | _EXECUTE
_FILE_RIGHTS = _EXECUTE | _WRITE_FILE | _READ_FILE | (1 << 14) | (1 << 15)  # + truncate, ioctl

#: What a process needs to start and run under ``filesystem: none`` (besides its own
#: recipe directory, interpreter and private directories).
RUNTIME_PATHS = ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin",
                 "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
                 "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
                 "/dev/urandom", "/dev/random",
                 # what a networked run resolves names and checks certificates with
                 "/etc/resolv.conf", "/run/systemd/resolve", "/etc/hosts", "/etc/host.conf",
                 "/etc/gai.conf", "/etc/services", "/etc/protocols", "/etc/ssl",
                 "/etc/ca-certificates", "/etc/pki")
#: Devices every run may write (a shell redirects to /dev/null).
WRITABLE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")


class ConfineError(Exception):
    """What was declared cannot be applied in this process."""


def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl.restype = ctypes.c_int
    return libc


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers (0: none, or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        abi = int(_libc().syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                                  ctypes.c_uint32(_CREATE_RULESET_VERSION)))
    except (OSError, AttributeError):
        return 0
    return max(abi, 0)


def _read_int(path: str) -> int | None:
    try:
        with open(path) as handle:  # noqa: PTH123  (no pathlib: see the docstring)
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def userns_allowed() -> bool:
    """Whether unprivileged user (and so network) namespaces look allowed."""
    if not sys.platform.startswith("linux"):
        return False
    if (_read_int("/proc/sys/user/max_user_namespaces") or 0) <= 0:
        return False
    if os.geteuid() == 0:
        return True
    if _read_int("/proc/sys/kernel/unprivileged_userns_clone") == 0:  # Debian's switch
        return False
    return _read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") != 1


def seccomp_allowed() -> bool:
    """Whether a seccomp filter for this architecture can be installed."""
    try:
        with open("/proc/sys/kernel/seccomp/actions_avail") as handle:  # noqa: PTH123
            actions = handle.read().split()
    except OSError:
        return False
    return "errno" in actions and os.uname().machine in _ARCH


# -- applying a policy ----------------------------------------------------------------


def apply(policy: Mapping[str, Any]) -> None:
    """Confine the calling (single-threaded) process to ``policy``; ConfineError if any
    part of it cannot be applied (nothing is then executed)."""
    memory, processes = policy.get("memory_bytes"), policy.get("processes")
    if isinstance(memory, int):
        # DATA, not AS: it counts what a process can make writable (heap, anonymous and
        # private writable mappings), not the address ranges runtimes reserve up front.
        _lower(resource.RLIMIT_DATA, memory)
    if isinstance(processes, int):
        _lower(resource.RLIMIT_NPROC, processes)
    filesystem = policy.get("filesystem")
    deny_network = policy.get("network") == "deny"
    abi = int(policy.get("landlock_abi") or 0)
    if filesystem is None and not deny_network:
        return
    libc = _libc()
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise ConfineError(f"no_new_privs: {os.strerror(ctypes.get_errno())}")
    if deny_network:
        if policy.get("netns"):
            _new_network_namespace(libc)
        if policy.get("seccomp"):
            _seccomp_no_sockets(libc)
        if not policy.get("netns") and not policy.get("seccomp"):
            raise ConfineError("network: deny names neither netns nor seccomp")
    if filesystem is not None or (deny_network and abi >= 4):
        _landlock(libc, abi, filesystem, deny_network,
                  read=policy.get("read", ()), write=policy.get("write", ()))


def _lower(kind: int, value: int) -> None:
    """Set both limits to ``value``, or to the hard limit already lower than it (an
    unprivileged process cannot raise it)."""
    _, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _new_network_namespace(libc: Any) -> None:
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) != 0:
        raise ConfineError(f"unshare(network): {os.strerror(ctypes.get_errno())}")
    # Keep the caller's ids inside the namespace (else the process shows as nobody).
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                       ("gid_map", f"{gid} {gid} 1")):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def _seccomp_no_sockets(libc: Any) -> None:
    """Refuse ``socket()`` for every family (``EACCES``), and ``io_uring_setup``
    (``io_uring`` can open sockets without the system call). ``socketpair()`` stays: a
    connected pair reaches nobody. This also closes what neither namespace nor Landlock
    close: connecting to a named or abstract unix socket (a daemon's)."""
    machine = os.uname().machine
    if machine not in _ARCH:
        raise ConfineError(f"no seccomp filter for {machine}")
    arch, socket_nr, uring_nr = _ARCH[machine]
    allow, deny = 0x7FFF0000, 0x00050000 | errno.EACCES
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06
    # Jumps count from the next instruction. Another ABI (i386 calls) and x32 calls are
    # refused whole.
    code = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, deny),          # 0-2
            (ld, 0, 0, 0), (jge, 3, 0, 0x40000000),                       # 3-4
            (jeq, 2, 0, uring_nr), (jeq, 1, 0, socket_nr),                # 5-6
            (ret, 0, 0, allow), (ret, 0, 0, deny)]                        # 7-8
    filters = b"".join(struct.pack("HBBI", *instruction) for instruction in code)
    buffer = ctypes.create_string_buffer(filters)
    prog = struct.pack("HxxxxxxP", len(code), ctypes.addressof(buffer))
    prog_buffer = ctypes.create_string_buffer(prog)
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, prog_buffer, 0, 0) != 0:
        raise ConfineError(f"seccomp: {os.strerror(ctypes.get_errno())}")


def _fs_rights(abi: int) -> int:
    return max((rights for level, rights in _FS_RIGHTS_BY_ABI.items() if level <= abi),
               default=0)


def _landlock(libc: Any, abi: int, filesystem: str | None, deny_network: bool, *,
              read: Sequence[str], write: Sequence[str]) -> None:
    if abi < 1:
        raise ConfineError("this kernel has no Landlock")
    every = _fs_rights(abi)
    handled_fs = every if filesystem in ("none", "read") else 0
    handled_net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if deny_network and abi >= 4 else 0
    scoped = 0
    if abi >= 6:
        scoped = _SCOPE_SIGNAL | (_SCOPE_ABSTRACT_UNIX_SOCKET if deny_network else 0)
    attr = struct.pack("QQQ", handled_fs, handled_net, scoped)
    size = 24 if abi >= 6 else 16
    ruleset = int(libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.c_char_p(attr[:size]),
                               ctypes.c_size_t(size), ctypes.c_uint32(0)))
    if ruleset < 0:
        raise ConfineError(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        if handled_fs:
            readable = ["/"] if filesystem == "read" else list(read)
            for path in readable:
                _allow(libc, ruleset, path, _READ, optional=filesystem == "none")
            for path in WRITABLE_DEVICES:
                _allow(libc, ruleset, path, _READ_FILE | _WRITE_FILE, optional=True)
            for path in write:
                _allow(libc, ruleset, path, every, optional=False)
        if libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) != 0:
            raise ConfineError(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)


def _allow(libc: Any, ruleset: int, path: str, rights: int, *, optional: bool) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as exc:
        if optional:
            return
        raise ConfineError(f"cannot open {path}: {exc.strerror}") from None
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):  # a file takes file rights only
            rights &= _FILE_RIGHTS
        attr = struct.pack("=Qi", rights, fd)
        if libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, _RULE_PATH_BENEATH,
                        ctypes.c_char_p(attr), ctypes.c_uint32(0)) != 0:
            raise ConfineError(f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


# -- the re-exec helper ---------------------------------------------------------------


_LISTS = ("read", "write")
_NUMBERS = ("memory_bytes", "processes", "landlock_abi", "netns", "seccomp")


def helper_argv(policy: Mapping[str, Any], argv: Sequence[str]) -> list[str]:
    """The argv that confines itself to ``policy`` and then executes ``argv``: the policy
    as ``KEY=VALUE`` arguments (a list key once per value), parsed without json."""
    tokens = []
    for key, value in policy.items():
        if key in _LISTS:
            tokens += [f"{key}={item}" for item in value]
        elif isinstance(value, bool):
            tokens.append(f"{key}={int(value)}")
        elif value is not None:
            tokens.append(f"{key}={value}")
    return [sys.executable, "-I", "-S", os.path.realpath(__file__), *tokens, "--", *argv]


def parse_policy(tokens: Sequence[str]) -> dict[str, Any]:
    """``helper_argv``'s ``KEY=VALUE`` arguments back into a policy."""
    policy: dict[str, Any] = {key: [] for key in _LISTS}
    for token in tokens:
        key, _, value = token.partition("=")
        if key in _LISTS:
            policy[key].append(value)
        else:
            policy[key] = int(value) if key in _NUMBERS else value
    return policy


def main(args: Sequence[str]) -> int:
    if "--" not in args or args.index("--") == len(args) - 1:
        sys.stderr.write("usage: confine.py KEY=VALUE... -- ARGV...\n")
        return 2
    split = args.index("--")
    try:
        apply(parse_policy(args[:split]))
    except (ConfineError, OSError, ValueError) as exc:
        sys.stderr.write(f"librarian: the run could not be confined: {exc}\n")
        return 126
    program = list(args[split + 1:])
    try:
        os.execv(program[0], program)
    except OSError as exc:
        sys.stderr.write(f"librarian: cannot start {program[0]}: {exc.strerror}\n")
    return 126


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

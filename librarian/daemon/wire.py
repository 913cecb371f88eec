"""What the client and the server of ``librarian daemon`` share: where the socket is, which
library a command line names, the request's bytes, and the two keys a request must match.

Only ``os``, ``stat`` and ``sys`` are imported: the client uses this before anything else
of librarian is loaded.

- The socket is ``.git/librarian/daemon.sock`` of the library. ``.git`` and ``librarian``
  are opened with ``O_NOFOLLOW`` (a link there is refused, never followed), the directory
  must be owned by this user, and the socket is looked at with ``lstat``: a socket owned by
  this user, or nothing. Connecting and binding use the bare name after ``fchdir`` into that
  directory, so no path outside it is ever resolved.
- A request carries the **code fingerprint** (every module of the installed package and
  the import path: when it differs the server is stale and exits) and the **settings**
  fixed at interpreter start (executable, flags, locale and ``PYTHON*`` variables, ids,
  resource limits: when they differ the request is declined and runs in-process).
"""

from __future__ import annotations

import os
import stat
import sys

PROTOCOL = b"librarian-daemon/1"
SOCKET_NAME = "daemon.sock"
#: Commands that always run in-process: the daemon's own, and the ones whose work is a
#: child process or a session on stdio (they need the terminal's job control, and start-up
#: is nothing next to them).
IN_PROCESS = frozenset({"daemon", "run", "wait", "mcp"})
#: How long the client waits for the server to take a request before running in-process.
ACCEPT_TIMEOUT = 2.0
#: Signals the client passes on to the command's process group.
FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")

_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: Resource limits a child inherits from the server, so they must be the client's.
_LIMITS = ("RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_CORE",
           "RLIMIT_STACK", "RLIMIT_CPU", "RLIMIT_NPROC")


def open_state_dir(root: str) -> int:
    """A descriptor on ``root/.git/librarian``: neither component may be a link, and the
    directory must belong to this user. Raises OSError otherwise."""
    fd = os.open(root, _DIR)
    try:
        for name in (".git", "librarian"):
            inner = os.open(name, _DIR | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
        if os.fstat(fd).st_uid != os.getuid():
            raise PermissionError(f"{root}/.git/librarian belongs to another user")
        return fd
    except BaseException:
        os.close(fd)
        raise


def socket_inode(state_fd: int) -> int | None:
    """The inode of the socket in the state directory: a socket owned by this user (seen
    with lstat: a link is not followed), else None."""
    try:
        st = os.stat(SOCKET_NAME, dir_fd=state_fd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        return None
    return st.st_ino


# -- the command line ---------------------------------------------------------------------


def library_option(args: list[str]) -> str | None:
    """The value of the last ``--library PATH`` / ``--library=PATH`` before ``--``: the
    same reading as ``cli.main.library_first`` (a test holds the two together)."""
    found, position = None, 0
    while position < len(args):
        arg = args[position]
        if arg == "--":
            break
        if arg == "--library" and position + 1 < len(args):
            found = args[position + 1]
            position += 2
            continue
        if arg.startswith("--library="):
            found = arg[len("--library="):]
        position += 1
    return found


def command_of(args: list[str]) -> str | None:
    """The command word, as ``cli.main.register_commands`` finds it."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("--library", "--layer"):
            skip = True
        elif arg in ("--help", "-h"):
            return None
        elif not arg.startswith("-"):
            return arg
    return None


def _is_library(path: str) -> bool:
    git = os.path.join(path, ".git")
    return os.path.isdir(git) and (
        os.path.isfile(os.path.join(path, "library.yaml"))
        or os.path.isfile(os.path.join(git, "librarian", "journal.json")))


def library_root(args: list[str]) -> str | None:
    """The library a command line names, by the rules of ``library.layout.find_library``:
    ``--library``, else ``$LIBRARIAN_LIBRARY``, else the nearest parent of the current
    directory holding library.yaml. The user config's default library is not read here
    (that needs the YAML parser): such a command runs in-process."""
    chosen = library_option(args) or os.environ.get("LIBRARIAN_LIBRARY") or None
    if chosen is not None:
        return os.path.join(os.getcwd(), os.path.expanduser(chosen))
    here = os.getcwd()
    while True:
        if _is_library(here):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


# -- the two keys -------------------------------------------------------------------------


def code_fingerprint() -> bytes:
    """Every module of the installed package (path, mtime, size) and every directory of
    the import path (its mtime moves when a package is installed or removed there)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parts = [package]
    pending = [package]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat(follow_symlinks=False)
                    parts.append(f"{entry.path}:{st.st_mtime_ns}:{st.st_size}")
    for directory in _import_path():
        try:
            parts.append(f"{directory}:{os.stat(directory).st_mtime_ns}")
        except OSError:
            parts.append(f"{directory}:-")
    parts.sort()
    return "\n".join(parts).encode("utf-8", "surrogateescape")


def _import_path() -> list[str]:
    # sys.path[0] is the script's directory or the current one, different for every way
    # of starting librarian; the rest is the interpreter's and $PYTHONPATH's.
    return list(sys.path if getattr(sys.flags, "safe_path", False) else sys.path[1:])


def settings() -> bytes:
    """What a child inherits from the server's interpreter and cannot change afterwards."""
    import resource  # a built-in module: no file to read

    env = sorted(f"{k}={v}" for k, v in os.environ.items()
                 if k.startswith(("PYTHON", "LC_")) or k == "LANG")
    limits = [f"{name}={resource.getrlimit(getattr(resource, name))}" for name in _LIMITS
              if hasattr(resource, name)]
    parts = [sys.executable, sys.version, repr(sys.flags), repr(sys._xoptions),
             repr(sys.warnoptions), repr(_import_path()), repr(os.getgid()),
             repr(os.getegid()), repr(sorted(os.getgroups())), *env, *limits,
             *_placement()]
    return "\n".join(parts).encode("utf-8", "surrogateescape")


def _placement() -> list[str]:
    """Niceness, CPU affinity, namespaces and cgroup: a child has the server's, so a
    caller under others (`nice`, `taskset`, `unshare -n`, `systemd-run -p MemoryMax=`)
    runs in-process rather than escape them."""
    parts = [f"nice={os.getpriority(os.PRIO_PROCESS, 0)}"]
    if hasattr(os, "sched_getaffinity"):
        parts.append(f"cpus={sorted(os.sched_getaffinity(0))}")
    for name in ("cgroup", "ipc", "mnt", "net", "pid", "user", "uts"):
        try:
            parts.append(f"ns={os.readlink(f'/proc/self/ns/{name}')}")
        except OSError:
            parts.append(f"ns={name}:-")
    try:
        with open("/proc/self/cgroup", "rb") as handle:
            parts.append("cgroup=" + handle.read(4096).decode("utf-8", "replace"))
    except OSError:
        parts.append("cgroup=-")
    return parts


# -- the request --------------------------------------------------------------------------


def encode_request(kind: bytes, args: list[str] | None = None) -> bytes:
    """``PROTOCOL KIND LENGTH\\n`` then NUL-separated ``tag=value`` fields. Arguments and
    environment entries cannot hold a NUL byte; the keys are separated by newlines."""
    fields = [b"fp=" + code_fingerprint(), b"set=" + settings()]
    if args is not None:
        umask = os.umask(0o022)
        os.umask(umask)
        fields.append(b"umask=%d" % umask)
        fields += [b"arg=" + os.fsencode(arg) for arg in sys.argv[:1] + args]
        fields += [b"env=" + key + b"=" + value for key, value in os.environb.items()]
    payload = b"\0".join(fields)
    return b"%s %s %d\n" % (PROTOCOL, kind, len(payload)) + payload


def decode_fields(payload: bytes) -> dict[bytes, list[bytes]]:
    fields: dict[bytes, list[bytes]] = {}
    for field in payload.split(b"\0"):
        tag, _, value = field.partition(b"=")
        fields.setdefault(tag, []).append(value)
    return fields

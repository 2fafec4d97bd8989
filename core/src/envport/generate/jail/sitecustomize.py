"""The sandbox's file-system jail, loaded by every Python process the sandbox starts (this folder
comes first on their PYTHONPATH, so ``site`` imports this module before any generated code runs).

It installs an audit hook (:func:`sys.addaudithook`, PEP 578) that lets the process write only
inside the folders named in ``ENVPORT_SANDBOX_WRITABLE`` (the run's work dir, the call's output
folder, a private temporary folder): opening a file for writing, creating, removing, renaming,
linking, truncating or changing the metadata of a path anywhere else raises ``PermissionError``
with a message that says so. Reading stays allowed everywhere (the code imports numpy and jax).
Paths are resolved (symlinks included) before they are compared.

Best effort, not a security boundary: it stops the accidents that matter (a test that writes
``../outside.txt``, an ``rmtree`` of the wrong folder, a cache written into the repository), not
code that sets out to escape: ctypes calls into libc, non-Python child processes (a shell, node)
and a Python child started with a scrubbed environment are not covered. Audit hooks cannot be
removed once installed.
"""

import errno
import os
import sys


def _install() -> None:
    spec = os.environ.get("ENVPORT_SANDBOX_WRITABLE")
    if not spec:
        return
    realpath, join, isabs, getcwd = os.path.realpath, os.path.join, os.path.isabs, os.getcwd
    fsdecode, readlink, sep = os.fsdecode, os.readlink, os.sep
    roots = tuple(dict.fromkeys(realpath(r) for r in spec.split(os.pathsep) if r))
    shown = ", ".join(roots)
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
    # event -> ((index of a path argument, index of its dir_fd argument or None), ...)
    checked = {
        "os.remove": ((0, 1),), "os.rmdir": ((0, 1),), "os.mkdir": ((0, 2),),
        "os.rename": ((0, 2), (1, 3)), "os.symlink": ((1, 2),), "os.link": ((1, 3),),
        "os.truncate": ((0, None),), "os.chmod": ((0, 2),), "os.chown": ((0, 3),),
        "os.utime": ((0, 3),), "os.chflags": ((0, None),), "os.lchflags": ((0, None),),
        "os.lchmod": ((0, None),), "os.lchown": ((0, None),),
        "os.setxattr": ((0, None),), "os.removexattr": ((0, None),),
        "shutil.rmtree": ((0, 1),), "sqlite3.connect": ((0, None),),
    }
    verbs = {"open": "write to", "os.remove": "remove", "os.rmdir": "remove",
             "shutil.rmtree": "remove", "os.mkdir": "create", "os.rename": "rename",
             "os.symlink": "create a link at", "os.link": "create a link at",
             "os.truncate": "truncate", "sqlite3.connect": "open a database at"}

    def resolve(path, dir_fd):
        if isinstance(path, int):
            return None  # a file descriptor: opened (and checked) before
        path = fsdecode(path)
        if path in (":memory:", ""):
            return None
        if path.startswith("file:"):  # sqlite URI
            path = path[5:].split("?", 1)[0]
        if not isabs(path):
            if isinstance(dir_fd, int) and dir_fd >= 0:
                try:
                    base = readlink(f"/proc/self/fd/{dir_fd}")
                except OSError:
                    return path  # cannot tell where it is: refused below
            else:
                try:
                    base = getcwd()
                except OSError:
                    return path
            path = join(base, path)
        return realpath(path)

    def inside(real) -> bool:
        for root in roots:
            if real == root or real.startswith(root + sep):
                return True
        return False

    def deny(event, path):
        verb = verbs.get(event, "change")
        raise PermissionError(
            errno.EACCES, f"envport sandbox: generated code may not {verb} a path outside its "
            f"writable folders ({shown}); {event} refused", fsdecode(path))

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if not ((isinstance(flags, int) and flags & write_flags)
                    or (isinstance(mode, str) and ("w" in mode or "a" in mode or "x" in mode
                                                   or "+" in mode))):
                return
            real = resolve(path, None)
            if real is not None and not inside(real):
                deny(event, path)
            return
        spec = checked.get(event)
        if spec is None:
            return
        for i, fd_i in spec:
            if i >= len(args):
                continue
            dir_fd = args[fd_i] if fd_i is not None and fd_i < len(args) else None
            real = resolve(args[i], dir_fd)
            if real is not None and not inside(real):
                deny(event, args[i])

    sys.addaudithook(hook)


def _chain() -> None:
    """Run the sitecustomize this one shadows, if the interpreter has one."""
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    here = os.path.realpath(os.path.dirname(__file__))
    rest = [p for p in sys.path if os.path.realpath(p or ".") != here]
    found = PathFinder.find_spec("sitecustomize", rest)
    if found is not None and found.loader is not None:
        found.loader.exec_module(module_from_spec(found))


_install()
_chain()
del _install, _chain

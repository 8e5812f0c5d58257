"""The small program that starts a command with fewer privileges than gitbot has (see confine.py).

It runs as `python -I -S -c <this source> MODE SPEC... -- ARGV...` between gitbot and the command, so that
the restrictions are in place before the command's first instruction (a preexec_fn is unsafe in
gitbot's threaded process). Standard library only, and passed as text, never read from disk at that
moment: the repository could be gitbot's own source.

MODE "drop" (gitbot runs as root, ARGV is bubblewrap): in a private mount namespace, the repository
(and git directories outside it) are mounted again with an id-mapping that makes host root's files
appear owned by an unprivileged uid, under a staging tmpfs; every other bind source that uid could not
reach is bound there too; then all groups, the gid and the uid become that uid, and bubblewrap is
started unprivileged, with a seccomp filter (`--seccomp`) that refuses setuid and setgid modes. The
sandbox's processes are that uid on the host: root's files (/etc/shadow, /proc/sys) are not theirs, and
what they write in the repository is stored as root's (hence no setuid mode there).

MODE "confine" (no sandbox): no new privileges, a Landlock domain (a process in one cannot read the
memory or /proc/<pid>/environ of processes outside it: gitbot and its parents; with ABI 6+, nor signal
them), and as root, no capabilities and no way to get them back on exec.

Started for one command (not by the launcher), "confine" and "contain" run it in a child and outlive it
(`supervise`): what it leaves running is killed before this helper exits, as the launcher does.

MODE "contain" (a container without user namespaces, where bubblewrap cannot start): the command stays in
gitbot's namespaces, but in a Landlock domain that lets it read only the paths given, write only the
paths given, and (ABI 6+) signal or reach no abstract socket outside it; a seccomp filter that refuses
setuid and setgid modes, new sockets but netlink (unless the network is allowed) and the calls that reach other processes or
the kernel's namespaces and mounts (ptrace, process_vm_*, io_uring, bpf, mount, unshare, setns,
open_by_handle_at, keyctl, …); no new privileges; as root, no capabilities.

SPEC is plain arguments (`confine.helper_command` writes them; json would double the helper's start-up
time, paid by every command): first the command's limits, FILE_BYTES NPROC GO_FD ("-" for none), set
before anything else (GO_FD: wait there for "ok" from gitbot, which puts this process into the
command's pids cgroup meanwhile; see processes.py); then for "drop", UID STAGE, the number of
id-mapped directories and a SOURCE NAME pair for each, the number of binds and a SOURCE NAME IS_DIR
triple for each; for "confine", 1 or 0 (Landlock); for "contain", NETWORK (1 or 0) and then
groups of RIGHTS COUNT PATH..., where RIGHTS is "r" (read and execute beneath), "w" (read, execute
and every write beneath), "f" (a file's own write rights: write and truncate), "l" (list the
directory only) or "d" (a device: read and write the file). Exit status 125 with a message on stderr when a
step fails.
"""

import ctypes
import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
OPEN_TREE_CLONE = 1
OPEN_TREE_CLOEXEC = 0o2000000
AT_FDCWD = -100
AT_EMPTY_PATH = 0x1000
AT_RECURSIVE = 0x8000
MOUNT_ATTR_IDMAP = 0x00100000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MS_SLAVE = 1 << 19
MNT_DETACH = 2
# Syscall numbers shared by every architecture gitbot runs on (x86_64, aarch64): the new mount API
# and Landlock were added with unified numbers.
SYS_OPEN_TREE = 428
SYS_MOVE_MOUNT = 429
SYS_MOUNT_SETATTR = 442
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 11
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS_LOCKED and their locks: uid 0 gets no
# capabilities from execve, ever again in this process tree.
SECUREBITS_LOCKED_NOROOT = 0x2F
EXIT_FAILED = 125

libc = ctypes.CDLL(None, use_errno=True)


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


class RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class FullRulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]


class CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


class Failed(Exception):
    pass


def check(result, what):
    if result < 0:
        errno = ctypes.get_errno()
        raise Failed(f"{what}: {os.strerror(errno)}")
    return result


def user_namespace(uid):
    """An fd of a user namespace mapping 0 to `uid` (for the id-mapped mounts)."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        os.close(done_w)
        ok = libc.unshare(CLONE_NEWUSER) == 0
        os.write(ready_w, b"1" if ok else b"0")
        os.read(done_r, 1)
        os._exit(0)
    os.close(ready_w)
    os.close(done_r)
    try:
        if os.read(ready_r, 1) != b"1":
            raise Failed("cannot create a user namespace for the id-mapping")
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as handle:
                handle.write(f"0 {uid} 1\n")
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(done_w, b"1")
        os.close(done_w)
        os.close(ready_r)
        os.waitpid(pid, 0)


def idmapped_mount(source, target, userns_fd):
    tree = check(libc.syscall(SYS_OPEN_TREE, AT_FDCWD, source.encode(),
                              OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE), f"open_tree {source}")
    attr = MountAttr(MOUNT_ATTR_IDMAP, 0, 0, userns_fd)
    check(libc.syscall(SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH | AT_RECURSIVE, ctypes.byref(attr),
                       ctypes.sizeof(attr)), f"id-mapping {source} (mount_setattr)")
    check(libc.syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
          f"move_mount {source}")
    os.close(tree)


def drop(spec, argv):
    """One command: a private mount namespace with the staging tmpfs, then `drop_exec`."""
    check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "making mounts private")
    check(libc.mount(b"tmpfs", spec["stage"].encode(), b"tmpfs", 0, b"mode=0755,size=1m"), "staging tmpfs")
    Stage(spec["uid"]).add(spec)
    drop_exec(spec, argv)


class Stage:
    """The id-mapped and bound sources under the staging tmpfs, each once: the launcher (`serve`) keeps
    one for all its commands. A source is named by its identity (confine._staged), and what is mounted
    under a name is checked to be that file: a path swapped between gitbot's look and the mount fails."""

    def __init__(self, uid):
        self.uid = uid
        self.userns = None
        self.mounted = set()

    def add(self, spec):
        stage = spec["stage"]
        for source, name in spec["idmap"]:
            if name not in self.mounted:
                if self.userns is None:
                    self.userns = user_namespace(self.uid)
                target = os.path.join(stage, name)
                os.makedirs(target, exist_ok=True)
                idmapped_mount(source, target, self.userns)
                self._verify(target, name)
        for source, name, is_dir in spec["bind"]:
            if name not in self.mounted:
                target = os.path.join(stage, name)
                if is_dir:
                    os.makedirs(target, exist_ok=True)
                else:
                    os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
                check(libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"staging {source}")
                self._verify(target, name)

    def _verify(self, target, name):
        st = os.stat(target)
        if name.split("-", 1)[1] != f"{st.st_dev:x}-{st.st_ino:x}":
            libc.umount2(target.encode(), MNT_DETACH)
            raise Failed(f"{target}: the source changed while it was staged")
        self.mounted.add(name)


def drop_exec(spec, argv):
    """Become the unprivileged uid and start bubblewrap, its sources staged."""
    uid = spec["uid"]
    # bubblewrap is opened while still root and run through its fd: the unprivileged uid need not be
    # able to reach the directory it is in.
    program = os.open(argv[0], os.O_PATH)
    with open(argv[0], "rb") as handle:
        if handle.read(2) == b"#!":
            os.set_inheritable(program, True)  # a script's interpreter opens it through the fd
    # Filtered in the sandbox: no setuid or setgid file can be made in the id-mapped repository.
    argv = [argv[0], "--seccomp", str(seccomp_fd(SETID)), *argv[1:]]
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    os.execv(f"/proc/self/fd/{program}", argv)


def drop_capabilities():
    check(libc.prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_NOROOT, 0, 0, 0), "securebits")
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == 22:  # EINVAL: past the last
            break
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")


def confine(spec, argv):
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if spec.get("landlock"):
        # (ABI 6+) and no signal to a process outside the domain: not to the launcher or helper that kills
        # what the command leaves running once it ends (killed first, it would leave them to live on).
        attr = FullRulesetAttr(LANDLOCK_ACCESS_FS_MAKE_BLOCK, 0, SCOPE_SIGNAL) if landlock_abi() >= 6 else \
            RulesetAttr(LANDLOCK_ACCESS_FS_MAKE_BLOCK)
        ruleset = check(libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0),
                        "landlock_create_ruleset")
        check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
        os.close(ruleset)
    if os.geteuid() == 0:
        drop_capabilities()
    start(argv)


def start(argv, program=None):
    """Exec the command (`program`, else argv[0] looked up on PATH). When the command itself cannot start,
    say so as a shell would (126, 127), not as a setup failure."""
    try:
        if program is None:
            os.execvp(argv[0], argv)
        os.execv(program, argv)
    except OSError as exc:
        sys.stderr.write(f"{argv[0]}: {exc.strerror}\n")
        sys.exit(126 if isinstance(exc, PermissionError) else 127)


# ---------------------------------------------------------------- "contain": Landlock and seccomp

SYS_LANDLOCK_ADD_RULE = 445
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1, 1 << 1, 1 << 2, 1 << 3
FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
# Every file-system right of each Landlock ABI: what is not granted below is refused.
FS_ALL_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM = 1
AF_NETLINK = 16
# classic BPF: ld [k], jeq k, ret k, jge k
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x06
# seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low 32 bits on little-endian machines)
# The calls refused whatever their arguments: they reach other processes (ptrace, process_vm_*,
# kcmp, pidfd_getfd), the kernel's namespaces and mounts (unshare, setns, mount and the new mount API,
# pivot_root, chroot), a way around this filter (io_uring makes sockets without socket()), or the
# kernel itself (bpf, perf_event_open, keyctl, modules, kexec, userfaultfd, open_by_handle_at: the
# classic container escape).
ARCHES = {
    "x86_64": {"audit": 0xC000003E, "x32_bit": 0x40000000, "socket": 41, "refused": [
        101, 310, 311, 312, 438, 272, 308, 165, 166, 155, 161, 425, 426, 427, 321, 298, 250, 248, 249, 175, 313,
        176, 246, 320, 323, 304, 428, 429, 430, 431, 432, 433, 442]},
    "aarch64": {"audit": 0xC00000B7, "x32_bit": None, "socket": 198, "refused": [
        117, 270, 271, 272, 438, 97, 268, 40, 39, 41, 51, 425, 426, 427, 280, 241, 219, 217, 218, 105, 273,
        106, 104, 294, 282, 265, 428, 429, 430, 431, 432, 433, 442]},
}


# The calls that set a file's mode, with the index of their mode argument: none may set S_ISUID or
# S_ISGID. The repository is id-mapped, so what the sandbox's uid makes there is stored as gitbot's
# user's (root's, as root): a setuid file left there would run as that user for anyone, after the run
# (nosuid holds only inside the sandbox). openat2 takes its mode in a struct seccomp cannot read: it
# answers ENOSYS, and libraries fall back to openat.
SETID_MODE_ARGUMENT = {
    "x86_64": {90: 1, 91: 1, 268: 2, 452: 2, 2: 2, 257: 3, 85: 1, 83: 1, 258: 2, 133: 1, 259: 2},
    "aarch64": {52: 1, 53: 2, 452: 2, 56: 3, 34: 2, 33: 2},
}
SYS_OPENAT2 = 437
ENOSYS = 38
S_ISUID_OR_ISGID = 0o6000
BPF_JSET_K = 0x45


def seccomp_program(network):
    """The filter for "contain": no setuid files, and none of the calls that reach past the container."""
    arch, refuse, program = seccomp_start()
    for number in arch["refused"]:
        program += [(BPF_JEQ_K, 0, 1, number), (BPF_RET_K, 0, 0, refuse)]
    if not network:
        # socket(): only netlink (glibc's getaddrinfo asks the kernel for the addresses it has); no
        # internet, packet or unix socket (a unix socket could reach a container engine's socket).
        program += [(BPF_JEQ_K, 0, 4, arch["socket"]), (BPF_LD_W_ABS, 0, 0, 16), (BPF_JEQ_K, 1, 0, AF_NETLINK),
                    (BPF_RET_K, 0, 0, refuse), (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]
    program.append((BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW))
    return program


def setid_program():
    """The filter bubblewrap installs for its command (`--seccomp`): no setuid or setgid files."""
    return seccomp_start()[2] + [(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]


def seccomp_start():
    """The program's common head: another architecture's calls (i386, x32) are refused outright (their
    numbers differ); then the mode checks, each ending in its verdict. Leaves the call's number loaded."""
    machine = os.uname().machine
    arch = ARCHES.get(machine)
    if arch is None:
        raise Failed(f"no seccomp filter for {machine}")
    refuse = SECCOMP_RET_ERRNO | EPERM
    program = [(BPF_LD_W_ABS, 0, 0, 4), (BPF_JEQ_K, 1, 0, arch["audit"]), (BPF_RET_K, 0, 0, refuse),
               (BPF_LD_W_ABS, 0, 0, 0)]
    if arch["x32_bit"]:
        program += [(BPF_JGE_K, 0, 1, arch["x32_bit"]), (BPF_RET_K, 0, 0, refuse)]
    program += [(BPF_JEQ_K, 0, 1, SYS_OPENAT2), (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS)]
    for number, argument in SETID_MODE_ARGUMENT[machine].items():
        # the low 32 bits of the argument (little-endian): a mode_t
        program += [(BPF_JEQ_K, 0, 4, number), (BPF_LD_W_ABS, 0, 0, 16 + 8 * argument),
                    (BPF_JSET_K, 0, 1, S_ISUID_OR_ISGID), (BPF_RET_K, 0, 0, refuse),
                    (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]
    return arch, refuse, program


SETID = "setid"  # the name of setid_program(), which is compiled once per process
_COMPILED = {}


def compiled(program):
    """`program` (a list of instructions, or SETID) as the kernel takes it."""
    if program == SETID and SETID in _COMPILED:
        return _COMPILED[SETID]
    instructions = setid_program() if program == SETID else program
    code = bytes((SockFilter * len(instructions))(*(SockFilter(*instruction) for instruction in instructions)))
    if program == SETID:
        _COMPILED[SETID] = code
    return code


def seccomp_fd(program, flags=0):
    """A file holding `program` (or SETID) compiled, at offset 0, for bwrap's --seccomp (inherited across
    exec unless `flags` has os.MFD_CLOEXEC: gitbot's own process passes it on with pass_fds)."""
    fd = os.memfd_create("gitbot-seccomp", flags)
    os.write(fd, compiled(program))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def install_seccomp(network):
    program = seccomp_program(network)
    filters = (SockFilter * len(program))(*(SockFilter(*instruction) for instruction in program))
    fprog = SockFprog(len(program), filters)
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0), "seccomp filter")


def landlock_abi():
    return libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)


def resolve(program):
    """`program` as execvp would find it on PATH, looked up before Landlock hides the interpreter's
    own library (os.execvp imports modules as it searches)."""
    if "/" in program:
        return program
    for directory in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        candidate = os.path.join(directory or ".", program)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return program


def contain(spec, argv):
    program = resolve(argv[0])
    abi = landlock_abi()
    if abi < 1:
        raise Failed(f"Landlock is not available: {os.strerror(ctypes.get_errno())}")
    everything = FS_ALL_BY_ABI.get(abi, FS_ALL_BY_ABI[5])
    read = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    file_write = FS_WRITE_FILE | (FS_TRUNCATE if abi >= 3 else 0)
    device = FS_IOCTL_DEV if abi >= 5 else 0
    rights = {"r": read, "w": everything, "f": read | file_write, "l": FS_READ_DIR,
              "d": FS_READ_FILE | FS_WRITE_FILE | device}
    attr = FullRulesetAttr(everything, NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 and not spec["network"] else 0,
                           SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = check(libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0), "landlock_create_ruleset")
    for kind, path in spec["rules"]:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # gone since gitbot looked: nothing to grant
        try:
            is_dir = os.path.isdir(f"/proc/self/fd/{fd}")
            # A rule on a file may carry only the rights that apply to files.
            allowed = rights[kind] if is_dir else rights[kind] & (FS_EXECUTE | FS_READ_FILE | file_write | device)
            rule = PathBeneathAttr(allowed, fd)
            check(libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0),
                  f"landlock rule for {path}")
        finally:
            os.close(fd)
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if os.geteuid() == 0:
        drop_capabilities()
    check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    os.close(ruleset)
    install_seccomp(spec["network"])
    start(argv, program)


def parse_spec(mode, fields):
    limits = {"file_bytes": fields[0], "nproc": fields[1], "go": fields[2]}
    fields = fields[3:]
    if mode == "drop":
        uid, stage, count = int(fields[0]), fields[1], int(fields[2])
        idmap = [fields[3 + 2 * n:5 + 2 * n] for n in range(count)]
        rest = fields[3 + 2 * count:]
        binds = [[rest[1 + 3 * n], rest[2 + 3 * n], rest[3 + 3 * n] == "1"] for n in range(int(rest[0]))]
        if len(rest) != 1 + 3 * len(binds):
            raise Failed("malformed drop spec")
        return limits, {"uid": uid, "stage": stage, "idmap": idmap, "bind": binds}
    if mode == "confine":
        return limits, {"landlock": fields == ["1"]}
    if mode == "contain":
        rules, index = [], 1
        while index < len(fields):
            kind, count = fields[index], int(fields[index + 1])
            if kind not in "rwfld" or len(kind) != 1:
                raise Failed("malformed contain spec")
            rules += [(kind, path) for path in fields[index + 2:index + 2 + count]]
            index += 2 + count
        if index != len(fields):
            raise Failed("malformed contain spec")
        return limits, {"network": fields[0] == "1", "rules": rules}
    return limits, {}


def apply_limits(limits):
    """What the launcher shell does otherwise (`ulimit -f`, `ulimit -u`, joining the cgroup)."""
    if limits["file_bytes"] != "-" or limits["nproc"] != "-":
        import resource

        if limits["file_bytes"] != "-":
            size = int(limits["file_bytes"])
            resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        if limits["nproc"] != "-":
            count = int(limits["nproc"])
            resource.setrlimit(resource.RLIMIT_NPROC, (count, count))
    if limits["go"] != "-":
        fd = int(limits["go"])
        answer = os.read(fd, 3)
        os.close(fd)
        if answer != b"ok\n":
            raise Failed("the command could not be put into its process-limit cgroup")


# ---------------------------------------------------------------- "serve": one helper for many commands


def serve(control_fd, stage):
    """MODE "serve": the launcher (launcher.py). Starting this interpreter, loading ctypes and setting up
    the staging mounts cost more than a `git status`; one process does it once per run, and forks for
    each command what a helper started for it would do. Requests come on `control_fd` (a unix socket
    only gitbot holds) as one byte with the fds [request, status, stdin, stdout, *passed]: `request` a
    memfd holding json {"args": [MODE, SPEC..., "--", ARGV...], "cwd", "env", "fds": the numbers the
    passed fds must have}. On `status` the launcher writes "pid N" once the command runs, then "exit N"
    (N < 0: killed by signal -N) when it ends. When gitbot goes (the socket reads empty), every command
    still running is killed and the launcher exits. For "drop" it stages sources under `stage` in a mount
    namespace of its own, once per source (`Stage`)."""
    import fcntl  # noqa: F401 - for _place_fds, imported once rather than in every child
    import json
    import resource  # noqa: F401 - for apply_limits, likewise
    import select
    import signal
    import socket

    compiled(SETID)  # once, for every child
    control = socket.socket(fileno=control_fd)
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    stages = None  # uid -> Stage, once the first "drop" command made the staging namespace
    running = {}  # pid -> status socket
    # What a command's processes leave behind when their parent exits (bubblewrap's own, a daemon's
    # double fork) becomes the launcher's to reap: left to a pid 1 that never reaps (a container's
    # `tail -f`), each zombie would count in the cgroup against every later command.
    check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "child subreaper")
    control.sendall(b"ready\n")

    def reap():
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            answer = running.pop(pid, None)
            if answer is not None:
                code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
                # Its processes end with it (commands run one at a time: every other descendant is its),
                # before gitbot hears of the end and checks what the command left.
                stopped = kill_descendants()
                _say(answer, f"exit {code} {stopped}\n")
                answer.close()

    while True:
        ready, _, _ = select.select([control, wake_r], [], [])
        if wake_r in ready:
            while True:
                try:
                    if not os.read(wake_r, 512):
                        break
                except BlockingIOError:
                    break
            reap()
        if control not in ready:
            continue
        try:
            message, fds, _flags, _addr = socket.recv_fds(control, 1, 64)
        except OSError:
            message, fds = b"", []
        if not message:
            kill_descendants()
            return
        if len(fds) < 4:
            for fd in fds:
                os.close(fd)
            continue
        request_fd, status_fd, stdin_fd, stdout_fd, *passed = fds
        answer = socket.socket(fileno=status_fd)
        try:
            with os.fdopen(request_fd, "rb") as handle:
                request = json.loads(handle.read())
            args = request["args"]
            separator = args.index("--")
            mode, argv = args[0], args[separator + 1:]
            limits, spec = parse_spec(mode, args[1:separator])
            if mode == "drop":
                if spec["stage"] != stage:
                    raise Failed("the launcher stages elsewhere")
                if stages is None:
                    # Its own mount namespace, a slave of the host's so later host mounts still show;
                    # made only for bubblewrap as root (a container without CAP_SYS_ADMIN has no use for it).
                    check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
                    check(libc.mount(b"none", b"/", None, MS_REC | MS_SLAVE, None), "making mounts a slave")
                    check(libc.mount(b"tmpfs", stage.encode(), b"tmpfs", 0, b"mode=0755,size=1m"), "staging tmpfs")
                    stages = {}
                stages.setdefault(spec["uid"], Stage(spec["uid"])).add(spec)
        except (Failed, OSError, ValueError, KeyError, IndexError) as exc:
            # As a helper started for the command would: a message on its output, and exit status 125.
            _failed(stdout_fd, exc)
            mode = "failed"
        pid = os.fork()
        if pid == 0:
            code = EXIT_FAILED
            output = stdout_fd  # where a failure is said: the command's output, fd 1 once it is placed
            try:
                os.setsid()
                if mode == "failed":
                    os._exit(code)
                signal.set_wakeup_fd(-1)
                for signum in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGCHLD):
                    signal.signal(signum, signal.SIG_DFL)
                _place_fds([(stdin_fd, 0), (stdout_fd, 1), (stdout_fd, 2),
                            *zip(passed, request["fds"])])
                output = 1
                os.chdir(request["cwd"])
                os.environ.clear()
                os.environ.update(request["env"])
                apply_limits(limits)
                if mode == "drop":
                    drop_exec(spec, argv)
                elif mode == "confine":
                    confine(spec, argv)
                elif mode == "contain":
                    contain(spec, argv)
                elif mode == "exec":  # bubblewrap started by a user that needs no helper
                    start(argv, resolve(argv[0]))
                else:
                    raise Failed(f"unknown mode {mode!r}")
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else EXIT_FAILED
            except BaseException as exc:  # noqa: BLE001 - the child must never return to the loop
                _failed(output, exc)
            finally:
                os._exit(code)
        for fd in (stdin_fd, stdout_fd, *passed):
            os.close(fd)
        running[pid] = answer
        _say(answer, f"pid {pid}\n")


def kill_descendants():
    """Kill every process descending from this one, a child subreaper, and reap them; how many were running.

    A command's process that left its process group (setsid), its parent (a double fork) or its pids cgroup
    is still a descendant: orphans come to the nearest subreaper, this process. Round by round: each
    process found by the kernel's children lists is pinned by a pidfd, checked to still be the child of the
    process it was listed under (its pid may have been reused by then), and killed; what a killed process
    leaves becomes this one's child, for the next round. A launcher whose command left nothing reads one
    children file, not all of /proc."""
    import _signal as signal  # (see supervise)

    me = os.getpid()
    killed, stopped = set(), set()
    while True:
        ours = _children(me)
        if not ours:
            return len(stopped)
        queue = [(me, pid) for pid in ours]
        while queue:
            parent, pid = queue.pop()
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue  # gone (or reaped) since it was listed
            try:
                state, ppid = _state(pid)
                if ppid != parent:
                    continue  # not the process listed: moved to this one by now, or a reused pid
                if state != "Z":
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    killed.add(pid)
                    if not _namespace_init(pid):  # bubblewrap's, still going after bubblewrap: not the command's
                        stopped.add(pid)
            except OSError:
                continue
            finally:
                os.close(pidfd)
            queue += [(pid, child) for child in _children(pid)]
        for pid in killed.intersection(ours):
            try:
                os.waitpid(pid, 0)  # killed: it goes at once (a process in uninterruptible sleep first wakes)
            except ChildProcessError:
                pass
        while True:  # what the killed left as zombies came to this one: reaped too
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _children(pid):
    """The pids of `pid`'s children, from each of its threads' children list."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += [int(child) for child in handle.read().split()]
        except OSError:
            continue
    return found


def _namespace_init(pid):
    """Is `pid` the first process of a PID namespace below this one's (bubblewrap's init, which may still be
    ending, taking its namespace with it, when bubblewrap has exited)?"""
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("NSpid:"):
                    numbers = line.split()[1:]
                    return len(numbers) > 1 and numbers[-1] == "1"
    except OSError:
        pass
    return False


def _state(pid):
    """(state letter, parent pid) of a process, from /proc/PID/stat (its name, in parentheses, may hold
    anything)."""
    with open(f"/proc/{pid}/stat", "rb") as handle:
        stat = handle.read()
    fields = stat[stat.rindex(b")") + 2:].split()
    return fields[0].decode(), int(fields[1])


def _say(answer, line):
    try:
        answer.sendall(line.encode())
    except OSError:
        pass  # gitbot stopped listening for this command (it was interrupted): nothing to tell


def _failed(fd, exc):
    try:
        os.write(fd, f"gitbot-sandbox: {exc}\n".encode())
    except OSError:
        pass


def _place_fds(pairs):
    """Each (fd, number): the fd given the number, and no other fd left open (not the launcher's socket)."""
    import fcntl  # imported by `serve` before it forks

    # Above every number wanted (not at a fixed height: RLIMIT_NOFILE is often 1024 for a user).
    above = max(number for _fd, number in pairs) + 1
    moved = [(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above), number) for fd, number in pairs]
    for fd, number in moved:
        os.dup2(fd, number, inheritable=True)
    low = 0
    for number in [*sorted({number for _fd, number in moved}), 1 << 20]:
        if number > low:
            os.closerange(low, number)
        low = number + 1


# Signals gitbot sends a command's process group to stop it (processes.stop), and that a terminal sends.
STOPPING = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
# After one of them, how long the command has to end before the helper kills it and all it started: less
# than gitbot's own grace (processes.KILL_GRACE_SECONDS, 2 s), after which its SIGKILL would end this
# helper too, leaving what the command started to a reaper that kills nothing.
STOP_GRACE_SECONDS = 1.5


def supervise(run):
    """A command started without the launcher ("confine", "contain"): `run` (which execs it) in a child,
    this process a child subreaper that waits for it, then kills whatever it left running (setsid, a double
    fork, a process out of its cgroup: all still descend from here; `kill_descendants`) and exits as it did,
    so gitbot, which waits for this process, checks the work tree only once nothing of the command is left."""
    import _signal as signal  # the module without its enums: `signal` costs every command ~20 ms to import

    check(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "child subreaper")
    stopping = [getattr(signal, name) for name in STOPPING]
    before = signal.pthread_sigmask(signal.SIG_BLOCK, stopping)  # none may end this process before its handler is set
    pid = os.fork()
    if pid == 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
        code = EXIT_FAILED
        try:
            run()
        except SystemExit as exc:  # start(): the command could not start (126, 127)
            code = exc.code if isinstance(exc.code, int) else EXIT_FAILED
        except BaseException as exc:  # noqa: BLE001 - the child must never return into the supervisor
            sys.stderr.write(f"gitbot-sandbox: {exc}\n")
        finally:
            sys.stderr.flush()
            os._exit(code)

    def stop(*_):  # the command's group got the signal too; if it does not end, it is killed
        signal.setitimer(signal.ITIMER_REAL, STOP_GRACE_SECONDS)

    def kill(*_):
        try:
            os.kill(pid, signal.SIGKILL)  # still this process's child (not reaped): the pid is its
        except OSError:
            pass

    for signum in stopping:
        signal.signal(signum, stop)
    signal.signal(signal.SIGALRM, kill)
    signal.pthread_sigmask(signal.SIG_SETMASK, before)
    _pid, status = os.waitpid(pid, 0)  # retried after a handler ran (PEP 475)
    signal.setitimer(signal.ITIMER_REAL, 0)
    kill_descendants()
    if os.WIFSIGNALED(status):
        # Ended as the command did, so gitbot reads the same status (no core file of this process).
        import resource

        signum = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
        os.kill(os.getpid(), signum)
        os._exit(128 + signum)  # a signal that does not end a process by default
    os._exit(os.WEXITSTATUS(status))


def main(args):
    mode = args[0]
    separator = args.index("--")
    argv = args[separator + 1:]
    try:
        limits, spec = parse_spec(mode, args[1:separator])
        apply_limits(limits)
        if mode == "serve":
            serve(int(argv[0]), argv[1])
        elif mode == "drop":
            drop(spec, argv)
        elif mode == "confine":
            supervise(lambda: confine(spec, argv))
        elif mode == "contain":
            supervise(lambda: contain(spec, argv))
        elif mode == "probe":
            attr = RulesetAttr(LANDLOCK_ACCESS_FS_MAKE_BLOCK)
            ruleset = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
            print("landlock" if ruleset >= 0 else f"no-landlock {os.strerror(ctypes.get_errno())}")
        else:
            raise Failed(f"unknown mode {mode!r}")
    except (Failed, OSError, ValueError, IndexError) as exc:
        sys.stderr.write(f"gitbot-sandbox: {exc}\n")
        sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main(sys.argv[1:])

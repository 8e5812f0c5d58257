"""A generated Linux-size repository with a long history, for benchmarks that walk history
(bench_history_store.py) and step overhead on a large tree (bench_real_repo.py).

    .venv/bin/python bench/gen_history.py /tmp/linuxish                     # 75,000 files, 100,000 commits
    .venv/bin/python bench/gen_history.py /tmp/r --files 20000 --commits 5000

The tree is shaped like the Linux kernel's: top-level areas (drivers, fs, arch, net, ...) with
directories up to seven deep and files of a few hundred bytes to a few KB. The history is one branch
written with `git fast-import`: a first commit with the whole tree, then commits that each change
one to four files (a few add or delete one), and, spread through it, commits that add a secret
(`.env`, `*.pem`, `*.key`) somewhere deep and later ones that delete it again, so read_deny blobs
lie in the history and not in the work tree (what the sandbox's filtered store must hide). Not a
real Linux clone: about a tenth of its commits, none of its merges. Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import time
from pathlib import Path

AREAS = ("drivers", "fs", "arch", "net", "sound", "kernel", "mm", "include", "tools", "Documentation",
         "security", "crypto", "block", "lib", "scripts", "samples", "virt", "init", "ipc", "certs")
PARTS = ("core", "net", "usb", "pci", "gpu", "media", "scsi", "input", "hid", "iio", "staging", "power",
         "clk", "phy", "pinctrl", "regulator", "thermal", "tty", "video", "misc", "mfd", "i2c", "spi", "dma",
         "firmware", "platform", "soc", "bus", "base", "acpi", "nvme", "md", "mtd", "leds", "rtc", "watchdog")
SUFFIXES = (".c", ".c", ".c", ".h", ".h", ".S", ".rst", ".yaml", "Makefile", "Kconfig")
SECRETS = (".env", "server.pem", "signing.key", ".env.production", "client.p12")


def tree(files: int, rng: random.Random) -> list[str]:
    """`files` distinct paths, one to seven directories deep, grouped as a real tree is."""
    paths: set[str] = set()
    directories: list[str] = []
    while len(paths) < files:
        if not directories or rng.random() < 0.08:
            depth = rng.choice((1, 2, 2, 3, 3, 3, 4, 4, 5, 6))
            parts = [rng.choice(AREAS)] + [f"{rng.choice(PARTS)}{rng.randrange(40) or ''}" for _ in range(depth)]
            directories.append("/".join(parts))
        directory = rng.choice(directories[-50:])
        suffix = rng.choice(SUFFIXES)
        name = suffix if suffix in ("Makefile", "Kconfig") else f"{rng.choice(PARTS)}_{rng.randrange(10**5)}{suffix}"
        paths.add(f"{directory}/{name}")
    return sorted(paths)


def content(path: str, version: int, rng: random.Random) -> bytes:
    lines = [f"// {path} v{version}"]
    for n in range(rng.randrange(8, 80)):
        lines.append(f"static int {path.rsplit('/', 1)[-1].split('.')[0]}_{n}(void) {{ return {rng.randrange(10**6)}; }}")
    return ("\n".join(lines) + "\n").encode()


def blob(out, data: bytes) -> None:
    out.write(b"data %d\n" % len(data))
    out.write(data)
    out.write(b"\n")


def generate(where: Path, files: int, commits: int, seed: int) -> dict:
    rng = random.Random(seed)
    where.mkdir(parents=True, exist_ok=False)
    subprocess.run(["git", "init", "-q", "-b", "main", str(where)], check=True)
    paths = tree(files, rng)
    secrets_live: list[str] = []
    secrets_added = 0
    importer = subprocess.Popen(["git", "fast-import", "--quiet", "--done"], cwd=where, stdin=subprocess.PIPE)
    out = importer.stdin
    stamp = 1_100_000_000

    def commit(message: str, changes: list[tuple[str, bytes | None]]) -> None:
        nonlocal stamp
        stamp += 600
        out.write(b"commit refs/heads/main\n")
        out.write(b"committer Bench <bench@example.invalid> %d +0000\n" % stamp)
        blob(out, message.encode())
        for path, data in changes:
            if data is None:
                out.write(b"D %s\n" % path.encode())
            else:
                out.write(b"M 100644 inline %s\n" % path.encode())
                blob(out, data)

    commit("initial tree", [(path, content(path, 0, rng)) for path in paths])
    for n in range(1, commits):
        changes: list[tuple[str, bytes | None]] = []
        roll = rng.random()
        if roll < 0.002 or (secrets_live and roll < 0.004):
            if secrets_live and roll >= 0.002:
                changes.append((secrets_live.pop(rng.randrange(len(secrets_live))), None))
            else:
                directory = rng.choice(paths).rsplit("/", 1)[0]
                secret = f"{directory}/{rng.choice(SECRETS)}"
                secrets_live.append(secret)
                secrets_added += 1
                changes.append((secret, f"TOKEN=generated-{n}-{rng.randrange(10**12)}\n".encode()))
        else:
            for path in rng.sample(paths, rng.choice((1, 1, 2, 3, 4))):
                changes.append((path, content(path, n, rng)))
        commit(f"change {n}", changes)
    # The work tree holds no secret: every one added is deleted by the end.
    if secrets_live:
        commit("remove the rest", [(path, None) for path in secrets_live])
    out.write(b"done\n")
    out.close()
    if importer.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "checkout", "-q", "-f", "main"], cwd=where, check=True)
    return {"files": len(paths), "commits": commits + (1 if secrets_live else 0), "secrets_in_history": secrets_added}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("where", type=Path)
    parser.add_argument("--files", type=int, default=75_000)
    parser.add_argument("--commits", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=22)
    options = parser.parse_args()
    began = time.perf_counter()
    made = generate(options.where, options.files, options.commits, options.seed)
    print(f"{options.where}: {made['files']:,} files, {made['commits']:,} commits, {made['secrets_in_history']} "
          f"read_deny files added and deleted in history; {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()

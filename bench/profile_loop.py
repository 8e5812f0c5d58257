"""Profile the agent loop's own per-step work: 30 execute_command `true` steps on a repository, through
the loopback Messages API, under cProfile (main thread only: the fake server's thread is not counted).

    .venv/bin/python bench/profile_loop.py /path/to/repo [lines [stats-file]]
    GITBOT_PROFILE_CPU=1 .venv/bin/python bench/profile_loop.py ...   # the main thread's CPU time instead

On a loaded machine the wall times swing widely; the CPU times (this thread's alone) much less.

Prints the profile, then per step: the loop's run, minus the command's Runner.run_shell, minus the time
blocked on the socket (the server), minus the wait for the background checkpoint; what is left is the
loop's own work (gitbot's and the SDK's request building and reply parsing).
"""
import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_real_repo as B

STEPS = 30


def cumulative(stats: pstats.Stats, file_part: str, name: str) -> float:
    return sum(v[3] for (file, _line, func), v in stats.stats.items() if func == name and file_part in file)


def main() -> None:
    repo = Path(sys.argv[1])
    call = ("execute_command", {"command": "true"})
    B.run_overhead(repo, [call] * 4)
    cpu = bool(os.environ.get("GITBOT_PROFILE_CPU"))
    profile = cProfile.Profile(time.thread_time) if cpu else cProfile.Profile()
    profile.enable()
    B.run_overhead(repo, [call] * STEPS)
    profile.disable()
    stats = pstats.Stats(profile)
    if len(sys.argv) > 3:
        stats.dump_stats(sys.argv[3])
    stats.sort_stats("cumulative").print_stats(int(sys.argv[2]) if len(sys.argv) > 2 else 80)
    loop = cumulative(stats, "gitbot/agent/loop.py", "run")
    shell = cumulative(stats, "gitbot/sandbox/runner.py", "run_shell")
    socket = sum(cumulative(stats, "~", f"<method '{m}' of '_socket.socket' objects>") for m in ("recv", "recv_into"))
    waiting = cumulative(stats, "~", "<method 'poll' of 'select.poll' objects>") - cumulative(
        stats, "gitbot/sandbox/", "run_command")  # httpcore's wait for the reply (the command's own polls are in run_shell)
    checkpoint = cumulative(stats, "gitbot/agent/loop.py", "_finish_pending_checkpoint")
    own = loop - shell - socket - max(waiting, 0.0) - checkpoint
    per = 1000 / (STEPS + 1)
    print(f"per step ({'main thread CPU' if cpu else 'wall'}): loop {loop * per:.1f} ms, run_shell {shell * per:.1f} ms, socket {socket * per:.1f} ms, "
          f"poll {max(waiting, 0) * per:.1f} ms, checkpoint wait {checkpoint * per:.1f} ms -> own work {own * per:.1f} ms")
    for part, name in (("gitbot/record.py", "event"), ("gitbot/secrets.py", "scrub"),
                       ("gitbot/agent/conversation.py", "request_messages"),
                       ("gitbot/agent/conversation.py", "size_chars"), ("gitbot/agent/loop.py", "_account"),
                       ("anthropic/_base_client.py", "_build_request"), ("copy.py", "deepcopy")):
        print(f"  {name:<18} {cumulative(stats, part, name) * per:6.2f} ms per step")


main()

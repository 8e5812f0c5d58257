"""`gitbot eval`: how often gitbot fixes what it is asked to, at what cost, on SWE-bench-format instances
(from a dataset or mined from the user's own history).

A way in like fixcheck/ and forge/: it prepares each run with agent.prepare_run and runs it with
agent.run_task in its own worktree; nothing imports it. Resolution is judged here, not by the agent: the
held-back tests are applied fresh onto a copy of the agent's final tree (resolve.py).
"""

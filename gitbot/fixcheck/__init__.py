"""Fixing a failing check: `gitbot fix-check`, and the git hooks' fix.

Modules: flow (run the check, confirm the failure, run the agent, verify by re-running), outcome
(the request and how it ended), tampering (did the agent change the tests or silence the tool?),
changes (what the run changed, from its checkpoints), commit (--commit: a verified commit on a new
branch, its message and branch name), report (the verification block and the job summary).
"""

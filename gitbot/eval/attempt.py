"""One instance, start to end: a worktree at its base commit, the instance checked (its tests fail
before), the agent run exactly as gitbot runs in CI (agent.prepare_run, agent.run_task: the sandbox, the
policy, the checkpoints and the record), its change taken as a patch, the record kept, and the verdict
from resolve.py. Any problem of this instance ends as a row with `error` set; it never stops the others."""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gitbot.eval import testcmd
from gitbot.eval.instances import Instance
from gitbot.eval.resolve import check_before, check_tests_fail, judge, put_back_tests
from gitbot.eval.task import check_task, problem_task
from gitbot.eval.workspace import (
    InstanceProblem,
    add_worktree,
    changes_since,
    commit_tree_state,
    patch_paths,
    remove_worktree,
    resolve_commit,
    source_repository,
)
from gitbot.secrets import Secrets


@dataclass(frozen=True)
class Settings:
    """How every instance of one evaluation runs."""
    out: Path
    instances_dir: Path  # the instances file's directory: relative `repo` paths and replays are found there
    local_repo: Path | None = None
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    policy_file: Path | None = None
    replay: bool = False  # replies from <instances_dir>/replays/<instance_id>.json
    max_steps: int | None = None
    check_from_tests: bool = False


class Interrupted(Exception):
    """The run was interrupted (Ctrl-C, SIGTERM): no result is kept, so a resume runs it again."""


def instance_dir(out: Path, instance_id: str) -> Path:
    return out / "instances" / instance_id


def run_instance(instance: Instance, settings: Settings, *, budget_usd: float | None = None,
                 reporter=None) -> dict:
    started = time.monotonic()
    timings: dict[str, float] = {}
    row: dict = {"instance_id": instance.instance_id, "resolved": False, "cost_usd": 0.0, "steps": 0,
                 "tool_calls": 0, "tokens": {}, "refusals": 0, "model": settings.model or "", "error": None,
                 "why": "", "model_patch": ""}
    scratch = Path(tempfile.mkdtemp(prefix="gitbot-eval-"))
    source = agent_tree = None
    try:
        source = source_repository(instance.repo, local=settings.local_repo, beside=settings.instances_dir,
                                   cache=settings.out / "repos")
        base = resolve_commit(source, instance.base_commit)
        agent_tree = scratch / "work"
        add_worktree(source, base, agent_tree)
        run = _prepare(agent_tree, instance, settings, budget_usd)
        row["model"] = run.provider.model
        timings["setup"] = time.monotonic() - started

        mark = time.monotonic()
        start = base
        if settings.check_from_tests:
            # The agent works beside the failing tests, as fix-check does: they are committed in its worktree
            # (so its patch leaves them out) and run there; the judge puts them back fresh whatever it did.
            put_back_tests(agent_tree, instance, base)
            start = commit_tree_state(agent_tree, "the held-back tests, for --check-from-tests")
            before = check_tests_fail(agent_tree, instance, run.policy)
            command = testcmd.test_command(instance.test_cmd, [*instance.fail_to_pass, *instance.pass_to_pass])
            task = check_task(before, command, agent_tree)
        else:
            check_before(agent_tree, instance, base, run.policy)
            task = problem_task(instance)
        timings["tests_before"] = time.monotonic() - mark

        from gitbot.agent.run import run_task

        mark = time.monotonic()
        result = run_task(task, agent_tree, policy=run.policy, options=run.options, provider=run.provider,
                          reporter=reporter)
        timings["agent"] = time.monotonic() - mark
        if result.summary.startswith("interrupted"):
            raise Interrupted(result.summary)
        row.update(_from_result(result))
        _keep_record(agent_tree, result.run_id, instance_dir(settings.out, instance.instance_id) / "record")
        patch = changes_since(agent_tree, start, leave_out=patch_paths(instance.test_patch))

        mark = time.monotonic()
        verdict = judge(agent_tree, instance, base, patch, run.policy)
        timings["tests_after"] = time.monotonic() - mark
        row.update(resolved=verdict.resolved, why=verdict.why, verdict=verdict.to_dict())
        # OUTDIR is shared (an artifact, predictions for scoring): a secret the agent wrote into its change
        # or a test printed is replaced there, as in the record. The verdict was made on the real patch.
        secrets = Secrets.from_environment()
        row["model_patch"], found = secrets.scrub(patch)
        row["verdict"]["output_tail"], found_in_output = secrets.scrub(verdict.output_tail)
        if found or found_in_output:
            row.setdefault("warnings", []).append("secret-like values were replaced in the patch or test output")
    except InstanceProblem as exc:
        row.update(error="instance", why=str(exc))
    except _config_errors() as exc:
        # No key, a bad policy: not this instance's fault, and not kept as its result (batch.py).
        row.update(error="config", why=str(exc))
    except Interrupted:
        raise
    except Exception as exc:  # noqa: BLE001 — whatever broke, the other instances go on
        row.update(error="internal", why=f"{type(exc).__name__}: {exc}")
    finally:
        if source is not None and agent_tree is not None:
            remove_worktree(source, agent_tree)
        shutil.rmtree(scratch, ignore_errors=True)
    timings["total"] = time.monotonic() - started
    row["wall_seconds"] = round(timings["total"], 3)
    row["timings"] = {key: round(value, 3) for key, value in timings.items()}
    return row


def _prepare(tree: Path, instance: Instance, settings: Settings, budget_usd: float | None):
    from gitbot.agent.prepare import prepare_run

    replay = None
    if settings.replay:
        replay = settings.instances_dir / "replays" / f"{instance.instance_id}.json"
        if not replay.is_file():
            raise InstanceProblem(f"--replay: no recorded replies at {replay}")
    return prepare_run(tree, policy_file=settings.policy_file, model=settings.model, replay=replay,
                       provider_name=settings.provider, base_url=settings.base_url, max_steps=settings.max_steps,
                       max_cost_usd=budget_usd)


def _config_errors() -> tuple[type[BaseException], ...]:
    from gitbot.errors import ConfigError

    return (ConfigError,)


def _from_result(result) -> dict:
    return {"status": result.status.value, "summary": result.summary, "run_id": result.run_id,
            "cost_usd": float(result.cost_usd or 0.0), "steps": result.steps, "tool_calls": result.tool_calls,
            "tokens": result.usage.to_dict(),
            "refusals": sum(1 for step in result.step_log if step.outcome == "denied"),
            "replay": result.replay, "sandbox": result.sandbox, "warnings": list(result.warnings)}


def _keep_record(tree: Path, run_id: str, to: Path) -> None:
    """The run record (already secret-scanned) outlives the worktree."""
    from gitbot.record import runs_dir

    shutil.rmtree(to, ignore_errors=True)
    try:
        shutil.copytree(runs_dir(tree) / run_id, to, symlinks=True)  # a link is kept a link, never followed
    except OSError:
        pass  # a run that never started has no record; the row says why


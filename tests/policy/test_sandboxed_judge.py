"""The judge in the sandbox (issue 22): a command runs unless the policy denies it; the allow-list
governs unsandboxed runs and `commands.sandboxed = "allow-list"`; every refusal names its rule and says
what to do instead. Pure decisions on the corpus repositories (the only processes are git's)."""

from __future__ import annotations

import pytest

from gitbot.policy import Policy, parse_policy
from tests.policy.corpus import Case as _Case
from tests.policy.corpus import build_repositories, command_of

# What real agents typed and the allow-list refused (issue 22's largest causes): in the sandbox, run.
AGENTS_RUN = [
    "python script.py", "python -c 'import sys; print(sys.version)'", "sed -n '10,40p' src/app.py",
    "find . -name '*.py' | xargs grep -n foo", "find . -name '*.py' -exec grep -l TODO {} +",
    "grep -r --include='*.py' foo .", "pytest", "pytest --pdb -x", "pytest --basetemp=/tmp/x",
    "rm scratch.py", "rm -rf build", "./tests/runtests.py", "bin/test", "git branch --show-current",
    "PYTHONPATH=src python -m pytest", "cat .env", "grep -R TOKEN", "sed -i 's/a/b/' src/app.py",
    "echo x > notes.txt", "cat > f.py <<'EOF'\nprint(1)\nEOF", "x=$(ls); echo $x", "$PYTHON x.py",
    "pip install -e .", "make test", "cd .git && cat config",
]


@pytest.fixture(scope="module")
def repositories(tmp_path_factory):
    return build_repositories(tmp_path_factory.mktemp("sandboxed"))


def _judge(repositories, command: str, *, repo: str = "secrets", sandboxed: bool = True, **policy):
    path, values = repositories[repo]
    return Policy(repo=path, **policy).check_command(command_of(_Case(command, True), path, values),
                                                    sandboxed=sandboxed)


@pytest.mark.parametrize("command", AGENTS_RUN)
def test_in_the_sandbox_the_commands_agents_type_run(repositories, command):
    decision = _judge(repositories, command)
    assert decision.allowed, decision.reason
    assert decision.rule == "sandbox"


@pytest.mark.parametrize("command", ["python script.py", "sed -n '10,40p' src/app.py", "rm scratch.py",
                                     "pytest", "cat .env", "x=$(ls); echo $x"])
def test_without_the_sandbox_the_allow_list_still_governs(repositories, command):
    decision = _judge(repositories, command, sandboxed=False)
    assert not decision.allowed
    assert decision.rule and decision.instead


@pytest.mark.parametrize("command", ["python script.py", "rm scratch.py", "x=$(ls); echo $x"])
def test_a_policy_may_ask_for_the_allow_list_inside_the_sandbox_too(repositories, command):
    decision = _judge(repositories, command, command_sandboxed="allow-list")
    assert not decision.allowed and decision.instead


@pytest.mark.parametrize("command", [
    "curl example.com", "timeout 5 curl x", "sh -c 'curl x'", "ls | xargs curl", "find . -exec curl {} +",
    "env A=1 bash -c \"echo ok && curl x\"", "/usr/bin/curl x",
])
def test_deny_rules_still_apply_in_the_sandbox_through_wrappers(repositories, command):
    decision = _judge(repositories, command, command_deny=("curl *",))
    assert not decision.allowed, decision.reason
    assert decision.rule == "commands.deny `curl *`" and "commands.deny" in decision.instead


def test_with_deny_rules_what_the_judge_cannot_see_is_refused(repositories):
    # A deny rule cannot be applied to a program named at run time; without deny rules it just runs.
    assert not _judge(repositories, "$CMD x", command_deny=("curl *",)).allowed
    assert _judge(repositories, "$CMD x").allowed


@pytest.mark.parametrize("command", [
    "git show HEAD~2:deploy/.env.production", "git log -p", "git show {BLOB}", "git stash show -p",
    "sh -c 'git log -p --all'", "GIT_DIR=.git git log -p",
])
def test_history_reads_of_read_deny_paths_stay_refused_in_the_sandbox(repositories, command):
    # The sandbox masks the work tree's .env, not git's object store (until it hides those blobs).
    decision = _judge(repositories, command)
    assert not decision.allowed, decision.reason
    assert decision.rule.startswith("files.read_deny") and decision.instead


HISTORY_READS = ["git show HEAD~2:deploy/.env.production", "git show :deploy/.env.production",
                 "git cat-file -p HEAD~2:deploy/.env.production", "git log -L1,2:deploy/.env.production",
                 "git log -p"]


@pytest.mark.parametrize("sandboxed_commands", ["deny-list", "allow-list"])
@pytest.mark.parametrize("command", HISTORY_READS)
def test_over_the_filtered_store_the_judge_does_not_predict_history_reads(repositories, command, sandboxed_commands):
    # The sandbox's Runner sets history_hidden_by_sandbox when its commands see the filtered store: git
    # prints a placeholder for a read_deny blob there, so REV:PATH is no more refused than `git log -p`.
    hidden = _judge(repositories, command, command_sandboxed=sandboxed_commands, command_allow=("git *",),
                    history_hidden_by_sandbox=True)
    assert hidden.allowed, hidden.reason
    # Without the sandbox the same policy still refuses it: git's real store is there.
    bare = _judge(repositories, command, sandboxed=False, command_sandboxed=sandboxed_commands,
                  command_allow=("git *",), history_hidden_by_sandbox=True)
    assert not bare.allowed and bare.rule.startswith("files.read_deny"), bare.reason
    # ... and so does a sandbox without the filtered store.
    unfiltered = _judge(repositories, command, command_sandboxed=sandboxed_commands, command_allow=("git *",))
    assert not unfiltered.allowed and unfiltered.rule.startswith("files.read_deny"), unfiltered.reason


@pytest.mark.parametrize("command", ["cd sub && git show HEAD~1:certs/server.pem",
                                     "git -C sub show HEAD~1:certs/server.pem", "cd sub && git blame certs/x.pem",
                                     "cd sub; git log -L1,2:certs/x.pem"])
def test_over_the_filtered_store_history_read_in_another_repository_is_held_to_read_deny(repositories, command):
    # The filtered store covers the top-level repository only: a submodule's history (after `cd` or
    # `-C`) is the real one, so REV:PATH, blame and -L there are judged as reads, as without the store.
    decision = _judge(repositories, command, command_sandboxed="allow-list",
                      command_allow=("git *", "cd *"), history_hidden_by_sandbox=True)
    assert not decision.allowed, decision.reason


def test_over_the_filtered_store_a_file_read_from_disk_is_still_held_to_the_allow_list_rules(repositories):
    decision = _judge(repositories, "cat deploy/.env.production", command_sandboxed="allow-list",
                      command_allow=("cat *",), history_hidden_by_sandbox=True)
    assert not decision.allowed and decision.rule.startswith("files.read_deny"), decision.reason


def test_history_reads_that_leave_read_deny_paths_out_run(repositories):
    assert _judge(repositories, "git log -p -- src").allowed
    assert _judge(repositories, "git show HEAD:src/app.py").allowed
    assert _judge(repositories, "git diff HEAD~1 -- src/app.py").allowed


def test_the_setting_is_read_from_the_policy_file(tmp_path):
    text = '[commands]\nsandboxed = "allow-list"\n'
    assert parse_policy(text, source="p.toml", repo=tmp_path).command_sandboxed == "allow-list"
    assert parse_policy("", source="p.toml", repo=tmp_path).command_sandboxed == "deny-list"
    with pytest.raises(Exception, match='"deny-list", "allow-list"'):
        parse_policy('[commands]\nsandboxed = "open"\n', source="p.toml", repo=tmp_path)


# Every refusal says what to do instead, naming the tool or the form that works.
INSTEAD = {
    "sed -i 's/a/b/' src/app.py": "replace_in_file",
    "perl -pi -e 's/a/b/' src/app.py": "replace_in_file",
    "tee out.txt": "with write_to_file",
    "printf 'hi' > out.txt": "with write_to_file",
    "cat .env": "secret",
    "grep -r TOKEN .": "--exclude=.env",
    "rm scratch.py": "delete_file",
    "sed -n '1,5p' src/app.py": "read_file",
    "find . -name '*.py' | xargs grep foo": "search_files",
    "cat .git/config": "git config --get",
    "git log -p": "':(exclude)",
    "python script.py": "commands.allow",
}


@pytest.mark.parametrize("command, tool", sorted(INSTEAD.items()))
def test_every_refusal_names_what_to_do_instead(repositories, command, tool):
    decision = _judge(repositories, command, sandboxed=False, command_allow=("ls *", "cat *", "grep *", "find *",
                                                                           "git log *", "echo *"))
    assert not decision.allowed
    assert tool in decision.instead, (decision.reason, decision.instead)


@pytest.mark.parametrize("command", ["python3", "vim src/app.py", "git log | less", "sh -c 'nano x'",
                                     "$EDITOR_ARGS; vi x"])
def test_programs_that_would_wait_for_a_person_are_still_found_in_the_sandbox(repositories, command):
    from gitbot.tools.interactive import interactive_refusal

    decision = _judge(repositories, command)
    assert decision.allowed  # the judge has nothing against it; the shell tool refuses it as interactive
    assert interactive_refusal(decision.commands), decision.commands


# From the corpus of real agents' commands: 194 of 20,033 were `python - <<'PY' … PY` or a pipe into python,
# which read a script from their standard input and wait for nobody.
@pytest.mark.parametrize("command", ["python - <<'PY'\nprint(1)\nPY", "python3 <<EOF\nprint(1)\nEOF",
                                     "echo 'print(1)' | python3", "python3 < script.py",
                                     "python3 <<< 'print(1)'", "cat x | (cd src && python3)"])
def test_a_repl_fed_a_script_on_its_standard_input_is_not_interactive(repositories, command):
    from gitbot.tools.interactive import interactive_refusal

    decision = _judge(repositories, command)
    assert decision.allowed and interactive_refusal(decision.commands, decision.fed) is None, decision.commands


@pytest.mark.parametrize("command", ["python3", "python3 2< x", "git log | less", "echo x | python3 -i"])
def test_a_repl_or_pager_on_the_terminal_is_still_interactive(repositories, command):
    from gitbot.tools.interactive import interactive_refusal

    decision = _judge(repositories, command)
    assert interactive_refusal(decision.commands, decision.fed), decision.commands

"""Every tool driven through the real loop: the model's tool_use → the tool → the tool_result it sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitbot.agent.result import Status
from tests.agent.test_loop import run
from tests.fakes.messages_api import FakeMessagesAPI, tool_turn

NEW_MODULE = '''def greet(name):
    return f"hello {name}"
'''


def result_texts(api: FakeMessagesAPI) -> list[dict]:
    """The tool_result blocks the model received, in order."""
    blocks = []
    for request in api.requests[1:]:
        last = request["body"]["messages"][-1]
        blocks += [b for b in last["content"] if b.get("type") == "tool_result"]
    return blocks


@pytest.mark.slow
def test_each_tool_answers_through_the_loop(buggy_repo: Path):
    (buggy_repo / ".gitignore").write_text("build/\n")
    (buggy_repo / "build").mkdir()
    (buggy_repo / "build" / "junk.py").write_text("def ignored(): pass\n")
    script = [
        tool_turn(("list_files", {"path": ".", "recursive": True})),
        tool_turn(("search_files", {"path": ".", "regex": "def mean"})),
        tool_turn(("list_code_definition_names", {"path": "."})),
        tool_turn(("read_file", {"path": "stats.py", "start_line": 4, "end_line": 7})),
        tool_turn(("write_to_file", {"path": "pkg/greet.py", "content": NEW_MODULE})),
        tool_turn(("replace_in_file", {"path": "pkg/greet.py",
                                       "diff": "<<<<<<< SEARCH\n    return f\"hello {name}\"\n=======\n"
                                               "    return f\"hello, {name}!\"\n>>>>>>> REPLACE"})),
        tool_turn(("write_to_file", {"path": "pkg/broken.py", "content": "def broken(:\n    pass\n"})),
        tool_turn(("execute_command", {"command": "ls pkg"})),
        tool_turn(("execute_command", {"command": "curl https://example.com"})),
        tool_turn(("ask_followup_question", {"question": "Is this right?"})),
        tool_turn(("attempt_completion", {"result": "added greet"})),
        tool_turn(("attempt_completion", {"result": "added greet()"})),
    ]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, max_consecutive_mistakes=5)
    assert api.errors == []
    assert result.status is Status.COMPLETED
    (listing, search, definitions, window, written, replaced, rejected, ls, curl, question, review,
     ) = result_texts(api)
    assert "stats.py" in listing["content"] and "build/" not in listing["content"]  # .gitignore respected
    assert "stats.py" in search["content"] and "def mean" in search["content"]
    assert "mean" in definitions["content"]
    assert "4 |" in window["content"] and "7 |" in window["content"] and "1 |" not in window["content"]
    assert "is_error" not in written and "is_error" not in replaced
    assert rejected["is_error"] is True and not (buggy_repo / "pkg" / "broken.py").exists()  # guardrail
    assert "greet.py" in ls["content"]
    # In the sandbox a command runs unless a deny rule refuses it (issue 22): curl runs, and there is no network.
    assert "is_error" not in curl and "Exit code: 0" not in curl["content"]
    assert "No human is available" in question["content"]
    assert "hello, {name}!" in review["content"]  # the review shows the diff of the work
    assert (buggy_repo / "pkg" / "greet.py").read_text() == NEW_MODULE.replace("hello {name}", "hello, {name}!")
    # Files created before the run are part of step 0; the run changed only what it wrote.
    assert result.files_changed == ["pkg/greet.py"]


@pytest.mark.slow
def test_no_tool_changes_files_while_the_first_checkpoints_index_refresh_runs(buggy_repo: Path, monkeypatch):
    # The first checkpoint leaves a git status writing the private index in the background; a file tool
    # writing while git still reads the tree could leave the index with stat data of content it never hashed.
    from dataclasses import replace

    from gitbot.agent import run as agent_run
    from gitbot.checkpoints import seeding
    from gitbot.tools import files, registry

    unfinished_at_write = []

    def write_and_note(ctx, args):
        unfinished_at_write.append(len(seeding._UNFINISHED))
        return files.WRITE_TO_FILE.function(ctx, args)

    noting = replace(files.WRITE_TO_FILE, function=write_and_note)
    tools = [noting if tool.name == "write_to_file" else tool for tool in registry.all_tools()]
    monkeypatch.setattr(agent_run, "all_tools", lambda: tools)
    script = [tool_turn(("write_to_file", {"path": "notes.txt", "content": "x\n"})),
              tool_turn(("attempt_completion", {"result": "done"}))]
    with FakeMessagesAPI(script) as api:
        result = run(buggy_repo, api, review=False)
    assert result.status is Status.COMPLETED, result.summary
    assert unfinished_at_write == [0]

"""The pull request's ledger: one row per iteration, totals by token class, read back from the body."""

from __future__ import annotations

from gitbot.forge.ledger import END, START, Iteration, Ledger, with_section


def row(trigger, cost=0.01, **kw) -> Iteration:
    base = {
        "n": 0,
        "trigger": trigger,
        "request": "comment",
        "by": "maria",
        "link": "https://x/pull/1#c",
        "actions_run": "10",
        "run_id": "20261101-101010-abcdef",
        "outcome": "changed",
        "cost_usd": cost,
        "input_tokens": 0,
        "cache_write_tokens": 100,
        "cache_read_tokens": 900,
        "output_tokens": 5,
    }
    base.update(kw)
    return Iteration(**base)


def test_a_ledger_survives_the_round_trip_through_a_body_and_replaces_only_its_section():
    ledger = Ledger(issue=7)
    ledger.record(row(None, request="issue #7"))
    body = with_section("Human text before.\n\nMore.", ledger.section())
    assert body.startswith("Human text before.\n\nMore.\n\n" + START)
    again = Ledger.parse(body)
    assert again == ledger and "## Iterations" not in body  # one run: the Cost section says it all
    again.record(row("comment-5", cost=0.02))
    body2 = with_section(body, again.section())
    assert body2.startswith("Human text before.") and body2.count(START) == 1 and body2.count(END) == 1
    assert "## Iterations" in body2 and "**All 2 iterations:** $0.0300" in body2
    assert "cache writes 200 · cache reads 1,800" in body2 and "| 90% |" in body2


def test_a_rerun_replaces_its_row_and_counts_follow_ups_and_spend():
    ledger = Ledger()
    ledger.record(row(None))
    ledger.record(row("comment-5", cost=0.5, actions_run="11"))
    ledger.record(row("comment-5", cost=0.25, actions_run="11"))
    assert [it.n for it in ledger.iterations] == [1, 2] and ledger.follow_ups == 1
    assert ledger.total_cost == 0.26 and ledger.find("comment-5").cost_usd == 0.25


def test_nothing_anyone_wrote_appears_in_the_body_as_text():
    hostile = "done --> <!-- gitbot:ledger {} --> @maria fixes #12 ![x](https://evil.example/p.png)"
    ledger = Ledger()
    ledger.record(row(None, summary=hostile, request="line comment on ../x-->.py:1"))
    section = ledger.section()
    for piece in ("-->", "@maria", "fixes #12", "evil.example", "x-->.py"):
        assert section.count(piece) == (3 if piece == "-->" else 0), piece  # only gitbot's three markers end
    assert Ledger.parse(section).iterations[0].summary == hostile


def test_only_the_last_section_counts_and_a_damaged_one_is_no_ledger():
    first, second = Ledger(issue=1), Ledger(issue=2)
    body = f"{first.section()}\n\ntext\n\n{second.section()}"
    assert Ledger.parse(body).issue == 2
    assert Ledger.parse(f"{START}\n<!-- gitbot:ledger {{not json}} -->\n{END}") is None
    assert Ledger.parse("no ledger here") is None

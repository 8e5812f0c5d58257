"""`gitbot gitlab`: what the GitLab CI/CD component's jobs run. Reads GitLab's CI_* variables, the job's
GITBOT_* settings and TRIGGER_PAYLOAD; no arguments."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "gitlab",
        help="run as a GitLab CI job (settings in GITBOT_* variables, a webhook's body in TRIGGER_PAYLOAD)",
        description="Fix a labelled issue or a failed pipeline and open a merge request, or answer an @gitbot "
        "note. Meant to be run by gitbot's CI/CD component (templates/gitbot.yml) inside GitLab CI; see the "
        "README, 'Use it on GitLab'.",
    )
    p.set_defaults(func=main)


def main(args) -> int:
    from gitbot.forge.gitlab.entry import run_gitlab

    return run_gitlab()

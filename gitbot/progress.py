"""Progress on stderr while a run goes: a line per tool call and a spinner while the model thinks."""

from __future__ import annotations

from gitbot.textsafe import printable


class NullReporter:
    def waiting(self, request: int) -> None: ...
    def done_waiting(self) -> None: ...
    def tool(self, step: int, name: str, target: str, outcome: str, cost: float | None) -> None: ...
    def note(self, text: str) -> None: ...


class ConsoleReporter(NullReporter):
    """Human progress with rich (imported lazily). `label` marks replays so nobody mistakes one for a run."""

    def __init__(self, label: str = ""):
        from rich.console import Console

        self.console = Console(stderr=True, highlight=False)
        self.label = label
        self._status = None

    def waiting(self, request: int) -> None:
        if self.console.is_terminal:
            self._status = self.console.status(f"{self.label}waiting for the model (request {request})…")
            self._status.start()

    def done_waiting(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def tool(self, step: int, name: str, target: str, outcome: str, cost: float | None) -> None:
        from rich.markup import escape

        mark = {"ok": "[green]✓[/]", "denied": "[yellow]denied[/]"}.get(outcome, "[red]✗[/]")
        spent = "cost unknown" if cost is None else f"${cost:.4f}"
        # Tool names and targets come from the model: no markup, no terminal escapes.
        name, target = escape(printable(f"{name:<26.60}")), escape(printable(f"{target:<50.50}"))
        self.console.print(f"{escape(self.label)}step {step:>3}  {name} {target} {mark}  [dim]{spent}[/]")

    def note(self, text: str) -> None:
        from rich.markup import escape

        self.console.print(escape(printable(self.label + text)), style="dim")

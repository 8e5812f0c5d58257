"""gitbot: turn a labelled issue or a failing check into a verified fix with a cost receipt."""

__version__ = "0.1.0"

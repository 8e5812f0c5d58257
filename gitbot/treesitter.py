"""Which tree-sitter grammar parses which file. Grammars are installed wheels: nothing downloads."""

from __future__ import annotations

import importlib
from functools import cache
from pathlib import PurePath

from tree_sitter import Language, Parser

# extension -> (language name, grammar module, function in that module returning the language)
_GRAMMARS: dict[str, tuple[str, str, str]] = {
    ".py": ("python", "tree_sitter_python", "language"),
    ".pyi": ("python", "tree_sitter_python", "language"),
    ".js": ("javascript", "tree_sitter_javascript", "language"),
    ".mjs": ("javascript", "tree_sitter_javascript", "language"),
    ".cjs": ("javascript", "tree_sitter_javascript", "language"),
    ".jsx": ("javascript", "tree_sitter_javascript", "language"),
    ".ts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".mts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".cts": ("typescript", "tree_sitter_typescript", "language_typescript"),
    ".tsx": ("tsx", "tree_sitter_typescript", "language_tsx"),
    ".go": ("go", "tree_sitter_go", "language"),
    ".rs": ("rust", "tree_sitter_rust", "language"),
    ".java": ("java", "tree_sitter_java", "language"),
    ".c": ("c", "tree_sitter_c", "language"),
    ".h": ("c", "tree_sitter_c", "language"),
    ".cc": ("cpp", "tree_sitter_cpp", "language"),
    ".cpp": ("cpp", "tree_sitter_cpp", "language"),
    ".cxx": ("cpp", "tree_sitter_cpp", "language"),
    ".hh": ("cpp", "tree_sitter_cpp", "language"),
    ".hpp": ("cpp", "tree_sitter_cpp", "language"),
    ".hxx": ("cpp", "tree_sitter_cpp", "language"),
    ".rb": ("ruby", "tree_sitter_ruby", "language"),
    ".sh": ("bash", "tree_sitter_bash", "language"),
    ".bash": ("bash", "tree_sitter_bash", "language"),
}


def language_name(path: str | PurePath) -> str | None:
    """The grammar name for a file, or None when no installed grammar parses it."""
    entry = _GRAMMARS.get(PurePath(path).suffix.lower())
    return entry[0] if entry else None


@cache
def _language(module_name: str, function: str) -> Language | None:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return Language(getattr(module, function)())


def language_for(path: str | PurePath) -> Language | None:
    entry = _GRAMMARS.get(PurePath(path).suffix.lower())
    return _language(entry[1], entry[2]) if entry else None


def parser_for(path: str | PurePath) -> Parser | None:
    language = language_for(path)
    return Parser(language) if language is not None else None


@cache
def bash_parser_language() -> Language:
    return _language("tree_sitter_bash", "language")

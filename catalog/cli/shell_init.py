"""`sessdex init bash|zsh|fish` and the session completions it sets up, answered before the argument parser is
built (both run from shell start-up and from a Tab press).

`init` prints a script to `eval` in the shell's rc file, as `zoxide init` does. It defines a function (`xr` by
default, `--cmd` renames it):
- `xr` opens the picker; `xr PREFIX|PATH` resolves like `sessdex resume`, a session of another project in its own
  directory (never forked); `xr --here PREFIX` forks it into the current directory (`sessdex resume --yes`);
- on a choice it `cd`s to the session's directory (when it still exists) and runs
  `${SESSDEX_AGENT_CMD:-xcsh} --resume <file>`; a cancel runs nothing and returns 130;
- a key binding (Alt+J unless `--key`, none with `--no-key`) runs the same picker: Alt+J is bound by default
  in none of bash (emacs mode), zsh (emacs keymap) and fish;
- with `--history-key KEY` (opt-in: Ctrl+R is the shells' own reverse search), KEY opens the interactive search
  of the prompt history and puts the chosen prompt on the command line;
- tab completion of the command names after `sessdex`, and of session ids (with their names where the shell shows
  descriptions) for `xr` and every command that takes a session (`SESSION_COMMANDS`), answered by
  `sessdex complete-commands` and `sessdex complete-sessions WORD`.
The function gets the session's directory and file from `sessdex pick --shell` / `sessdex resume --shell`
(two lines: directory, file); `--json` gives the same as the session object.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from sessdex.core.errors import UsageError

SHELLS = ("bash", "zsh", "fish")
DEFAULT_COMMAND = "xr"
DEFAULT_KEY = "alt-j"
COMPLETION_LIMIT = 50
# The commands whose argument is a session (an id prefix or a file): Tab completes session ids after them.
SESSION_COMMANDS = ("resume", "view", "rename", "trash", "context", "entries", "export")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_KEY = re.compile(r"(alt|ctrl)-([a-z])\Z")
# Names `--cmd` may not take: the scripts call these (a function of that name would call itself, or replace a
# builtin the scripts rely on), plus the shells' keywords. Names starting with `__sessdex` are the scripts' own.
_RESERVED_NAMES = frozenset(
    "sessdex xcsh command builtin cd read echo print printf local return shift set test status string count "
    "commandline complete compdef compadd compinit bind bindkey zle function functions source eval exec exit "
    "if then else elif fi for while until do done case esac in select time end begin and or not true false "
    "type alias unset export declare typeset readonly let emulate autoload".split())

INIT_USAGE = """Usage: sessdex init bash|zsh|fish [--cmd NAME] [--no-key] [--key KEY]

  Print a script to eval in the shell's rc file, e.g. in ~/.bashrc:  eval "$(sessdex init bash)"

  It defines NAME (default xr): `xr` picks a session, `xr PREFIX|PATH` resolves one like `sessdex
  resume`; either way the shell changes to the session's directory and runs
  ${SESSDEX_AGENT_CMD:-xcsh} --resume FILE. `xr --here PREFIX` forks the session into the current
  directory instead. A cancel runs nothing and returns 130. Tab completes session ids for `xr` and
  `sessdex resume`.

Options:
  --cmd NAME  Name of the function (default xr).
  --key KEY   Key that opens the picker: alt-<letter> or ctrl-<letter> (default alt-j, unbound by
              default in bash, zsh and fish).
  --no-key    No key binding.
  --history-key KEY
              Also bind KEY (e.g. ctrl-r, replacing the shell's own reverse search) to the
              interactive search of your prompts (`sessdex history`): the chosen prompt
              replaces the line being typed. None unless given.
  -h, --help  Show this message and exit.
"""


def _key_sequences(key: str) -> dict[str, str]:
    """The key in each shell's own notation (bash readline, zsh bindkey, fish bind)."""
    found = _KEY.match(key.lower())
    if found is None:
        raise UsageError(f"--key {key!r}: expected alt-<letter> or ctrl-<letter>, e.g. alt-j")
    modifier, letter = found.groups()
    if modifier == "alt":
        return {"bash": f"\\e{letter}", "zsh": f"^[{letter}", "fish": f"\\e{letter}"}
    return {"bash": f"\\C-{letter}", "zsh": f"^{letter.upper()}", "fish": f"\\c{letter}"}


_BASH = r'''# sessdex shell integration for bash: eval "$(sessdex init bash)"
__sessdex_resume() {
  local here= out status dir file
  local -a agent
  if [ "${1-}" = --here ]; then here=1; shift; fi
  if [ $# -gt 1 ] || { [ -n "$here" ] && [ $# -eq 0 ]; }; then
    echo "usage: __CMD__ [--here] [ID-PREFIX|PATH]" >&2; return 2
  fi
  if [ $# -eq 0 ]; then out=$(command sessdex pick --shell)
  elif [ -n "$here" ]; then out=$(command sessdex resume --yes --shell "$1")
  else out=$(command sessdex resume --own-dir --shell "$1"); fi
  status=$?
  [ $status -eq 0 ] || return $status
  dir=${out%%$'\n'*}; file=${out#*$'\n'}
  if [ -d "$dir" ]; then builtin cd -- "$dir" || return 1; fi
  read -r -a agent <<<"${SESSDEX_AGENT_CMD:-xcsh}"
  "${agent[@]}" --resume "$file"
}
__CMD__() { __sessdex_resume "$@"; }
__sessdex_complete_ids() {
  local cur=${COMP_WORDS[COMP_CWORD]} line
  COMPREPLY=()
  # Each id is quoted for the command line (printf %q): an id is text from a session file, and bash inserts a
  # completion as it is, so `$(...)`, backquotes or `;` in one would run when the line is entered.
  while IFS=$'\t' read -r line _; do
    printf -v line '%q' "$line"; COMPREPLY+=("$line")
  done < <(command sessdex complete-sessions "$cur" 2>/dev/null)
}
__sessdex_complete() {
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$(command sessdex complete-commands 2>/dev/null)" -- "${COMP_WORDS[1]}"))
  elif [[ " __SESSION_COMMANDS__ " == *" ${COMP_WORDS[1]-} "* && ${COMP_WORDS[COMP_CWORD]} != -* ]]; then
    __sessdex_complete_ids
  fi
}
complete -F __sessdex_complete_ids __CMD__
complete -o default -F __sessdex_complete sessdex
'''
# In bash and zsh the key runs the function as a command of its own (job control and terminal modes as for any
# command, and in the history): bash keeps the line typed so far in its kill ring (Ctrl+Y), zsh pushes it back
# after. fish runs it from the binding itself (handing the terminal over, as for fzf), leaving the line as it was.
_BASH_KEY = r'''bind -m emacs '"__KEY__": "\C-e\C-u__CMD__\C-m"'
'''

_ZSH = r'''# sessdex shell integration for zsh: eval "$(sessdex init zsh)"
__sessdex_resume() {
  local here= out dir file
  local -i status_
  local -a agent
  if [[ ${1-} == --here ]]; then here=1; shift; fi
  if (( $# > 1 )) || [[ -n $here && $# -eq 0 ]]; then
    print -u2 "usage: __CMD__ [--here] [ID-PREFIX|PATH]"; return 2
  fi
  if (( $# == 0 )); then out=$(command sessdex pick --shell)
  elif [[ -n $here ]]; then out=$(command sessdex resume --yes --shell "$1")
  else out=$(command sessdex resume --own-dir --shell "$1"); fi
  status_=$?
  (( status_ == 0 )) || return $status_
  dir=${out%%$'\n'*}; file=${out#*$'\n'}
  if [[ -d $dir ]]; then builtin cd -- "$dir" || return 1; fi
  agent=(${=SESSDEX_AGENT_CMD:-xcsh})
  "${agent[@]}" --resume "$file"
}
__CMD__() { __sessdex_resume "$@"; }
__sessdex_complete_ids() {
  local -a ids shown
  local id name
  command sessdex complete-sessions "$PREFIX" 2>/dev/null | while IFS=$'\t' read -r id name; do
    ids+=("$id"); shown+=("$id  -- $name")
  done
  (( ${#ids} )) || return 1
  # -U: a word of a title completes to its session's id, which does not start with the word
  compadd -U -l -d shown -a ids
}
__sessdex_complete() {
  if (( CURRENT == 2 )); then compadd -- ${(f)"$(command sessdex complete-commands 2>/dev/null)"}
  elif [[ " __SESSION_COMMANDS__ " == *" ${words[2]} "* && $PREFIX != -* ]]; then __sessdex_complete_ids
  else _default; fi
}
if (( $+functions[compdef] )); then
  compdef __sessdex_complete_ids __CMD__
  compdef __sessdex_complete sessdex
fi
'''
_ZSH_KEY = r'''__sessdex_key() { zle push-input; BUFFER=__CMD__; zle accept-line; }
zle -N __sessdex_key
bindkey -M emacs '__KEY__' __sessdex_key
'''

_FISH = r'''# sessdex shell integration for fish: sessdex init fish | source
function __sessdex_resume
    set -l here
    if test (count $argv) -gt 0; and test "$argv[1]" = --here
        set here 1
        set -e argv[1]
    end
    if test (count $argv) -gt 1; or begin; test -n "$here"; and test (count $argv) -eq 0; end
        echo "usage: __CMD__ [--here] [ID-PREFIX|PATH]" >&2
        return 2
    end
    set -l out
    if test (count $argv) -eq 0
        set out (command sessdex pick --shell)
    else if test -n "$here"
        set out (command sessdex resume --yes --shell $argv[1])
    else
        set out (command sessdex resume --own-dir --shell $argv[1])
    end
    set -l code $status
    test $code -eq 0; or return $code
    if test -d "$out[1]"
        builtin cd -- $out[1]; or return 1
    end
    set -l agent xcsh
    set -q SESSDEX_AGENT_CMD; and set agent (string split -n ' ' -- $SESSDEX_AGENT_CMD)
    $agent --resume $out[2]
end
function __CMD__ --description 'Resume an xcsh session in its own directory'
    __sessdex_resume $argv
end
function __sessdex_complete_ids
    command sessdex complete-sessions (commandline -ct) 2>/dev/null
end
complete -c __CMD__ -f -a '(__sessdex_complete_ids)'
complete -c sessdex -n __fish_use_subcommand -f -a '(command sessdex complete-commands 2>/dev/null)'
complete -c sessdex -n '__fish_seen_subcommand_from __SESSION_COMMANDS__' -f -a '(__sessdex_complete_ids)'
'''
_FISH_KEY = r'''function __sessdex_key
    __sessdex_resume </dev/tty
    commandline -f repaint
end
bind __KEY__ __sessdex_key
'''

# The history key (opt-in, `--history-key`): the interactive `sessdex history` search, started with the line typed
# so far as its query; the chosen prompt replaces the line (the cursor at its end), a cancel leaves it as it was.
_BASH_HISTORY_KEY = r'''__sessdex_history() {
  local out
  out=$(command sessdex history --query="$READLINE_LINE" </dev/tty) || return 0
  READLINE_LINE=$out; READLINE_POINT=${#READLINE_LINE}
}
bind -m emacs -x '"__KEY__": __sessdex_history'
'''
_ZSH_HISTORY_KEY = r'''__sessdex_history() {
  local out
  if out=$(command sessdex history --query="$BUFFER" </dev/tty); then BUFFER=$out; CURSOR=${#BUFFER}; fi
  zle reset-prompt
}
zle -N __sessdex_history
bindkey -M emacs '__KEY__' __sessdex_history
'''
_FISH_HISTORY_KEY = r'''function __sessdex_history
    set -l out (command sessdex history --query=(commandline) </dev/tty)
    if test $status -eq 0
        commandline -r -- (string join \n -- $out)
        commandline -f end-of-line
    end
    commandline -f repaint
end
bind __KEY__ __sessdex_history
'''

_SCRIPTS = {"bash": (_BASH, _BASH_KEY), "zsh": (_ZSH, _ZSH_KEY), "fish": (_FISH, _FISH_KEY)}
_HISTORY_KEYS = {"bash": _BASH_HISTORY_KEY, "zsh": _ZSH_HISTORY_KEY, "fish": _FISH_HISTORY_KEY}


def init_script(shell: str, command: str = DEFAULT_COMMAND, key: str | None = DEFAULT_KEY,
                history_key: str | None = None) -> str:
    """The script `sessdex init SHELL` prints: the function `command`, completions, (unless None) the key, and
    (when given) the key of the interactive history search."""
    if shell not in _SCRIPTS:
        raise UsageError(f"unknown shell {shell!r}: expected one of {', '.join(SHELLS)}")
    if not _NAME.match(command):
        raise UsageError(f"--cmd {command!r}: expected a function name (letters, digits, _ and -)")
    if command.startswith("__sessdex") or command in _RESERVED_NAMES:
        raise UsageError(f"--cmd {command!r}: the integration itself uses that name; choose another")
    body, key_part = _SCRIPTS[shell]
    script = body.replace("__CMD__", command).replace("__SESSION_COMMANDS__", " ".join(SESSION_COMMANDS))
    if key is not None:
        script += key_part.replace("__KEY__", _key_sequences(key)[shell]).replace("__CMD__", command)
    if history_key is not None:
        if key is not None and history_key.lower() == key.lower():
            raise UsageError(f"--history-key {history_key!r} is the picker's key too: choose another (or --key)")
        script += _HISTORY_KEYS[shell].replace("__KEY__", _key_sequences(history_key)[shell])
    return script


def parse_init_args(args: Sequence[str]) -> tuple[str, str, str | None, str | None] | None:
    """(shell, function name, key or None, history key or None) from `init`'s arguments; None for --help."""
    shell: str | None = None
    command, key, no_key = DEFAULT_COMMAND, DEFAULT_KEY, False
    history_key: str | None = None
    tokens = iter(args)
    for token in tokens:
        name, has_value, value = token.partition("=")
        if token in ("-h", "--help"):
            return None
        if name in ("--cmd", "--key", "--history-key"):
            if not has_value:
                value = next(tokens, "")
            if not value:
                raise UsageError(f"{name} needs a value")
            if name == "--cmd":
                command = value
            elif name == "--key":
                key = value
            else:
                history_key = value
        elif token == "--no-key":
            no_key = True
        elif token.startswith("-") or shell is not None:
            raise UsageError(f"unexpected argument {token!r} (see sessdex init --help)")
        else:
            shell = token
    if shell is None:
        raise UsageError(f"sessdex init needs a shell: {', '.join(SHELLS)}")
    return shell, command, None if no_key else key, history_key


def run_init(args: Sequence[str]) -> int:
    """`sessdex init ...`: print the script (or the usage) and return the exit status."""
    parsed = parse_init_args(args)
    if parsed is None:
        sys.stdout.write(INIT_USAGE)
        return 0
    shell, command, key, history_key = parsed
    sys.stdout.write(init_script(shell, command, key, history_key))
    sys.stdout.flush()
    return 0


def run_complete_sessions(args: Sequence[str]) -> int:
    """`sessdex complete-sessions [WORD]`: `id<TAB>name` lines of the sessions WORD may name, newest first.

    Never creates anything: no agent dir or no usable catalog answers from the files, or nothing.
    """
    from sessdex.catalog.queries.completion import session_completions
    from sessdex.catalog.store.settings import Settings

    if len(args) > 1:
        raise UsageError("complete-sessions takes at most one word")
    from sessdex.catalog.queries.naming import display_name
    from sessdex.catalog.tui.terminal_text import terminal_text

    word = args[0] if args else ""
    for row in session_completions(Settings.resolve(), word, COMPLETION_LIMIT):
        name = display_name(row.title, row.first_message, row.message_count, row.session_id, row.path)
        sys.stdout.write(f"{terminal_text(row.session_id)}\t{terminal_text(name)}\n")
    sys.stdout.flush()
    return 0


def run_complete_commands(args: Sequence[str]) -> int:
    """`sessdex complete-commands`: the command names, one a line (what Tab offers after `sessdex`)."""
    from sessdex.catalog.cli.commands import COMMANDS

    if args:
        raise UsageError("complete-commands takes no argument")
    sys.stdout.write("".join(f"{name}\n" for name in sorted(COMMANDS)))
    sys.stdout.flush()
    return 0

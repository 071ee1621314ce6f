#!/usr/bin/env python3
"""tools/clidoc.py -- man pages and bash completion from the programs' --help.

    clidoc.py man FLYDB FLYDB_GEN VERSION OUTDIR CMD...
        OUTDIR/flydb.1, OUTDIR/flydb-CMD.1 for each CMD, OUTDIR/flydb-gen.1
    clidoc.py bash FLYDB OUT CMD...
        OUT: a bash completion script for flydb (subcommands, options, and
        the values of options whose help lists them as "a | b | c")

The only source is what the built programs print for --help (the option
tables of src/cli), read at build time, so the man pages and the completion
cannot drift from the program.  CMD... is the list of subcommands the build
expects (src/cli/doc/meson.build, which must name every output file); the
run fails when `flydb --help` lists other ones, so a new subcommand cannot
be left without its page.  The generated files are never committed.

Format read: `flydb --help` is a title line, "usage: ..." and one
"  NAME   what it does" line per subcommand; `flydb CMD --help` (and
flydb-gen's) is "usage: PROG SYNOPSIS" (continued on indented lines), an
optional paragraph, then option lines "  --name[ X|[=X]]   help", a help
text possibly continued on more deeply indented lines.  Either stream
(stdout or stderr) may carry it.
"""
import os
import re
import subprocess
import sys
import time

OPT_RE = re.compile(r'^ {1,4}(--[A-Za-z0-9][\w-]*)(\[=\w+\]| [A-Z]\w*)?(?: +(.*))?$')


def help_text(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       check=False)
    if p.returncode != 0:
        sys.exit('clidoc: %s exited with status %d' % (' '.join(argv), p.returncode))
    return (p.stdout + p.stderr).decode('utf-8')


def parse_top(text):
    """(title, [(command, what)]) from `flydb --help`."""
    lines = text.splitlines()
    title = lines[0].split(' -- ', 1)[1].strip() if ' -- ' in lines[0] else ''
    cmds = []
    seen_usage = False
    for ln in lines[1:]:
        if ln.startswith('usage:'):
            seen_usage = True
            continue
        m = re.match(r'^  ([a-z][a-z0-9-]*) +(\S.*)$', ln)
        if seen_usage and m:
            cmds.append((m.group(1), m.group(2).strip()))
    return title, cmds


def parse_cmd(text):
    """{'synopsis', 'paragraph', 'opts': [(name, metavar, help)]}."""
    lines = text.splitlines()
    syn, para, opts = [], [], []
    state = 'start'
    for ln in lines:
        m = OPT_RE.match(ln)
        if ln.startswith('usage:'):
            syn.append(ln.split(None, 1)[1] if len(ln.split(None, 1)) > 1 else '')
            state = 'usage'
        elif m:
            opts.append([m.group(1), m.group(2) or '', (m.group(3) or '').strip()])
            state = 'opts'
        elif state == 'usage' and ln.startswith(' ') and ln.strip():
            syn.append(ln.strip())
        elif state == 'opts' and ln.startswith('     ') and ln.strip():
            opts[-1][2] += ' ' + ln.strip()
        elif ln.strip() and state in ('usage', 'para'):
            para.append(ln.strip())
            state = 'para'
    return {'synopsis': ' '.join(syn), 'paragraph': ' '.join(para),
            'opts': [tuple(o) for o in opts]}


# ---- roff -----------------------------------------------------------------

def esc(s):
    """Text for roff: backslashes escaped, the dashes of option names as
    minus signs (so they can be copied), no line starting with a control
    character."""
    s = s.replace('\\', '\\e')
    s = re.sub(r'(?<![\w-])--?\w[\w-]*', lambda m: m.group(0).replace('-', '\\-'), s)
    return s


def line(s):
    return ('\\&' + s) if s[:1] in ('.', "'") else s


def th(name, version):
    # SOURCE_DATE_EPOCH (set by dpkg-buildpackage): reproducible dates.
    date = ''
    if os.environ.get('SOURCE_DATE_EPOCH', '').isdigit():
        date = time.strftime('%Y-%m-%d', time.gmtime(int(os.environ['SOURCE_DATE_EPOCH'])))
    return '.TH "%s" 1 "%s" "flydb %s" "User Commands"\n' % (name.upper(), date, version)


def options_section(opts):
    out = ['.SH OPTIONS\n']
    for name, meta, text in opts:
        out.append('.TP\n')
        if meta.startswith('[='):
            out.append('.BR "%s" "[=\\fI%s\\fR]"\n' % (esc(name), meta[2:-1]))
        elif meta:
            out.append('.BI "%s " %s\n' % (esc(name), meta.strip()))
        else:
            out.append('.B "%s"\n' % esc(name))
        out.append(line(esc(text)) + '\n')
    return out


def see_also(names):
    out = ['.SH SEE ALSO\n']
    for i, n in enumerate(names):
        out.append('.BR %s (1)%s\n' % (esc(n), ',' if i < len(names) - 1 else ''))
    return out


def write(path, parts):
    with open(path, 'w', encoding='utf-8') as f:
        f.write(''.join(parts))


def man(flydb, gen, version, outdir, want):
    title, cmds = parse_top(help_text([flydb, '--help']))
    check_commands(cmds, want)
    names = ['flydb-' + c for c, _ in cmds]
    # flydb(1)
    p = [th('flydb', version),
         '.SH NAME\n', 'flydb \\- %s\n' % esc(title),
         '.SH SYNOPSIS\n',
         '.B flydb\n', '.I COMMAND\n', '.RI [ options ]\n', '.br\n',
         '.B flydb \\-\\-help\n', '.br\n', '.B flydb \\-\\-version\n',
         '.SH DESCRIPTION\n',
         'Each command has its own page, and prints its options with\n',
         '.BR "flydb \\fICOMMAND\\fB \\-\\-help" .\n',
         '.SH COMMANDS\n']
    for c, what in cmds:
        p += ['.TP\n', '.BR flydb\\-%s (1)\n' % esc(c), line(esc(what)) + '\n']
    p += see_also(names + ['flydb-gen', 'sqlite3'])
    write(os.path.join(outdir, 'flydb.1'), p)
    # flydb-CMD(1)
    for c, what in cmds:
        d = parse_cmd(help_text([flydb, c, '--help']))
        syn = d['synopsis']
        if syn.startswith('flydb ' + c):
            syn = syn[len('flydb ' + c):].strip()
        p = [th('flydb-' + c, version),
             '.SH NAME\n', 'flydb\\-%s \\- %s\n' % (esc(c), esc(what)),
             '.SH SYNOPSIS\n', '.B flydb %s\n' % esc(c)]
        if syn:
            p.append(line(esc(syn)) + '\n')
        p += ['.SH DESCRIPTION\n', line(esc(what[:1].upper() + what[1:])) + '.\n']
        if d['paragraph']:
            p += ['.PP\n', line(esc(d['paragraph'])) + '\n']
        p += options_section(d['opts'])
        p += ['.SH "EXIT STATUS"\n', '0 on success, 1 on an error, 2 on a usage error.\n']
        p += see_also(['flydb'] + [n for n in names if n != 'flydb-' + c])
        write(os.path.join(outdir, 'flydb-%s.1' % c), p)
    # flydb-gen(1)
    d = parse_cmd(help_text([gen, '--help']))
    syn = d['synopsis']
    if syn.startswith('flydb-gen'):
        syn = syn[len('flydb-gen'):].strip()
    p = [th('flydb-gen', version),
         '.SH NAME\n', 'flydb\\-gen \\- synthetic data sets for flydb\n',
         '.SH SYNOPSIS\n', '.B flydb\\-gen\n', line(esc(syn)) + '\n',
         '.SH DESCRIPTION\n', line(esc(d['paragraph'])) + '\n']
    p += options_section(d['opts'])
    p += see_also(['flydb', 'flydb-ingest'])
    write(os.path.join(outdir, 'flydb-gen.1'), p)


def check_commands(cmds, want):
    got = [c for c, _ in cmds]
    if sorted(got) != sorted(want):
        sys.exit('clidoc: `flydb --help` lists the commands %s, but the build expects %s;'
                 ' update the list in src/cli/doc/meson.build'
                 % (' '.join(got), ' '.join(want)))


# ---- bash completion ------------------------------------------------------

def choices(text):
    """The words of a help text "x (default) | y | z[=q] ..." or
    "x (...) or y (...)", or []."""
    m = re.fullmatch(r'([a-z0-9]+) or ([a-z0-9]+)', re.sub(r' *\([^)]*\) *', ' ', text).strip())
    if m:
        return [m.group(1), m.group(2)]
    if ' | ' not in text:
        return []
    parts = text.split(' | ')
    words = []
    for i, part in enumerate(parts):
        part = re.sub(r'\([^)]*\)?', ' ', part).strip()
        toks = part.split()
        if not toks:
            return []
        w = toks[-1] if i == 0 else toks[0]
        w = re.sub(r'\[=.*$', '', w).rstrip(':,;.')
        if not re.fullmatch(r'[a-z0-9][a-z0-9_.-]*', w):
            return []
        words.append(w)
    return words


def bash(flydb, out, want):
    _, cmds = parse_top(help_text([flydb, '--help']))
    check_commands(cmds, want)
    cases, vcases = [], []
    for c, _ in cmds:
        d = parse_cmd(help_text([flydb, c, '--help']))
        syn = d['synopsis']
        cases.append('    %s) opts="%s" ;;\n' % (c, ' '.join(n for n, _, _ in d['opts'])))
        for name, meta, text in d['opts']:
            if not meta:
                continue
            ch = choices(text)
            m = re.search(re.escape(name) + r' ([A-Z]+)', syn)
            if ch:
                act = 'COMPREPLY=($(compgen -W "%s" -- "$cur"))' % ' '.join(ch)
            elif (m and m.group(1) == 'DIR') or 'directory' in text:
                act = 'COMPREPLY=($(compgen -d -- "$cur"))'
            else:
                continue        # no reply: file names (complete -o default)
            vcases.append('    "%s %s") %s; return ;;\n' % (c, name, act))
    s = ['# bash completion for flydb -- generated at build time by tools/clidoc.py\n',
         '# from the --help output of the flydb it is installed with.\n',
         '_flydb()\n', '{\n',
         '  local cur=${COMP_WORDS[COMP_CWORD]} prev= cmd opts\n',
         '  (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}\n',
         '  # --name=value: readline splits at "=".\n',
         '  if [[ $cur == = ]]; then cur=; elif [[ $prev == = ]] && (( COMP_CWORD > 1 )); then\n',
         '    prev=${COMP_WORDS[COMP_CWORD-2]}\n', '  fi\n',
         '  if (( COMP_CWORD <= 1 )); then\n',
         '    COMPREPLY=($(compgen -W "%s --help --version" -- "$cur"))\n'
         % ' '.join(c for c, _ in cmds),
         '    return\n', '  fi\n',
         '  cmd=${COMP_WORDS[1]}\n',
         '  case "$cmd $prev" in\n'] + vcases + [
         '  esac\n',
         '  case $cmd in\n'] + cases + [
         '    *) return ;;\n',
         '  esac\n',
         '  if [[ $cur == -* ]]; then\n',
         '    COMPREPLY=($(compgen -W "$opts" -- "$cur"))\n',
         '  fi\n',
         '}\n',
         'complete -o default -F _flydb flydb\n']
    write(out, s)


def main(argv):
    if len(argv) >= 5 and argv[0] == 'man':
        man(argv[1], argv[2], argv[3], argv[4], argv[5:])
    elif len(argv) >= 3 and argv[0] == 'bash':
        bash(argv[1], argv[2], argv[3:])
    else:
        sys.exit(__doc__.split('\n\n')[1])


if __name__ == '__main__':
    main(sys.argv[1:])

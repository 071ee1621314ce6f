#!/bin/sh
# tools/vcs_commit.sh TOP -- print the git commit of the source tree TOP
# (12 hex digits, "-dirty" when tracked files differ from it) and exit 0;
# exit 1 when TOP is not itself a git checkout or git is not installed, and
# the build then says "unknown" (meson's vcs_tag fallback).  A release
# tarball unpacked inside another repository must not take that
# repository's commit, so TOP/.git must exist (a directory, or a file in a
# worktree).
top=${1:?usage: vcs_commit.sh TOP}
[ -e "$top/.git" ] || exit 1
command -v git >/dev/null 2>&1 || exit 1
exec git -C "$top" describe --always --dirty --abbrev=12 --exclude='*' 2>/dev/null

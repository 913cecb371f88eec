#!/bin/sh
# Inputs arrive as LIBRARIAN_INPUT_<NAME> (and as JSON on stdin).
# `set -eu` stops at the first failing command. A pipeline's status is its last command's
# (POSIX sh has no portable `pipefail`), so wc runs on its own first: a missing or unreadable
# file fails the run (exit 1) instead of printing nothing and succeeding.
set -eu
counts=$(wc -l -w -c < "$LIBRARIAN_INPUT_FILE")
echo "$counts" | awk '{print $1, $2, $3}'

#!/bin/sh
# Inputs arrive as LIBRARIAN_INPUT_<NAME> (and as JSON on stdin).
set -eu
wc -l -w -c < "$LIBRARIAN_INPUT_FILE" | awk '{print $1, $2, $3}'

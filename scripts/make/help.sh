#!/bin/sh
# help.sh MAKEFILE... - `make help`: every target with the "## " text of its rule line.
grep -hE '^[a-z0-9-]+:.*## ' "$@" | sed -E 's/^([a-z0-9-]+):.*## /\1\t/' |
    awk -F'\t' '{ printf "  make %-15s %s\n", $1, $2 }'

#!/usr/bin/env bash
# files.sh with one planted fault: see FAULT=leftovers there.
FAULT=leftovers exec "$(dirname "$0")/files.sh" "$@"
